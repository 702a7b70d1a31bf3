package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
)

// mortalEnv is a target that dies when a scenario kills it, and whose
// death the engine learns only by asking (engine.Liveness).
type mortalEnv struct {
	fakeEnv
	dead   atomic.Bool
	checks atomic.Int32

	mu   sync.Mutex
	died error
	gone chan struct{}
	// cause is what CheckAlive finds once the target is killed
	// (errCrashed when nil).
	cause error
}

var errCrashed = errors.New("127.0.0.1:1: connection refused")

func newMortalEnv() *mortalEnv { return &mortalEnv{gone: make(chan struct{})} }

func (e *mortalEnv) kill() { e.dead.Store(true) }

func (e *mortalEnv) Died() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.died
}

func (e *mortalEnv) Gone() <-chan struct{} { return e.gone }

func (e *mortalEnv) CheckAlive(context.Context) error {
	e.checks.Add(1)
	if !e.dead.Load() {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.died == nil {
		e.died = errCrashed
		if e.cause != nil {
			e.died = e.cause
		}
		close(e.gone)
	}
	return e.died
}

// TestRun_TargetDied checks the path of a target that dies mid-run: the
// pair that saw it errors with the death as its cause, every pair after it
// errors with that cause without running, a pair that passed before keeps
// its pass, and one that errored while the target lived keeps its own
// message.
func TestRun_TargetDied(t *testing.T) {
	env := newMortalEnv()
	var ranAfter atomic.Int32
	after := func(t *engine.T) {
		ranAfter.Add(1)
		t.Fatalf("ran against a dead target")
	}
	ps := pairsOf(t,
		scenario("server/a/passes", func(*engine.T) {}),
		scenario("server/a/own-error", func(t *engine.T) { t.Abortf("fixture Set: invalid argument") }),
		scenario("server/a/kills", func(t *engine.T) {
			env.kill()
			t.Abortf("fixture Reset: connection refused")
		}),
		scenario("server/a/after-1", after),
		scenario("server/a/after-2", after),
	)
	rs, interrupted := run(t, t.Context(), ps, engine.Config{Env: env, Timeouts: quick, Parallel: 1})
	require.False(t, interrupted)
	require.Len(t, rs, 5)

	assert.Equal(t, results.Pass, rs[0].Outcome)
	assert.Equal(t, results.Error, rs[1].Outcome)
	assert.Equal(t, "fixture Set: invalid argument", rs[1].Message, "an error while the target lives keeps its own cause")
	assert.Equal(t, results.Error, rs[2].Outcome)
	assert.Equal(t, "the target died during the run: "+errCrashed.Error()+"\nwhat this pair saw: fixture Reset: connection refused", rs[2].Message,
		"the pair that found the death keeps what it saw as evidence")
	for _, r := range rs[3:] {
		assert.Equal(t, results.Error, r.Outcome, r.ID)
		assert.Equal(t, "the target died during the run: "+errCrashed.Error(), r.Message, r.ID)
	}
	assert.Zero(t, ranAfter.Load(), "no pair runs once the target is known dead")
	assert.Equal(t, int32(2), env.checks.Load(), "the target is re-checked after each error until it is known dead, and not after")
}

// TestRun_TargetDiedInFlight checks that pairs in flight when the target
// is found dead end at once with that cause, rather than waiting out
// their scenario timeout (which here is longer than the test's bound).
func TestRun_TargetDiedInFlight(t *testing.T) {
	env := newMortalEnv()
	waiting := make(chan struct{})
	slow := engine.Timeouts{Expect: time.Second, Quiet: 50 * time.Millisecond, Scenario: 10 * bounded}
	ps := pairsOf(t,
		scenario("server/a/waits", func(t *engine.T) {
			close(waiting)
			<-t.Context().Done()
			t.Abortf("waiting for a response: %v", t.Context().Err())
		}),
		scenario("server/a/kills", func(t *engine.T) {
			<-waiting
			env.kill()
			t.Abortf("stream closed: connection refused")
		}),
	)
	rs, _ := run(t, t.Context(), ps, engine.Config{Env: env, Timeouts: slow, Parallel: 2})
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, results.Error, r.Outcome, r.ID)
	}
	assert.Equal(t, "the target died during the run: "+errCrashed.Error(), rs[0].Message, "cut short: it saw nothing of its own")
	assert.Equal(t, "the target died during the run: "+errCrashed.Error()+"\nwhat this pair saw: stream closed: connection refused", rs[1].Message,
		"the pair that found the death keeps what it saw")
}

// TestRun_FailureSurvivesDeath checks that a pair that saw the target
// break a rule keeps its failure when the target then dies: dying of what
// a scenario sent is the target's failure, not a harness error.
func TestRun_FailureSurvivesDeath(t *testing.T) {
	env := newMortalEnv()
	ps := pairsOf(t, scenario("server/a/crashes-it", func(t *engine.T) {
		env.kill()
		t.Fatalf("the server stopped serving after the malformed request")
	}))
	rs, _ := run(t, t.Context(), ps, engine.Config{Env: env, Timeouts: quick})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Contains(t, rs[0].Message, "stopped serving")
}

// TestRun_DiedAlone checks that a scenario running alone (Scenario.Alone)
// that sent the target a message, after which the target died, is the one
// that killed it: it fails its headline rule, while the pairs after it
// error with the cause.
func TestRun_DiedAlone(t *testing.T) {
	env := newMortalEnv()
	crash := scenario("server/a/malformed", func(t *engine.T) {
		t.SentToTarget() // the malformed request
		env.kill()
		t.Abortf("stream lost: connection refused")
	})
	crash.Alone = true
	crash2 := scenario("server/a/malformed-2", func(*engine.T) {})
	crash2.Alone = true
	rs, _ := run(t, t.Context(), pairsOf(t, crash, crash2), engine.Config{Env: env, Timeouts: quick})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Equal(t, []string{"NONCE-1"}, rs[0].RulesBroken)
	assert.Contains(t, rs[0].Message, "the target died while this scenario ran alone against it: "+errCrashed.Error())
	assert.Equal(t, results.Error, rs[1].Outcome)
	assert.Equal(t, "the target died during the run: "+errCrashed.Error(), rs[1].Message)
}

// errFixtureHung is a cause of a target that did not die but can no
// longer be driven, as targets marks one whose fixture stopped answering.
var errFixtureHung = fmt.Errorf("the fixture API at 127.0.0.1:2 stopped answering: %w", engine.ErrUnusable)

// TestRun_UnusableAlone checks that a target that becomes unusable (its
// fixture stopped answering: engine.ErrUnusable) while a pair runs alone
// is not blamed on that pair, as a death is: nothing shows its xDS made
// the fixture stop. The pair errors with the cause, the pairs after it
// error with it without running, and no message calls it a death.
func TestRun_UnusableAlone(t *testing.T) {
	env := newMortalEnv()
	env.cause = errFixtureHung
	hangs := scenario("server/a/fixture-hangs", func(t *engine.T) {
		env.kill()
		t.Abortf("fixture SetResource: context deadline exceeded")
	})
	hangs.Alone = true
	var afterRan atomic.Bool
	after := scenario("server/a/after", func(*engine.T) { afterRan.Store(true) })
	after.Alone = true // alone pairs run after the others, in order
	rs, _ := run(t, t.Context(), pairsOf(t, hangs, after), engine.Config{Env: env, Timeouts: quick, Parallel: 1})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Error, rs[0].Outcome, rs[0].Message)
	assert.Empty(t, rs[0].RulesBroken, "not blamed under its headline rule")
	assert.Equal(t, "the run could not go on: "+errFixtureHung.Error()+"\nwhat this pair saw: fixture SetResource: context deadline exceeded", rs[0].Message)
	assert.Equal(t, results.Error, rs[1].Outcome)
	assert.Equal(t, "the run could not go on: "+errFixtureHung.Error(), rs[1].Message)
	assert.False(t, afterRan.Load(), "no pair runs once the target is known unusable")
	for _, r := range rs {
		assert.NotContains(t, r.Message, "died", r.ID)
	}
}

// TestRun_DiedAloneAfterFailing checks that a pair running alone that
// sends the target a message, fails and kills it is the one blamed: it
// keeps its own failure and gets the death as a further failure of its
// headline rule, while the innocent pair running alone after it errors
// with the cause, without running and without failing.
func TestRun_DiedAloneAfterFailing(t *testing.T) {
	env := newMortalEnv()
	killer := scenario("server/a/fails-and-kills", func(t *engine.T) {
		t.SentToTarget()
		env.kill()
		t.Failf("ACK-1", "the server answered the malformed request with garbage")
		t.FailNow()
	})
	killer.Alone = true
	var innocentRan atomic.Bool
	innocent := scenario("server/a/innocent", func(t *engine.T) {
		innocentRan.Store(true)
		t.Abortf("stream lost: connection refused")
	})
	innocent.Alone = true
	rs, _ := run(t, t.Context(), pairsOf(t, killer, innocent), engine.Config{Env: env, Timeouts: quick})
	require.Len(t, rs, 2)

	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Equal(t, []string{"ACK-1", "NONCE-1"}, rs[0].RulesBroken, "its own failure, then the death under its headline rule")
	assert.Regexp(t, `(?m)^ACK-1 \(\w+\): the server answered the malformed request with garbage$`, rs[0].Message)
	assert.Regexp(t, `(?m)^NONCE-1 \(\w+\): the target died while this scenario ran alone against it: `+errCrashed.Error()+`$`, rs[0].Message)

	assert.Equal(t, results.Error, rs[1].Outcome, rs[1].Message)
	assert.Empty(t, rs[1].RulesBroken)
	assert.Equal(t, "the target died during the run: "+errCrashed.Error(), rs[1].Message)
	assert.False(t, innocentRan.Load(), "no pair runs once the target is known dead")
}

// TestRun_DiedBeforeAlone checks that a pair running alone is not blamed
// for a death that happened before it started (here during a pair that
// passed, not alone, so nothing re-checked the target): the check before
// it starts finds the target dead, and it errors with the cause.
func TestRun_DiedBeforeAlone(t *testing.T) {
	env := newMortalEnv()
	var aloneRan atomic.Bool
	alone := scenario("server/a/alone", func(t *engine.T) {
		aloneRan.Store(true)
		t.Abortf("stream lost: connection refused")
	})
	alone.Alone = true
	ps := pairsOf(t, scenario("server/a/passes-and-kills", func(*engine.T) { env.kill() }), alone)
	rs, _ := run(t, t.Context(), ps, engine.Config{Env: env, Timeouts: quick, Parallel: 1})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Pass, rs[0].Outcome)
	assert.Equal(t, results.Error, rs[1].Outcome, rs[1].Message)
	assert.Empty(t, rs[1].RulesBroken)
	assert.Equal(t, "the target died during the run: "+errCrashed.Error(), rs[1].Message)
	assert.False(t, aloneRan.Load())
}

// TestRun_AloneAliveChecked checks that a pair running alone that passes
// against a target that stays alive keeps its pass, the target checked
// before and after it, and that one that passes but kills the target with
// a message it sent fails its headline rule.
func TestRun_AloneAliveChecked(t *testing.T) {
	env := newMortalEnv()
	fine := scenario("server/a/fine", func(t *engine.T) { t.SentToTarget() })
	fine.Alone = true
	kills := scenario("server/a/passes-and-kills", func(t *engine.T) { t.SentToTarget(); env.kill() })
	kills.Alone = true
	rs, _ := run(t, t.Context(), pairsOf(t, fine, kills), engine.Config{Env: env, Timeouts: quick})
	require.Len(t, rs, 2)
	assert.Equal(t, results.Pass, rs[0].Outcome, rs[0].Message)
	assert.Equal(t, results.Fail, rs[1].Outcome, rs[1].Message)
	assert.Equal(t, []string{"NONCE-1"}, rs[1].RulesBroken)
	assert.Equal(t, int32(4), env.checks.Load(), "before and after each pair running alone")
}

// TestRun_DiedAloneAfterFixtureOnly checks that a crash is charged to the
// pair that last sent the target a scenario message, not to the pair
// running when it was seen: a pair running alone that got no further than
// a fixture call (a Reset) when the target died is not blamed, whether it
// errored or passed, and errors with the death as its cause and what it
// saw; a pair running alone that sent the target a message, and after
// which the target died, is.
func TestRun_DiedAloneAfterFixtureOnly(t *testing.T) {
	for _, c := range []struct {
		name string
		body func(env *mortalEnv) func(*engine.T)
		saw  string
	}{
		{"errored at its fixture Reset", func(env *mortalEnv) func(*engine.T) {
			return func(t *engine.T) {
				env.kill()
				t.Abortf("fixture Reset: connection refused")
			}
		}, "fixture Reset: connection refused"},
		{"passed, having sent nothing", func(env *mortalEnv) func(*engine.T) {
			return func(*engine.T) { env.kill() }
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := newMortalEnv()
			sender := scenario("server/a/sends-and-passes", func(t *engine.T) { t.SentToTarget() })
			sender.Alone = true
			fixtureOnly := scenario("server/a/fixture-only", c.body(env))
			fixtureOnly.Alone = true
			rs, _ := run(t, t.Context(), pairsOf(t, sender, fixtureOnly), engine.Config{Env: env, Timeouts: quick})
			require.Len(t, rs, 2)
			assert.Equal(t, results.Pass, rs[0].Outcome, "the pair before, checked alive after it, keeps its pass: %s", rs[0].Message)

			r := rs[1]
			assert.Equal(t, results.Error, r.Outcome, r.Message)
			assert.Empty(t, r.RulesBroken, "a pair that sent nothing is not blamed")
			assert.True(t, strings.HasPrefix(r.Message, "the target died during the run: "+errCrashed.Error()), r.Message)
			assert.Contains(t, r.Message, "sent the target no scenario message")
			if c.saw != "" {
				assert.Contains(t, r.Message, "\nwhat this pair saw: "+c.saw)
			}
		})
	}

	t.Run("sent a message, then the target died", func(t *testing.T) {
		env := newMortalEnv()
		sender := scenario("server/a/sends-then-dies", func(t *engine.T) {
			t.SentToTarget()
			env.kill()
			t.Abortf("stream lost: connection refused")
		})
		sender.Alone = true
		rs, _ := run(t, t.Context(), pairsOf(t, sender), engine.Config{Env: env, Timeouts: quick})
		require.Len(t, rs, 1)
		assert.Equal(t, results.Fail, rs[0].Outcome, rs[0].Message)
		assert.Equal(t, []string{"NONCE-1"}, rs[0].RulesBroken)
		assert.Contains(t, rs[0].Message, "the target died while this scenario ran alone against it: "+errCrashed.Error())
	})
}
