package scenarios

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// The calibration of the client's status view (OBS-1). Many client
// verdicts rest on the view showing a state: a pair that waits for a
// resource to be shown DOES_NOT_EXIST, or watches that it never is, can
// only be judged by a view that shows that state at all. A view that
// never does would fail the first kind under their own rules (DNE-1,
// TTL-2, ...) and pass the second on no evidence. So before those pairs
// run, one pair per state and variant brings the client to the state by
// a path of its own, independent of the rules it gates, and reads the
// view: the engine runs these pairs first (engine.Scenario.First), and
// the client target (targets/calibration.go) blocks the pairs resting on
// a state the view was found not to show by OBS-1, naming --status-lacks,
// the declaration that turns them into skips.
//
// The paths avoid the timers the gated scenarios are about: a deleted
// listener, not a does-not-exist timer; an invalid listener; an error
// the server sends. The listener is the root of the gRPC chain, so each
// path takes the fewest steps, and one a gRPC-profile client follows in
// every variant. They run in every variant, as the scenarios they gate
// do: a client's SotW and delta paths (omission, removed_resources) are
// different code, and a view right for one says nothing of the other.
var clientCalibrationScenarios = []*engine.Scenario{
	calibrating(observer.DoesNotExist, "shows-does-not-exist",
		"The status view shows a listener the server deleted as DOES_NOT_EXIST",
		[]string{"OBS-1"}, nil, func(c *C) {
			c.Chain(LDS)
			c.AwaitAcked(LDS, c.L, "1")
			// SotW deletes a listener by leaving it out (DEL-4), delta by
			// removed_resources (DEL-2): the path each variant has.
			path := c.either("DEL-4", "DEL-2")
			var nonce string
			if c.Variant.IsDelta() {
				nonce = c.Remove(LDS, "2", c.L)
			} else {
				nonce = c.Respond(LDS, "2")
			}
			c.Checking(path).ExpectAck(LDS, nonce, c.either("2", ""))
			held := c.V("1", c.L)
			c.showsAfter(LDS, c.L, observer.DoesNotExist, "a response that deleted it", path, func(r observer.Resource) bool {
				return r.State == observer.Acked && r.Version == held
			})
		}),
	calibrating(observer.Nacked, "shows-nacked",
		"The status view shows a listener the client rejected as NACKED",
		[]string{"OBS-1"}, nil, func(c *C) {
			c.Chain(LDS)
			// A client that takes the invalid listener applied it (ACK-7):
			// it never came to reject anything.
			c.Checking("ACK-7").ExpectNack(LDS, c.Respond(LDS, "2", wire.InvalidListener(c.L, 2)))
			c.showsAfter(LDS, c.L, observer.Nacked, "the NACK of an invalid version of it", "", nil)
		}),
	calibrating(observer.ReceivedError, "shows-received-error",
		"The status view shows a listener the server sent an error for as RECEIVED_ERROR",
		[]string{"OBS-1", "ERR-12"}, []engine.Need{takesErrors}, func(c *C) {
			c.AwaitSubscribed(LDS, c.L)
			// The error is the response's only content, for a listener
			// not yet sent: no deletion, no timer, nothing else to show.
			// A client that claims resource errors and rejects it never
			// took the error (ERR-5: it keeps the error it was sent).
			n := c.RespondErrors(LDS, "1", resourceError(c.L, codes.Unavailable))
			c.Checking("ERR-5").ExpectAck(LDS, n, "1")
			c.showsAfter(LDS, c.L, observer.ReceivedError, "a response with an error for it", "", nil)
		}),
}

// calibrating is the calibration of state: a First scenario of the
// client's status view, citing rules (OBS-1 first), needing the view to
// show state (so that a state declared lacking is not calibrated) and
// needs, in every variant.
func calibrating(state observer.State, id, title string, rules []string, needs []engine.Need, body func(c *C)) *engine.Scenario {
	return &engine.Scenario{
		ID: "client/status/" + id, Title: title, Requirements: rules, Level: results.Should,
		Variants: allVariants, Needs: with(observed, append(needs, targets.NeedStatus(state))...),
		First: true, Run: ClientScript(body),
	}
}

// ClientCalibrations are the calibrating scenarios of the client catalogue
// (Client), as the catalogue has them: what engine.WithCalibrations brings
// into a run of a selection, or of scenario files, whose pairs rest on
// them.
func ClientCalibrations() []*engine.Scenario {
	var out []*engine.Scenario
	for _, s := range Client() {
		if s.First {
			out = append(out, s)
		}
	}
	return out
}

// showsAfter reads the client's status view until it shows (t, name) in
// state, within the expect timeout; after says what should have brought it
// there. At the end, the view showing it otherwise, or no longer listing
// it, is a view that does not show state: a failure of the scenario's
// headline, OBS-1. kept, when not nil, tells a resource the client
// visibly kept as it was (still held at the version it had): the client
// never came to state, which is no fault of the view, and the pair is
// blocked by path, the rule the step to state rests on. A view that could
// not be read at all is an error: nothing was learnt.
func (c *C) showsAfter(t wire.Type, name string, state observer.State, after, path string, kept func(observer.Resource) bool) {
	ctx, cancel := c.untilExit()
	defer cancel()
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last observer.Resource
	var read, listed bool
	var lastErr error
	for {
		// No read outlasts the wait.
		rs, err := c.observe(ctx, max(deadline.Left(), time.Millisecond))
		if err == nil {
			read = true
			if last, listed = observer.Find(rs, t.URL, name); listed && last.State == state {
				return
			}
		} else {
			lastErr = err
		}
		if !deadline.Passed() {
			select {
			case <-tick.C:
				continue
			case <-ctx.Done():
				c.abortIfExited()
				c.fail("waiting for %s %s to be shown %s: %v", t.Short, name, state, ctx.Err())
			}
		}
		switch {
		case !read:
			c.Abortf("the client's status view could not be read after %s, so whether it shows %s is not known: %v", after, state, lastErr)
		case listed && kept != nil && kept(last):
			c.Block(path, "after %s, the client's status view still shows %s %s %s: the client kept it, so it never came to %s and the view could not be checked for it",
				after, t.Short, name, describe(last), state)
		case !listed:
			c.Fatalf("after %s, the client's status view no longer lists %s %s, where it should show it %s (a view that lists only what the client holds never shows that state)",
				after, t.Short, name, state)
		default:
			c.Fatalf("after %s, the client's status view shows %s %s %s, where it should show it %s", after, t.Short, name, describe(last), state)
		}
		return
	}
}
