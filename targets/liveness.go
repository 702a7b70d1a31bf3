package targets

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/xdsconform/xdsconform/engine"
)

// liveness is what a Server knows about whether its target is still there
// (engine.Liveness). Its zero value knows nothing yet.
type liveness struct {
	mu       sync.Mutex
	died     error
	gone     chan struct{} // made on first use; closed when died is set
	checking chan struct{} // a re-check in progress, closed when it is done
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
	return l.goneLocked()
}

func (l *liveness) goneLocked() chan struct{} {
	if l.gone == nil {
		l.gone = make(chan struct{})
	}
	return l.gone
}

// CheckAlive implements engine.Liveness: it reaches the xDS address as
// Preflight's probe does (connect, TLS handshake, HTTP/2 preface), within
// ctx and the connect timeout, and marks the target dead when it cannot,
// twice in a row.
// Callers that come while a check is in progress share its verdict rather
// than probing again: pairs that error together, as they do when the
// target dies, cost one probe. A probe cut short by the caller's own
// cancellation proves nothing.
func (s *Server) CheckAlive(ctx context.Context) error {
	if s.probe == nil {
		return nil
	}
	s.liveness.mu.Lock()
	if s.died != nil {
		defer s.liveness.mu.Unlock()
		return s.died
	}
	if wait := s.checking; wait != nil {
		s.liveness.mu.Unlock()
		select {
		case <-wait:
			return s.Died()
		case <-ctx.Done():
			return nil
		}
	}
	done := make(chan struct{})
	s.checking = done
	s.liveness.mu.Unlock()

	// One probe that fails is not yet a death: a live target under load
	// may miss one connect timeout (a dropped SYN, a slow accept). The
	// probe is retried once, within ctx, before the target is marked dead.
	err := s.probeWithin(ctx, 2)
	if err != nil && ctx.Err() == nil {
		err = s.probeWithin(ctx, 1)
	}
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		err = nil // the caller gave up (an interrupt): no verdict
	}
	s.liveness.mu.Lock()
	defer s.liveness.mu.Unlock()
	s.checking = nil
	if err != nil && s.died == nil {
		s.died = err
		close(s.goneLocked())
	}
	close(done)
	return err
}

// probeWithin probes the target once, within the connect timeout and
// within its share of what is left of ctx when attempts probes (this one
// included) must fit in it, so that a retry is not left without time.
func (s *Server) probeWithin(ctx context.Context, attempts int) error {
	limit := s.connectTimeout
	if d, ok := ctx.Deadline(); ok {
		if share := time.Until(d) / time.Duration(attempts); limit <= 0 || share < limit {
			limit = share
		}
	}
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	return s.probe.check(ctx)
}

// markDied records why the target is gone, once: the first cause stands.
func (l *liveness) markDied(cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.died == nil {
		l.died = cause
		close(l.goneLocked())
	}
}
