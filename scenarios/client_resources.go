package scenarios

import (
	"slices"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"github.com/xdsconform/xdsconform/observer"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// unrequestedIgnored is the scenario about a resource the client did not
// ask for: ignored, not NACKed (RES-3 in SotW, DELTA-5 in delta, where it
// is a SHOULD).
func unrequestedIgnored(rule string, level results.Level, variants []wire.Variant) *engine.Scenario {
	id := "client/resources/unrequested-ignored"
	if rule == "DELTA-5" {
		id = "client/delta/unrequested-ignored"
	}
	return &engine.Scenario{
		ID:           id,
		Title:        "A resource the client did not ask for is ignored, not NACKed",
		Requirements: []string{rule},
		Level:        level,
		Variants:     variants,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			unrequested := c.Extra("unrequested")
			c.Checking(rule).ExpectAck(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2), wire.ClientCluster(unrequested, 1)), "2")
			if c.Observable() {
				c.Checking(rule).Never(CDS, unrequested, "as in use", func(r observer.Resource) bool { return r.State == observer.Acked })
			}
		}),
	}
}

// xds_protocol#how-the-client-specifies-what-resources-to-return, #unsubscribing-from-resources
var clientResourceScenarios = append(slices.Concat(dropFamily(), partialFamily()), []*engine.Scenario{
	unrequestedIgnored("RES-3", results.Must, sotw),
	unrequestedIgnored("DELTA-5", results.Should, delta),
	{
		ID:           "client/resources/empty-list-is-no-interest",
		Title:        "SotW: once the client asks for no endpoints at all, endpoints pushed anyway are not used",
		Requirements: []string{"RES-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.dropEndpoints()
			drop := c.Expect(EDS)
			require.Empty(c.Checking("UNSUB-1"), drop.Names(), "%s should drop the endpoints", drop)
			// An empty list after names means nothing, not everything.
			c.Respond(EDS, "2", c.Hop(EDS, 2))
			v2 := c.V("2", c.CL)
			c.Never(EDS, c.CL, "in use after the client asked for no endpoints", func(r observer.Resource) bool {
				return r.State == observer.Acked && r.Version == v2
			})
		}),
	},
	{
		ID:           "client/unsubscribe/last-resource",
		Title:        "Dropping the last resource of a type still sends a request",
		Requirements: []string{"UNSUB-1", "UNSUB-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.dropEndpoints() // the client loses interest in its only EDS name
			r := c.Expect(EDS)
			if r.Delta != nil {
				require.Equal(c, []string{c.CL}, r.Delta.GetResourceNamesUnsubscribe(), "%s should unsubscribe the endpoints", r)
			} else {
				require.Empty(c, r.Names(), "%s should ask for no endpoints at all", r)
			}
		}),
	},
	{
		ID:           "client/resources/full-name-set",
		Title:        "When the route adds a cluster, the SotW request names every cluster wanted, not only the new one",
		Requirements: []string{"RES-1"},
		Level:        results.Must,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			other := c.Extra("cluster-2")
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "2")
			r := c.Expect(CDS)
			require.ElementsMatch(c, []string{c.CL, other}, r.Names(), "%s should carry the full set of clusters the route uses", r)
		}),
	},
	{
		ID:           "client/resources/weighted-clusters-asked",
		Title:        "A route that splits traffic between clusters (weighted_clusters) makes the client ask for each of them",
		Requirements: []string{"RES-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			other := c.Extra("cluster-2")
			c.ExpectSubscribed(RDS, c.R)
			c.precondition(chainAckRule).ExpectAck(RDS, c.Respond(RDS, "1", wire.WeightedRoute(c.R, 1, c.CL, other)), "1")
			c.Checking("RES-1").AwaitSubscribed(CDS, c.CL, other)
		}),
	},
	{
		ID:           "client/resources/unsolicited-push",
		Title:        "An update the server pushes on its own is applied",
		Requirements: []string{"UPD-6", "GRP-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Update(CDS, "2", 2)
			c.RequireConfig(c.AwaitAcked(CDS, c.CL, "2"), c.Hop(CDS, 2))
		}),
	},
	{
		ID:           "client/resources/late-first-answer",
		Title:        "A first answer that comes late is waited for, on the same stream, and ACKed",
		Requirements: []string{"UPD-5"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			first := c.ExpectSubscribed(LDS, c.L)
			c.QuietNoStream(first.Stream.ID, "a new stream while the server has not answered yet")
			v := c.Checking("UPD-5")
			nonce := c.Respond(LDS, "1", c.Hop(LDS, 1))
			// A client that gave up on the stream just after the window
			// (a loaded machine delays it) answers on another one.
			if r := v.expectReply(LDS, nonce); r.Stream != first.Stream {
				v.Fatalf("%s comes on %s: the client left %s, where it asked, before its first answer came", r, r.Stream.Name, first.Stream.Name)
			} else {
				v.checkAck(r, nonce, "1")
			}
		}),
	},
	{
		ID:           "client/resources/silence-tolerated",
		Title:        "No reply to an ACK is normal: the client keeps its stream and its configuration",
		Requirements: []string{"UPD-5", "NONCE-10"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			// A hop answered late on a loaded machine is silence too: a
			// client that leaves its stream for it breaks UPD-5 as well.
			c.LeavingBreaks("UPD-5").Chain(EDS)
			last := c.Srv.Streams()
			c.NoStreamAfter(last[len(last)-1].ID, "a new stream while the server stays silent after the ACKs")
			for _, st := range last {
				require.NoError(c, st.Err(), "the client should keep %s open while the server is silent", st.Name)
			}
			c.AwaitAcked(LDS, c.L, "1")
		}),
	},
}...)

// xds_protocol#time-to-live (Resource wrappers in SotW)
var clientWrapperScenarios = []*engine.Scenario{
	{
		ID:           "client/resources/wrapped-in-sotw",
		Title:        "A client advertising resource-in-sotw unwraps Resource wrappers in SotW responses",
		Requirements: []string{"TTL-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.requireResourceInSotW()
			c.ExpectAck(CDS, c.RespondAnys(CDS, "2", mustAny(c, &discovery.Resource{Name: c.CL, Version: "2", Resource: mustAny(c, c.Hop(CDS, 2))})), "2")
			c.RequireConfig(c.AwaitAcked(CDS, c.CL, "2"), c.Hop(CDS, 2))
		}),
	},
	{
		ID:           "client/resources/heartbeat-keeps-resource",
		Title:        "A heartbeat (a Resource wrapper without a body) keeps the resource as it is",
		Requirements: []string{"TTL-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.requireResourceInSotW()
			// A resource with a TTL, then a heartbeat that renews it: the
			// wrapper names the resource at its version, without a body.
			ttl := durationpb.New(time.Minute)
			c.ExpectAck(CDS, c.RespondAnys(CDS, "2", mustAny(c, &discovery.Resource{Name: c.CL, Version: "2", Ttl: ttl, Resource: mustAny(c, c.Hop(CDS, 2))})), "2")
			// The heartbeat is what is checked: a client that dies of it
			// breaks TTL-6, not only ACK-1.
			c.Checking("TTL-6").ExpectAck(CDS, c.RespondAnys(CDS, "3", mustAny(c, &discovery.Resource{Name: c.CL, Version: "2", Ttl: ttl})), "3")
			c.Never(CDS, c.CL, "deleted by a heartbeat", func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
			c.RequireConfig(c.AwaitState(CDS, c.CL, observer.Acked), c.Hop(CDS, 2))
		}),
	},
}

// requireResourceInSotW skips the scenario unless the client advertised
// Resource wrappers in SotW (either spelling in use).
func (c *C) requireResourceInSotW() {
	features := c.First(CDS).Node().GetClientFeatures()
	if !wire.TakesResourceInSotW(features) {
		c.Skipf("the client does not advertise resource-in-sotw (client_features %q)", features)
	}
}

func mustAny(c *C, m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		c.Abortf("packing %T: %v", m, err)
	}
	return a
}
