package process

import (
	"fmt"
	"sync"
)

// ring keeps the last size bytes written to it. Writes never fail or
// block, so a process's output is always drained.
type ring struct {
	mu      sync.Mutex
	buf     []byte
	size    int
	next    int   // write position once full
	full    bool  // buf has wrapped
	written int64 // bytes written in all, kept or not
}

func newRing(size int) *ring { return &ring{buf: make([]byte, 0, size), size: size} }

func (r *ring) Write(b []byte) (int, error) {
	n := len(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.written += int64(n)
	if len(b) >= r.size {
		// Only the end can survive.
		r.buf = append(r.buf[:0], b[len(b)-r.size:]...)
		r.next, r.full = 0, true
		return n, nil
	}
	if !r.full {
		room := r.size - len(r.buf)
		if len(b) <= room {
			r.buf = append(r.buf, b...)
			return n, nil
		}
		// Fill up, then wrap around from the start.
		r.buf = append(r.buf, b[:room]...)
		b = b[room:]
		r.next, r.full = 0, true
	}
	for len(b) > 0 {
		c := copy(r.buf[r.next:], b)
		b = b[c:]
		r.next = (r.next + c) % r.size
	}
	return n, nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full || r.written == int64(r.size) {
		return string(r.buf[r.next:]) + string(r.buf[:r.next])
	}
	// Say what is missing, so a reader does not take the tail for the
	// whole output.
	return fmt.Sprintf("[%d earlier bytes elided]\n", r.written-int64(r.size)) + string(r.buf[r.next:]) + string(r.buf[:r.next])
}
