package scenarios

import (
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#deleting-resources, #knowing-when-a-requested-resource-does-not-exist
var clientDeletionScenarios = append(sotwAbsences(), []*engine.Scenario{
	{
		ID:           "client/deletion/delta-removed",
		Title:        "A resource in removed_resources is deleted",
		Requirements: []string{"DEL-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.AwaitAcked(CDS, c.CL, "1")
			c.ExpectAck(CDS, c.Remove(CDS, "2", c.CL), "")
			c.Checking("DEL-2").AwaitGone(CDS, c.CL)
		}),
	},
	{
		ID:           "client/deletion/delta-removed-among-updates",
		Title:        "A resource in removed_resources is deleted also when the response updates others",
		Requirements: []string{"DEL-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			other := c.twoClusters()
			c.ExpectAck(CDS, c.RespondDelta(CDS, "3", []proto.Message{wire.ClientCluster(other, 3)}, c.CL), "")
			c.Checking("DEL-2").AwaitGone(CDS, c.CL)
			c.AwaitAcked(CDS, other, "3")
		}),
	},
	{
		ID:           "client/deletion/delta-removed-together",
		Title:        "Every resource a response lists in removed_resources is deleted, not only the first",
		Requirements: []string{"DEL-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			other := c.twoClusters()
			c.ExpectAck(CDS, c.Remove(CDS, "3", other, c.CL), "")
			v := c.Checking("DEL-2")
			v.AwaitGone(CDS, other)
			v.AwaitGone(CDS, c.CL)
		}),
	},
	{
		ID:           "client/deletion/delta-omission-kept",
		Title:        "Delta: a resource a response leaves out stays as it was",
		Requirements: []string{"GRP-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			other := c.twoClusters()
			c.Update(CDS, "3", 3) // the chain's cluster only
			v2 := c.V("2", other)
			c.Checking("GRP-3").Never(CDS, other, "deleted or changed by a response that left it out", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != v2
			})
			c.AwaitAcked(CDS, c.CL, "3")
		}),
	},
	{
		ID:           "client/deletion/unreferenced-route-dropped",
		Title:        "A route no listener refers to any more is dropped from the subscription",
		Requirements: []string{"DEL-6"},
		Level:        results.May,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(RDS)
			other := c.Extra("route-2")
			c.ExpectAck(LDS, c.Respond(LDS, "2", wire.ClientListener(c.L, other, 2)), "2")
			c.Checking("DEL-6").AwaitDropped(RDS, c.R)
		}),
	},
	{
		ID:           "client/deletion/delta-unknown-removal",
		Title:        "Removing a name the client does not know is harmless",
		Requirements: []string{"DEL-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Checking("DEL-3").ExpectAck(CDS, c.Remove(CDS, "2", c.Extra("never-sent")), "")
			c.AwaitAcked(CDS, c.CL, "1")
		}),
	},
}...)

// twoClusters serves the chain up to a route using the chain's cluster and
// a second one, and both clusters at version 2 in one response; it returns
// the second cluster's name. Like the chain, it is a precondition: valid
// resources the client must take, each failure blocking the pair by the
// rule its step rests on (serveHop).
func (c *C) twoClusters() string {
	other := c.routeToTwoClusters()
	ack := c.precondition(chainAckRule)
	ack.ExpectAck(CDS, ack.Respond(CDS, "2", c.Hop(CDS, 2), wire.ClientCluster(other, 2)), "2")
	return other
}

// routeToTwoClusters serves the chain's listener, then a route using the
// chain's cluster and a second one, and waits for the client to ask for
// both clusters; it returns the second cluster's name. A precondition, as
// twoClusters.
func (c *C) routeToTwoClusters() string {
	c.Chain(LDS)
	other := c.Extra("cluster-2")
	ask, ack := c.precondition("RES-1"), c.precondition(chainAckRule)
	ask.ExpectSubscribed(RDS, c.R)
	ack.ExpectAck(RDS, ack.Respond(RDS, "1", wire.ClientRoutes(c.R, 1, c.CL, other)), "1")
	ask.AwaitSubscribed(CDS, c.CL, other)
	return other
}

// xds_protocol#knowing-when-a-requested-resource-does-not-exist
var clientMissingScenarios = []*engine.Scenario{
	{
		ID:           "client/dne/timer",
		Title:        "A requested resource the server never sends is reported as not existing after the client's timer, not before",
		Requirements: []string{"DNE-1", "DNE-6"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(showsMissing, targets.NeedFreshClient),
		Run: ClientScript(func(c *C) {
			asked := c.ExpectSubscribed(LDS, c.L).Arrived
			timer := c.target.Options().DNETimer
			v := c.Checking(c.either("DNE-1", "DNE-6"))
			v.NeverWithin(timer/2, LDS, c.L, "as not existing long before the timer", c.goneBefore(asked, timer/2, "the client asked for it", nil))
			v.Await(LDS, c.L, "as DOES_NOT_EXIST", timer, isMissing)
		}),
	},
	{
		ID:           "client/dne/absence-not-proof",
		Title:        "In SotW a cluster missing from one CDS response, before it ever arrived, is not taken as not existing",
		Requirements: []string{"DNE-2"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			// The client's does-not-exist timer for the second cluster
			// starts no earlier than now: it may rightly show it missing
			// once the timer could have run from here.
			asked := time.Now()
			other := c.routeToTwoClusters()
			// This response may answer a request made before the client
			// wanted the second cluster: its absence proves nothing.
			c.ExpectAck(CDS, c.Respond(CDS, "1", c.Hop(CDS, 1)), "1")
			// Blocking: the next response delivers the cluster, which
			// would end a wrong "does not exist" before a watch saw it.
			c.QuietViewBefore(asked.Add(c.target.Options().DNETimer), CDS, other, "as not existing after one response without it", isMissing)
			c.ExpectAck(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2), wire.ClientCluster(other, 2)), "2")
			c.AwaitAcked(CDS, other, "2")
		}),
	},
	{
		ID:           "client/dne/late-resource-accepted",
		Title:        "A resource that arrives after the client gave up on it is accepted",
		Requirements: []string{"DNE-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(showsMissing, targets.NeedFreshClient),
		Run: ClientScript(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.Checking(c.either("DNE-1", "DNE-6")).Await(LDS, c.L, "as DOES_NOT_EXIST", c.target.Options().DNETimer, isMissing)
			v := c.Checking("DNE-4")
			v.ExpectAck(LDS, c.Respond(LDS, "1", c.Hop(LDS, 1)), "1")
			v.AwaitAcked(LDS, c.L, "1")
		}),
	},
	{
		ID:    "client/dne/timer-restarts-on-reconnect",
		Title: "A resource still unanswered when the stream breaks gets its full timer again from the new stream's request",
		// DNE-7: the timer starts once the request is sent on a connected
		// stream; a stream that breaks takes its timers with it (gRFC
		// A57), so the new stream's request starts them afresh. The break
		// comes a sixth of the timer after the first request: a client
		// whose timer ran on through it gives the resource up that much
		// early, and the watch ends a twelfth of the timer before a
		// restarted timer could rightly fire. The pair lasts the timer and
		// a twelfth of it, no longer than the other reconnect pairs about
		// the timer, which set the floor of a run.
		Requirements: []string{"DNE-7"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(showsMissing, targets.NeedFreshClient),
		Run: ClientScript(func(c *C) {
			timer := c.target.Options().DNETimer
			asked := c.ExpectSubscribed(LDS, c.L).Arrived
			c.Checking(c.either("DNE-1", "DNE-6")).NeverWithin(timer/6, LDS, c.L, "as not existing long before the timer", c.goneBefore(asked, timer/6, "the client asked for it", nil))
			c.Restart(codes.Unavailable)
			again := c.ExpectSubscribed(LDS, c.L).Arrived // on the new stream, never answered
			c.Checking("DNE-7").NeverWithin(timer*11/12, LDS, c.L, "as not existing before a timer started by the new stream's request could fire",
				c.goneBefore(again, timer*11/12, "the new stream asked for it", nil))
		}),
	},
	{
		ID:           "client/dne/held-survive-reconnect",
		Title:        "After a reconnect, resources the client holds are not reported missing while the new stream gets no answer",
		Requirements: []string{"DNE-7"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Restart(codes.Unavailable)
			c.Expect(LDS) // back, and never answered
			timer := c.target.Options().DNETimer
			// The listener: the root of every watch, so a client that gave
			// it up could not hide that by dropping its watch.
			c.Checking("DNE-7").NeverThrough(timer, timer+c.Timeouts.Quiet, dneTimerWords(timer), LDS, c.L, "as not existing, though it is held", isMissing)
		}),
	},
}

// dneTimerWords names the client's does-not-exist timer, for a window
// that must outlast it.
func dneTimerWords(timer time.Duration) string {
	return "the client's does-not-exist timer of " + wording.Duration(timer) + " (--dne-timer)"
}

// showsMissing says the scenario's verdict rests on the status view
// reporting DOES_NOT_EXIST: a resource the client never got, or that it
// still holds, is told apart from one given up on only by that state.
var showsMissing = with(observed, targets.NeedStatus(observer.DoesNotExist))

// isMissing is the client reporting a resource as not existing.
func isMissing(r observer.Resource) bool { return r.State == observer.DoesNotExist }

// sotwAbsences generate the scenarios about a SotW response that leaves
// out a resource the client holds: for LDS and CDS that deletes it (DEL-4),
// for RDS and EDS it changes nothing (DEL-5, GRP-3); in a response with
// nothing else, and in one that carries another resource of the type.
func sotwAbsences() []*engine.Scenario {
	var out []*engine.Scenario
	for _, a := range []struct {
		what    string
		t       wire.Type
		deletes bool
		title   string
	}{
		{"listener", LDS, true, "In SotW a listener missing from an LDS response is deleted"},
		{"cluster", CDS, true, "In SotW a cluster missing from a CDS response is deleted"},
		{"route", RDS, false, "In SotW a route missing from an RDS response is not deleted"},
		{"endpoints", EDS, false, "In SotW endpoints missing from an EDS response are not deleted"},
	} {
		for _, others := range []bool{false, true} {
			out = append(out, sotwAbsence(a.what, a.t, a.deletes, others, a.title))
		}
	}
	return out
}

// sotwAbsence is one of sotwAbsences; with others, the response carries
// another resource of the type (which the client did not ask for).
func sotwAbsence(what string, t wire.Type, deletes, others bool, title string) *engine.Scenario {
	s := &engine.Scenario{
		ID:           "client/deletion/sotw-" + what + "-absence",
		Title:        title,
		Requirements: []string{"DEL-4"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(t)
			name := c.NameOf(t)
			c.AwaitAcked(t, name, "1")
			var rest []proto.Message
			if others {
				rest = append(rest, c.resourceNamed(t, c.Extra("other"), 1))
			}
			c.ExpectAck(t, c.Respond(t, "2", rest...), "2")
			if deletes {
				c.Checking("DEL-4").AwaitGone(t, name)
				return
			}
			c.Never(t, name, "deleted by omission", isMissing)
			c.RequireConfig(c.AwaitState(t, name, observer.Acked), c.Hop(t, 1))
		}),
	}
	if others {
		s.ID += "-among-others"
		s.Title += ", also when the response carries others"
	}
	if !deletes {
		s.ID = strings.Replace(s.ID, "-absence", "-absence-kept", 1)
		s.Requirements = []string{"DEL-5", "GRP-3"}
	}
	return s
}
