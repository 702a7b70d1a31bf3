package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestFailuresBoundedByBytes floods a pair with failures of two rules,
// one of them megabytes long: the message stays under its bound, counts
// what it elided in one line, and still names both rules at their level.
func TestFailuresBoundedByBytes(t *testing.T) {
	s := scenario("flood", func(t *engine.T) {
		t.Failf("NONCE-1", "huge: %s", strings.Repeat("x", 4<<20))
		for i := range 10000 {
			t.Failf("NONCE-2", "bad message #%d: %s", i, strings.Repeat("y", 200))
		}
		t.Failf("STREAM-6", "a third rule, after the cap")
	})
	rs, _ := run(t, context.Background(), pairsOf(t, s), engine.Config{Env: fakeEnv{}, Timeouts: quick})
	require.Len(t, rs, 1)
	r := rs[0]
	require.Equal(t, results.Fail, r.Outcome)
	assert.Equal(t, []string{"NONCE-1", "NONCE-2", "STREAM-6"}, r.RulesBroken, "no rule is lost")
	assert.Less(t, len(r.Message), engine.FailuresBytes+4<<10, "the message is bounded")
	assert.Contains(t, r.Message, "more bytes elided)", "the huge message is cut and says so")
	lines := strings.Split(r.Message, "\n")
	last := lines[len(lines)-1]
	assert.Regexp(t, `^NONCE-2 \(MUST\): \d+ more failures, \d+ bytes, elided`, last, "one line counts the rest, last")
	assert.Equal(t, 1, strings.Count(r.Message, "more failures"))
	assert.Contains(t, r.Message, "STREAM-6 (MUST): a third rule, after the cap")
}

// TestBudgetSharedByTranscripts runs pairs that each record far more
// than the budget: together they keep no more than it.
func TestBudgetSharedByTranscripts(t *testing.T) {
	b := transcript.NewBudget(1 << 20)
	var ss []*engine.Scenario
	for i := range 8 {
		ss = append(ss, scenario("noisy"+string(rune('a'+i)), func(t *engine.T) {
			// Every entry different (in its length: numbers alone
			// would fold, see transcript.Fold), so that the result
			// keeps each entry the budget paid for.
			for j := range 2000 {
				t.Logf("%s", strings.Repeat("n", 500+j%500))
			}
		}))
	}
	rs, _ := run(t, context.Background(), pairsOf(t, ss...), engine.Config{Env: fakeEnv{}, Timeouts: quick, ReportBudget: b})
	require.Len(t, rs, 8)
	var kept int64
	for _, r := range rs {
		require.Equal(t, results.Pass, r.Outcome, r.Message)
		for _, e := range r.Transcript {
			if e.Stream != "harness" {
				kept += transcript.EntrySize(e)
			}
		}
	}
	assert.LessOrEqual(t, kept, b.Limit())
	assert.Equal(t, b.Used(), kept)
}

// TestUnkeptMessagesNeverPass: a pair whose fake peer dropped messages it
// could not keep errors rather than passes; a failure stays a failure.
func TestUnkeptMessagesNeverPass(t *testing.T) {
	pass := scenario("would-pass", func(t *engine.T) {
		t.Transcript.Unkept("ads#1", 100, "queue full")
	})
	fail := scenario("fails-anyway", func(t *engine.T) {
		t.Transcript.Unkept("ads#1", 100, "queue full")
		// A failure recorded by a later after-run check (as the fake
		// peers record violations) still counts.
		t.AfterRun(func(t *engine.T) { t.Failf("NONCE-1", "violation") })
	})
	rs, _ := run(t, context.Background(), pairsOf(t, pass, fail), engine.Config{Env: fakeEnv{}, Timeouts: quick})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Error, rs[0].Outcome)
	assert.Contains(t, rs[0].Message, "1 message (100 bytes) more than the harness keeps")
	assert.Equal(t, results.Fail, rs[1].Outcome, rs[1].Message)
}
