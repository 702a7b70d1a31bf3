package lag

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// stopped returns a sampler that is not running, holding sts, its last
// wake-up at last: the figures are then exactly the stalls given.
func stopped(last time.Time, sts ...stall) *sampler {
	s := &sampler{last: last}
	for _, st := range sts {
		s.add(st)
	}
	return s
}

func TestLostIsAtMostAFewOfTheLongestStalls(t *testing.T) {
	ms := time.Millisecond
	// Behind by 5 ms at every wake-up for a second: everything was seen
	// within a few of those 5 ms.
	assert.Equal(t, Hops*5*ms, Stats{Total: 500 * ms, Max: 5 * ms}.Lost())
	// Stopped once for 400 ms: those 400 ms are lost.
	assert.Equal(t, 400*ms, Stats{Total: 400 * ms, Max: 400 * ms}.Lost())
}

func TestPendingStallCounts(t *testing.T) {
	// The sampler last woke 100 ms ago: it is being kept from running, and
	// the time past its tick counts as a stall up to now.
	now := time.Now()
	s := stopped(now.Add(-100 * time.Millisecond))
	got := s.in(now.Add(-time.Second), now, now)
	assert.Equal(t, 100*time.Millisecond-Tick, got.Total)
}

func TestInCountsOverlapsOnly(t *testing.T) {
	base := time.Now()
	ms := time.Millisecond
	s := stopped(base.Add(time.Second),
		stall{at: base.Add(100 * ms), over: 50 * ms},  // [50, 100]
		stall{at: base.Add(300 * ms), over: 100 * ms}, // [200, 300]
		stall{at: base.Add(900 * ms), over: 20 * ms},  // [880, 900]
	)
	for _, c := range []struct {
		name     string
		from, to time.Duration
		want     Stats
	}{
		{"all", 0, time.Second, Stats{Total: 170 * ms, Max: 100 * ms, Stalls: 3}},
		{"none", 400 * ms, 800 * ms, Stats{}},
		{"part of one", 250 * ms, 400 * ms, Stats{Total: 50 * ms, Max: 100 * ms, Stalls: 1}},
		{"ends inside", 0, 75 * ms, Stats{Total: 25 * ms, Max: 50 * ms, Stalls: 1}},
		{"between", 100 * ms, 200 * ms, Stats{}},
		{"empty window", 500 * ms, 500 * ms, Stats{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, s.in(base.Add(c.from), base.Add(c.to), base.Add(time.Second)))
		})
	}
}

func TestNothingMeasuredWithoutStart(t *testing.T) {
	assert.Equal(t, Stats{}, Recent(time.Hour))
}

func TestRingKeepsTheNewest(t *testing.T) {
	base := time.Now()
	end := base.Add(time.Duration(keep+10) * time.Millisecond)
	s := stopped(end)
	for i := range keep + 10 {
		s.add(stall{at: base.Add(time.Duration(i+1) * time.Millisecond), over: time.Millisecond})
	}
	// The first ten were overwritten: only stalls from the 11th on count.
	assert.Equal(t, keep, s.in(base, end, end).Stalls)
	assert.Equal(t, Stats{}, s.in(base, base.Add(10*time.Millisecond), end))
}

// TestSeesItsOwnProcessBusy shows that the sampler measures what it is
// for: with every P kept busy by goroutines that never block, the
// sampler's own wake-ups wait behind them in the run queue.
func TestSeesItsOwnProcessBusy(t *testing.T) {
	defer Start()()
	start := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 1 << 16 {
				}
			}
		})
	}
	// Bounded: a machine so idle and so fast that no stall shows in 5 s
	// fails the test rather than hanging it.
	deadline := time.Now().Add(5 * time.Second)
	for In(start, time.Now()).Total < 20*time.Millisecond && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	assert.GreaterOrEqual(t, In(start, time.Now()).Total, 20*time.Millisecond, "the busy goroutines held the sampler back")
}

func TestDeadlineStretchesOverStalls(t *testing.T) {
	ms := time.Millisecond
	// Each look finds 30 ms more of stalls than the last, three times:
	// the window must stretch by each.
	looks := 0
	stallsIn = func(time.Time, time.Time) Stats {
		looks++
		n := time.Duration(min(looks, 3))
		return Stats{Total: n * 30 * ms, Max: 30 * ms, Stalls: int(n)}
	}
	defer func() { stallsIn = In }()
	dl := NewDeadline(50 * ms)
	st := dl.Wait(context.Background())
	assert.Equal(t, 90*ms, st.Total)
	assert.GreaterOrEqual(t, time.Since(dl.Start()), 50*ms+90*ms, "the window covers the stalls")
}

func TestDeadlineStopsAtLimitAndContext(t *testing.T) {
	ms := time.Millisecond
	stallsIn = func(time.Time, time.Time) Stats { return Stats{Total: time.Hour, Max: time.Hour} } // longer than any limit
	defer func() { stallsIn = In }()
	dl := NewDeadline(10 * ms)
	returns(t, func() { dl.Wait(context.Background()) }) // an hour of stalls: the limit ends it
	assert.True(t, dl.Passed())
	assert.GreaterOrEqual(t, time.Since(dl.Start()), Stretch*10*ms, "it stretched as far as it may")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dl = NewDeadline(time.Hour)
	returns(t, func() { dl.Wait(ctx) }) // an hour's wait: the context ends it
	assert.False(t, dl.Passed())
}

// returns fails the test unless f returns within a bound far above what
// it should take: a wait that did not stop would otherwise hang the test.
func returns(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the wait did not return")
	}
}
