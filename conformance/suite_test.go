package conformance

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// collect runs names and returns what each was delivered, failing on a
// name delivered twice.
func collect(t *testing.T, ctx context.Context, s *Suite, names []string) map[string]Outcome {
	t.Helper()
	var mu sync.Mutex
	got := map[string]Outcome{}
	require.NoError(t, s.Run(ctx, names, func(o Outcome) {
		mu.Lock()
		defer mu.Unlock()
		_, twice := got[o.Pair.Name]
		assert.False(t, twice, "%s delivered twice", o.Pair.Name)
		got[o.Pair.Name] = o
	}))
	return got
}

func TestPairsAreNamedForGoTest(t *testing.T) {
	s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{Run: []string{"server/selftest/passes", "server/selftest/known"}})
	ps := s.Pairs()
	require.Len(t, ps, 2)
	p := ps[0]
	assert.Equal(t, "server/selftest/passes/sotw-ads", p.Name)
	assert.Equal(t, "server/selftest/passes[sotw-ads]", p.FullName())
	assert.Equal(t, "server", p.Role())
	assert.Equal(t, "selftest", p.Family())
	assert.Equal(t, results.Must, p.Level)
	assert.Equal(t, []string{"NONCE-1"}, p.Requirements)
}

// Run runs exactly the pairs named and delivers each once; the others of
// the suite do not run.
func TestRunRunsOnlyTheNamedPairs(t *testing.T) {
	var mu sync.Mutex
	var ran []string
	record := func(id string) func(*engine.T) {
		return func(*engine.T) {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, id)
		}
	}
	cat := []*engine.Scenario{scenario("a", record("a"), "NONCE-1"), scenario("b", record("b"), "NONCE-1"), scenario("c", record("c"), "NONCE-1")}
	s, ft := newFakeSuite(t, cat, ServerOptions{})
	require.NoError(t, s.Start(t.Context()))
	got := collect(t, t.Context(), s, []string{"server/selftest/c/sotw-ads", "server/selftest/a/sotw-ads"})
	assert.Len(t, got, 2)
	for _, o := range got {
		assert.Equal(t, results.Pass, o.Result.Outcome)
		assert.False(t, o.Stopped)
	}
	assert.ElementsMatch(t, []string{"a", "c"}, ran)

	// A pair runs once, and only pairs of the suite run.
	assert.ErrorContains(t, s.Run(t.Context(), []string{"server/selftest/a/sotw-ads"}, func(Outcome) {}), "run already")
	assert.ErrorContains(t, s.Run(t.Context(), []string{"server/selftest/nope/sotw-ads"}, func(Outcome) {}), "not a pair of this suite")
	assert.ElementsMatch(t, []string{"a", "c"}, ran)
	require.NoError(t, s.Finish())
	assert.True(t, ft.closed, "Finish closes the target")
}

func TestRunBeforeStart(t *testing.T) {
	s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{})
	assert.ErrorContains(t, s.Run(t.Context(), []string{"server/selftest/passes/sotw-ads"}, func(Outcome) {}), "before Start")
	assert.NoError(t, s.Finish(), "a suite never started has nothing to finish")
}

// When the context ends, the pair cut short and those never started are
// delivered as stopped, with the cause.
func TestRunStoppedByItsContext(t *testing.T) {
	running := make(chan struct{})
	cat := []*engine.Scenario{scenario("runs", func(t *engine.T) { close(running); blocks(t) }, "NONCE-1")}
	for _, id := range []string{"b1", "b2", "b3"} {
		cat = append(cat, scenario(id, blocks, "NONCE-1"))
	}
	// One at a time: the first pair holds the only slot until the run
	// ends, and the others never start.
	s, _ := newFakeSuite(t, cat, ServerOptions{Parallel: 1})
	require.NoError(t, s.Start(t.Context()))
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		select {
		case <-running:
		case <-time.After(20 * time.Second):
		}
		cancel(errors.New("stopped by the test"))
	}()
	var names []string
	for _, p := range s.Pairs() {
		names = append(names, p.Name)
	}
	got := collect(t, ctx, s, names)
	require.Len(t, got, len(names), "every pair is delivered, run or not")
	for n, o := range got {
		assert.True(t, o.Stopped, n)
		assert.Equal(t, results.Error, o.Result.Outcome, n)
		assert.Contains(t, o.Result.Message, "stopped by the test", n)
		if n == "server/selftest/runs/sotw-ads" {
			assert.Contains(t, o.Result.Message, "interrupted", "cut short")
		} else {
			assert.Contains(t, o.Result.Message, "not run", n)
		}
	}
	require.NoError(t, s.Finish())
}

func TestVerdicts(t *testing.T) {
	base := results.Result{ID: "server/x/y", Variant: "sotw-ads", Title: "t", Requirements: []string{"NONCE-1"}, Level: results.Must, Outcome: results.Pass}
	with := func(f func(*results.Result)) results.Result { r := base; f(&r); return r }
	entries := []transcript.Entry{{Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse", Message: []byte(`{"nonce":"1"}`)}}
	for _, tc := range []struct {
		name     string
		r        results.Result
		failOn   results.Level
		kind     Kind
		headline []string
		detail   []string
		hasTrans bool
	}{
		{name: "pass", r: base, kind: Passed},
		{name: "fail at fail-on", r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.Message, r.Transcript = results.Fail, []string{"NONCE-1"}, results.Must, "NONCE-1 (MUST): expected X, got Y", entries
		}), kind: Failed, headline: []string{"NONCE-1", "MUST", "expected X, got Y"}, detail: []string{"rules broken: NONCE-1 (MUST)", "expected X, got Y"}, hasTrans: true},
		{name: "fail below fail-on", failOn: results.Must, r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.Message = results.Fail, []string{"ACK-5"}, results.Should, "ACK-5 (SHOULD): resent"
		}), kind: Passed, headline: []string{"warning", "ACK-5", "SHOULD", "below FailOn MUST"}, detail: []string{"resent"}, hasTrans: true},
		{name: "should at default fail-on", r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.Message = results.Fail, []string{"ACK-5"}, results.Should, "ACK-5 (SHOULD): resent"
		}), kind: Failed, headline: []string{"ACK-5 (SHOULD)"}, hasTrans: true},
		{name: "unsupported", r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.Message = results.Unsupported, []string{"GRP-2"}, results.May, "GRP-2 (MAY): full"
		}), kind: Passed, headline: []string{"unsupported", "GRP-2"}},
		{name: "skipped", r: with(func(r *results.Result) { r.Outcome, r.Message = results.Skip, "needs fixture" }),
			kind: Skipped, headline: []string{"needs fixture"}},
		{name: "known failure", r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.KnownFailing, r.Message = results.Fail, []string{"NONCE-1"}, results.Must, "NONCE-1: upstream bug 12", "NONCE-1 (MUST): x"
		}), kind: Skipped, headline: []string{"known failure: NONCE-1: upstream bug 12"}, hasTrans: true},
		{name: "stale entry", r: with(func(r *results.Result) { r.Outcome, r.KnownFailing = results.Pass, "NONCE-1: upstream bug 12" }),
			kind: Failed, headline: []string{"stale known-failing entry", "upstream bug 12", "remove the entry"}},
		{name: "stale entry, only MAY broken", r: with(func(r *results.Result) {
			r.Outcome, r.RulesBroken, r.BrokenLevel, r.KnownFailing = results.Unsupported, []string{"GRP-2"}, results.May, "GRP-2: partial"
		}), kind: Failed, headline: []string{"stale known-failing entry", "GRP-2"}, hasTrans: true},
		{name: "error", r: with(func(r *results.Result) { r.Outcome, r.Message = results.Error, "the fixture refused\nmore" }),
			kind: Failed, headline: []string{"error", "could not run", "the fixture refused"}, detail: []string{"more"}, hasTrans: true},
		{name: "blocked at fail-on", r: with(func(r *results.Result) {
			r.Outcome, r.BlockedBy, r.RulesBroken, r.BrokenLevel, r.Level = results.Blocked, "RES-1", []string{"RES-1"}, results.Must, results.May
			r.Message, r.Transcript = "blocked by RES-1 (MUST): a precondition failed: no CDS response\nmore", entries
		}), kind: Failed, headline: []string{"blocked by RES-1 (MUST): a precondition failed: no CDS response"},
			detail: []string{"blocked by:   RES-1 (MUST), the rule its failed precondition rests on", "more"}, hasTrans: true},
		{name: "blocked below fail-on", failOn: results.Must, r: with(func(r *results.Result) {
			r.Outcome, r.BlockedBy, r.RulesBroken, r.BrokenLevel, r.Message = results.Blocked, "UPD-1", []string{"UPD-1"}, results.Should, "no update"
		}), kind: Passed, headline: []string{"warning: blocked by UPD-1 (SHOULD), below FailOn MUST"}, hasTrans: true},
		{name: "blocked, known", r: with(func(r *results.Result) {
			r.Outcome, r.BlockedBy, r.RulesBroken, r.BrokenLevel, r.KnownFailing = results.Blocked, "RES-1", []string{"RES-1"}, results.Must, "RES-1: listed"
		}), kind: Skipped, headline: []string{"known failure: RES-1: listed"}, hasTrans: true},
		{name: "inconclusive", r: with(func(r *results.Result) {
			r.Outcome, r.Message = results.Inconclusive, "the harness's own lag could explain a timing verdict either way:\n…"
			r.Timing = &results.Timing{Reruns: 1, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the ACK", Kind: results.TimingWithin,
				Measured: 1200 * time.Millisecond, Limit: time.Second, Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt}}}
		}), kind: Skipped, headline: []string{"inconclusive", "UPD-2: the ACK took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 1 time"},
			detail: []string{"timing:\n    UPD-2 within: the ACK: 1.2s against 1s, harness stalled 400ms (longest 300ms): doubt\n    (its last run's: it ran again alone 1 time)"}, hasTrans: true},
		{name: "unknown outcome", r: with(func(r *results.Result) { r.Outcome = "weird" }), kind: Failed, headline: []string{"unknown outcome weird"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			failOn := tc.failOn
			if failOn == "" {
				failOn = results.Should
			}
			v := verdictOf(tc.r, failOn)
			assert.Equal(t, tc.kind, v.Kind, "%+v", v)
			for _, h := range tc.headline {
				assert.Contains(t, v.Headline, h)
			}
			for _, d := range tc.detail {
				assert.Contains(t, v.Details, d)
			}
			assert.NotContains(t, v.Headline, "\n", "a headline is one line")
			assert.Equal(t, tc.hasTrans, v.Transcript != "", "transcript: %q", v.Transcript)
		})
	}
}

// What a verdict says comes from the target: it is scrubbed of remembered
// secrets, escaped for a terminal and bounded.
func TestVerdictIsScrubbedEscapedAndBounded(t *testing.T) {
	const secret = "s3cr3t-token-value-0123456789"
	transcript.RememberSecret(secret)
	var entries []transcript.Entry
	for i := range 500 {
		entries = append(entries, transcript.Entry{Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse",
			Message: []byte(`"` + strings.Repeat("x", 2000) + secret + string(rune('a'+i%26)) + `"`)})
	}
	r := results.Result{ID: "server/x/y", Variant: "sotw-ads", Requirements: []string{"NONCE-1"}, Level: results.Must,
		Outcome: results.Fail, RulesBroken: []string{"NONCE-1"}, BrokenLevel: results.Must,
		Message: "NONCE-1 (MUST): got \x1b[31mred\x1b[0m and " + secret, Transcript: entries}
	v := verdictOf(r, results.Should)
	all := v.Headline + v.Details + v.Transcript
	assert.NotContains(t, all, secret)
	assert.NotContains(t, all, "\x1b")
	assert.Contains(t, v.Details, `\x1b[31mred`)
	assert.LessOrEqual(t, len(v.Transcript), TranscriptBytes+200)
	assert.Contains(t, v.Transcript, "last 40 of 500 entries")
}

func TestOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	cat := outcomeCatalogue
	for _, tc := range []struct {
		name string
		opts ServerOptions
		want string
	}{
		{"no target", ServerOptions{Scenarios: cat}, "Server.Target is required"},
		{"run matches nothing", ServerOptions{Run: []string{"server/nope/*"}}, "Run server/nope/*: matches no scenario"},
		{"nothing selected", ServerOptions{Run: []string{"server/selftest/passes"}, Skip: []string{"server/selftest/*"}}, "no scenario matched"},
		{"bad level", ServerOptions{Levels: []results.Level{"OPTIONAL"}}, `unknown level "OPTIONAL"`},
		{"bad fail-on", ServerOptions{FailOn: results.May}, "FailOn"},
		{"negative timeout", ServerOptions{Timeouts: engine.Timeouts{Quiet: -time.Second}}, "Timeouts.Quiet"},
		{"negative parallel", ServerOptions{Parallel: -1}, "Parallel"},
		{"bad transcripts", ServerOptions{Transcripts: "some"}, "Transcripts"},
		{"same report twice", ServerOptions{JSONReport: "r", JUnitReport: "r"}, "both r"},
		{"two known-failing lists", ServerOptions{KnownFailing: knownList(t, outcomeKnown), KnownFailingFile: "x"}, "not both"},
		{"missing known-failing file", ServerOptions{KnownFailingFile: filepath.Join(dir, "none.txt")}, "KnownFailingFile"},
		{"bad scenario", ServerOptions{Scenarios: []*engine.Scenario{{ID: "server/x", Title: "t"}}}, "scenarios:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Scenarios == nil && tc.name != "bad scenario" {
				tc.opts.Scenarios = cat
			}
			if tc.name != "no target" {
				tc.opts.Server.Target = "127.0.0.1:1"
			}
			_, err := NewServerSuite(tc.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestClientOptionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ClientOptions
		want string
	}{
		{"no client", ClientOptions{}, "exactly one of"},
		{"quiet over the timer", ClientOptions{Client: targets.ClientOptions{Command: "true", DNETimer: time.Second},
			Timeouts: engine.Timeouts{Quiet: 2 * time.Second}}, "must be shorter than Client.DNETimer"},
		{"scenario bound under the timer", ClientOptions{Client: targets.ClientOptions{Command: "true"},
			Timeouts: engine.Timeouts{Scenario: 10 * time.Second}}, "must be at least Client.DNETimer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewClientSuite(tc.opts)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A target nobody answers at is unreachable, with the cause; no report
// is left behind.
func TestStartUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	report := filepath.Join(t.TempDir(), "report.json")
	require.NoError(t, os.WriteFile(report, []byte("yesterday's"), 0o644))
	s, err := NewServerSuite(ServerOptions{Server: targets.ServerOptions{Target: addr, ConnectTimeout: 2 * time.Second},
		Scenarios: outcomeCatalogue, JSONReport: report})
	require.NoError(t, err)
	err = s.Start(t.Context())
	require.ErrorIs(t, err, targets.ErrUnreachable)
	assert.Contains(t, err.Error(), addr)
	assert.NoFileExists(t, report, "a run that could not start leaves no report, never the previous one")
}

// Finish says what went wrong with the run as a whole and writes the
// reports of what ran.
func TestFinish(t *testing.T) {
	t.Run("reports", func(t *testing.T) {
		dir := t.TempDir()
		jsonPath, junitPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
		s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{JSONReport: jsonPath, JUnitReport: junitPath, KnownFailing: knownList(t, outcomeKnown)})
		require.NoError(t, s.Start(t.Context()))
		var names []string
		for _, p := range s.Pairs() {
			if p.ID != "server/selftest/passes" {
				names = append(names, p.Name)
			}
		}
		collect(t, t.Context(), s, names)
		require.NoError(t, s.Finish())
		run, _, err := reports.ReadJSONFile(context.Background(), jsonPath)
		require.NoError(t, err)
		var ids []string
		for _, r := range run.Results {
			ids = append(ids, strings.TrimPrefix(r.ID, "server/selftest/"))
		}
		// Exactly what ran.
		assert.ElementsMatch(t, []string{"fails-must", "fails-should", "may", "skips", "lacking", "errors", "known", "stale", "other-rule",
			"blocked", "blocked-listed", "inconclusive"}, ids)
		assert.Equal(t, "fake target", run.Target)
		assert.Equal(t, results.RoleServer, run.Role)
		assert.FileExists(t, junitPath)
	})
	t.Run("nothing could run", func(t *testing.T) {
		s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{Run: []string{"server/selftest/skips", "server/selftest/lacking"}})
		require.NoError(t, s.Start(t.Context()))
		collect(t, t.Context(), s, []string{"server/selftest/skips/sotw-ads", "server/selftest/lacking/sotw-ads"})
		err := s.Finish()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "nothing could run: 2 selected pairs skipped")
		assert.Contains(t, err.Error(), "the fake target lacks it (1)")
	})
	t.Run("target died", func(t *testing.T) {
		s, ft := newFakeSuite(t, outcomeCatalogue, ServerOptions{})
		require.NoError(t, s.Start(t.Context()))
		collect(t, t.Context(), s, []string{"server/selftest/passes/sotw-ads"})
		ft.died = errors.New("connection refused")
		err := s.Finish()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the target died during the run")
		assert.Contains(t, err.Error(), "connection refused")
		assert.NoError(t, s.Finish(), "a second Finish has nothing to say")
	})
	t.Run("nothing ran", func(t *testing.T) {
		dir := t.TempDir()
		s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{JSONReport: filepath.Join(dir, "r.json")})
		require.NoError(t, s.Start(t.Context()))
		require.NoError(t, s.Finish(), "go test selecting none of the pairs is no error")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "no report of nothing")
	})
}

// The known-failing list applies as the engine applies it; a file works
// as the list does.
func TestKnownFailingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "known.txt")
	require.NoError(t, os.WriteFile(path, []byte(outcomeKnown), 0o644))
	s, _ := newFakeSuite(t, outcomeCatalogue, ServerOptions{KnownFailingFile: path, Run: []string{"server/selftest/known", "server/selftest/stale", "server/selftest/other-rule"}})
	require.NoError(t, s.Start(t.Context()))
	var names []string
	for _, p := range s.Pairs() {
		names = append(names, p.Name)
	}
	got := collect(t, t.Context(), s, names)
	require.NoError(t, s.Finish())
	kinds := map[string]Kind{}
	for n, o := range got {
		kinds[strings.TrimSuffix(strings.TrimPrefix(n, "server/selftest/"), "/sotw-ads")] = s.Verdict(o).Kind
	}
	assert.Equal(t, map[string]Kind{"known": Skipped, "stale": Failed, "other-rule": Failed}, kinds)
}

func TestHarnessVersionIsNeverBare(t *testing.T) {
	v := harnessVersion()
	assert.NotEmpty(t, v)
	assert.NotEqual(t, "dev", v)
}

func TestKindString(t *testing.T) {
	assert.Equal(t, []string{"passed", "failed", "skipped", "Kind(7)"},
		[]string{Passed.String(), Failed.String(), Skipped.String(), Kind(7).String()})
	assert.True(t, slices.Contains(wire.AllVariants, wire.SotWADS))
}
