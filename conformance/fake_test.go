package conformance

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// fakeEnv is a target that needs no network: the test scenarios never
// touch it. A scenario whose ID contains "lacking" lacks what it needs.
type fakeEnv struct{}

func (fakeEnv) Lacks(s *engine.Scenario, _ wire.Variant) string {
	if strings.Contains(s.ID, "lacking") {
		return "the fake target lacks it"
	}
	return ""
}

// fakeTarget is what a test suite starts instead of a server.
type fakeTarget struct {
	mu     sync.Mutex
	died   error
	closed bool
}

func (f *fakeTarget) start(context.Context) (*started, error) {
	return &started{name: "fake target", env: fakeEnv{}, close: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.closed = true
	}, died: func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.died
	}}, nil
}

// scenario is a test scenario in sotw-ads, citing rule (the first is its
// level's).
func scenario(id string, body func(*engine.T), rules ...string) *engine.Scenario {
	levels := map[string]results.Level{"NONCE-1": results.Must, "NONCE-2": results.Must, "ACK-5": results.Should, "GRP-2": results.May}
	return &engine.Scenario{ID: "server/selftest/" + id, Title: "test scenario " + id, Requirements: rules,
		Level: levels[rules[0]], Variants: []wire.Variant{wire.SotWADS}, Run: body}
}

// Scenario bodies.
var (
	passes = func(*engine.T) {}
	// failing fails rule.
	failing = func(rule string) func(*engine.T) {
		return func(t *engine.T) { t.Failf(rule, "the target broke %s (evidence: expected X, got Y)", rule) }
	}
	skips  = func(t *engine.T) { t.Skipf("the target does not serve this") }
	aborts = func(t *engine.T) { t.Abortf("the fixture refused the change") }
	// blockedBy ends with a failed precondition resting on rule, which
	// the scenario does not cite.
	blockedBy = func(rule string) func(*engine.T) {
		return func(t *engine.T) { t.Block(rule, "the base resources were not served") }
	}
	// doubts leaves a timing verdict the harness's lag could explain, in
	// every run: the pair ends inconclusive once it has run again alone.
	doubts = func(t *engine.T) {
		t.Doubt("ACK-5", "the ACK of version 2", 1200*time.Millisecond, time.Second, engine.LagStats{Total: 400 * time.Millisecond, Max: 300 * time.Millisecond})
	}
	// blocks until the pair's context ends.
	blocks = func(t *engine.T) { <-t.Context().Done() }
)

// outcomeCatalogue covers every outcome mapping; outcomeKnown lists two
// of its pairs as known-failing and one for a rule it does not break.
var outcomeCatalogue = []*engine.Scenario{
	scenario("passes", passes, "NONCE-1"),
	scenario("fails-must", failing("NONCE-1"), "NONCE-1"),
	scenario("fails-should", failing("ACK-5"), "ACK-5"),
	scenario("may", failing("GRP-2"), "GRP-2"),
	scenario("skips", skips, "NONCE-1"),
	scenario("lacking", passes, "NONCE-1"),
	scenario("errors", aborts, "NONCE-1"),
	scenario("known", failing("NONCE-1"), "NONCE-1"),
	scenario("stale", passes, "NONCE-1"),
	scenario("other-rule", failing("NONCE-2"), "NONCE-1", "NONCE-2"),
	scenario("blocked", blockedBy("RES-1"), "NONCE-1"),
	scenario("blocked-listed", blockedBy("RES-1"), "NONCE-1"),
	scenario("inconclusive", doubts, "ACK-5"),
}

const outcomeKnown = `
server/selftest/known NONCE-1: the fake target breaks it on purpose
server/selftest/stale NONCE-1: was broken once
server/selftest/other-rule NONCE-1: listed for another rule than it breaks
server/selftest/blocked-listed RES-1: the fake target never serves the base resources
`

// newFakeSuite is a server suite of cat against a fake target.
func newFakeSuite(t testing.TB, cat []*engine.Scenario, opts ServerOptions) (*Suite, *fakeTarget) {
	t.Helper()
	opts.Scenarios = cat
	opts.Server = targets.ServerOptions{Target: "fake:target"}
	if opts.Timeouts == (engine.Timeouts{}) {
		opts.Timeouts = engine.Timeouts{Expect: time.Second, Quiet: 100 * time.Millisecond, Scenario: 30 * time.Second}
	}
	s, err := NewServerSuite(opts)
	require.NoError(t, err)
	ft := &fakeTarget{}
	s.start = ft.start
	return s, ft
}

// knownList parses a known-failing list.
func knownList(t testing.TB, text string) *engine.KnownFailing {
	t.Helper()
	kf, err := engine.ParseKnownFailing(strings.NewReader(text), "test list")
	require.NoError(t, err)
	return kf
}

// barrier lets n pairs through once all n have arrived.
type barrier struct {
	mu      sync.Mutex
	n       int
	arrived int
	all     chan struct{}
}

func newBarrier(n int) *barrier { return &barrier{n: n, all: make(chan struct{})} }

// wait arrives and waits for the others, within limit.
func (b *barrier) wait(limit time.Duration) error {
	b.mu.Lock()
	b.arrived++
	if b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-time.After(limit):
		b.mu.Lock()
		defer b.mu.Unlock()
		return fmt.Errorf("only %d of %d pairs ran at once", b.arrived, b.n)
	}
}
