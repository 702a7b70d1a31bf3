//go:build soak

package soak

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	// The reference peers the soak runs.
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

var (
	runs = flag.Int("soak.runs", 200, "how many times to run both suites")
	// The reference client's does-not-exist timer: short, so that a run
	// takes seconds, yet longer than the quiet window (1.5 s), which some
	// timer scenarios watch inside it (as on the CLI).
	dneTimer = flag.Duration("soak.dne-timer", 3*time.Second, "the reference client's does-not-exist timer")
)

// verdict is what must not change between runs of the same target.
type verdict struct {
	outcome results.Outcome
	rules   string
}

// TestSoak runs the server suite against builtin:reference and the client
// suite against builtin:reference (concurrently, each target started
// afresh, at the CLI's default timeouts and parallelism) *runs times, and
// fails on any verdict that differs from the first run's, on a first run
// that is not clean, or on goroutines that keep growing.
func TestSoak(t *testing.T) {
	ctx := context.Background()
	serverPairs, err := engine.Expand(scenarios.Server(), engine.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	clientPairs, err := engine.Expand(scenarios.Client(), engine.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference, DNETimer: *dneTimer})
	if err != nil {
		t.Fatal(err)
	}
	timeouts := engine.DefaultTimeouts
	if need := *dneTimer + 2*timeouts.Expect; timeouts.Scenario < need {
		timeouts.Scenario = need
	}

	var baseline map[string]verdict
	var flips []string
	goroutinesAfterFirst, maxGoroutines := 0, 0
	start := time.Now()
	for i := range *runs {
		srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: targets.BuiltinReference})
		if err != nil {
			t.Fatal(err)
		}
		var server, client []results.Result
		var wg sync.WaitGroup
		wg.Go(func() { server, _ = engine.Run(ctx, serverPairs, engine.Config{Env: srv, Timeouts: timeouts}) })
		wg.Go(func() { client, _ = engine.Run(ctx, clientPairs, engine.Config{Env: clients, Timeouts: timeouts}) })
		wg.Wait()
		srv.Close()

		got := map[string]verdict{}
		for _, r := range append(server, client...) {
			got[r.FullName()] = verdict{r.Outcome, strings.Join(r.RulesBroken, ",")}
		}
		if i == 0 {
			baseline = got
			if s := results.Summarize(append(server, client...)); !s.OK() {
				t.Fatalf("the first run against the reference peers is not clean: %+v", s)
			}
		}
		for _, name := range slices.Sorted(maps.Keys(baseline)) {
			if got[name] != baseline[name] {
				flips = append(flips, fmt.Sprintf("run %d: %s was %v, now %v", i+1, name, baseline[name], got[name]))
			}
		}
		n := settledGoroutines(goroutinesAfterFirst)
		if i == 0 {
			goroutinesAfterFirst = n
		}
		maxGoroutines = max(maxGoroutines, n)
		if (i+1)%10 == 0 || i+1 == *runs {
			t.Logf("soak: %d/%d runs in %v, %d verdict flips, peak RSS %d MiB, goroutines %d (after run 1: %d, max %d)",
				i+1, *runs, time.Since(start).Round(time.Second), len(flips), peakRSS()>>20, n, goroutinesAfterFirst, maxGoroutines)
		}
	}
	t.Logf("soak: %d runs of %d server and %d client pairs: %d verdict flips; peak RSS %d MiB; goroutines after run 1 %d, at most %d",
		*runs, len(serverPairs), len(clientPairs), len(flips), peakRSS()>>20, goroutinesAfterFirst, maxGoroutines)
	for _, f := range flips {
		t.Error(f)
	}
	// Goroutines may vary a little between runs (gRPC's idle timers), but
	// must not grow with them.
	if maxGoroutines > goroutinesAfterFirst+goroutineSlack {
		t.Errorf("goroutines grew from %d after the first run to %d", goroutinesAfterFirst, maxGoroutines)
	}
}

// goroutineSlack is how many goroutines more than after the first run a
// later run may leave behind (gRPC's and the runtime's own come and go).
const goroutineSlack = 20

// settledGoroutines counts goroutines once those of the finished run have
// ended: it polls, bounded, until the count is no higher than want, or,
// for the first run (want 0, nothing to compare with yet), until it has
// not fallen for settleTicks polls in a row; it returns the last count.
func settledGoroutines(want int) int {
	deadline := time.Now().Add(5 * time.Second)
	n, steady := runtime.NumGoroutine(), 0
	for time.Now().Before(deadline) {
		if want > 0 && n <= want || want == 0 && steady >= settleTicks {
			break
		}
		time.Sleep(10 * time.Millisecond) // polling a count, not synchronising
		m := runtime.NumGoroutine()
		if m < n {
			steady = 0
		} else {
			steady++
		}
		n = m
	}
	return n
}

// settleTicks is how many polls in a row the first run's goroutine count
// must not fall before it is taken as the baseline.
const settleTicks = 20

// peakRSS is this process's peak resident set size in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}
