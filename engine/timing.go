package engine

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
)

// Verdicts that rest on time. The harness reads every duration off its own
// clock, as its goroutines get to run: on a busy machine, or with hundreds
// of pairs at once, a reply read late looks like a reply sent late, and a
// window the harness watched while it could not run watched nothing. So a
// timing verdict weighs the harness's own lag in its window (internal/lag):
// a failure stands when the duration minus the lag still breaks the limit,
// a pass stands when the window minus the lag still covered what it had to,
// and anything the lag could explain either way is a doubt. A pair left
// with doubts and no failure runs again by itself (Config.Reruns), where
// the harness has nothing else to do; one still in doubt then is
// inconclusive, with the figures.

// maxTimingChecks bounds the timing verdicts a pair keeps in its result:
// a scenario takes a handful, but one looping over responses must not
// grow the report without bound.
const maxTimingChecks = 32

// Within judges a duration that had to stay within limit: took is what
// the harness measured between from and to (from taken before the cause,
// so that took is never shorter than what it measures). It fails rule
// when took exceeds limit by more than the harness's lag in [from, to]
// can explain, records a doubt when the lag could explain it, and reports
// whether it failed. what says in words what was timed ("the ACK of
// version 2").
func (t *T) Within(rule, what string, took, limit time.Duration, from, to time.Time) (failed bool) {
	c := results.TimingCheck{Rule: rule, What: what, Kind: results.TimingWithin, Measured: took, Limit: limit}
	st := lag.In(from, to)
	c.Lag, c.LagMax = st.Total, st.Max
	switch {
	case took <= limit:
		c.Verdict = results.TimingPass
	case took-st.Total > limit:
		c.Verdict = results.TimingFail
		t.Failf(rule, "%s took %s, more than %s%s", what, wording.Duration(took), wording.Duration(limit), lagClause(st))
		failed = true
	default:
		c.Verdict = results.TimingDoubt
	}
	t.recordTiming(c)
	return failed
}

// Covers judges a window [from, to] that had to cover need of time in
// which the harness could see what happened (a must-not-happen window
// that must outlast a peer's timer): it holds when the window minus what
// the harness's stalls took from it (lag.Stats.Lost: their total, but no
// more than a few times the longest) is at least need, and is a doubt
// otherwise, never a failure: a window too short proves nothing against
// the target. It reports whether the window held.
func (t *T) Covers(rule, what string, need time.Duration, from, to time.Time) bool {
	st := lag.In(from, to)
	c := results.TimingCheck{Rule: rule, What: what, Kind: results.TimingCovers, Measured: to.Sub(from), Limit: need,
		Lag: st.Lost(), LagMax: st.Max, Verdict: results.TimingPass}
	if c.Measured-c.Lag < need {
		c.Verdict = results.TimingDoubt
	}
	t.recordTiming(c)
	return c.Verdict == results.TimingPass
}

// StretchedNeed is what a window stretched over the harness's stalls
// (lag.NewDeadline) must be seen to cover for Covers: the whole window
// unless it hit its bound, less a tenth for stalls that came as it ended,
// which the stretch could not see coming.
func StretchedNeed(window time.Duration) time.Duration { return window * 9 / 10 }

// TimerWindow sizes a must-not-happen window about a peer's own protocol
// timer (a server's REST long-poll hold, a client's does-not-exist timer):
// such a window proves something only if it outlasts the timer, since what
// it watches for is what a peer would do when, or before, the timer fires.
// want is the window the check would watch (the timer and the margin the
// check needs); the window returned is want cut to the run's budget
// (Timeouts.TimerBudget, and the scenario timeout less twice the expect
// timeout, for the steps around the window). When that cut leaves it
// shorter than timer, the window is still watched (a violation seen in it
// stands), but a pass would claim what the window never saw: the pair
// records a "short" verdict, which leaves it inconclusive, not passed, and
// is not run again (running again cannot lengthen it). covers reports
// whether the window covers the timer.
func (t *T) TimerWindow(rule, what string, timer, want time.Duration) (window time.Duration, covers bool) {
	budget := max(min(t.Timeouts.TimerBudget, t.Timeouts.Scenario-2*t.Timeouts.Expect), 0)
	window = min(want, budget)
	if window >= timer {
		return window, true
	}
	t.recordTiming(results.TimingCheck{Rule: rule, What: what, Kind: results.TimingCovers, Measured: window, Limit: timer,
		Verdict: results.TimingShort})
	return window, false
}

// Doubt records a timing verdict the harness's own lag could explain
// either way, for a check that weighs the lag itself (LagIn): what it
// measured, against what, and the lag.
func (t *T) Doubt(rule, what string, measured, limit time.Duration, st LagStats) {
	t.recordTiming(results.TimingCheck{Rule: rule, What: what, Kind: results.TimingWithin, Measured: measured, Limit: limit,
		Lag: st.Total, LagMax: st.Max, Verdict: results.TimingDoubt})
}

// DoubtNow is Doubt that also ends the body: the harness was too late for
// what the scenario meant to show (it sent a heartbeat after the TTL it
// was to refresh had lapsed, say), so nothing after it could be judged.
// The pair has no verdict from this run; unless it already failed, it
// runs again by itself.
func (t *T) DoubtNow(rule, what string, measured, limit time.Duration, st LagStats) {
	t.Doubt(rule, what, measured, limit, st)
	runtime.Goexit()
}

// LagStats is how long the harness was stalled in a window, and its
// longest single stall: lag.Stats, named here for scenario code, which
// reaches the sampler only through the engine.
type LagStats = lag.Stats

// LagIn returns the harness's lag in [from, to], for a timing check that
// weighs it itself (a comparison of two durations, say): each duration
// the harness measured may be longer than what happened by up to the lag
// of its window.
func (t *T) LagIn(from, to time.Time) LagStats {
	return lag.In(from, to)
}

// lagClause is the part of a timing failure's message that gives the
// harness's lag: the failure stands even allowing for it.
func lagClause(st lag.Stats) string {
	if st.Total == 0 {
		return ""
	}
	return fmt.Sprintf(" (the harness itself was stalled for %s of that window, longest %s: late even allowing for that)",
		wording.Duration(st.Total), wording.Duration(st.Max))
}

func (t *T) recordTiming(c results.TimingCheck) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.timing) < maxTimingChecks || c.Verdict != results.TimingPass {
		t.timing = append(t.timing, c)
	}
}

// doubts returns the timing checks in doubt, for the harness's lag or a
// window too short for the timer it is about; t.mu must be held.
func (t *T) doubts() []results.TimingCheck {
	var out []results.TimingCheck
	for _, c := range t.timing {
		if c.Verdict == results.TimingDoubt || c.Verdict == results.TimingShort {
			out = append(out, c)
		}
	}
	return out
}

// shortWindow reports whether one of cs is a window the run's budget cut
// shorter than the timer it is about: running the pair again cannot help.
func shortWindow(cs []results.TimingCheck) bool {
	return slices.ContainsFunc(cs, func(c results.TimingCheck) bool { return c.Verdict == results.TimingShort })
}

// doubtHeadline is the first line of an inconclusive pair's message.
func doubtHeadline(cs []results.TimingCheck) string {
	if shortWindow(cs) {
		return "a window about a peer's own timer could not cover it within the run's budget, so the check proves nothing (raise --timer-budget, or --scenario-timeout):"
	}
	return "the harness's own lag could explain a timing verdict either way:"
}

// describeDoubts says, one line each, what the lag could explain, or
// which window was too short for its timer.
func describeDoubts(cs []results.TimingCheck) string {
	var lines []string
	for _, c := range cs {
		switch {
		case c.Verdict == results.TimingShort:
			lines = append(lines, fmt.Sprintf("%s: %s: the window could watch %s, shorter than the peer's timer of %s it is about: it proves nothing",
				c.Rule, c.What, wording.Duration(c.Measured), wording.Duration(c.Limit)))
			continue
		}
		switch c.Kind {
		case results.TimingCovers:
			lines = append(lines, fmt.Sprintf("%s: %s: the window of %s had to cover %s of the harness's time, but the harness was stalled for %s of it (longest %s)",
				c.Rule, c.What, wording.Duration(c.Measured), wording.Duration(c.Limit), wording.Duration(c.Lag), wording.Duration(c.LagMax)))
		default:
			lines = append(lines, fmt.Sprintf("%s: %s took %s against a limit of %s, but the harness was stalled for %s of that window (longest %s)",
				c.Rule, c.What, wording.Duration(c.Measured), wording.Duration(c.Limit), wording.Duration(c.Lag), wording.Duration(c.LagMax)))
		}
	}
	return strings.Join(lines, "\n")
}
