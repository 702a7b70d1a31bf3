package scenarios

import (
	"fmt"
	"sync"

	"github.com/xdsconform/xdsconform/engine"
)

// Preconditions and checks.
//
// Every step of a scenario is one or the other. A check judges the
// behaviour the scenario is about: a step under Checking(rule), the last
// step (which names its rule so), a watch (Never, NeverCarrying, the
// global invariants), and the checks that are about one rule only wherever
// they run (an ACK's nonce is NONCE-3, a stream closed after a NACK
// ACK-9). A precondition is what the verdict rests on: the base resources
// set, served and ACKed, the client's chain, a barrier delivered, a first
// response before the behaviour under test.
//
// A check that fails is a failure of its rule. A precondition that fails
// blocks the pair (engine.T.Block) by the rule it rests on: the target
// broke that rule, and the scenario never reached what it checks, so its
// own rule is not charged. When the rule a precondition rests on is one
// the scenario cites, the failure is that rule's plain failure (the
// scenario showed it broken).
//
// A step is a precondition when it runs inside a precondition helper (C.Chain
// and its hops, S.Barrier, ...: see S.precondition and C.precondition),
// whatever Checking was said around the helper's call; or when, outside
// one, it is not a check and its own default rule (the answer to a first
// subscription RES-2, a later SotW one RES-4, a delta one DELTA-3, a reply
// to a response ACK-1, a subscription RES-1, ...) is one the scenario does
// not cite. A step with neither a Checking nor a default rule of its own
// is filed under the headline rule, which the scenario cites: a check.
//
// testify assertions follow the same attribution. A fatal one (require:
// Errorf then FailNow) on a precondition step blocks the pair. A non-fatal
// one (assert: Errorf only) on a precondition step is a real observation
// of the target breaking that rule and the body carries on, so it is
// recorded as a failure of the rule, not as a block: a pair only ends
// blocked when it could not go on.

// judgeStep is the rule a failing step is filed under, and whether the
// failure blocks the pair rather than fails it (engine.T.Block turns a
// block by a rule the scenario cites into that rule's failure). pre is
// the fallback rule of the precondition helper the step runs in ("" for
// none), check the rule named by Checking, def the step's own default
// rule.
func judgeStep(t *engine.T, pre, check, def string) (rule string, block bool) {
	switch {
	case pre != "" && def != "":
		// Inside a precondition, a step's own rule says what broke (the
		// chain's ACK wait: ACK-1), and the helper's rule the rest.
		return def, true
	case pre != "":
		return pre, true
	case check != "":
		return check, false
	case def != "" && !t.Cites(def):
		return def, true
	case def != "":
		return def, false
	}
	return t.Headline(), false
}

// stopStep ends the body for a failing step, as judged: a failure of rule,
// or a block by it. The failures testify assertions left pending are
// recorded first: they were seen before this step failed.
func stopStep(t *engine.T, h *pending, rule string, block bool, format string, args ...any) {
	h.flush(t, nil)
	if block {
		t.Block(rule, "%s", fmt.Sprintf(format, args...))
	}
	t.Failf(rule, format, args...)
	t.FailNow()
}

// pending keeps the failures that testify assertions reported (Errorf) on a
// precondition step until it is known whether the assertion was fatal: a
// FailNow by the same step value right after makes the failure a block
// (see FailNow on S and C); anything else makes it a failure, recorded at
// the next step that stops, the next assertion of the same step value, or
// when the body ends. One pending is shared by every copy of a scenario's S
// or C (Checking makes copies). A nil pending (an S or C a test made by
// hand) holds nothing: every assertion failure is recorded at once.
type pending struct {
	mu sync.Mutex
	fs []pendingFailure
}

// pendingFailure is one assertion failure on a precondition step; owner is
// the step value (*S or *C) the assertion was handed.
type pendingFailure struct {
	owner any
	rule  string
	msg   string
}

// newPending returns an empty pending whose leftovers are recorded as failures
// after the body.
func newPending(t *engine.T) *pending {
	h := &pending{}
	t.AfterRun(func(t *engine.T) { h.flush(t, nil) })
	return h
}

// hold keeps a failure of rule reported through owner; a failure owner
// held before was then not fatal, so it is recorded first.
func (h *pending) hold(t *engine.T, owner any, rule, msg string) {
	if h == nil {
		t.Failf(rule, "%s", msg)
		return
	}
	h.flush(t, func(f pendingFailure) bool { return f.owner == owner })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs = append(h.fs, pendingFailure{owner: owner, rule: rule, msg: msg})
}

// take removes and returns the failure owner holds, if any.
func (h *pending) take(owner any) (pendingFailure, bool) {
	if h == nil {
		return pendingFailure{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, f := range h.fs {
		if f.owner == owner {
			h.fs = append(h.fs[:i], h.fs[i+1:]...)
			return f, true
		}
	}
	return pendingFailure{}, false
}

// flush records as failures the held failures that which selects (nil:
// all of them).
func (h *pending) flush(t *engine.T, which func(pendingFailure) bool) {
	if h == nil {
		return
	}
	h.mu.Lock()
	var out []pendingFailure
	kept := h.fs[:0]
	for _, f := range h.fs {
		if which == nil || which(f) {
			out = append(out, f)
		} else {
			kept = append(kept, f)
		}
	}
	h.fs = kept
	h.mu.Unlock()
	for _, f := range out {
		t.Failf(f.rule, "%s", f.msg)
	}
}

// failNow is FailNow for owner: a failure owner's assertion just held
// blocks the pair by its rule (a require on a precondition step); other
// held failures were not fatal, so they are recorded first.
func (h *pending) failNow(t *engine.T, owner any) {
	f, ok := h.take(owner)
	h.flush(t, nil)
	if ok {
		t.Block(f.rule, "%s", f.msg)
	}
	t.FailNow()
}

// errorf is Errorf for owner, a step judged (rule, block): a failure of
// rule at once, or, for a precondition step, held until FailNow says the
// assertion was fatal.
func (h *pending) errorf(t *engine.T, owner any, rule string, block bool, format string, args ...any) {
	if !block {
		t.Failf(rule, format, args...)
		return
	}
	if t.Cites(rule) {
		// A block by a cited rule is that rule's failure anyway.
		t.Failf(rule, format, args...)
		return
	}
	h.hold(t, owner, rule, fmt.Sprintf(format, args...))
}
