package engine

import (
	"context"
	"sync"
)

// quietGate keeps the pairs of Timed scenarios apart from every other
// pair in the process, across concurrent Runs (`xdsconform run` runs the
// server and client suites at once): a Timed pair starts only while no
// other pair runs, and other pairs wait while Timed ones run. Pairs of
// one class run together. A waiting Timed pair does not hold back other
// pairs, so no pair ever waits for one that waits for it.
type quietGate struct {
	mu      sync.Mutex
	busy    int           // pairs of other scenarios running
	timed   int           // pairs of Timed scenarios running
	changed chan struct{} // closed and replaced whenever a count drops
}

// quiet is the process's gate.
var quiet = &quietGate{changed: make(chan struct{})}

// enter waits until a pair of the class can start, and counts it; it
// fails only when ctx ends first.
func (g *quietGate) enter(ctx context.Context, timed bool) error {
	for {
		g.mu.Lock()
		if timed && g.busy == 0 {
			g.timed++
			g.mu.Unlock()
			return nil
		}
		if !timed && g.timed == 0 {
			g.busy++
			g.mu.Unlock()
			return nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// leave uncounts a pair that entered, waking those waiting for a class
// to drain.
func (g *quietGate) leave(timed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if timed {
		g.timed--
	} else {
		g.busy--
	}
	close(g.changed)
	g.changed = make(chan struct{})
}
