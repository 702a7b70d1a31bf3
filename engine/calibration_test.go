package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// calibratingEnv is an Env with a Calibration: a pair rests on the
// calibration named by its scenario's first need, and is held back with
// what unmet says of that calibration's result. It records the order in
// which pairs learnt of and asked about what.
type calibratingEnv struct {
	fakeEnv
	// unmet turns the calibration's result into what the pair gets.
	unmet func(r results.Result) *engine.Failure

	mu     sync.Mutex
	learnt map[string]results.Result // by pair name
	events []string
}

func (e *calibratingEnv) RestsOn(s, cal *engine.Scenario) bool {
	return len(s.Needs) > 0 && string(s.Needs[0]) == cal.ID
}

func (e *calibratingEnv) Learn(p engine.Pair, r results.Result) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.learnt == nil {
		e.learnt = map[string]results.Result{}
	}
	e.learnt[p.FullName()] = r
	e.events = append(e.events, "learn "+p.FullName())
}

func (e *calibratingEnv) Unmet(s *engine.Scenario, v wire.Variant) *engine.Failure {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, "ask "+s.ID+"["+v.String()+"]")
	if len(s.Needs) == 0 {
		return nil
	}
	r, ok := e.learnt[string(s.Needs[0])+"["+v.String()+"]"]
	if !ok {
		return nil
	}
	return e.unmet(r)
}

// calibration is a First scenario whose body is body.
func calibration(id string, body func(*engine.T)) *engine.Scenario {
	s := citing(id, results.Should, []string{"OBS-1"}, body)
	s.First = true
	return s
}

// restingOn is a scenario whose verdict rests on calibration cal.
func restingOn(id string, cal *engine.Scenario, rules ...string) *engine.Scenario {
	s := citing(id, results.Must, rules, func(*engine.T) {})
	s.Needs = []engine.Need{engine.Need(cal.ID)}
	return s
}

func TestCalibrationsRunFirstAndDecideThePairsRestingOnThem(t *testing.T) {
	fails := func(t *engine.T) { t.Failf("OBS-1", "the view never shows it") }
	for _, c := range []struct {
		name      string
		cal       func(*engine.T)
		unmet     func(results.Result) *engine.Failure
		rules     []string
		want      results.Outcome
		blockedBy string
		contains  string
	}{{
		name: "a calibration that passes lets the pair run", cal: func(*engine.T) {},
		unmet: func(r results.Result) *engine.Failure { return nil },
		rules: []string{"TTL-2"}, want: results.Pass,
	}, {
		name: "a calibration that fails blocks the pair by the rule the env names", cal: fails,
		unmet: func(r results.Result) *engine.Failure {
			return &engine.Failure{Rule: r.RulesBroken[0], Message: "the calibration said: " + r.Message}
		},
		rules: []string{"TTL-2"}, want: results.Blocked, blockedBy: "OBS-1",
		contains: "blocked by OBS-1 (SHOULD): a precondition failed: the calibration said: OBS-1 (SHOULD): the view never shows it",
	}, {
		name: "a failed precondition on a rule the pair cites is that rule's failure", cal: fails,
		unmet: func(r results.Result) *engine.Failure { return &engine.Failure{Rule: "OBS-1", Message: "no view"} },
		rules: []string{"OBS-1"}, want: results.Fail, contains: "OBS-1 (SHOULD): no view",
	}, {
		name: "a precondition naming no rule is an error", cal: func(t *engine.T) { t.Abortf("could not start") },
		unmet: func(r results.Result) *engine.Failure {
			return &engine.Failure{Message: "the calibration errored: " + r.Message}
		},
		rules: []string{"TTL-2"}, want: results.Error, contains: "the calibration errored: could not start",
	}, {
		name: "an unknown rule blocks under the headline, saying so", cal: fails,
		unmet: func(r results.Result) *engine.Failure { return &engine.Failure{Rule: "NOPE-1", Message: "x"} },
		rules: []string{"TTL-2"}, want: results.Blocked, blockedBy: "TTL-2", contains: `unknown rule "NOPE-1"`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			cal := calibration("client/status/x", c.cal)
			ran := false
			pair := restingOn("client/ttl/y", cal, c.rules...)
			pair.Run = func(*engine.T) { ran = true }
			other := citing("client/ack/z", results.Must, []string{"ACK-1"}, func(*engine.T) {})
			env := &calibratingEnv{unmet: c.unmet}
			// Given last, the calibration still runs first.
			rs, _ := run(t, context.Background(), pairsOf(t, pair, other, cal), engine.Config{Env: env, Timeouts: quick})
			require.Len(t, rs, 3)
			r := rs[0]
			assert.Equal(t, c.want, r.Outcome, r.Message)
			assert.Equal(t, c.blockedBy, r.BlockedBy)
			assert.Contains(t, r.Message, c.contains)
			assert.Equal(t, c.want == results.Pass, ran, "a pair held back by its calibration does not run")
			assert.Equal(t, results.Pass, rs[1].Outcome, "a pair resting on nothing runs as it would")
			require.NotEmpty(t, env.events)
			assert.Equal(t, "learn client/status/x[sotw-ads]", env.events[0], "the calibration is learnt before any other pair starts")
			assert.NotContains(t, env.events, "ask client/status/x[sotw-ads]", "a calibration is not held back by calibrations")
		})
	}
}

func TestWithCalibrations(t *testing.T) {
	cal := calibration("client/status/x", func(*engine.T) {})
	cal.Variants = []wire.Variant{wire.SotWADS, wire.DeltaADS}
	other := calibration("client/status/w", func(*engine.T) {})
	resting := restingOn("client/ttl/y", cal, "TTL-2")
	resting.Variants = []wire.Variant{wire.SotWADS, wire.DeltaADS}
	plain := citing("client/ack/z", results.Must, []string{"ACK-1"}, func(*engine.T) {})
	cals := []*engine.Scenario{cal, other}
	names := func(ps []engine.Pair) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.FullName())
		}
		return out
	}
	selected := func(sel engine.Selection) []engine.Pair {
		ps, err := engine.Expand([]*engine.Scenario{cal, other, resting, plain}, sel)
		require.NoError(t, err)
		return ps
	}
	env := &calibratingEnv{}

	sel := engine.Selection{Run: []string{"client/ttl/y[delta-ads]", "client/ack/z"}}
	assert.Equal(t, []string{"client/status/x[delta-ads]", "client/ttl/y[delta-ads]", "client/ack/z[sotw-ads]"},
		names(engine.WithCalibrations(selected(sel), cals, sel, env)),
		"the calibration a selected pair rests on comes along, in its variant only")

	sel = engine.Selection{Run: []string{"client/ack/z"}}
	assert.Equal(t, []string{"client/ack/z[sotw-ads]"}, names(engine.WithCalibrations(selected(sel), cals, sel, env)),
		"no calibration comes along for pairs that rest on none")

	sel = engine.Selection{}
	assert.Equal(t, names(selected(sel)), names(engine.WithCalibrations(selected(sel), cals, sel, env)),
		"calibrations already selected are not added twice")

	sel = engine.Selection{Run: []string{"client/ttl/y"}, Skip: []string{"client/status/*"}}
	assert.Equal(t, []string{"client/ttl/y[sotw-ads]", "client/ttl/y[delta-ads]"}, names(engine.WithCalibrations(selected(sel), cals, sel, env)),
		"a calibration skipped by name stays out")

	sel = engine.Selection{Run: []string{"client/ttl/y"}}
	assert.Equal(t, names(selected(sel)), names(engine.WithCalibrations(selected(sel), cals, sel, fakeEnv{})),
		"an env that calibrates nothing gets the pairs as they are")
}
