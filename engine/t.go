package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
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
	// Prompt is how soon a reply counts as prompt (UPD-2: a client ACKs or
	// NACKs a response as soon as it has processed it). It is a threshold
	// of its own, not the quiet window: a reply a second late is late
	// whatever the window the harness watches for late events in.
	Prompt time.Duration
	// TimerBudget is the longest a must-not-happen window watches to
	// cover a peer's own protocol timer (a server's REST long-poll hold, a
	// client's does-not-exist timer): a window about a timer must outlast
	// it to prove anything, and one the budget (or the scenario timeout,
	// less twice Expect for the steps around it) cuts short is watched for
	// as long as it allows and then says it proves nothing
	// (T.TimerWindow).
	TimerBudget time.Duration
}

// withDefaults fills the zero fields of t from DefaultTimeouts.
func (t Timeouts) withDefaults() Timeouts {
	for _, f := range []struct{ v, def *time.Duration }{
		{&t.Expect, &DefaultTimeouts.Expect}, {&t.Quiet, &DefaultTimeouts.Quiet},
		{&t.Scenario, &DefaultTimeouts.Scenario}, {&t.Prompt, &DefaultTimeouts.Prompt},
		{&t.TimerBudget, &DefaultTimeouts.TimerBudget},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return t
}

// DefaultTimeouts suit loopback targets; CI against remote servers may
// raise them. The quiet window is long enough to catch a violation that
// comes a second after what provoked it (a resend after a NACK, say):
// must-not-happen checks are watches that run on while the pair goes on
// and share one trailing window at its end (T.Linger), so a long window
// costs each pair once, not once per check.
//
// A prompt reply is one within 500 ms: a client that has processed a
// response ACKs at once (the reference client within milliseconds), so
// half a second leaves room for a loaded machine without letting a reply
// a second late pass.
//
// A window about a peer's timer may watch for 40 s: a 30 s REST long-poll
// hold, the common one, is covered with room to spare, and so is a
// client's 15 s does-not-exist timer; the scenario timeout leaves the
// steps around it their expect timeouts.
var DefaultTimeouts = Timeouts{Expect: 5 * time.Second, Quiet: 1500 * time.Millisecond, Scenario: 60 * time.Second, Prompt: 500 * time.Millisecond,
	TimerBudget: 40 * time.Second}

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
	// pair is the pair's full name, ID[variant]; alone is its scenario's
	// Alone.
	pair  string
	alone bool
	// requirements are the scenario's citations; the first is its
	// headline rule, which failures name unless a step names its own.
	requirements []string

	mu       sync.Mutex
	failures []Failure
	// failBytes is the size of the failure messages kept; elided and
	// elidedBytes count those dropped past FailuresBytes, which the
	// failure at noteAt (-1: none yet) reports.
	failBytes   int
	elided      int
	elidedBytes int
	noteAt      int

	// notes are added to the pair's message, whatever its outcome (see
	// Notef); notesBytes is their size, bounded by FailureBytes.
	notes      []string
	notesBytes int

	// blocked is the failed precondition that ended the body, if any: it
	// names the rule the precondition rests on (see Block).
	blocked *Failure
	// timing are the pair's timing verdicts (see Within and Covers).
	timing []results.TimingCheck

	skip       string
	abort      string
	lingering  bool
	onLinger   []func()
	stopLinger chan struct{}
	checks     []func(*T)
	cleanups   []func()

	// sent is when the pair last sent the target a scenario message
	// (SentToTarget), in Unix nanoseconds; 0 while it has sent none.
	sent atomic.Int64
}

// Failure is one failed expectation: the rule its step checks and what
// went wrong.
type Failure struct {
	// Rule is the catalogue ID of the rule the failing step checks.
	Rule string
	// Message says what was expected and what happened.
	Message string
}

// Bounds on the failures a pair keeps. Each is a few hundred bytes in the
// normal suites; a peer that breaks a rule on every message must not turn
// the report into one line per message (a client flooding invalid
// requests once made a single message of 63.7 MB). Rules are never
// dropped: the first failure of every rule is kept, so the rules broken
// and their level, and hence the verdict and the exit code, are the same
// as if every message were kept. A run keeps at most FailuresBytes per
// pair, plus rulePartBytes per further rule, for each of its pairs, whose
// number the catalogue fixes, not the target.
const (
	// FailureBytes bounds one failure message.
	FailureBytes = 8 << 10
	// FailuresBytes bounds the failure messages one pair keeps; past it,
	// only the first failure of a rule not yet listed is kept, cut to
	// rulePartBytes, and one last line counts what was elided.
	FailuresBytes = 32 << 10
	rulePartBytes = 1 << 10
)

func newT(ctx context.Context, p Pair, cfg *Config) *T {
	sum := sha256.Sum256([]byte(p.FullName() + cfg.Salt))
	h := hex.EncodeToString(sum[:])[:8]
	return &T{
		ctx:        ctx,
		Variant:    p.Variant,
		NodeID:     "xdsconform-" + h,
		Timeouts:   cfg.Timeouts,
		Transcript: transcript.NewIn(cfg.ReportBudget, cfg.QueueBudget),
		Env:        cfg.Env,
		prefix:     "x" + h + "-",
		pair:       p.FullName(),
		alone:      p.Scenario.Alone,
		noteAt:     -1,

		requirements: p.Scenario.Requirements,
		stopLinger:   make(chan struct{}),
		// Always the last check (AfterRun inserts before it): it needs
		// every failure the others may record.
		checks: []func(*T){checkUnkept},
	}
}

// checkUnkept ends a pair that would pass, but whose fake peers did not
// keep everything the target sent (their queues are bounded), with an
// error outcome: every message was checked against the invariants as it
// came, but a step may have needed one that was dropped, so a pass would
// rest on less than the scenario asked to see.
func checkUnkept(t *T) {
	n, bytes := t.Transcript.UnkeptTotal()
	if n == 0 {
		return
	}
	if t.Decided() {
		return
	}
	t.Abortf("the target sent %s (%d bytes) more than the harness keeps for one scenario; each was checked against the invariants as it came, but no pass can rest on messages the scenario never saw", wording.N(n, "message"), bytes)
}

// Headline is the scenario's headline rule, its first citation: failures
// whose step names no rule of its own are reported under it.
func (t *T) Headline() string {
	if len(t.requirements) == 0 {
		return ""
	}
	return t.requirements[0]
}

// Context is cancelled when the pair's time is up or the run is interrupted.
func (t *T) Context() context.Context { return t.ctx }

// Name returns a resource name unique to this pair, so pairs running
// concurrently against one server never touch each other's resources.
func (t *T) Name(base string) string { return t.prefix + base }

// Owns reports whether name was made by Name for this pair; scenarios use it
// to look only at their own resources on a server shared with other pairs.
func (t *T) Owns(name string) bool { return strings.HasPrefix(name, t.prefix) }

// Errorf records a failure of the headline rule and lets the body carry
// on. Role environments wrap T with a step rule of their own (see Failf).
func (t *T) Errorf(format string, args ...any) {
	t.Failf(t.Headline(), format, args...)
}

// Failf records a failure of rule and lets the body carry on. An unknown
// rule ID is a scenario bug: the failure is then filed under the headline
// rule, with the bad ID in the message, rather than lost.
//
// Messages are cut to FailureBytes, and a pair keeps FailuresBytes of
// them: past that, a failure of a rule already listed is only counted, in
// one last line, so a peer that breaks a rule on every message costs a
// few lines, not one per message.
func (t *T) Failf(rule, format string, args ...any) {
	raw := fmt.Sprintf(format, args...)
	// Cut before the testify clean-up, whose regexps would otherwise run
	// over megabytes; what is cut is still counted.
	cut := 0
	if len(raw) > 2*FailureBytes {
		cut = len(raw) - 2*FailureBytes
		raw = raw[:2*FailureBytes]
	}
	msg := cleanTestify(raw)
	if _, ok := requirements.Lookup(rule); !ok {
		msg = fmt.Sprintf("(step names unknown rule %q) %s", transcript.Clip(rule, 100), msg)
		rule = t.Headline()
	}
	msg = clipMessage(msg, FailureBytes, cut)
	t.mu.Lock()
	defer t.mu.Unlock()
	listed := slices.ContainsFunc(t.failures, func(f Failure) bool { return f.Rule == rule })
	if t.failBytes+len(msg) > FailuresBytes {
		if listed {
			t.elide(rule, len(msg))
			return
		}
		// A rule not yet listed is always kept: the verdict names it.
		msg = clipMessage(msg, rulePartBytes, 0)
	}
	f := Failure{Rule: rule, Message: msg}
	t.failBytes += len(msg)
	if t.noteAt < 0 {
		t.failures = append(t.failures, f)
		return
	}
	// The note of what was elided stays last.
	t.failures = slices.Insert(t.failures, t.noteAt, f)
	t.noteAt++
}

// elide counts a failure of a listed rule past FailuresBytes in the note,
// which it adds (under that rule, so no rule is added) the first time;
// t.mu must be held.
func (t *T) elide(rule string, size int) {
	t.elided++
	t.elidedBytes += size
	if t.noteAt < 0 {
		t.failures = append(t.failures, Failure{Rule: rule})
		t.noteAt = len(t.failures) - 1
	}
	t.failures[t.noteAt].Message = fmt.Sprintf("%s, %d bytes, elided (a scenario keeps %d bytes of failure messages and the first failure of every rule)",
		wording.N(t.elided, "more failure"), t.elidedBytes, FailuresBytes)
}

// clipMessage cuts msg to n bytes like transcript.Clip, counting extra
// bytes cut earlier in the note.
func clipMessage(msg string, n, extra int) string {
	if len(msg) <= n && extra == 0 {
		return msg
	}
	cut := min(n, len(msg))
	for cut > 0 && cut < len(msg) && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes elided)", msg[:cut], len(msg)-cut+extra)
}

// FailNow stops the body; the pair fails with the failures recorded so far.
func (t *T) FailNow() {
	t.mu.Lock()
	if len(t.failures) == 0 {
		t.failures = append(t.failures, Failure{Rule: t.Headline(), Message: "failed"})
	}
	t.mu.Unlock()
	runtime.Goexit()
}

// Linger keeps the pair running for the quiet window after its body ends,
// before the cleanups close the fake peers: a must-not-happen check
// registered as a watch then also sees a violation that comes late, and
// every watch of the pair shares that one trailing window instead of each
// waiting on its own. f, if not nil, runs when the window starts (a fake
// client ACKs what still arrives, so that a server that waits for ACKs
// keeps sending).
func (t *T) Linger(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lingering = true
	if f != nil {
		t.onLinger = append(t.onLinger, f)
	}
}

// linger waits out the trailing window of a body that ended normally and
// asked for one. The window is the quiet window of the harness's own
// running time: stretched by whatever the harness was stalled meanwhile
// (lag.Deadline), so that a late violation has as long to show on a busy
// machine as on an idle one; a window the stalls still cut short is a
// doubt about the pass (Covers), never a pass on no watching.
func (t *T) linger() {
	t.mu.Lock()
	on, hooks := t.lingering && len(t.failures) == 0 && t.blocked == nil, t.onLinger
	t.mu.Unlock()
	if !on {
		return
	}
	for _, f := range hooks {
		f()
	}
	dl := lag.NewDeadline(t.Timeouts.Quiet)
	for left := dl.Left(); left > 0; left = dl.Left() {
		timer := time.NewTimer(left)
		select {
		case <-timer.C:
		case <-t.ctx.Done():
			timer.Stop()
			return
		case <-t.stopLinger:
			timer.Stop()
			return
		}
	}
	t.Covers(t.Headline(), "the trailing quiet window, in which what must not happen is still watched for", StretchedNeed(t.Timeouts.Quiet), dl.Start(), time.Now())
}

// StopLinger ends the trailing window early: a watch has already caught a
// violation, so waiting on cannot change the verdict. Safe to call any
// number of times, from any goroutine.
func (t *T) StopLinger() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.stopLinger:
	default:
		close(t.stopLinger)
	}
}

// Fatalf records a failure and stops the body.
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	t.FailNow()
}

// Block ends the body because a precondition failed: a step the verdict
// rests on (the base resources served and ACKed, a barrier delivered) did
// not happen, so the behaviour the scenario checks was never reached. rule
// is the rule that precondition rests on; the pair is blocked by it (a
// failure of that rule, not of the scenario's own), unless it is one the
// scenario cites, which the precondition then showed broken: a failure.
func (t *T) Block(rule, format string, args ...any) {
	if t.Cites(rule) {
		t.Failf(rule, format, args...)
		t.FailNow()
	}
	// A precondition checked with a testify assertion reports through
	// Block too: its source-file trace goes, as in Failf.
	raw, cut := fmt.Sprintf(format, args...), 0
	if len(raw) > 2*FailureBytes {
		cut = len(raw) - 2*FailureBytes
		raw = raw[:2*FailureBytes]
	}
	msg := clipMessage(cleanTestify(raw), FailureBytes, cut)
	if _, ok := requirements.Lookup(rule); !ok {
		msg = fmt.Sprintf("(step names unknown rule %q) %s", transcript.Clip(rule, 100), msg)
		rule = t.Headline()
	}
	t.mu.Lock()
	t.blocked = &Failure{Rule: rule, Message: msg}
	t.mu.Unlock()
	runtime.Goexit()
}

// Cites reports whether the scenario cites rule: a rule it checks, as
// opposed to one its preconditions rest on.
func (t *T) Cites(rule string) bool { return slices.Contains(t.requirements, rule) }

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

// Decided reports whether the pair already has its verdict (a failure, a
// failed precondition, a skip or an abort): a check that could not be
// carried out then leaves it be, rather than turn a failure the pair saw
// into an error.
func (t *T) Decided() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures) > 0 || t.blocked != nil || t.skip != "" || t.abort != ""
}

// Pair is the pair's full name, ID[variant], as reports name it.
func (t *T) Pair() string { return t.pair }

// RunsAlone reports whether the pair's scenario is marked Alone: against
// a target shared by the run, it runs after every other pair, one at a
// time.
func (t *T) RunsAlone() bool { return t.alone }

// BlockedBy is the rule of the failed precondition that blocked the pair,
// "" when none did.
func (t *T) BlockedBy() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.blocked == nil {
		return ""
	}
	return t.blocked.Rule
}

// Failed reports whether the pair has recorded a failure or a failed
// precondition, so that a check run after the body can tell a verdict it
// must not replace.
func (t *T) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.failures) > 0 || t.blocked != nil
}

// Notef adds a line to the pair's message that names no rule and changes
// neither its outcome nor the rules it broke: a problem the harness met
// that a report should show beside the verdict. The notes of a pair are
// bounded by FailureBytes together; past it they are cut.
func (t *T) Notef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	t.mu.Lock()
	defer t.mu.Unlock()
	room := FailureBytes - t.notesBytes
	if room <= 0 {
		return
	}
	msg = clipMessage(msg, room, 0)
	t.notesBytes += len(msg)
	t.notes = append(t.notes, msg)
}

// AbortReason is what Abortf was given, "" while the pair is not aborted:
// a check run after the body can add its cause to it rather than hide it.
func (t *T) AbortReason() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.abort
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
	// Before the last check, checkUnkept, which must see every failure.
	t.checks = slices.Insert(t.checks, max(len(t.checks)-1, 0), check)
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
