package conformance

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"sync"
	"testing"
	"time"
)

// RunServerSuite runs the server suite against opts.Server as subtests of
// t, one per pair, named "ID/variant" (say
// "TestConformance/server/nonce/distinct/sotw-ads"), so that go test's
// -run and -skip select pairs by regular expression, level by level of
// the ID: -run 'TestConformance/server/nonce/.*' runs the nonce pairs
// alone. A bad option fails t at once, and so does a target that cannot
// be reached, with the cause.
//
// How a pair's outcome shows (docs/outcomes.md has every outcome, and how
// the other reports show it):
//   - pass: the subtest passes.
//   - a rule at or above FailOn broken: the subtest fails with the rules,
//     their level and the evidence, and logs the end of the transcript.
//   - blocked by a rule at or above FailOn (a precondition resting on it
//     failed, so the scenario never reached what it checks): the subtest
//     fails naming that rule and its level, with the evidence.
//   - a rule below FailOn broken, or a pair blocked by one: the subtest
//     passes and logs a warning; a MAY rule not met passes with an
//     "unsupported" log.
//   - inconclusive (the harness's own lag could explain a timing verdict
//     either way, even with the pair run again alone): t.Skip with the
//     timing figures; it fails no rule.
//   - skipped (the pair does not apply to the target): t.Skip with the
//     reason.
//   - a known failure (or a known blocked pair): t.Skip with "known
//     failure: " and the entry's reason; a listed pair that passes fails
//     its subtest (the entry is stale).
//   - an error (the harness or the target could not run the pair): the
//     subtest fails saying so.
//
// The pairs are not parallel subtests: they run together as the engine
// schedules them (up to Parallel at once, Timed and Alone scenarios in
// phases of their own), however small go test's -parallel, and only the
// pairs -run selects run at all. Each subtest ends when its pair does, so
// its duration is real. With -failfast the first failing pair stops the
// rest, which are skipped saying so. When go test's -timeout is near, the
// pairs still running are stopped and fail saying so, rather than the
// test binary panicking.
//
// Besides the subtests, t itself fails when the target died during the
// run, when every pair that ran was skipped (nothing was checked), or when
// a report file could not be written.
func RunServerSuite(t *testing.T, opts ServerOptions) {
	t.Helper()
	s, err := NewServerSuite(opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	runTests(t, s)
}

// RunClientSuite runs the client suite against opts.Client as subtests of
// t, exactly as RunServerSuite runs the server suite.
func RunClientSuite(t *testing.T, opts ClientOptions) {
	t.Helper()
	s, err := NewClientSuite(opts)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	runTests(t, s)
}

// runTests runs a prepared suite as subtests of t, as RunServerSuite
// describes, and finishes it.
func runTests(t *testing.T, s *Suite) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if deadline, ok := t.Deadline(); ok {
		// Stop short of go test's own deadline, which panics the binary
		// with every goroutine's stack: the pairs still running then end
		// as failures that say why, and the reports are written.
		grace := min(30*time.Second, time.Until(deadline)/10)
		var stop context.CancelFunc
		ctx, stop = context.WithDeadlineCause(ctx, deadline.Add(-grace), errTestDeadline)
		defer stop()
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("conformance: %v", err)
	}
	defer func() {
		if err := s.Finish(); err != nil {
			t.Errorf("conformance: %v", err)
		}
	}()

	for _, pat := range s.known.Unmatched(s.pairs) {
		t.Logf("conformance: note: known-failing entry %q matches no selected pair", pat)
	}
	pairs := s.Pairs()
	slots := make([]chan Outcome, len(pairs))
	index := make(map[string]int, len(pairs))
	for i, p := range pairs {
		index[p.Name] = i
	}
	// Every pair's goroutine decides once: its subtest started (go test
	// selected it) and waits for its outcome, or t.Run returned without
	// starting it.
	var mu sync.Mutex
	undecided := len(pairs)
	decided := make(chan struct{})
	decide := func(i int, slot chan Outcome) {
		mu.Lock()
		defer mu.Unlock()
		slots[i] = slot
		if undecided--; undecided == 0 {
			close(decided)
		}
	}
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started := false
			t.Run(p.Name, func(st *testing.T) {
				started = true
				slot := make(chan Outcome, 1)
				decide(i, slot)
				// Run delivers every pair it was given, each once.
				report(ctx, st, s, <-slot)
			})
			// t.Run returns without calling the function for a name -run
			// or -skip does not select, or once -failfast has seen a
			// failure; it returns true either way.
			if !started {
				decide(i, nil)
			}
		}()
	}
	<-decided
	var names []string
	for i, slot := range slots {
		if slot != nil {
			names = append(names, pairs[i].Name)
		}
	}
	if len(names) == 0 {
		t.Logf("conformance: go test selected none of the %d pairs of the %s suite", len(pairs), s.Role())
		wg.Wait()
		return
	}
	failfast := failFast()
	err := s.Run(ctx, names, func(o Outcome) {
		if failfast && !o.Stopped && s.Verdict(o).Kind == Failed {
			cancel(&failFastStop{pair: o.Pair.Name})
		}
		slots[index[o.Pair.Name]] <- o
	})
	if err != nil {
		// Nothing ran; every waiting subtest must still be told why.
		cancel(fmt.Errorf("the suite could not run: %w", err))
		for _, n := range names {
			slots[index[n]] <- Outcome{Pair: pairs[index[n]], Stopped: true}
		}
	}
	wg.Wait()
}

// report ends the subtest t of a pair with its outcome; ctx is the run's.
func report(ctx context.Context, t *testing.T, s *Suite, o Outcome) {
	if o.Stopped {
		var ff *failFastStop
		if errors.As(context.Cause(ctx), &ff) {
			t.Skipf("not finished: -failfast stopped the suite after %s failed", ff.pair)
		}
		t.Fatalf("did not finish: %s", causeOf(ctx))
	}
	v := s.Verdict(o)
	where := ""
	if s.json != "" {
		where = "\n(the whole transcript is in the JSON report, " + s.json + ")"
	}
	switch v.Kind {
	case Passed:
		if v.Headline != "" {
			t.Logf("%s\n%s", v.Headline, v.Details)
		}
		if v.Transcript != "" {
			t.Log(v.Transcript + where)
		}
	case Failed:
		t.Errorf("%s\n%s", v.Headline, v.Details)
		if v.Transcript != "" {
			t.Log(v.Transcript + where)
		}
	case Skipped:
		if v.Details != "" {
			t.Log(v.Details)
		}
		if v.Transcript != "" {
			t.Log(v.Transcript)
		}
		t.Skip(v.Headline)
	}
}

// failFastStop is the cause of a run -failfast stopped.
type failFastStop struct{ pair string }

func (f *failFastStop) Error() string {
	return "-failfast: stopped after " + f.pair + " failed"
}

// errTestDeadline is the cause of a run stopped because go test's
// -timeout was near.
var errTestDeadline = errors.New("go test's -timeout is near: the suite was stopped before it (raise -timeout, or select fewer pairs)")

// failFast reports whether go test runs with -failfast.
func failFast() bool {
	f := flag.Lookup("test.failfast")
	return f != nil && f.Value.String() == "true"
}
