package scenarios

import (
	"fmt"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#resource-warming... #reconnect (SotW: resend state; delta: initial_resource_versions)
var clientReconnectScenarios = append(reconnectFamilyClient, []*engine.Scenario{
	{
		ID:           "client/reconnect/last-accepted-versions",
		Title:        "On a new stream each type's first request carries the version last accepted",
		Requirements: []string{"VER-4"},
		Level:        results.Should,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
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
		Requirements: []string{"RES-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			c.Restart(codes.Unavailable)
			r := c.Expect(LDS)
			require.Equal(c, []string{c.L}, r.Names(), "%s should name the listener again: an empty request is a wildcard subscription", r)
		}),
	},
	{
		ID:           "client/reconnect/initial-resource-versions",
		Title:        "A delta reconnect that lists initial_resource_versions lists exactly the versions held",
		Requirements: []string{"DELTA-6", "DELTA-7"},
		Level:        results.Must,
		Variants:     delta,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.Update(CDS, "2", 2)
			c.Restart(codes.Unavailable)
			for _, hop := range c.hops(1) {
				// The versions of the resources, not of the responses:
				// the fake server's differ (fakeserver.ResourceVersion).
				want := map[string]string{hop.name: c.V("1", hop.name)}
				if hop.t.URL == CDS.URL {
					want[hop.name] = c.V("2", hop.name)
				}
				r := c.ExpectSubscribed(hop.t, hop.name)
				got := r.Delta.GetInitialResourceVersions()
				if len(got) == 0 {
					// The client may leave it out and have everything resent.
					c.Logf("classification: %s reconnects without initial_resource_versions", hop.t.Short)
					continue
				}
				require.Equal(c, want, got, "%s should list the versions it holds", r)
			}
		}),
	},
	{
		ID:           "client/reconnect/initial-versions-only-first",
		Title:        "initial_resource_versions is empty on the first stream and after the first request of a stream",
		Requirements: []string{"DELTA-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        fresh,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Restart(codes.Unavailable)
			lastOld := c.after[LDS.URL] // streams after this one are reconnected ones
			c.ExpectSubscribed(LDS, c.L)
			c.ExpectAck(LDS, c.Respond(LDS, "2", c.Hop(LDS, 2)), "2")
			// A later subscription change of a type the client holds
			// something of: the route names a second cluster, while the
			// first is held.
			other := c.Extra("cluster-2")
			c.ExpectSubscribed(RDS, c.R)
			c.ExpectSubscribed(CDS, c.CL) // the first of the new stream
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "2")
			c.AwaitSubscribed(CDS, other) // delta: the change alone
			for _, st := range c.Srv.Streams() {
				seen := map[string]bool{}
				for _, r := range st.Requests() {
					if st.ID > lastOld && !seen[r.TypeURL()] {
						seen[r.TypeURL()] = true
						continue // the first of its type on a reconnected stream may carry them
					}
					seen[r.TypeURL()] = true
					require.Empty(c, r.Delta.GetInitialResourceVersions(), "%s must not carry initial_resource_versions", r)
				}
			}
		}),
	},
	{
		ID:           "client/reconnect/keeps-config",
		Title:        "A server closing the stream is normal: the client keeps its configuration while reconnecting",
		Requirements: []string{"RECONN-2", "RECONN-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.Restart(codes.OK)
			c.Expect(LDS) // the client is back, and gets no answer
			v1 := c.V("1", c.L)
			c.Never(LDS, c.L, "lost while the server does not answer", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != v1
			})
			c.AwaitAcked(CDS, c.CL, "1")
		}),
	},
	{
		ID:    "client/reconnect/after-outage",
		Title: "After its server was unreachable for a while (connections refused), the client connects again, asks for its resources and keeps them meanwhile",
		// RECONN-2: a stream the server ended after responses is normal,
		// and the client reconnects, also when its first attempt to
		// connect again fails, as it does while a management server
		// restarts. The outage lasts until the client tried once; the
		// wait for it to come back covers gRPC's connection backoff.
		Requirements: []string{"RECONN-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Outage(1)
			v := c.Checking("RECONN-2")
			v.AwaitReconnect()
			v.ExpectSubscribed(LDS, c.L)
		}),
	},
	{
		ID:           "client/reconnect/backoff",
		Title:        "Streams that fail before any response are retried with growing waits, and promptly again once a stream had a response",
		Requirements: []string{"RECONN-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			// Three streams in a row fail at once, before any response:
			// the waits before the next ones must grow (with jitter
			// allowed: the third at least half again the first). A wait is
			// from the end of one stream to the opening of the next: the
			// harness's own time ending a stream is not the client's. Each
			// wait, read off the harness's clock, may be off by as long as
			// the harness was stalled around it: a failure stands only if
			// it holds for every reading the stalls allow (backoffWait).
			var waits []backoffWait
			for range 3 {
				waits = append(waits, c.restartTimed(codes.Unavailable))
			}
			first, third := waits[0], waits[2]
			v := c.Checking("RECONN-1")
			// A pass must hold for every reading the stalls allow too: a
			// stalled harness reads a wait long, and a client that does
			// not back off must not pass because the machine was slow.
			switch {
			case third.least() >= first.most()*3/2:
			case third.most() < first.least()*3/2:
				v.Errorf("the waits between failing streams do not grow: %v, then %v, then %v", first, waits[1], third)
			default:
				v.Doubt("RECONN-1", "the third wait between failing streams against half again the first", third.took, first.took*3/2, first.lag.Add(third.lag))
			}
			// A stream with a response resets the backoff: after it ends,
			// the client is back sooner than the last wait.
			c.ExpectSubscribed(LDS, c.L)
			c.ExpectAck(LDS, c.Respond(LDS, "1", c.Hop(LDS, 1)), "1")
			back := c.restartTimed(codes.Unavailable)
			switch {
			case back.most() < third.least():
			case back.least() >= third.most():
				v.Errorf("after a stream that had a response the client came back only after %v, no sooner than after the last failing stream (%v)", back, third)
			default:
				v.Doubt("RECONN-1", "the wait after a stream that had a response against the last failing stream's", back.took, third.took, back.lag.Add(third.lag))
			}
		}),
	},
}...)

// backoffWait is how long a client waited before opening its next stream,
// as the harness read it, and the harness's lag around it: the reading
// may be off by up to that lag either way.
type backoffWait struct {
	took time.Duration
	lag  engine.LagStats
}

func (w backoffWait) least() time.Duration { return max(w.took-w.lag.Total, 0) }
func (w backoffWait) most() time.Duration  { return w.took + w.lag.Total }

func (w backoffWait) String() string {
	if w.lag.Total == 0 {
		return w.took.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%v (the harness stalled for %v around it)", w.took.Round(time.Millisecond), w.lag.Total.Round(time.Millisecond))
}

// restartTimed ends the client's live LDS stream with code, waits for the
// next one, and returns how long the client waited in between, with the
// harness's lag from just before the stream was ended to the new one.
func (c *C) restartTimed(code codes.Code) backoffWait {
	old := c.Stream(LDS)
	before := time.Now()
	c.Restart(code)
	next := c.Stream(LDS)
	return backoffWait{took: next.Opened.Sub(old.Ended()), lag: c.LagIn(before, next.Opened)}
}
