package targets

import (
	"context"
	"errors"
	"sync"

	"github.com/xdsconform/xdsconform/engine"
)

// liveness is what a Server knows about whether its target is still there
// (engine.Liveness). Its zero value knows nothing yet.
type liveness struct {
	mu    sync.Mutex
	died  error
	gone  chan struct{} // made on first use; closed when died is set
	check sync.Mutex    // one re-check at a time: the others then see its verdict
}

var _ engine.Liveness = (*Server)(nil)

// Died implements engine.Liveness: the cause, once the target is known to
// be gone.
func (l *liveness) Died() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.died
}

// Gone implements engine.Liveness.
func (l *liveness) Gone() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone == nil {
		l.gone = make(chan struct{})
	}
	return l.gone
}

// markDied records the cause of the target's death, once.
func (l *liveness) markDied(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.died != nil {
		return
	}
	l.died = cause
	if l.gone == nil {
		l.gone = make(chan struct{})
	}
	close(l.gone)
}

// CheckAlive implements engine.Liveness: it reaches the xDS address as
// Preflight's probe does (connect, TLS handshake, HTTP/2 preface), within
// ctx and the connect timeout, and marks the target dead when it cannot.
// A probe that ran out of the caller's own time proves nothing.
func (s *Server) CheckAlive(ctx context.Context) error {
	if s.probe == nil {
		return nil
	}
	s.check.Lock()
	defer s.check.Unlock()
	if err := s.Died(); err != nil {
		return err
	}
	if s.connectTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.connectTimeout)
		defer cancel()
	}
	err := s.probe.check(ctx)
	if err == nil || context.Cause(ctx) != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
		return nil
	}
	s.markDied(err)
	return err
}
