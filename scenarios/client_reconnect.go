package scenarios

import (
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#resource-warming... #reconnect (SotW: resend state; delta: initial_resource_versions)
var clientReconnectScenarios = []*engine.Scenario{
	{
		ID:           "client/reconnect/resubscribes-everything",
		Title:        "On a new stream the client asks again for every resource it needs",
		Requirements: []string{"RECONN-3", "DELTA-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Restart(codes.Unavailable)
			for _, hop := range c.hops(1) {
				c.ExpectSubscribed(hop.t, hop.name)
			}
		}),
	},
	{
		ID:           "client/reconnect/last-accepted-versions",
		Title:        "On a new stream each type's first request carries the version last accepted",
		Requirements: []string{"VER-4"},
		Level:        results.Should,
		Variants:     sotw,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Update(CDS, "2", 2)
			c.Restart(codes.Unavailable)
			for _, hop := range c.hops(1) {
				want := "1"
				if hop.t.URL == CDS.URL {
					want = "2"
				}
				r := c.ExpectSubscribed(hop.t, hop.name)
				require.Equal(c, want, r.Version(), "%s should carry version %s, the last accepted", r, want)
			}
		}),
	},
	{
		ID:           "client/reconnect/no-accidental-wildcard",
		Title:        "After a reconnect a client that named its listener names it again, not a wildcard",
		Requirements: []string{"RES-1", "WILD-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: cli(func(c *C) {
			c.Chain(LDS)
			c.Restart(codes.Unavailable)
			r := c.Expect(LDS)
			require.Equal(c, []string{c.L}, r.Names(), "%s should name the listener again: an empty request is a wildcard subscription", r)
		}),
	},
	{
		ID:           "client/reconnect/initial-resource-versions",
		Title:        "A delta reconnect lists exactly the accepted versions in initial_resource_versions",
		Requirements: []string{"DELTA-6", "DELTA-7"},
		Level:        results.Must,
		Variants:     delta,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Update(CDS, "2", 2)
			c.Restart(codes.Unavailable)
			for _, hop := range c.hops(1) {
				want := map[string]string{hop.name: "1"}
				if hop.t.URL == CDS.URL {
					want[hop.name] = "2"
				}
				r := c.ExpectSubscribed(hop.t, hop.name)
				require.Equal(c, want, r.Delta.GetInitialResourceVersions(), "%s should list the versions it holds", r)
			}
		}),
	},
	{
		ID:           "client/reconnect/initial-versions-only-first",
		Title:        "initial_resource_versions appears only on the first request of a stream",
		Requirements: []string{"DELTA-6"},
		Level:        results.Must,
		Variants:     delta,
		Run: cli(func(c *C) {
			c.Chain(LDS)
			c.Restart(codes.Unavailable)
			c.ExpectSubscribed(LDS, c.L)
			ack := c.ExpectAck(LDS, c.Respond(LDS, "2", c.Hop(LDS, 2)), "2")
			require.Empty(c, ack.Delta.GetInitialResourceVersions(), "%s is not the stream's first request", ack)
		}),
	},
	{
		ID:           "client/reconnect/keeps-config",
		Title:        "A server closing the stream is normal: the client keeps its configuration while reconnecting",
		Requirements: []string{"RECONN-2", "RECONN-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.Restart(codes.OK)
			c.Expect(LDS) // the client is back, and gets no answer
			c.Never(LDS, c.L, "lost while the server does not answer", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != "1"
			})
			c.AwaitAcked(CDS, c.CL, "1")
		}),
	},
}
