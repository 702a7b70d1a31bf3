package scenarios

import (
	"strings"

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
		Run: ClientScript(func(c *C) {
			// A request comes unprompted (STREAM-1); what it asks for is
			// RES-1's.
			c.defaulting("RES-1").requireAsks(c.Checking("STREAM-1").Expect(LDS), []string{c.L})
			c.Restart(codes.Unavailable)
			c.defaulting("RES-1").requireAsks(c.Checking("STREAM-1").Expect(LDS), []string{c.L})
		}),
	},
	{
		ID:           "client/stream/node-on-first-request",
		Title:        "The first request of every stream carries the node, across three reconnects",
		Requirements: []string{"STREAM-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			for range 3 {
				c.Restart(codes.Unavailable)
				for _, t := range chainTypes {
					// On ADS the first request may be of any type.
					first := c.First(t)
					require.NotEmpty(c, first.Node().GetId(), "%s is the first request of its stream: it must carry node.id", first)
					if c.Configured() {
						require.Equal(c, c.NodeID, first.Node().GetId(), "%s should carry the node.id of its bootstrap", first)
						require.Equal(c, clientCluster, first.Node().GetCluster(), "%s should carry the node.cluster of its bootstrap", first)
					}
					if first.Stream.Service == nil {
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
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.Update(LDS, "2", 2)
			for _, st := range c.Srv.Streams() {
				rs := st.Requests()
				for _, r := range rs[min(1, len(rs)):] {
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
		Run: ClientScript(func(c *C) {
			// Not Chain: a reply without type_url is queued under no type,
			// so waiting for the listener's ACK would only time out. The
			// route subscription follows the listener's answer.
			c.ExpectSubscribed(LDS, c.L)
			c.Respond(LDS, "1", c.Hop(LDS, 1))
			c.ExpectSubscribed(RDS, c.R)
			for _, st := range c.Srv.Streams() {
				for _, r := range st.Requests() {
					_, known := wire.TypeByExactURL(r.RawTypeURL())
					require.True(c, known, "%s has type_url %q: every ADS request must name its v3 type", r, r.RawTypeURL())
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
		Run: ClientScript(func(c *C) {
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

// clientProfileScenarios check rules about aggregated streams and the
// gRPC client profile.
var clientProfileScenarios = []*engine.Scenario{
	{
		ID:           "client/stream/one-ads-stream",
		Title:        "A client on ADS carries every type on one aggregated stream",
		Requirements: []string{"ADS-3"},
		Level:        results.Must,
		Variants:     ads,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			// Accepting the listener makes the client want its route: on
			// the same stream, not on a new aggregated one.
			c.NoStreamAfter(c.Stream(LDS).ID, "a second aggregated stream for its next type")
			c.ExpectSubscribed(RDS, c.R)
		}),
	},
	{
		ID:           "client/nack/non-ads-config-source",
		Title:        "A gRPC client NACKs a listener whose routes, or a cluster whose endpoints, come from a config source other than ADS",
		Requirements: []string{"STREAM-11"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.SotWADS},
		Run: ClientScript(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.requireGRPCProfile()
			c.ExpectNack(LDS, c.Respond(LDS, "1", wire.NonADSListener(c.L, c.R, 1)))
			// Then a valid listener and route, and a cluster whose
			// endpoints come from elsewhere.
			c.ExpectAck(LDS, c.Respond(LDS, "2", c.Hop(LDS, 2)), "2")
			c.AwaitSubscribed(RDS, c.R)
			c.ExpectAck(RDS, c.Respond(RDS, "1", c.Hop(RDS, 1)), "1")
			c.AwaitSubscribed(CDS, c.CL)
			c.ExpectNack(CDS, c.Respond(CDS, "1", wire.NonADSCluster(c.CL, 1)))
		}),
	},
}

// requireGRPCProfile skips the scenario unless the client is a gRPC client
// (gRPC libraries name themselves "gRPC <language>" in node.user_agent_name)
// or the reference client, which follows the gRPC profile: the rule binds
// gRPC clients only.
func (c *C) requireGRPCProfile() {
	ua := c.First(LDS).Node().GetUserAgentName()
	if !strings.HasPrefix(strings.ToLower(ua), "grpc") && ua != referenceClientUserAgent {
		c.Skipf("the rule binds gRPC clients only, and this client calls itself %q", ua)
	}
}

// referenceClientUserAgent is the reference client's node.user_agent_name
// (refclient.UserAgentName, which a test holds it to): written out here so
// that the catalogue does not link the reference client into every
// program that imports it.
const referenceClientUserAgent = "xdsconform-refclient"

// chainTypes are the types of the chain in the order a client asks for them.
var chainTypes = []wire.Type{LDS, RDS, CDS, EDS}
