package engine

import (
	"context"
	"sync"
)

// class is the kind of pair the gate keeps apart from the others.
type class int

const (
	// classShared pairs run together, as many as Config.Parallel allows.
	classShared class = iota
	// classAlone pairs run with nothing else in the process: a pair run
	// again because the harness's own lag could explain its timing
	// verdict (see rerun).
	classAlone
)

// quietGate keeps classes of pairs apart from one another across every
// Run in the process (`xdsconform run` runs the server and client suites
// at once): a pair starts only while no pair of another class runs, and
// an alone pair only while nothing runs. Shared pairs run with others of
// their class. A waiting pair does not hold
// back pairs of other classes, so no pair ever waits for one that waits
// for it.
type quietGate struct {
	mu      sync.Mutex
	running [2]int        // pairs running, by class
	changed chan struct{} // closed and replaced whenever a count drops
}

// quiet is the process's gate.
var quiet = &quietGate{changed: make(chan struct{})}

// free reports whether a pair of class c may start; g.mu must be held.
func (g *quietGate) free(c class) bool {
	for other, n := range g.running {
		if n > 0 && (class(other) != c || c == classAlone) {
			return false
		}
	}
	return true
}

// enter waits until a pair of class c can start, and counts it; it fails
// only when ctx ends first.
func (g *quietGate) enter(ctx context.Context, c class) error {
	for {
		g.mu.Lock()
		if g.free(c) {
			g.running[c]++
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
func (g *quietGate) leave(c class) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running[c]--
	close(g.changed)
	g.changed = make(chan struct{})
}
