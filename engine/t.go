package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Timeouts are the named waits of a run. Every wait in a scenario is bounded
// by one of them.
type Timeouts struct {
	// Expect bounds the wait for an event that must happen (a response).
	Expect time.Duration
	// Quiet is the window in which an event that must not happen is watched for.
	Quiet time.Duration
	// Scenario bounds a whole pair; a body still running then is abandoned
	// with an error outcome.
	Scenario time.Duration
}

// DefaultTimeouts suit loopback targets; CI against remote servers may
// raise them.
var DefaultTimeouts = Timeouts{Expect: 5 * time.Second, Quiet: 300 * time.Millisecond, Scenario: 60 * time.Second}

// T is handed to a scenario body. It satisfies testify's require.TestingT
// and assert.TestingT, so scenarios use require/assert as their assertion
// vocabulary: a failed require stops the body, a failed assert records the
// failure and carries on.
type T struct {
	ctx context.Context

	// Variant is the variant this pair runs in.
	Variant wire.Variant
	// NodeID is this pair's own node id; no other pair uses it.
	NodeID string
	// Timeouts are the run's waits.
	Timeouts Timeouts
	// Transcript records the pair's messages.
	Transcript *transcript.Transcript
	// Env is the role's environment (e.g. the target server); scenarios of
	// that role know its concrete type.
	Env Env

	prefix string

	mu       sync.Mutex
	failures []string
	skip     string
	abort    string
	checks   []func(*T)
	cleanups []func()
}

func newT(ctx context.Context, p Pair, cfg *Config) *T {
	sum := sha256.Sum256([]byte(p.FullName() + cfg.Salt))
	h := hex.EncodeToString(sum[:])[:8]
	return &T{
		ctx:        ctx,
		Variant:    p.Variant,
		NodeID:     "xdsconform-" + h,
		Timeouts:   cfg.Timeouts,
		Transcript: transcript.New(),
		Env:        cfg.Env,
		prefix:     "x" + h + "-",
	}
}

// Context is cancelled when the pair's time is up or the run is interrupted.
func (t *T) Context() context.Context { return t.ctx }

// Name returns a resource name unique to this pair, so pairs running
// concurrently against one server never touch each other's resources.
func (t *T) Name(base string) string { return t.prefix + base }

// Owns reports whether name was made by Name for this pair; scenarios use it
// to look only at their own resources on a server shared with other pairs.
func (t *T) Owns(name string) bool { return strings.HasPrefix(name, t.prefix) }

// Errorf records a failure and lets the body carry on.
func (t *T) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, cleanTestify(fmt.Sprintf(format, args...)))
}

// FailNow stops the body; the pair fails with the failures recorded so far.
func (t *T) FailNow() {
	t.mu.Lock()
	if len(t.failures) == 0 {
		t.failures = append(t.failures, "failed")
	}
	t.mu.Unlock()
	runtime.Goexit()
}

// Fatalf records a failure and stops the body.
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.FailNow()
}

// Skipf ends the body with a skipped outcome and the reason.
func (t *T) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skip = fmt.Sprintf(format, args...)
	t.mu.Unlock()
	runtime.Goexit()
}

// Abortf ends the body with an error outcome: the harness or the target
// could not run the scenario, so no verdict on the rule is possible.
func (t *T) Abortf(format string, args ...any) {
	t.mu.Lock()
	t.abort = fmt.Sprintf(format, args...)
	t.mu.Unlock()
	runtime.Goexit()
}

// Helper is a no-op; it exists for testify.
func (t *T) Helper() {}

// Logf adds a note to the transcript.
func (t *T) Logf(format string, args ...any) {
	t.Transcript.Event("scenario", fmt.Sprintf(format, args...))
}

// Cleanup registers f to run after the body, last registered first.
func (t *T) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

// AfterRun registers a check that runs after the body, whether it passed or
// not; the fake peers use it for invariants that hold on every message.
func (t *T) AfterRun(check func(*T)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.checks = append(t.checks, check)
}

var traceBlock = regexp.MustCompile(`(?s)\s*Error Trace:.*?\n(\s*Error:)`)
var testBlock = regexp.MustCompile(`(?m)^\s*Test:\s.*\n?`)

// cleanTestify drops testify's source-file trace, which names paths on the
// machine that ran the suite and would make reports differ between machines.
func cleanTestify(s string) string {
	s = traceBlock.ReplaceAllString(s, "\n$1")
	s = testBlock.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}
