package scenarios

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// A window about a peer's timer that the run's budget cuts shorter than
// the timer proves nothing: against a server that answers held polls
// early, after the cut window ended, and against the conformant reference
// alike, the long-poll check is inconclusive, never a pass, says why, and
// is not run again (a rerun cannot lengthen it).
func TestTimerWindowShorterThanTheHoldProvesNothing(t *testing.T) {
	budget := engine.Timeouts{Expect: 2 * time.Second, Quiet: 200 * time.Millisecond, Scenario: 30 * time.Second, TimerBudget: time.Second}
	for _, faults := range [][]refserver.Fault{nil, {refserver.FaultRESTAnswersHeldPollEarly}} {
		rs := runTarget(t, targets.ServerOptions{Target: targets.BuiltinReference, Faults: faultNames(faults...)},
			engine.Config{Timeouts: budget}, engine.Selection{Run: []string{"server/rest/long-poll"}, Variants: []wire.Variant{wire.REST}})
		require.Len(t, rs, 1)
		r := rs[0]
		assert.Equal(t, results.Inconclusive, r.Outcome, "faults %v: %s", faults, r.Message)
		assert.Contains(t, r.Message, "proves nothing")
		require.NotNil(t, r.Timing)
		assert.Zero(t, r.Timing.Reruns, "a window too short for its timer is as short when run again")
		assert.True(t, slices.ContainsFunc(r.Timing.Checks, func(c results.TimingCheck) bool {
			return c.Verdict == results.TimingShort && c.Limit == targets.ReferenceRESTHold && c.Measured == time.Second
		}), "a short verdict with the hold and the window: %+v", r.Timing.Checks)
	}
}

// A server's stated hold sizes the window: the reference run with a 3 s
// hold (as --rest-hold configures it) answering held polls early, after
// 1.75 s, is caught, and a conformant one passes with the window covering
// the hold.
func TestLongPollWindowFollowsTheStatedHold(t *testing.T) {
	const hold = 3 * time.Second
	for _, faults := range [][]refserver.Fault{nil, {refserver.FaultRESTAnswersHeldPollEarly}} {
		rs := runTarget(t, targets.ServerOptions{Target: targets.BuiltinReference, Faults: faultNames(faults...), RESTHold: hold},
			engine.Config{Timeouts: engine.DefaultTimeouts}, engine.Selection{Run: []string{"server/rest/long-poll"}, Variants: []wire.Variant{wire.REST}})
		require.Len(t, rs, 1)
		r := rs[0]
		if faults == nil {
			assert.Equal(t, results.Pass, r.Outcome, r.Message)
			require.NotNil(t, r.Timing)
			assert.True(t, slices.ContainsFunc(r.Timing.Checks, func(c results.TimingCheck) bool {
				return c.Kind == results.TimingCovers && c.Limit == hold && c.Verdict == results.TimingPass && c.Measured >= hold
			}), "the window covered the 3 s hold: %+v", r.Timing.Checks)
			continue
		}
		assert.Equal(t, results.Fail, r.Outcome, r.Message)
		assert.Contains(t, r.RulesBroken, "REST-4")
		assert.Contains(t, r.Message, "inside the server's long-poll hold of 3s")
	}
}

// A REST client's stated refresh delay sizes the window that checks it
// waits for its poll outstanding: the reference client configured with a
// 2 s delay (as --rest-refresh configures it) that polls again at every
// one without waiting, after the 1.5 s quiet window, is caught; waiting,
// it passes with the window covering the delay.
func TestRESTPollWindowFollowsTheStatedRefresh(t *testing.T) {
	const refresh = 2 * time.Second
	for _, faults := range [][]refclient.Fault{nil, {refclient.FaultRESTTwoOutstanding}} {
		opts := referenceIn(targets.ProfileEnvoy, faults...)
		opts.RESTRefresh = refresh
		rs := runClientSuite(t, opts, engine.Config{Timeouts: engine.DefaultTimeouts}, engine.Selection{Run: []string{"client/rest/one-poll-outstanding"}})
		require.Len(t, rs, 1)
		r := rs[0]
		if faults == nil {
			assert.Equal(t, results.Pass, r.Outcome, r.Message)
			require.NotNil(t, r.Timing)
			assert.True(t, slices.ContainsFunc(r.Timing.Checks, func(c results.TimingCheck) bool {
				return c.Kind == results.TimingCovers && c.Limit == refresh && c.Verdict == results.TimingPass
			}), "the window covered the 2 s refresh delay: %+v", r.Timing.Checks)
			continue
		}
		assert.Equal(t, results.Fail, r.Outcome, r.Message)
		assert.Contains(t, r.RulesBroken, "REST-1")
	}
}
