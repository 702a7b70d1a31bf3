package targets

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// stuckFixture answers Reset at once and blocks every other call until
// its caller's context ends, as a fixture wedged on a lock does; it
// counts the calls that reached it.
type stuckFixture struct {
	fixture.Fixture // nil: only Reset and Delete are called
	calls           atomic.Int32
	// reached, when set, is sent to as a Delete reaches the fixture.
	reached chan struct{}
}

func (f *stuckFixture) Delete(ctx context.Context, _ string, _ wire.Type, _ string) error {
	f.calls.Add(1)
	if f.reached != nil {
		f.reached <- struct{}{}
	}
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}

func (f *stuckFixture) Reset(context.Context, string) error {
	f.calls.Add(1)
	return nil
}

// stuckCall calls Delete with a short deadline, which the stuck fixture
// waits out: a miss. (A call begun with its deadline already past is not
// one: the fixture never had a chance; see TestFixturePastDeadlineIsNoMiss.)
func stuckCall(t *testing.T, fx fixture.Fixture) error {
	t.Helper()
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(20*time.Millisecond))
	defer cancel()
	return fx.Delete(ctx, "node", wire.Cluster, "c")
}

// FixtureHangLimit calls in a row unanswered past their deadline make
// the target unusable, with a cause naming the fixture and the call; an
// answer in between starts the count again; from then on every call fails
// at once without reaching the fixture.
func TestFixtureHangLimit(t *testing.T) {
	s := &Server{}
	inner := &stuckFixture{}
	fx := s.watchFixture(inner, "the fixture API at 127.0.0.1:18001")

	for range FixtureHangLimit - 1 {
		require.Error(t, stuckCall(t, fx))
	}
	require.NoError(t, fx.Reset(t.Context(), "node"), "an answer")
	for range FixtureHangLimit - 1 {
		require.Error(t, stuckCall(t, fx))
	}
	assert.NoError(t, s.Died(), "%d misses in a row since the last answer: not yet hung", FixtureHangLimit-1)

	require.Error(t, stuckCall(t, fx))
	died := s.Died()
	require.Error(t, died)
	var hung *FixtureHungError
	require.ErrorAs(t, died, &hung)
	assert.True(t, errors.Is(died, engine.ErrUnusable), "the engine stops the run on it")
	assert.Equal(t, FixtureHangLimit, hung.Calls)
	assert.Equal(t, "DeleteResource", hung.Call)
	assert.Contains(t, died.Error(), "the fixture API at 127.0.0.1:18001 stopped answering")
	select {
	case <-s.Gone():
	default:
		t.Fatal("Gone is not closed")
	}

	reached := inner.calls.Load()
	assert.ErrorIs(t, fx.Reset(t.Context(), "node"), engine.ErrUnusable, "fails at once")
	assert.Equal(t, reached, inner.calls.Load(), "a fixture known hung is not called again")
}

// A call that misses its deadline while the fixture answers other calls
// is a busy fixture, not a hung one; a call its caller cancelled proves
// nothing either way. Neither counts.
func TestFixtureBusyOrCancelledIsNoHang(t *testing.T) {
	s := &Server{}
	inner := &stuckFixture{}
	fx := s.watchFixture(inner, "the fixture API at 127.0.0.1:18001")

	for range 2 * FixtureHangLimit {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.Error(t, fx.Delete(ctx, "node", wire.Cluster, "c"))
	}
	assert.NoError(t, s.Died(), "cancelled calls")

	// Calls in flight while another is answered: they reach the fixture,
	// then it answers another call, then their deadline passes.
	inner.reached = make(chan struct{})
	ctx, expire := context.WithCancel(t.Context())
	defer expire()
	errs := make(chan error, 2*FixtureHangLimit)
	for range 2 * FixtureHangLimit {
		go func() { errs <- fx.Delete(&pastDeadline{ctx}, "node", wire.Cluster, "c") }()
	}
	for range 2 * FixtureHangLimit {
		<-inner.reached
	}
	require.NoError(t, fx.Reset(t.Context(), "node"))
	expire()
	for range 2 * FixtureHangLimit {
		require.Error(t, <-errs)
	}
	assert.NoError(t, s.Died(), "misses while the fixture answered another call")
}

// pastDeadline is a context whose Err reads as a deadline exceeded once
// it is done, whatever ended it: the test ends it when it chooses, and
// the watcher sees a call that ran out of time.
type pastDeadline struct{ context.Context }

func (p *pastDeadline) Err() error {
	if p.Context.Err() != nil {
		return context.DeadlineExceeded
	}
	return nil
}

// A call begun when its caller's deadline had already passed (a load run's
// fan-out issuing calls after its sync deadline) never gave the fixture a
// chance to answer: no number of them makes the fixture hung.
func TestFixturePastDeadlineIsNoMiss(t *testing.T) {
	s := &Server{}
	fx := s.watchFixture(&stuckFixture{}, "the fixture API at 127.0.0.1:18001")
	for range 2 * FixtureHangLimit {
		ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		require.Error(t, fx.Delete(ctx, "node", wire.Cluster, "c"))
		cancel()
	}
	assert.NoError(t, s.Died())
}
