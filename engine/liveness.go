package engine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/results"
)

// Liveness is an optional interface of an Env whose target can die during
// a run: a server process at the other end of a port. Without it, every
// pair left after a crash would error on its own, each with its own echo
// of a refused connection; with it, the engine names the death once and
// gives the rest of the run that one cause, at once.
type Liveness interface {
	// Died returns why the target is known to be gone, or nil while it is
	// not known to be.
	Died() error
	// Gone is closed once Died returns non-nil, so that pairs in flight
	// end promptly instead of each waiting out its timeouts.
	Gone() <-chan struct{}
	// CheckAlive re-checks, within ctx, that the target can still be
	// reached; it returns why not, and from then on Died returns that.
	// The engine calls it after a pair that errored, since a dead target
	// shows first as a pair that could not run, and before and after each
	// pair that runs alone (Scenario.Alone), to charge a death to the one
	// pair during which the target went from alive to dead, if it sent
	// the target a scenario message (chargeDeath).
	CheckAlive(ctx context.Context) error
}

// ErrUnusable, wrapped by a Liveness's cause, says the target did not die
// but can no longer be driven: its fixture API stopped answering. The run
// ends as it does on a death (every remaining pair errors with the one
// cause, at once), but the pairs' message does not call it a death, and
// no pair that ran alone (Scenario.Alone) is blamed for it: what such a
// pair sends is xDS, and nothing shows that it made the fixture stop.
var ErrUnusable = errors.New("the target can no longer be driven")

// checkAliveWithin bounds each re-check of the target: long enough for a
// Liveness to retry a probe that timed out (one slow answer is not a
// death) within the default connect timeout of 5s each time.
const checkAliveWithin = 12 * time.Second

// targetDied is the message of a pair that could not run, or ended with an
// error, because the target died (or became unusable: ErrUnusable).
func targetDied(cause error) string {
	if errors.Is(cause, ErrUnusable) {
		return unusablePrefix + cause.Error()
	}
	return diedPrefix + cause.Error()
}

// unusablePrefix heads the message of a pair that an unusable target
// (ErrUnusable) ended.
const unusablePrefix = "the run could not go on: "

// unusable reports whether msg, a message of targetDied, is of a target
// that became unusable rather than one that died.
func unusable(msg string) bool { return strings.HasPrefix(msg, unusablePrefix) }

// diedPrefix heads the message of a pair the target's death ended.
const diedPrefix = "the target died during the run: "

// diedBefore reports, for a pair about to start, whether the target is
// already known to be gone, with the message the pair errors with.
func diedBefore(env Env) (string, bool) {
	live, ok := env.(Liveness)
	if !ok {
		return "", false
	}
	if err := live.Died(); err != nil {
		return targetDied(err), true
	}
	return "", false
}

// endWhenGone cancels a pair's context once the target is known to be
// gone; the returned stop releases the watch when the pair ends.
func endWhenGone(env Env, cancel context.CancelFunc) (stop func()) {
	live, ok := env.(Liveness)
	if !ok {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-live.Gone():
			cancel()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// diedDuring reports whether a pair that ended with an error did so because
// the target died, re-checking the target when nothing is known yet, and
// returns the message the pair errors with.
func diedDuring(ctx context.Context, env Env) (string, bool) {
	live, ok := env.(Liveness)
	if !ok {
		return "", false
	}
	if err := live.Died(); err != nil {
		return targetDied(err), true
	}
	ctx, cancel := context.WithTimeout(ctx, checkAliveWithin)
	defer cancel()
	if err := live.CheckAlive(ctx); err != nil {
		return targetDied(err), true
	}
	return "", false
}

// SentToTarget records that the pair has just sent the target a message
// of the scenario: an xDS request or response on the wire (the fake
// peers call it on every message they send, through their OnSend hook),
// not a call on the fixture, which only sets the scene. A target found
// dead after a pair that ran alone is charged to that pair only if it
// sent one (chargeDeath). Safe to call from any goroutine.
func (t *T) SentToTarget() { t.sent.Store(time.Now().UnixNano()) }

// lastSent is when the pair last sent the target a scenario message, and
// whether it sent one at all.
func (t *T) lastSent() (time.Time, bool) {
	n := t.sent.Load()
	return time.Unix(0, n), n != 0
}

// chargeDeath settles r, the result of a pair that ran alone during which
// the target went from alive (checked before the pair started) to dead
// (msg): the death is charged to the pair that last sent the target a
// scenario message before it stopped answering. The pair ran alone, so
// since the target was last known alive only this pair could have sent
// one: if it did, the death is its (blameDeath, a failure of its
// headline rule); if it did not — it got no further than fixture calls
// (a Reset, a Set) or sent nothing at all — no scenario message
// preceded the death, and the pair is not blamed: a failure it saw
// stands, with the death noted after it, and any other outcome becomes
// an error with the death as its cause. t.mu must be held.
func chargeDeath(r *results.Result, s *Scenario, t *T, msg string, cutShort bool) {
	if _, sent := t.lastSent(); sent {
		blameDeath(r, s, t.failures, msg, cutShort)
		return
	}
	const noSend = " (this pair had sent the target no scenario message, so the death is not charged to it)"
	switch r.Outcome {
	case results.Fail, results.Unsupported:
		r.Message += "\nThen " + msg + noSend
	case results.Error:
		r.Message = diedMessage(msg+noSend, r.Message, cutShort)
	default:
		r.Outcome, r.Message = results.Error, msg+noSend
	}
}
