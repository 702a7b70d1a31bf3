package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// The families of this file span the core dimensions of
// docs/state-space.md on the client side: what the client does with a
// resource it dropped when the server sends news of it, a NACK sent after
// the subscription changed, what the request after a response that
// covered part of what was asked names, and what a new stream asks for
// while names are still pending.

// dropEvent is one row of the table of what a server may send about a
// cluster the client dropped (its route no longer uses it): each is news
// of a resource the client no longer asks for, which it answers as any
// response and otherwise ignores: it does not use the cluster, and does
// not ask for it again.
type dropEvent struct {
	id, words string
	variants  []wire.Variant
	// rules are the rule the event checks in SotW and in delta.
	sotwRule, deltaRule string
	// happen sends the event's responses about other, each checked by ack.
	happen func(c *C, other string, ack func(nonce, version string))
}

var dropEvents = []dropEvent{
	{"update-after-drop", "an update of it", allVariants, "RES-3", "DELTA-5", func(c *C, other string, ack func(string, string)) {
		ack(c.respondClusters("3", wire.ClientCluster(other, 3)), "3")
	}},
	// A SotW deletion is an omission from the next full state, which
	// cannot name a resource the client no longer asks for: only delta's
	// removed_resources can.
	{"removal-after-drop", "its removal", delta, "DEL-3", "DEL-3", func(c *C, other string, ack func(string, string)) {
		ack(c.Remove(CDS, "3", other), "3")
	}},
	{"recreation-after-drop", "its deletion and re-creation", allVariants, "RES-3", "DELTA-5", func(c *C, other string, ack func(string, string)) {
		if c.Variant.IsDelta() {
			ack(c.Remove(CDS, "3", other), "3")
		} else {
			ack(c.respondClusters("3"), "3") // the full state without it
		}
		ack(c.respondClusters("4", wire.ClientCluster(other, 4)), "4")
	}},
}

// respondClusters sends a CDS response at version carrying extra, and, in
// SotW, where a CDS response is the full state, the chain's cluster at
// revision 2 with them. It returns the nonce.
func (c *C) respondClusters(version string, extra ...proto.Message) string {
	if c.Variant.IsDelta() {
		return c.RespondDelta(CDS, version, extra)
	}
	return c.Respond(CDS, version, append([]proto.Message{c.Hop(CDS, 2)}, extra...)...)
}

// dropFamily is the table of dropEvents, in the variants each applies to.
func dropFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, e := range dropEvents {
		rules := []string{e.sotwRule, e.deltaRule}
		if e.sotwRule == e.deltaRule {
			rules = rules[:1]
		}
		out = append(out, &engine.Scenario{
			ID:           "client/unsubscribe/" + e.id,
			Title:        fmt.Sprintf("After the client dropped a cluster, %s is ACKed and otherwise ignored: the cluster is neither used nor asked for again", e.words),
			Requirements: rules,
			Level:        results.Must,
			Variants:     e.variants,
			Run: ClientScript(func(c *C) {
				other := c.twoClusters()
				// The route goes back to the chain's cluster alone, and the
				// client drops the other: what the scenario rests on.
				ack := c.precondition(chainAckRule)
				ack.ExpectAck(RDS, ack.Respond(RDS, "2", wire.ClientRoute(c.R, c.CL, 2)), "2")
				c.precondition("DEL-6").AwaitDropped(CDS, other)
				v := c.Checking(c.either(e.sotwRule, e.deltaRule))
				if c.Observable() {
					v.Never(CDS, other, "in use after the client dropped it", func(r observer.Resource) bool { return r.State == observer.Acked })
				}
				e.happen(c, other, func(nonce, version string) {
					r := v.ExpectAck(CDS, nonce, version)
					if r.SotW != nil {
						require.Equal(v, []string{c.CL}, r.Names(), "%s answers news of %s, which the client dropped: it still asks for the chain's cluster alone", r, other)
					} else {
						require.NotContains(v, r.Delta.GetResourceNamesSubscribe(), other, "%s answers news of %s, which the client dropped: it must not subscribe to it again", r, other)
					}
				})
				v.NeverAsksFor(CDS, other, fmt.Sprintf("the client dropped %s: news of it is no reason to ask for it again", other))
			}),
		})
	}
	return out
}

// NeverAsksFor checks, from now until the pair ends (its trailing quiet
// window included), that no request of t on the live stream asks for name
// (SotW: names it; delta: subscribes to it); why says what such a request
// would mean. It is a watch: the body goes on at once, and it reads the
// requests of t from then on, so the body must not read them after it.
func (c *C) NeverAsksFor(t wire.Type, name, why string) {
	rule := c.ruleOr("")
	st := c.Stream(t)
	c.watch(func(ctx context.Context) bool {
		for {
			r, err := st.Next(ctx, t)
			switch {
			case ctx.Err() != nil:
				return false
			case errors.Is(err, fakeserver.ErrTimeout):
				continue
			case err != nil:
				return false // the stream ended; the watch ends with it
			}
			if r.SotW != nil && slices.Contains(r.Names(), name) || r.Delta != nil && slices.Contains(r.Delta.GetResourceNamesSubscribe(), name) {
				c.T.Failf(rule, "%s: the client sent %s, which asks for %s", why, r, name)
				return true
			}
		}
	})
}

// partialAnswer is one row of the table of responses that carry part of
// what the client asked for: the chain's cluster (or its endpoints)
// without the second one. The client's answer still names everything it
// wants (SotW) or drops nothing (delta), and it takes the rest when it
// comes.
type partialAnswer struct {
	id string
	t  wire.Type
}

var partialAnswers = []partialAnswer{
	{"partial-answer-clusters", CDS},
	{"partial-answer-endpoints", EDS},
}

// partialFamily is the table of partialAnswers.
func partialFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, p := range partialAnswers {
		out = append(out, &engine.Scenario{
			ID:           "client/resources/" + p.id,
			Title:        fmt.Sprintf("The ACK of a %s response that carries one of two names asked for still asks for both, and the other is taken when it comes", p.t.Short),
			Requirements: []string{"RES-1", "DELTA-2"},
			Level:        results.Must,
			Variants:     allVariants,
			Run: ClientScript(func(c *C) {
				var other string
				if p.t.URL == CDS.URL {
					other = c.routeToTwoClusters()
				} else {
					other = c.twoClusters()
					c.precondition("RES-1").AwaitSubscribed(EDS, c.CL, other)
				}
				v := c.Checking(c.either("RES-1", "DELTA-2"))
				askedForBoth := func(r *fakeserver.Request, what string) {
					if r.SotW != nil {
						require.ElementsMatch(v, []string{c.CL, other}, r.Names(), "%s answers %s: it still asks for both names the client wants", r, what)
						return
					}
					require.Empty(v, r.Delta.GetResourceNamesUnsubscribe(), "%s answers %s: the client still wants both names, so it unsubscribes none", r, what)
				}
				n := c.Respond(p.t, "1", c.resourceNamed(p.t, c.CL, 1))
				askedForBoth(v.ExpectAck(p.t, n, "1"), fmt.Sprintf("a response that carried %s alone", c.CL))
				// The rest: SotW clusters are a full state, with the chain's.
				rest := []proto.Message{c.resourceNamed(p.t, other, 1)}
				if p.t.Wildcard && !c.Variant.IsDelta() {
					rest = append(rest, c.resourceNamed(p.t, c.CL, 1))
				}
				askedForBoth(v.ExpectAck(p.t, c.Respond(p.t, "2", rest...), "2"), fmt.Sprintf("the response that brought %s", other))
			}),
		})
	}
	return out
}

// clientNackScenariosCore are the scenarios about a NACK sent after the
// subscription changed (the requests after a NACK: client/nonce/latest-
// after-nack).
var clientNackScenariosCore = []*engine.Scenario{
	{
		ID:           "client/nack/after-subscription-change",
		Title:        "SotW: a NACK sent after the subscription grew names the whole new set and carries the version last accepted",
		Requirements: []string{"RES-1", "ACK-3"},
		Level:        results.Must,
		// A delta NACK carries neither names nor a version: what changes
		// the subscription goes in its lists (client/delta/ack-shape).
		Variants: sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			other := c.Extra("cluster-2")
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "2")
			c.AwaitSubscribed(CDS, c.CL, other)
			// Both clusters invalid: a client that uses the valid
			// resources of a NACKed response (ACK-8, gRFC A46; grpc-js and
			// C-core do) moves its version with them, which says nothing
			// of what a NACK of a whole response carries.
			n := c.Respond(CDS, "2", wire.InvalidCluster(c.CL, 2), wire.InvalidCluster(other, 2))
			// ExpectNack holds the NACK's names to the request before it
			// (RES-1); the whole set and the version are checked here.
			nack := c.Checking("ACK-3").ExpectNack(CDS, n)
			require.ElementsMatch(c.Checking("RES-1"), []string{c.CL, other}, nack.Names(), "%s NACKs after the client asked for both clusters: it names both", nack)
			require.Equal(c.Checking("ACK-3"), "1", nack.Version(), "%s should carry version 1, the last accepted", nack)
		}),
	},
}

// resubscribeAfterReconnect checks, type by type in chain order, that the
// first request of each type on the new stream asks for want and, in
// delta, lists in initial_resource_versions at most the versions held.
func (c *C) resubscribeAfterReconnect(want, held map[string][]string) {
	v := c.Checking(c.either("RECONN-3", "DELTA-7"))
	for _, hop := range c.hops(1) {
		r := v.ExpectSubscribed(hop.t, want[hop.t.URL]...)
		if r.Delta == nil {
			continue
		}
		got := r.Delta.GetInitialResourceVersions()
		if len(got) == 0 {
			continue // the client may leave it out and have everything resent
		}
		versions := map[string]string{}
		for _, n := range held[hop.t.URL] {
			versions[n] = c.V("1", n)
		}
		require.Equal(c.Checking("DELTA-6"), versions, got, "%s should list the versions it holds, and nothing it never received", r)
	}
}

// reconnectFamilyClient are the reconnect scenarios that differ in what
// the client had received when the stream broke: the whole chain, or part
// of it, some names still pending.
var reconnectFamilyClient = []*engine.Scenario{
	{
		ID:           "client/reconnect/resubscribes-everything",
		Title:        "On a new stream the client asks again for every resource it needs",
		Requirements: []string{"RECONN-3", "DELTA-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.Restart(codes.Unavailable)
			want := map[string][]string{}
			for _, hop := range c.hops(1) {
				want[hop.t.URL] = []string{hop.name}
			}
			c.resubscribeAfterReconnect(want, want)
		}),
	},
	{
		ID:           "client/reconnect/resubscribes-pending",
		Title:        "On a new stream the client asks again also for what it asked for and never received",
		Requirements: []string{"RECONN-3", "DELTA-7", "DELTA-6"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			other := c.routeToTwoClusters()
			// One cluster of two comes; its endpoints are asked for and
			// never sent: the second cluster and the endpoints are pending.
			ack := c.precondition(chainAckRule)
			ack.ExpectAck(CDS, ack.Respond(CDS, "1", c.Hop(CDS, 1)), "1")
			c.precondition("RES-1").AwaitSubscribed(EDS, c.CL)
			c.Restart(codes.Unavailable)
			c.resubscribeAfterReconnect(map[string][]string{
				LDS.URL: {c.L}, RDS.URL: {c.R}, CDS.URL: {c.CL, other}, EDS.URL: {c.CL},
			}, map[string][]string{
				LDS.URL: {c.L}, RDS.URL: {c.R}, CDS.URL: {c.CL},
			})
		}),
	},
}
