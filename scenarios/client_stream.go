package scenarios

import (
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#basic-protocol-overview, #rpc-services-and-methods-for-each-variant
var clientStreamScenarios = []*engine.Scenario{
	{
		ID:           "client/stream/client-speaks-first",
		Title:        "The client opens every stream with a request, also after the server restarts",
		Requirements: []string{"STREAM-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.Restart(codes.Unavailable)
			c.ExpectSubscribed(LDS, c.L)
		}),
	},
	{
		ID:           "client/stream/node-on-first-request",
		Title:        "The first request of every stream carries the node, across three reconnects",
		Requirements: []string{"STREAM-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			for range 3 {
				c.Restart(codes.Unavailable)
				for _, t := range chainTypes {
					// On ADS the first request may be of any type.
					st := c.Stream(t)
					first, err := st.First(c.Context())
					if err != nil {
						c.Fatalf("expected a first request on %s: %v", st.Name, err)
					}
					require.NotEmpty(c, first.Node().GetId(), "%s is the first request of its stream: it must carry node.id", first)
					if c.Configured() {
						require.Equal(c, c.NodeID, first.Node().GetId(), "%s should carry the node.id of its bootstrap", first)
						require.Equal(c, clientCluster, first.Node().GetCluster(), "%s should carry the node.cluster of its bootstrap", first)
					}
					if st.Service == nil {
						break // one ADS stream
					}
				}
			}
		}),
	},
	{
		ID:           "client/stream/node-identical",
		Title:        "A node repeated on later requests is identical to the first one",
		Requirements: []string{"STREAM-5"},
		Level:        results.Should,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Update(LDS, "2", 2)
			for _, st := range c.Srv.Streams() {
				rs := st.Requests()
				for _, r := range rs[1:] {
					if r.Node() != nil && !proto.Equal(rs[0].Node(), r.Node()) {
						c.Errorf("%s repeats the node with different contents: %v, first was %v", r, r.Node(), rs[0].Node())
					}
				}
			}
		}),
	},
	{
		ID:           "client/stream/type-url-on-requests",
		Title:        "Every request on an aggregated stream names its type",
		Requirements: []string{"STREAM-6"},
		Level:        results.Must,
		Variants:     ads,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Update(CDS, "2", 2)
			for _, st := range c.Srv.Streams() {
				for _, r := range st.Requests() {
					_, known := wire.TypeByURL(r.RawTypeURL())
					require.True(c, known && r.RawTypeURL() != "", "%s has type_url %q: every ADS request must name its v3 type", r, r.RawTypeURL())
				}
			}
		}),
	},
	{
		ID:           "client/stream/initial-request-shape",
		Title:        "The first listener request asks for the listener the client was pointed at (named or wildcard)",
		Requirements: []string{"RES-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			r := c.Expect(LDS)
			switch names := r.Names(); {
			case len(names) == 0 || (len(names) == 1 && names[0] == "*"):
				c.Logf("classification: the client subscribes to listeners by wildcard (%q)", names)
			default:
				c.Logf("classification: the client subscribes to listeners by name")
				require.Equal(c, []string{c.L}, names, "%s should name the listener the client was pointed at", r)
			}
		}),
	},
}

// chainTypes are the types of the chain in the order a client asks for them.
var chainTypes = []wire.Type{LDS, RDS, CDS, EDS}
