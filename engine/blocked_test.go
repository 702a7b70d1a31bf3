package engine_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

func citing(id string, level results.Level, rules []string, body func(*engine.T)) *engine.Scenario {
	return &engine.Scenario{ID: id, Title: "title of " + id, Requirements: rules,
		Level: level, Variants: []wire.Variant{wire.SotWADS}, Run: body}
}

func TestBlockedByAPrecondition(t *testing.T) {
	for _, c := range []struct {
		name      string
		level     results.Level
		rules     []string
		body      func(*engine.T)
		want      results.Outcome
		blockedBy string
		broken    []string
		level2    results.Level
		contains  string
	}{{
		name: "a precondition on another rule blocks", level: results.Should, rules: []string{"NONCE-7"},
		body: func(t *engine.T) { t.Block("RES-2", "no EDS response came") },
		want: results.Blocked, blockedBy: "RES-2", broken: []string{"RES-2"}, level2: results.Must,
		contains: "blocked by RES-2 (MUST): a precondition failed: no EDS response came",
	}, {
		name: "a MAY scenario blocked is blocked, not unsupported", level: results.May, rules: []string{"HINT-1"},
		body: func(t *engine.T) { t.Block("RES-1", "asked for the wrong names") },
		want: results.Blocked, blockedBy: "RES-1", broken: []string{"RES-1"}, level2: results.Must,
	}, {
		name: "a precondition on a rule the scenario cites is that rule's failure", level: results.Must, rules: []string{"ACK-1"},
		body: func(t *engine.T) { t.Block("ACK-1", "the chain's listener got no ACK") },
		want: results.Fail, broken: []string{"ACK-1"}, level2: results.Must,
	}, {
		name: "a failure seen before the precondition failed stands", level: results.Must, rules: []string{"NONCE-7"},
		body: func(t *engine.T) {
			t.Failf("NONCE-1", "empty nonce")
			t.Block("RES-2", "no EDS response came")
		},
		want: results.Fail, broken: []string{"NONCE-1"}, level2: results.Must, contains: "Then a precondition failed (RES-2)",
	}, {
		name: "an unknown rule blocks under the headline, saying so", level: results.Should, rules: []string{"NONCE-7"},
		body: func(t *engine.T) { t.Block("NOPE-1", "x") },
		want: results.Blocked, blockedBy: "NONCE-7", broken: []string{"NONCE-7"}, level2: results.Should, contains: `unknown rule "NOPE-1"`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			rs, _ := run(t, context.Background(), pairsOf(t, citing("server/x/y", c.level, c.rules, c.body)), engine.Config{Env: fakeEnv{}, Timeouts: quick})
			require.Len(t, rs, 1)
			r := rs[0]
			assert.Equal(t, c.want, r.Outcome, r.Message)
			assert.Equal(t, c.blockedBy, r.BlockedBy)
			assert.Equal(t, c.broken, r.RulesBroken)
			assert.Equal(t, c.level2, r.BrokenLevel)
			assert.Contains(t, r.Message, c.contains)
		})
	}
}

func TestBlockedCountsAgainstItsRule(t *testing.T) {
	r := results.Result{ID: "server/x/y", Variant: "sotw-ads", Level: results.May, Outcome: results.Blocked,
		BlockedBy: "RES-2", RulesBroken: []string{"RES-2"}, BrokenLevel: results.Must}
	s := results.SummarizeFor([]results.Result{r}, results.Must)
	assert.Equal(t, 1, s.Blocked)
	assert.False(t, s.OK(), "a blocked pair fails the run like a failure of its blocking rule")
	r.BrokenLevel = results.Should
	assert.True(t, results.SummarizeFor([]results.Result{r}, results.Must).OK(), "below --fail-on it is tolerated")
	r.KnownFailing = "RES-2: known"
	s = results.SummarizeFor([]results.Result{r}, results.Should)
	assert.Equal(t, 1, s.KnownFailing)
	assert.True(t, s.OK())
}

func TestKnownFailingExcusesABlockOnlyByItsRule(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader("server/x/y RES-2: the server does not answer\nserver/z/y RES-4: other\n"), "kf")
	require.NoError(t, err)
	body := func(t *engine.T) { t.Block("RES-2", "no EDS response came") }
	rs, _ := run(t, context.Background(), pairsOf(t, citing("server/x/y", results.Must, []string{"NONCE-8"}, body), citing("server/z/y", results.Must, []string{"NONCE-8"}, body)),
		engine.Config{Env: fakeEnv{}, Timeouts: quick, KnownFailing: kf})
	require.Len(t, rs, 2)
	assert.Equal(t, "RES-2: the server does not answer", rs[0].KnownFailing)
	assert.Empty(t, rs[1].KnownFailing, "an entry for another rule does not excuse it")
	assert.Contains(t, rs[1].Message, "but this failure broke RES-2")
}

func TestTimingVerdicts(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		body func(*engine.T)
		want results.Outcome
	}{
		{"within the limit", func(t *engine.T) {
			now := time.Now()
			t.Within("UPD-2", "the ACK", 10*ms, 100*ms, now.Add(-10*ms), now)
		}, results.Pass},
		{"late with no lag to explain it", func(t *engine.T) {
			// A window long before the run started: no stall was measured
			// in it, so the lateness stands.
			then := time.Now().Add(-time.Hour)
			t.Within("UPD-2", "the ACK", time.Second, 100*ms, then, then.Add(time.Second))
		}, results.Fail},
		{"a window that covered what it had to", func(t *engine.T) {
			then := time.Now().Add(-time.Hour)
			t.Covers("TTL-3", "the window", time.Second, then, then.Add(2*time.Second))
		}, results.Pass},
		{"a window too short is a doubt, run again, then inconclusive", func(t *engine.T) {
			then := time.Now().Add(-time.Hour)
			t.Covers("TTL-3", "the window", time.Second, then, then.Add(500*ms))
		}, results.Inconclusive},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs, _ := run(t, context.Background(), pairsOf(t, citing("client/x/y", results.Must, []string{"UPD-2"}, c.body)),
				engine.Config{Env: fakeEnv{}, Timeouts: quick})
			require.Len(t, rs, 1)
			assert.Equal(t, c.want, rs[0].Outcome, rs[0].Message)
			require.NotNil(t, rs[0].Timing)
			assert.NotEmpty(t, rs[0].Timing.Checks)
		})
	}
}

func TestDoubtfulPairsRunAgainAlone(t *testing.T) {
	var concurrent, crowdedRerun atomic.Int32
	// body counts the pairs running at once and notes a re-run that had
	// company; doubt says whether its nth run is in doubt.
	body := func(runs *atomic.Int32, doubt func(n int32) bool) func(*engine.T) {
		return func(t *engine.T) {
			n := runs.Add(1)
			if c := concurrent.Add(1); n > 1 && c > 1 {
				crowdedRerun.Add(1)
			}
			defer concurrent.Add(-1)
			if doubt(n) {
				t.Doubt("UPD-2", "the ACK", time.Second, 100*time.Millisecond, engine.LagStats{Total: time.Second})
			}
		}
	}
	// In doubt the first time it runs, decided the second: the result is
	// the second run's, saying it ran again.
	var onceRuns, alwaysRuns atomic.Int32
	doubtOnce := citing("client/x/doubt-once", results.Must, []string{"UPD-2"}, body(&onceRuns, func(n int32) bool { return n == 1 }))
	always := citing("client/x/doubt-always", results.Must, []string{"UPD-2"}, body(&alwaysRuns, func(int32) bool { return true }))
	var progress []results.Result
	rs, _ := run(t, context.Background(), pairsOf(t, doubtOnce, always), engine.Config{Env: fakeEnv{}, Timeouts: quick,
		Progress: func(r results.Result) { progress = append(progress, r) }})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Pass, rs[0].Outcome)
	assert.Equal(t, 1, rs[0].Timing.Reruns)
	assert.Contains(t, rs[0].Message, "ran again by itself")
	assert.Equal(t, results.Inconclusive, rs[1].Outcome)
	assert.Equal(t, engine.DefaultReruns, rs[1].Timing.Reruns)
	assert.EqualValues(t, 1+engine.DefaultReruns, alwaysRuns.Load())
	assert.Contains(t, rs[1].Message, "the harness was stalled for 1s")
	assert.Len(t, progress, 2, "each pair is reported once, with its last result")
	assert.Zero(t, crowdedRerun.Load(), "a pair runs again with nothing beside it")
}

func TestRerunsOff(t *testing.T) {
	always := citing("client/x/doubt-always", results.Must, []string{"UPD-2"}, func(t *engine.T) {
		t.Doubt("UPD-2", "the ACK", time.Second, 100*time.Millisecond, engine.LagStats{Total: time.Second})
	})
	rs, _ := run(t, context.Background(), pairsOf(t, always), engine.Config{Env: fakeEnv{}, Timeouts: quick, Reruns: -1})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Inconclusive, rs[0].Outcome)
	assert.Zero(t, rs[0].Timing.Reruns)
}
