package targets

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// The client's status view is calibrated before it is judged on: a
// scenario marked First that needs NeedStatus(state) is the calibration
// of state. Its pairs run before the rest and bring the client to state
// by a path of their own (a deletion, an invalid resource, a resource
// error), then read whether the view shows it. Every other scenario that
// needs NeedStatus(state), and cites none of the calibration's rules (the
// rules about the view itself, OBS-1 and ERR-12, which those scenarios
// judge as they always did), rests on that calibration in the same
// variant: when it found a view that never shows the state, the pair is
// blocked by the view's rule and says how to declare it (--status-lacks);
// when it could not bring the client to the state, the pair is blocked by
// what stopped it, or errors with it. A state declared lacking
// (ClientOptions.StatusLacks) is not calibrated: its calibration and the
// pairs resting on it are skipped, as Lacks says.

var _ engine.Calibration = (*Clients)(nil)

// calibrations is what the calibration pairs of a run found out, by pair
// name (engine.Pair.FullName).
type calibrations struct {
	mu     sync.Mutex
	learnt map[string]calibrated
}

// calibrated is the result of one calibration pair.
type calibrated struct {
	cal *engine.Scenario
	r   results.Result
}

// statusNeedOf is the state s needs the status view to show, if s
// needs exactly one (a calibration calibrates one state).
func statusNeedOf(s *engine.Scenario) (observer.State, bool) {
	var states []observer.State
	for _, n := range s.Needs {
		if st, ok := strings.CutPrefix(string(n), statusNeedPrefix); ok {
			states = append(states, observer.State(st))
		}
	}
	if len(states) != 1 {
		return "", false
	}
	return states[0], true
}

// RestsOn implements engine.Calibration: s rests on cal when cal
// calibrates a state s needs the view to show, and s does not itself
// judge the rules cal checks (the view's own rules).
func (c *Clients) RestsOn(s, cal *engine.Scenario) bool {
	state, ok := statusNeedOf(cal)
	if !ok || !cal.First || s.First || !slices.Contains(s.Needs, NeedStatus(state)) {
		return false
	}
	return !slices.ContainsFunc(s.Requirements, func(rule string) bool { return slices.Contains(cal.Requirements, rule) })
}

// Learn implements engine.Calibration.
func (c *Clients) Learn(p engine.Pair, r results.Result) {
	if _, ok := statusNeedOf(p.Scenario); !ok {
		return
	}
	c.calibrations.mu.Lock()
	defer c.calibrations.mu.Unlock()
	if c.calibrations.learnt == nil {
		c.calibrations.learnt = map[string]calibrated{}
	}
	c.calibrations.learnt[p.FullName()] = calibrated{cal: p.Scenario, r: r}
}

// Unmet implements engine.Calibration: the first calibration s rests on in
// v whose result holds the pair back. A calibration that did not run in v
// (not selected, skipped) holds nothing back: the pair is judged as it
// would be without one.
func (c *Clients) Unmet(s *engine.Scenario, v wire.Variant) *engine.Failure {
	c.calibrations.mu.Lock()
	var learnt []calibrated
	for _, k := range slices.Sorted(maps.Keys(c.calibrations.learnt)) {
		if cd := c.calibrations.learnt[k]; cd.r.Variant == v.String() && c.RestsOn(s, cd.cal) {
			learnt = append(learnt, cd)
		}
	}
	c.calibrations.mu.Unlock()
	for _, cd := range learnt {
		if f := cd.holdsBack(); f != nil {
			return f
		}
	}
	return nil
}

// holdsBack is what the calibration's result makes of the pairs resting
// on it: nil when it passed, or decided nothing (skipped, or in doubt for
// the harness's lag); else why they cannot be judged.
func (cd calibrated) holdsBack() *engine.Failure {
	state, _ := statusNeedOf(cd.cal)
	name := cd.r.FullName()
	why := firstLines(cd.r.Message, 3)
	switch cd.r.Outcome {
	case results.Error:
		return &engine.Failure{Message: fmt.Sprintf("this pair's verdict rests on the client's status view showing %s, and the pair that checks whether it does, %s, could not run: %s", state, name, why)}
	case results.Blocked:
		return &engine.Failure{Rule: cd.r.BlockedBy, Message: fmt.Sprintf("this pair's verdict rests on the client's status view showing %s, and the pair that checks whether it does, %s, could not bring the client to %s: %s", state, name, state, why)}
	case results.Fail:
		for _, rule := range cd.r.RulesBroken {
			if slices.Contains(cd.cal.Requirements, rule) {
				return &engine.Failure{Rule: rule, Message: fmt.Sprintf("this pair's verdict rests on the client's status view showing %s, and %s found that it does not: %s\n"+
					"If the client's view cannot show %s, declare it with --status-lacks %s: the pairs resting on that state are then skipped, not blocked.",
					state, name, why, state, state)}
			}
		}
		if len(cd.r.RulesBroken) == 0 {
			return nil
		}
		// Only rules of the path to the state were broken: the client
		// never got there, so the view was never put to the test.
		return &engine.Failure{Rule: cd.r.RulesBroken[0], Message: fmt.Sprintf("this pair's verdict rests on the client's status view showing %s, and the pair that checks whether it does, %s, could not bring the client to %s: %s", state, name, state, why)}
	}
	return nil
}

// firstLines is s cut to its first n lines, saying so when it was.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "\n") + "\n(see that pair for the rest)"
}
