// Package lag measures the harness's own scheduling lag: how late its
// goroutines run compared with when they asked to. A verdict that rests on
// time (a reply's promptness, a window that must cover a peer's timer) is
// only as good as the harness's clock reading of it, and on a busy machine,
// or with hundreds of pairs at once, the harness itself may not get the CPU
// when it asks: an ACK read late looks like an ACK sent late. The sampler
// here wakes every Tick and records by how much each wake-up overshot; the
// overshoots, placed on the timeline as the intervals in which the harness
// could not run, say how much of any window the harness was stalled for.
//
// A sleeping goroutine is woken promptly even beside CPU burners (the
// kernel favours sleepers), so what the sampler sees is what every other
// goroutine of the process saw at the same time: a Go run queue full of
// the harness's own work, garbage-collector pauses, a process starved of
// CPU. It is one process-wide sampler, started and stopped by reference
// (Start), so that the sampling costs nothing between runs and nothing it
// starts outlives the runs that use it.
package lag

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Tick is how often the sampler wakes. Shorter ticks see shorter stalls;
// a stall shorter than Floor is noise, whatever the tick.
const Tick = 5 * time.Millisecond

// Floor is the smallest overshoot recorded: an idle machine overshoots a
// timer by microseconds, which no verdict measured in milliseconds needs
// to excuse, and leaving them out keeps the record small when nothing
// lags.
const Floor = time.Millisecond

// keep bounds the stalls remembered: at one stall a tick, a few minutes'
// worth, more than any window a verdict looks back over (a pair's whole
// time is bounded by its scenario timeout). Older stalls are forgotten
// first.
const keep = 1 << 15

// Stats are the stalls seen in a window.
type Stats struct {
	// Total is how much of the window the harness was stalled for: the sum
	// of the stalls' overlaps with it.
	Total time.Duration
	// Max is the longest single stall overlapping the window (counted
	// whole, not only its overlap).
	Max time.Duration
	// Stalls counts them.
	Stalls int
}

// Hops is how many of the harness's wake-ups stand between something
// happening and the harness acting on it (a message read, queued, taken
// by the step that waits for it): each may come as late as the longest
// stall. See Lost.
const Hops = 3

// Lost is how much of a window the harness's stalls took from it: how long
// something that happened in the window may have waited to be seen. It is
// the total of the stalls, but no more than Hops times the longest: a
// harness that is a few milliseconds behind at every wake-up (a busy
// machine taking its threads away for a time slice now and then) still
// sees everything within a few of those milliseconds, however many of
// them the window holds; one stopped for a second lost that second.
func (s Stats) Lost() time.Duration { return min(s.Total, Hops*s.Max) }

// Add returns the stalls of two windows taken together.
func (s Stats) Add(o Stats) Stats {
	return Stats{Total: s.Total + o.Total, Max: max(s.Max, o.Max), Stalls: s.Stalls + o.Stalls}
}

// stall is one wake-up that came late: the harness could not run in
// (at-over, at].
type stall struct {
	at   time.Time
	over time.Duration
}

// sampler is the process's one sampler.
type sampler struct {
	mu     sync.Mutex
	users  int
	stop   chan struct{}
	done   chan struct{}
	last   time.Time // the last wake-up (zero while stopped)
	stalls []stall   // ordered by at; a ring past keep (start is its head)
	start  int
}

var global sampler

// Start starts the process's sampler, if it is not running, and returns
// the function that releases it: the sampler stops once every Start has
// been released. Safe for concurrent use.
func Start() (release func()) {
	global.mu.Lock()
	defer global.mu.Unlock()
	global.users++
	if global.users == 1 {
		global.stop, global.done = make(chan struct{}), make(chan struct{})
		global.last = time.Now()
		go global.run(global.stop, global.done)
	}
	var once sync.Once
	return func() { once.Do(global.release) }
}

func (s *sampler) release() {
	s.mu.Lock()
	s.users--
	if s.users > 0 {
		s.mu.Unlock()
		return
	}
	stop, done := s.stop, s.done
	s.mu.Unlock()
	close(stop)
	<-done
	s.mu.Lock()
	// Nothing is measured between runs: what was is of no use to the next.
	s.last, s.stalls, s.start = time.Time{}, nil, 0
	s.mu.Unlock()
}

func (s *sampler) run(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(Tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			// The tick's own time is when the runtime meant it; now is when
			// this goroutine got to run.
			now := time.Now()
			s.mu.Lock()
			if over := now.Sub(s.last) - Tick; over >= Floor {
				s.add(stall{at: now, over: over})
			}
			s.last = now
			s.mu.Unlock()
		}
	}
}

// add records st; s.mu must be held.
func (s *sampler) add(st stall) {
	if len(s.stalls) < keep {
		s.stalls = append(s.stalls, st)
		return
	}
	s.stalls[s.start] = st
	s.start = (s.start + 1) % keep
}

// nth is the i-th stall remembered, oldest first; s.mu must be held.
func (s *sampler) nth(i int) stall { return s.stalls[(s.start+i)%len(s.stalls)] }

// In returns the stalls that overlap [from, to]. A stall still in
// progress (the sampler is late for its next wake-up as this is asked)
// counts up to now. Without a running sampler (no Start), it is empty: no
// lag was measured, so none can be excused.
func In(from, to time.Time) Stats { return global.in(from, to, time.Now()) }

func (s *sampler) in(from, to, now time.Time) Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out Stats
	if s.last.IsZero() || !to.After(from) {
		return out
	}
	// The ring is read in place, oldest first: every wait asks, so a copy
	// of it a time would cost as much as the ring on every wake-up.
	n := len(s.stalls)
	for i := sort.Search(n, func(i int) bool { return !s.nth(i).at.Before(from) }); i < n; i++ {
		st := s.nth(i)
		if !st.at.Add(-st.over).Before(to) {
			break
		}
		out = out.Add(overlap(st, from, to))
	}
	// Past the last wake-up by more than a tick: the sampler is being kept
	// from running right now.
	if pending := now.Sub(s.last) - Tick; pending >= Floor {
		out = out.Add(overlap(stall{at: now, over: pending}, from, to))
	}
	return out
}

// overlap is the part of st within [from, to], as Stats.
func overlap(st stall, from, to time.Time) Stats {
	lo, hi := st.at.Add(-st.over), st.at
	if lo.Before(from) {
		lo = from
	}
	if hi.After(to) {
		hi = to
	}
	if !hi.After(lo) {
		return Stats{}
	}
	return Stats{Total: hi.Sub(lo), Max: st.over, Stalls: 1}
}

// stallsIn is In, for Deadline; a variable for Deadline's tests, which
// need stalls of their choosing at the moment it looks.
var stallsIn = In

// Recent returns the stalls of the last d.
func Recent(d time.Duration) Stats {
	now := time.Now()
	return In(now.Add(-d), now)
}

// Stretch is how far a Deadline stretches at most: a wait of d lasts at
// most Stretch times d, however long the harness was stalled, so that a
// wait stays bounded on a machine too busy to run the harness at all.
const Stretch = 3

// Deadline is a wait of d that does not count the time the harness was
// stalled: it passes once d of wall time plus every stall since it began
// has gone by, or Stretch times d in all. It stretches by the stalls'
// total, not only by what they took from its watching (Stats.Lost): a
// target that runs in the harness's process (a built-in peer) is slowed
// at every one of its steps by the same stalls, and waiting longer costs
// only time, never a verdict. A window it bounds covers d of
// time in which the harness could see what happened: a must-happen wait
// then fails a target only after the target had d of the harness's
// attention, and a must-not-happen window watches d of it.
type Deadline struct {
	start    time.Time
	d, limit time.Duration
}

// NewDeadline starts a Deadline of d from now.
func NewDeadline(d time.Duration) Deadline {
	return Deadline{start: time.Now(), d: d, limit: Stretch * d}
}

// Start is when the wait began.
func (dl Deadline) Start() time.Time { return dl.start }

// Left is how long is left before the deadline passes, as of now: never
// more than what is left of the limit, and 0 or less once it passed.
func (dl Deadline) Left() time.Duration {
	now := time.Now()
	return min(dl.d+stallsIn(dl.start, now).Total, dl.limit) - now.Sub(dl.start)
}

// Passed reports whether the deadline has passed.
func (dl Deadline) Passed() bool { return dl.Left() <= 0 }

// Stalls are the stalls since the wait began.
func (dl Deadline) Stalls() Stats { return stallsIn(dl.start, time.Now()) }

// Wait waits until the deadline passes or ctx ends, whichever is first,
// and returns the stalls of the window.
func (dl Deadline) Wait(ctx context.Context) Stats {
	for {
		left := dl.Left()
		if left <= 0 {
			return dl.Stalls()
		}
		t := time.NewTimer(left)
		select {
		case <-ctx.Done():
			t.Stop()
			return dl.Stalls()
		case <-t.C:
		}
	}
}

// Done returns a channel closed once the deadline passes; cancelling ctx
// ends the wait without closing it. For a select that waits on the
// deadline beside other events.
func (dl Deadline) Done(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		dl.Wait(ctx)
		if ctx.Err() == nil {
			close(ch)
		}
	}()
	return ch
}
