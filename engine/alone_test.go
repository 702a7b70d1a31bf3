package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// Scenarios marked Alone (those that may crash the target) run after every
// other pair, one at a time, and their results still come back in pair
// order.
func TestRunAloneAfterTheRestOneAtATime(t *testing.T) {
	var mu sync.Mutex
	var events []string // "start X" and "end X", in the order they happened
	note := func(what, name string) {
		mu.Lock()
		events = append(events, what+" "+name)
		mu.Unlock()
	}
	// The shared pairs hold until all of them have started, so they
	// provably run together, and an engine that started an Alone pair in
	// list order would start it while the shared pairs before it still
	// run.
	const sharedPairs = 4
	var started sync.WaitGroup
	started.Add(sharedPairs)
	allStarted := make(chan struct{})
	go func() { started.Wait(); close(allStarted) }()
	shared := func(id string) func(*engine.T) {
		return func(t *engine.T) {
			name := id + "[" + t.Variant.String() + "]"
			note("start", name)
			started.Done()
			select {
			case <-allStarted:
			case <-t.Context().Done():
				t.Fatalf("the shared pairs never all ran at once")
			}
			note("end", name)
		}
	}
	crashy := func(id string) *engine.Scenario {
		s := scenario(id, func(t *engine.T) {
			name := id + "[" + t.Variant.String() + "]"
			note("start", name)
			note("end", name)
		}, wire.SotWADS, wire.DeltaADS)
		s.Alone = true
		return s
	}
	// Alone scenarios first and in the middle of the list: the engine,
	// not the catalogue's order, puts them last.
	ss := []*engine.Scenario{
		crashy("server/robustness/first"),
		scenario("server/shared/a", shared("server/shared/a"), wire.SotWADS, wire.DeltaADS),
		crashy("server/robustness/middle"),
		scenario("server/shared/b", shared("server/shared/b"), wire.SotWADS, wire.DeltaADS),
	}
	pairs := pairsOf(t, ss...)
	rs, _ := run(t, context.Background(), pairs, engine.Config{Env: fakeEnv{}, Timeouts: quick})
	require.Len(t, rs, len(pairs))
	for i, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
		assert.Equal(t, pairs[i].FullName(), r.FullName(), "results are in pair order")
	}

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, events, 2*len(pairs))
	// Every shared pair has ended before the first Alone pair starts...
	for i, e := range events[:2*sharedPairs] {
		assert.Contains(t, e, "/shared/", "event %d (%q) is not a shared pair's: %v", i, e, events)
	}
	// ...and each Alone pair ends before the next one starts.
	rest := events[2*sharedPairs:]
	for i := 0; i < len(rest); i += 2 {
		start, end := rest[i], rest[i+1]
		name, ok := strings.CutPrefix(start, "start ")
		if assert.True(t, ok, "event %q should start an Alone pair: %v", start, events) {
			assert.Equal(t, "end "+name, end, "an Alone pair ran with another: %v", events)
		}
	}
}

// An interrupt before the Alone pairs' turn drops them: they never start
// against a run that is ending.
func TestRunAloneDroppedOnInterrupt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var aloneRan bool
	var mu sync.Mutex
	shared := scenario("server/shared/interrupts", func(t *engine.T) {
		cancel() // Ctrl-C while the shared pairs run
		<-t.Context().Done()
	})
	crashy := scenario("server/robustness/never", func(*engine.T) {
		mu.Lock()
		aloneRan = true
		mu.Unlock()
	})
	crashy.Alone = true
	rs, interrupted := run(t, ctx, pairsOf(t, crashy, shared), engine.Config{Env: fakeEnv{}, Timeouts: quick})
	assert.True(t, interrupted)
	require.Len(t, rs, 1, "only the shared pair ran: %v", rs)
	assert.Equal(t, "server/shared/interrupts", rs[0].ID)
	mu.Lock()
	defer mu.Unlock()
	assert.False(t, aloneRan, "an Alone pair started after the interrupt")
}

// freshEnv starts a fresh target for every pair.
type freshEnv struct{ fakeEnv }

func (freshEnv) FreshTargetPerPair() bool { return true }

// With a fresh target per pair, Alone scenarios run with the rest: a
// crash harms only the pair that caused it, and running them one at a
// time after the rest would only make the run longer.
func TestRunAloneWithFreshTargetsRunsWithTheRest(t *testing.T) {
	const n = 4
	var started sync.WaitGroup
	started.Add(n)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	together := func(t *engine.T) {
		started.Done()
		select {
		case <-all:
		case <-t.Context().Done():
			t.Fatalf("the pairs never all ran at once")
		}
	}
	crashy := scenario("client/robustness/crashy", together, wire.SotWADS, wire.DeltaADS)
	crashy.Alone = true
	pairs := pairsOf(t, crashy, scenario("client/shared/a", together, wire.SotWADS, wire.DeltaADS))
	require.Len(t, pairs, n)
	rs, _ := run(t, context.Background(), pairs, engine.Config{Env: freshEnv{}, Timeouts: quick})
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
	}
}

// Scenarios marked Timed run with the rest: their verdicts weigh the
// harness's own lag rather than wait for a quiet harness.
func TestRunTimedWithTheRest(t *testing.T) {
	const pairs = 4
	var started sync.WaitGroup
	started.Add(pairs)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	body := func(t *engine.T) {
		started.Done()
		select {
		case <-all:
		case <-t.Context().Done():
			t.Fatalf("the pairs never all ran at once")
		}
	}
	timed := scenario("client/reconnect/timed", body, wire.SotWADS, wire.DeltaADS)
	timed.Timed = true
	shared := scenario("client/shared/a", body, wire.SotWADS, wire.DeltaADS)
	rs, _ := run(t, context.Background(), pairsOf(t, timed, shared), engine.Config{Env: fakeEnv{}, Timeouts: quick})
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
	}
}
