package engine_test

import (
	"context"
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
	"github.com/xdsconform/xdsconform/wire"
)

// fakeEnv lacks what its map says, keyed by "ID[variant]".
type fakeEnv struct{ lacks map[string]string }

func (e fakeEnv) Lacks(s *engine.Scenario, v wire.Variant) string {
	return e.lacks[s.ID+"["+v.String()+"]"]
}

// quick are short waits for tests that must not hang.
var quick = engine.Timeouts{Expect: time.Second, Quiet: 50 * time.Millisecond, Scenario: 10 * time.Second}

// bounded is the most any test here waits for a run.
const bounded = 20 * time.Second

func scenario(id string, body func(*engine.T), variants ...wire.Variant) *engine.Scenario {
	if len(variants) == 0 {
		variants = []wire.Variant{wire.SotWADS}
	}
	return &engine.Scenario{ID: id, Title: "title of " + id, Requirements: []string{"NONCE-1"},
		Level: results.Must, Variants: variants, Run: body}
}

func pairsOf(t *testing.T, ss ...*engine.Scenario) []engine.Pair {
	t.Helper()
	ps, err := engine.Expand(ss, engine.Selection{})
	require.NoError(t, err)
	return ps
}

// run runs pairs under a bound, so a broken engine fails the test instead
// of hanging it.
func run(t *testing.T, ctx context.Context, ps []engine.Pair, cfg engine.Config) ([]results.Result, bool) {
	t.Helper()
	type out struct {
		rs          []results.Result
		interrupted bool
	}
	done := make(chan out, 1)
	go func() {
		rs, in := engine.Run(ctx, ps, cfg)
		done <- out{rs, in}
	}()
	select {
	case o := <-done:
		return o.rs, o.interrupted
	case <-time.After(bounded):
		t.Fatalf("engine.Run did not return within %v", bounded)
		return nil, false
	}
}

func TestRunOutcomes(t *testing.T) {
	var assertCarriedOn, afterFailNowRan, cleanupRan atomic.Bool
	tests := []struct {
		name        string
		body        func(*engine.T)
		lacks       string
		want        results.Outcome
		msgContains []string
		msgExcludes []string
	}{
		{name: "pass", body: func(t *engine.T) {
			require.Equal(t, 1, 1)
			assert.True(t, true)
		}, want: results.Pass},
		{name: "require fails", body: func(t *engine.T) {
			require.Equal(t, "want-value", "got-value", "the widget %s", "mismatch")
			panic("not reached: require must stop the body")
		}, want: results.Fail,
			msgContains: []string{"want-value", "got-value", "the widget mismatch"},
			msgExcludes: []string{"Error Trace", "runner_test.go", "not reached"}},
		{name: "assert carries on", body: func(t *engine.T) {
			assert.Equal(t, 1, 2, "first assert")
			assert.Equal(t, 3, 4, "second assert")
			assertCarriedOn.Store(true)
		}, want: results.Fail, msgContains: []string{"first assert", "second assert"}},
		{name: "fatalf", body: func(t *engine.T) {
			t.Fatalf("fatal %d", 7)
		}, want: results.Fail, msgContains: []string{"fatal 7"}},
		{name: "failnow without message", body: func(t *engine.T) {
			t.FailNow()
		}, want: results.Fail, msgContains: []string{"failed"}},
		{name: "skipf", body: func(t *engine.T) {
			t.Skipf("no %s here", "wildcard")
		}, want: results.Skip, msgContains: []string{"no wildcard here"}},
		{name: "env lacks", body: func(t *engine.T) {
			panic("must not run a pair the env lacks")
		}, lacks: "needs fixture", want: results.Skip, msgContains: []string{"needs fixture"}},
		{name: "abortf", body: func(t *engine.T) {
			t.Abortf("fixture down: %v", "connection refused")
		}, want: results.Error, msgContains: []string{"fixture down: connection refused"}},
		// A rule the target broke stands when the pair then cannot go on
		// (a hostile client floods invalid requests until the harness's
		// queue is full): the verdict comes from what was seen, and why
		// the pair stopped is a note.
		{name: "earlier failures stand over an abort", body: func(t *engine.T) {
			t.Errorf("a failure")
			t.Abortf("then the fixture broke")
		}, want: results.Fail, msgContains: []string{"a failure", "Then the pair could not go on: then the fixture broke"}},
		{name: "panic", body: func(t *engine.T) {
			panic("boom")
		}, want: results.Error, msgContains: []string{"harness panic: boom"}},
		{name: "after-run check fails a passing body", body: func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { t.Errorf("invariant NONCE-1 broken") })
		}, want: results.Fail, msgContains: []string{"invariant NONCE-1 broken"}},
		{name: "after-run check runs after failnow", body: func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { afterFailNowRan.Store(true); t.Errorf("late invariant") })
			t.Fatalf("early failure")
		}, want: results.Fail, msgContains: []string{"early failure", "late invariant"}},
		{name: "after-run check panics", body: func(t *engine.T) {
			t.AfterRun(func(*engine.T) { panic("check exploded") })
		}, want: results.Fail, msgContains: []string{"after-run check panicked: check exploded"}},
		{name: "after-run check calls FailNow", body: func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { t.Fatalf("check stops itself") })
			t.AfterRun(func(t *engine.T) { t.Errorf("next check still runs") })
		}, want: results.Fail, msgContains: []string{"check stops itself", "next check still runs"}},
		{name: "cleanups run last first", body: func(t *engine.T) {
			var order []int
			t.Cleanup(func() {
				order = append(order, 1)
				if fmt.Sprint(order) == "[2 1]" {
					cleanupRan.Store(true)
				}
			})
			t.Cleanup(func() { order = append(order, 2) })
		}, want: results.Pass},
	}
	var ss []*engine.Scenario
	lacks := map[string]string{}
	for i, tc := range tests {
		id := fmt.Sprintf("server/outcome/case-%02d", i)
		ss = append(ss, scenario(id, tc.body))
		if tc.lacks != "" {
			lacks[id+"[sotw-ads]"] = tc.lacks
		}
	}
	// All cases share one run: a panicking or aborted pair must not
	// disturb the others.
	rs, interrupted := run(t, context.Background(), pairsOf(t, ss...), engine.Config{Env: fakeEnv{lacks}, Timeouts: quick})
	require.False(t, interrupted)
	require.Len(t, rs, len(tests))
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rs[i]
			assert.Equal(t, fmt.Sprintf("server/outcome/case-%02d[sotw-ads]", i), r.FullName())
			assert.Equal(t, tc.want, r.Outcome, "message: %s", r.Message)
			for _, w := range tc.msgContains {
				assert.Contains(t, r.Message, w)
			}
			for _, w := range tc.msgExcludes {
				assert.NotContains(t, r.Message, w)
			}
			assert.Equal(t, "title of "+r.ID, r.Title)
			assert.Equal(t, []string{"NONCE-1"}, r.Requirements)
			assert.Equal(t, results.Must, r.Level)
			assert.Empty(t, r.KnownFailing)
		})
	}
	assert.True(t, assertCarriedOn.Load(), "a failed assert must let the body carry on")
	assert.True(t, afterFailNowRan.Load(), "after-run checks run even when the body stopped early")
	assert.True(t, cleanupRan.Load(), "cleanups run last registered first")
}

func TestRunTranscriptAndNodeIDs(t *testing.T) {
	var mu sync.Mutex
	nodes := map[string]string{}
	body := func(t *engine.T) {
		t.Logf("hello from %s", t.Variant)
		assert.True(t, t.Owns(t.Name("r")))
		assert.False(t, t.Owns("r"))
		mu.Lock()
		nodes[t.Variant.String()] = t.NodeID
		mu.Unlock()
	}
	ps := pairsOf(t, scenario("server/transcript/logs", body, wire.AllVariants...))
	rs, _ := run(t, context.Background(), ps, engine.Config{Env: fakeEnv{}, Timeouts: quick})
	require.Len(t, rs, 4)
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome)
		require.Len(t, r.Transcript, 1)
		assert.Equal(t, "hello from "+r.Variant, r.Transcript[0].Note)
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		assert.True(t, strings.HasPrefix(n, "xdsconform-"), n)
		assert.False(t, seen[n], "node id %s shared by two pairs", n)
		seen[n] = true
	}

	// Stable across runs with the same salt, different with another one.
	again := map[string]string{}
	for k, v := range nodes {
		again[k] = v
	}
	_, _ = run(t, context.Background(), ps, engine.Config{Env: fakeEnv{}, Timeouts: quick})
	assert.Equal(t, again, nodes)
	_, _ = run(t, context.Background(), ps, engine.Config{Env: fakeEnv{}, Timeouts: quick, Salt: "other"})
	for k := range nodes {
		assert.NotEqual(t, again[k], nodes[k], "salt must change the node id of %s", k)
	}
}

func TestRunBodyIgnoringItsContext(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // let the abandoned body go at the end
	blocked := scenario("server/stuck/forever", func(*engine.T) { <-release })
	fine := scenario("server/stuck/neighbour", func(*engine.T) {})
	to := engine.Timeouts{Expect: 50 * time.Millisecond, Quiet: 10 * time.Millisecond, Scenario: 200 * time.Millisecond}

	// run bounds the wait: the engine abandons the body instead of waiting
	// for it.
	rs, interrupted := run(t, context.Background(), pairsOf(t, blocked, fine), engine.Config{Env: fakeEnv{}, Timeouts: to})
	require.False(t, interrupted)
	require.Len(t, rs, 2)
	assert.Equal(t, results.Error, rs[0].Outcome)
	assert.Contains(t, rs[0].Message, "did not finish")
	assert.Contains(t, rs[0].Message, "200ms")
	assert.Equal(t, results.Pass, rs[1].Outcome)
}

func TestRunBodyHonouringTimeoutWithFailure(t *testing.T) {
	// A body that notices the deadline and records why fails, rather than
	// being reported as "did not finish".
	body := func(t *engine.T) {
		<-t.Context().Done()
		t.Fatalf("no response before the deadline: %v", t.Context().Err())
	}
	to := engine.Timeouts{Expect: 50 * time.Millisecond, Quiet: 10 * time.Millisecond, Scenario: 100 * time.Millisecond}
	rs, _ := run(t, context.Background(), pairsOf(t, scenario("server/slow/waits", body)), engine.Config{Env: fakeEnv{}, Timeouts: to})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Contains(t, rs[0].Message, "deadline exceeded")
}

func TestRunKnownFailing(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader(`
server/kf/fails[sotw-ads] RULE-1: the server under test breaks it
server/kf/passes stale: fixed upstream
server/kf/skipped never runs here
server/kf/errors harness trouble is never excused
server/kf/named ACK-1: the peer never answers
server/kf/flaky ACK-5 (timing-dependent): resends when its timer fires in the window
`), "kf")
	require.NoError(t, err)
	fails := scenario("server/kf/fails", func(t *engine.T) { t.Errorf("broken") }, wire.SotWADS, wire.DeltaADS)
	passes := scenario("server/kf/passes", func(*engine.T) {})
	skipped := scenario("server/kf/skipped", func(t *engine.T) { t.Skipf("not here") })
	errs := scenario("server/kf/errors", func(t *engine.T) { t.Abortf("fixture down") })

	tests := []struct {
		name    string
		ss      []*engine.Scenario
		want    map[string]string // full name -> KnownFailing reason
		wantSum results.Summary
		wantOK  bool
	}{
		{
			name: "listed failure is excused",
			ss:   []*engine.Scenario{fails},
			want: map[string]string{
				"server/kf/fails[sotw-ads]":  "RULE-1: the server under test breaks it",
				"server/kf/fails[delta-ads]": "",
			},
			wantSum: results.Summary{Fail: 1, KnownFailing: 1},
			wantOK:  false, // the unlisted delta failure still fails the run
		},
		{
			name:    "only listed failures",
			ss:      []*engine.Scenario{scenario("server/kf/fails", fails.Run)},
			want:    map[string]string{"server/kf/fails[sotw-ads]": "RULE-1: the server under test breaks it"},
			wantSum: results.Summary{KnownFailing: 1},
			wantOK:  true,
		},
		{
			name:    "listed pass is stale",
			ss:      []*engine.Scenario{passes},
			want:    map[string]string{"server/kf/passes[sotw-ads]": "stale: fixed upstream"},
			wantSum: results.Summary{StalePasses: 1},
			wantOK:  false,
		},
		{
			name: "a failure of a rule the entry names is excused, of another not",
			ss: []*engine.Scenario{
				scenario("server/kf/named", func(t *engine.T) { t.Failf("ACK-1", "no answer") }),
				scenario("server/kf/named", func(t *engine.T) { t.Failf("NONCE-1", "empty nonce") }, wire.DeltaADS),
			},
			want: map[string]string{
				"server/kf/named[sotw-ads]":  "ACK-1: the peer never answers",
				"server/kf/named[delta-ads]": "",
			},
			wantSum: results.Summary{Fail: 1, KnownFailing: 1},
			wantOK:  false,
		},
		{
			name:    "a timing-dependent entry that passes is not stale",
			ss:      []*engine.Scenario{scenario("server/kf/flaky", func(*engine.T) {})},
			want:    map[string]string{"server/kf/flaky[sotw-ads]": ""},
			wantSum: results.Summary{Pass: 1},
			wantOK:  true,
		},
		{
			name:    "skips and errors carry no reason",
			ss:      []*engine.Scenario{skipped, errs},
			want:    map[string]string{"server/kf/skipped[sotw-ads]": "", "server/kf/errors[sotw-ads]": ""},
			wantSum: results.Summary{Skip: 1, Error: 1},
			wantOK:  false,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, _ := run(t, context.Background(), pairsOf(t, tc.ss...), engine.Config{Env: fakeEnv{}, Timeouts: quick, KnownFailing: kf})
			got := map[string]string{}
			for _, r := range rs {
				got[r.FullName()] = r.KnownFailing
			}
			assert.Equal(t, tc.want, got)
			sum := results.Summarize(rs)
			assert.Equal(t, tc.wantOK, sum.OK())
			sum.ByLevel = nil // counted per level too; compared as totals here
			assert.Equal(t, tc.wantSum, sum)
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan string, 8)
	var ran atomic.Int32
	body := func(t *engine.T) {
		ran.Add(1)
		started <- t.NodeID
		<-t.Context().Done() // a well-behaved body waiting for the target
	}
	var ss []*engine.Scenario
	for i := range 4 {
		ss = append(ss, scenario(fmt.Sprintf("server/interrupt/s%d", i), body))
	}
	// Ctrl-C once the first two pairs (the parallel cap) are running.
	go func() {
		for range 2 {
			select {
			case <-started:
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	rs, interrupted := run(t, ctx, pairsOf(t, ss...), engine.Config{Env: fakeEnv{}, Timeouts: quick, Parallel: 2})
	assert.True(t, interrupted)
	assert.Equal(t, int32(2), ran.Load(), "pairs not started before the interrupt are dropped")
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, results.Error, r.Outcome, r.FullName())
		assert.Contains(t, r.Message, "interrupted")
	}
	assert.Equal(t, []string{"server/interrupt/s0[sotw-ads]", "server/interrupt/s1[sotw-ads]"},
		[]string{rs[0].FullName(), rs[1].FullName()})
}

func TestRunAlreadyInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rs, interrupted := run(t, ctx, pairsOf(t, scenario("server/interrupt/never", func(*engine.T) {
		panic("must not run")
	})), engine.Config{Env: fakeEnv{}, Timeouts: quick})
	assert.True(t, interrupted)
	assert.Empty(t, rs)
}

func TestRunResultsInPairOrder(t *testing.T) {
	// Pair i may only finish after pair i+1 has been reported, so pairs
	// finish in reverse; IDs are deliberately not in alphabetical order.
	const n = 6
	ids := []string{"server/z/last", "server/a/first", "server/m/middle", "server/b/x", "server/y/x", "server/c/x"}
	reported := make([]chan struct{}, n+1)
	for i := range reported {
		reported[i] = make(chan struct{})
	}
	close(reported[n])
	index := map[string]int{}
	var ss []*engine.Scenario
	for i, id := range ids {
		index[id] = i
		ss = append(ss, scenario(id, func(t *engine.T) {
			select {
			case <-reported[i+1]:
			case <-t.Context().Done():
				t.Fatalf("pair %d never saw pair %d reported", i, i+1)
			}
		}))
	}
	var mu sync.Mutex
	var progress []string
	cfg := engine.Config{Env: fakeEnv{}, Timeouts: quick, Parallel: n, Progress: func(r results.Result) {
		mu.Lock()
		progress = append(progress, r.ID)
		mu.Unlock()
		close(reported[index[r.ID]])
	}}
	rs, _ := run(t, context.Background(), pairsOf(t, ss...), cfg)
	var got []string
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, r.Message)
		got = append(got, r.ID)
	}
	assert.Equal(t, ids, got, "results are in pair order")
	mu.Lock()
	defer mu.Unlock()
	want := make([]string, n)
	for i, id := range ids {
		want[n-1-i] = id
	}
	assert.Equal(t, want, progress, "progress reports pairs as they finish")
}

func TestRunParallelCap(t *testing.T) {
	for _, parallel := range []int{1, 2, 3} {
		t.Run(fmt.Sprint(parallel), func(t *testing.T) {
			var cur, peak atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			body := func(t *engine.T) {
				n := cur.Add(1)
				defer cur.Add(-1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if int(n) >= parallel {
					once.Do(func() { close(full) })
				}
				// Hold the slot until the cap has been reached once, so the
				// peak is exactly the cap if the engine respects it.
				select {
				case <-full:
				case <-t.Context().Done():
					t.Fatalf("the cap of %d was never reached", parallel)
				}
			}
			var ss []*engine.Scenario
			for i := range 8 {
				ss = append(ss, scenario(fmt.Sprintf("server/parallel/s%d", i), body, wire.AllVariants...))
			}
			rs, _ := run(t, context.Background(), pairsOf(t, ss...), engine.Config{Env: fakeEnv{}, Timeouts: quick, Parallel: parallel})
			require.Len(t, rs, 32)
			for _, r := range rs {
				assert.Equal(t, results.Pass, r.Outcome, r.Message)
			}
			assert.Equal(t, int32(parallel), peak.Load())
		})
	}
}

func TestValidate(t *testing.T) {
	good := func() *engine.Scenario {
		return &engine.Scenario{ID: "server/area/behaviour-1", Title: "t", Requirements: []string{"NONCE-1", "ACK-4"},
			Level: results.Must, Variants: wire.AllVariants, Run: func(*engine.T) {}}
	}
	tests := []struct {
		name   string
		mutate func(*engine.Scenario)
		dup    bool
		want   string // substring of the error; "" for no error
	}{
		{name: "valid", mutate: func(*engine.Scenario) {}},
		{name: "client role", mutate: func(s *engine.Scenario) { s.ID, s.Requirements = "client/area/b", []string{"ACK-3", "ACK-4"} }},
		{name: "level is not the headline's", mutate: func(s *engine.Scenario) { s.Level = results.Should }, want: "headline rule NONCE-1 is MUST"},
		{name: "rule of the other side", mutate: func(s *engine.Scenario) { s.Requirements = []string{"NONCE-1", "ACK-3"} }, want: "cites ACK-3, which binds the client"},
		{name: "duplicate ID", mutate: func(*engine.Scenario) {}, dup: true, want: "defined twice"},
		{name: "two segments", mutate: func(s *engine.Scenario) { s.ID = "server/area" }, want: "not <role>/<area>/<behaviour>"},
		{name: "four segments", mutate: func(s *engine.Scenario) { s.ID = "server/a/b/c" }, want: "not <role>/<area>/<behaviour>"},
		{name: "unknown role", mutate: func(s *engine.Scenario) { s.ID = "proxy/a/b" }, want: "not <role>/<area>/<behaviour>"},
		{name: "upper case", mutate: func(s *engine.Scenario) { s.ID = "server/Area/b" }, want: "not <role>/<area>/<behaviour>"},
		{name: "glob characters", mutate: func(s *engine.Scenario) { s.ID = "server/a/b*" }, want: "not <role>/<area>/<behaviour>"},
		{name: "brackets", mutate: func(s *engine.Scenario) { s.ID = "server/a/b[sotw-ads]" }, want: "not <role>/<area>/<behaviour>"},
		{name: "empty ID", mutate: func(s *engine.Scenario) { s.ID = "" }, want: "not <role>/<area>/<behaviour>"},
		{name: "no title", mutate: func(s *engine.Scenario) { s.Title = "" }, want: "no title"},
		{name: "no requirements", mutate: func(s *engine.Scenario) { s.Requirements = nil }, want: "cites no requirement"},
		{name: "unknown requirement", mutate: func(s *engine.Scenario) { s.Requirements = []string{"NONCE-1", "NOPE-99"} }, want: "NOPE-99"},
		{name: "no level", mutate: func(s *engine.Scenario) { s.Level = "" }, want: "level"},
		{name: "bad level", mutate: func(s *engine.Scenario) { s.Level = "MUST NOT" }, want: `level "MUST NOT"`},
		{name: "no variants", mutate: func(s *engine.Scenario) { s.Variants = nil }, want: "runs in no variant"},
		{name: "no body", mutate: func(s *engine.Scenario) { s.Run = nil }, want: "no body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			other := good()
			other.ID = "server/area/other"
			s := good()
			tc.mutate(s)
			cat := []*engine.Scenario{other, s}
			if tc.dup {
				cat = append(cat, good())
			}
			err := engine.Validate(cat)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// An after-run check that never returns is abandoned after its bound and
// fails the pair; the run goes on.
func TestAfterRunCheckThatBlocksIsAbandoned(t *testing.T) {
	old := *engine.AfterRunLimit
	*engine.AfterRunLimit = 50 * time.Millisecond
	defer func() { *engine.AfterRunLimit = old }()
	block := make(chan struct{})
	defer close(block)
	// Through run, which bounds the whole run: a regression fails here
	// instead of hanging the test binary.
	rs, _ := run(t, t.Context(), pairsOf(t, scenario("x/blocking/check", func(t *engine.T) {
		t.AfterRun(func(*engine.T) { <-block })
	})), engine.Config{Env: fakeEnv{}})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Contains(t, rs[0].Message, "did not return within")
}

// A failure is reported under the rule of the step that failed, at that
// rule's level; only MAY rules broken make the outcome "unsupported".
func TestRulesBroken(t *testing.T) {
	tests := []struct {
		name      string
		cite      []string
		level     results.Level
		body      func(*engine.T)
		outcome   results.Outcome
		rules     []string
		broken    results.Level
		msgPrefix string
	}{
		{name: "headline", cite: []string{"NONCE-7"}, level: results.Should,
			body:    func(t *engine.T) { t.Errorf("stale request answered") },
			outcome: results.Fail, rules: []string{"NONCE-7"}, broken: results.Should, msgPrefix: "NONCE-7 (SHOULD): stale request answered"},
		{name: "a setup step's own rule", cite: []string{"NONCE-7"}, level: results.Should,
			body:    func(t *engine.T) { t.Failf("RES-4", "the added name was never sent") },
			outcome: results.Fail, rules: []string{"RES-4"}, broken: results.Must, msgPrefix: "RES-4 (MUST): the added name"},
		{name: "several, strongest wins", cite: []string{"DELTA-8"}, level: results.May,
			body:    func(t *engine.T) { t.Errorf("resent"); t.Failf("DEL-1", "not removed"); t.Errorf("again") },
			outcome: results.Fail, rules: []string{"DELTA-8", "DEL-1"}, broken: results.Must, msgPrefix: "DELTA-8 (MAY): resent\nDEL-1 (MUST): not removed"},
		{name: "only MAY", cite: []string{"DELTA-8"}, level: results.May,
			body:    func(t *engine.T) { t.Errorf("resent") },
			outcome: results.Unsupported, rules: []string{"DELTA-8"}, broken: results.May, msgPrefix: "DELTA-8 (MAY): resent"},
		{name: "unknown rule falls back to the headline", cite: []string{"NONCE-1"}, level: results.Must,
			body:    func(t *engine.T) { t.Failf("NOPE-1", "x") },
			outcome: results.Fail, rules: []string{"NONCE-1"}, broken: results.Must, msgPrefix: `NONCE-1 (MUST): (step names unknown rule "NOPE-1") x`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := scenario("server/rules/x", tc.body)
			s.Requirements, s.Level = tc.cite, tc.level
			rs, _ := run(t, context.Background(), pairsOf(t, s), engine.Config{Env: fakeEnv{}, Timeouts: quick})
			require.Len(t, rs, 1)
			r := rs[0]
			assert.Equal(t, tc.outcome, r.Outcome)
			assert.Equal(t, tc.rules, r.RulesBroken)
			assert.Equal(t, tc.broken, r.BrokenLevel)
			assert.True(t, strings.HasPrefix(r.Message, tc.msgPrefix), "message %q, want prefix %q", r.Message, tc.msgPrefix)
		})
	}
}

// A body that asks to linger keeps its pair for the quiet window after it
// ends, so a watch still sees a violation that comes late; StopLinger ends
// the window at once. Neither half reads the clock: the late failure is
// recorded only if the pair waited for it, and a window longer than the
// scenario bound lets the pair pass only if StopLinger cut it short.
func TestLinger(t *testing.T) {
	to := engine.Timeouts{Expect: time.Second, Quiet: 300 * time.Millisecond, Scenario: 10 * time.Second}
	late := scenario("server/linger/late", func(t *engine.T) {
		windowOpen := make(chan struct{})
		t.Linger(func() { close(windowOpen) })
		// A violation that comes only once the body has ended, as a
		// watch would record it.
		go func() {
			<-windowOpen
			t.Failf("UPD-1", "resent late")
		}()
	})
	rs, _ := run(t, context.Background(), pairsOf(t, late), engine.Config{Env: fakeEnv{}, Timeouts: to})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Fail, rs[0].Outcome, "the pair waited for the late violation: %s", rs[0].Message)

	stopped := scenario("server/linger/stopped", func(t *engine.T) {
		t.Linger(nil)
		t.StopLinger()
	})
	// Without StopLinger the window would outlast the scenario bound and
	// the pair would end in an error ("did not finish within").
	rs, _ = run(t, context.Background(), pairsOf(t, stopped), engine.Config{Env: fakeEnv{}, Timeouts: engine.Timeouts{Expect: time.Second, Quiet: time.Hour, Scenario: 5 * time.Second}})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Pass, rs[0].Outcome, "StopLinger ends the window: %s", rs[0].Message)
}

// A listed pair failing a rule its entry does not name fails the run, and
// its message says which rules the entry names.
func TestKnownFailingOtherRuleNamed(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader("server/kf/named ACK-1: the peer never answers\n"), "kf")
	require.NoError(t, err)
	s := scenario("server/kf/named", func(t *engine.T) { t.Failf("NONCE-1", "empty nonce") })
	rs, _ := run(t, context.Background(), pairsOf(t, s), engine.Config{Env: fakeEnv{}, Timeouts: quick, KnownFailing: kf})
	require.Len(t, rs, 1)
	assert.Equal(t, results.Fail, rs[0].Outcome)
	assert.Empty(t, rs[0].KnownFailing)
	assert.Contains(t, rs[0].Message, "listed as known-failing for ACK-1, line 1, but this failure broke NONCE-1")
}
