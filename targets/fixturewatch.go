package targets

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// FixtureHangLimit is how many fixture calls in a row may go unanswered
// past their deadline before the target is taken as unusable (its
// liveness then says so, and the run stops with that one cause). One
// call that misses its deadline may be a fixture that paused (a
// collection, a reload holding a lock) and then goes on: it costs that one
// pair. Three in a row, with nothing answered while any of them waited,
// is a fixture that no longer answers; waiting for more would only cost a
// deadline each (the expect timeout, 5 s by default) before the run is
// stopped anyway. Pairs call the fixture concurrently, so a fixture that
// hangs from the start is usually named after its first deadline.
const FixtureHangLimit = 3

// FixtureHungError is why a target is unusable when its fixture API
// stopped answering (FixtureHangLimit calls in a row went unanswered past
// their deadline). It wraps engine.ErrUnusable.
type FixtureHungError struct {
	// Fixture names the fixture API: "the fixture API at HOST:PORT", or
	// of an in-process target.
	Fixture string
	// Call is the fixture method of the last call that went unanswered
	// ("SetResource"), Waited how long that call waited.
	Call   string
	Waited time.Duration
	// Calls is how many calls in a row went unanswered.
	Calls int
}

// Error names the fixture, how many calls went unanswered, and the last
// of them with how long it waited: the one line the CLI exits 3 with.
func (e *FixtureHungError) Error() string {
	return fmt.Sprintf("%s stopped answering: %d calls in a row got no answer before their deadline, the last %s after %s",
		e.Fixture, e.Calls, e.Call, e.Waited.Round(time.Millisecond))
}

// Unwrap makes the error an engine.ErrUnusable: the target did not die,
// but cannot be driven.
func (e *FixtureHungError) Unwrap() error { return engine.ErrUnusable }

// watchedFixture is a target's fixture as the harness calls it: it counts
// the calls in a row that went unanswered past their deadline and, at
// FixtureHangLimit, marks the target unusable (markDied). From then on
// every call fails at once with that cause: a fixture known hung is not
// waited on again (a pair's clean-up, the load run's reset).
type watchedFixture struct {
	inner fixture.Fixture
	name  string
	mark  func(error)

	mu         sync.Mutex
	misses     int
	lastAnswer time.Time
	hung       error
}

var _ fixture.Fixture = (*watchedFixture)(nil)

// watchFixture wraps f, named name in the cause, for s.
func (s *Server) watchFixture(f fixture.Fixture, name string) fixture.Fixture {
	return &watchedFixture{inner: f, name: name, mark: s.markDied}
}

// begin is called before a call: it returns the cause when the fixture is
// known hung, and the moment the call starts otherwise.
func (w *watchedFixture) begin() (time.Time, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now(), w.hung
}

// end judges a call that began at start and ended with err, and returns
// err.
func (w *watchedFixture) end(ctx context.Context, call string, start time.Time, err error) error {
	now := time.Now()
	missed := err != nil && (errors.Is(ctx.Err(), context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded)
	if d, ok := ctx.Deadline(); ok && !d.After(start) {
		// Begun with no time left (a caller's deadline already past): the
		// fixture was never given a chance to answer.
		missed = false
	}
	w.mu.Lock()
	switch {
	case !missed && (err == nil || ctx.Err() == nil):
		// An answer, an error included: the fixture is there.
		w.misses, w.lastAnswer = 0, now
		w.mu.Unlock()
		return err
	case !missed || w.lastAnswer.After(start) || w.hung != nil:
		// The caller gave up (an interrupt, its pair ended), or other
		// calls were answered while this one waited: a busy fixture, or
		// a caller's own bound, not a fixture that stopped answering.
		w.mu.Unlock()
		return err
	}
	w.misses++
	if w.misses < FixtureHangLimit {
		w.mu.Unlock()
		return err
	}
	hung := &FixtureHungError{Fixture: w.name, Call: call, Waited: now.Sub(start), Calls: w.misses}
	w.hung = hung
	w.mu.Unlock()
	w.mark(hung)
	return err
}

func (w *watchedFixture) Capabilities(ctx context.Context) (*fixturepb.Capabilities, error) {
	start, err := w.begin()
	if err != nil {
		return nil, err
	}
	c, err := w.inner.Capabilities(ctx)
	return c, w.end(ctx, "GetCapabilities", start, err)
}

func (w *watchedFixture) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	start, err := w.begin()
	if err != nil {
		return fixture.Served{}, err
	}
	s, err := w.inner.Set(ctx, node, t, name, res)
	return s, w.end(ctx, "SetResource", start, err)
}

func (w *watchedFixture) SetWith(ctx context.Context, node string, r fixture.SetRequest) (fixture.Served, error) {
	start, err := w.begin()
	if err != nil {
		return fixture.Served{}, err
	}
	s, err := w.inner.SetWith(ctx, node, r)
	return s, w.end(ctx, "SetResource", start, err)
}

func (w *watchedFixture) Delete(ctx context.Context, node string, t wire.Type, name string) error {
	start, err := w.begin()
	if err != nil {
		return err
	}
	return w.end(ctx, "DeleteResource", start, w.inner.Delete(ctx, node, t, name))
}

func (w *watchedFixture) DeleteWith(ctx context.Context, node string, r fixture.DeleteRequest) error {
	start, err := w.begin()
	if err != nil {
		return err
	}
	return w.end(ctx, "DeleteResource", start, w.inner.DeleteWith(ctx, node, r))
}

func (w *watchedFixture) Reset(ctx context.Context, node string) error {
	start, err := w.begin()
	if err != nil {
		return err
	}
	return w.end(ctx, "Reset", start, w.inner.Reset(ctx, node))
}

func (w *watchedFixture) Apply(ctx context.Context, node string, changes []fixture.Change) ([]fixture.Served, error) {
	start, err := w.begin()
	if err != nil {
		return nil, err
	}
	s, err := w.inner.Apply(ctx, node, changes)
	return s, w.end(ctx, "ApplyChanges", start, err)
}
