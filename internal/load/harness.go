package load

import (
	"bufio"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/reports/loadreport"
)

// monitor watches the harness's own CPU, memory and scheduling lag, so a
// report can say when the harness, not the server, was the bottleneck.
type monitor struct {
	start    time.Time
	cpu0     time.Duration
	baseline int64 // RSS before the run's first connection
	lagMax   atomic.Int64
	heap     atomic.Int64
	busy     atomic.Bool // saturatedSeconds seconds in a row on every core
	done     chan struct{}
	stopped  chan struct{}
	// budget is the live heap past which over is called, once (0: none);
	// overAt is the live heap it was called at.
	budget int64
	over   func(live int64)
	overAt atomic.Int64
	cpu    time.Duration
	wall   time.Duration
}

// lagTick is how often the monitor looks at the harness's scheduling lag,
// which internal/lag samples (the same measure the suites' timing
// verdicts weigh): a stall longer than saturatedLag means the harness
// could not schedule its own goroutines in time.
const (
	lagTick      = 50 * time.Millisecond
	saturatedLag = 200 * time.Millisecond
	// saturatedCPU is the share of every core past which the harness is
	// taken as saturated: over the run, or over saturatedSeconds seconds in
	// a row (opening ten thousand streams may take one or two).
	saturatedCPU     = 0.9
	saturatedSeconds = 3
)

// startMonitor starts watching the harness; over, if budget is not 0, is
// called once the live heap has passed budget.
func startMonitor(budget int64, over func(live int64)) *monitor {
	m := &monitor{start: time.Now(), cpu0: cpuTime(), baseline: rss(), done: make(chan struct{}), stopped: make(chan struct{}),
		budget: budget, over: over}
	go m.watch()
	return m
}

// liveHeap is the heap the last collection found alive: what the run
// holds, its garbage aside. It is read without stopping the world.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// checkBudget calls over, once, when the live heap is past the budget.
func (m *monitor) checkBudget() {
	if m.budget <= 0 || m.overAt.Load() != 0 {
		return
	}
	if live := liveHeap(); live > m.budget {
		m.overAt.Store(live)
		m.over(live)
	}
}

func (m *monitor) watch() {
	defer close(m.stopped)
	defer lag.Start()()
	t := time.NewTicker(lagTick)
	defer t.Stop()
	last := time.Now()
	var ms runtime.MemStats
	cores := float64(runtime.GOMAXPROCS(0))
	cpuLast, secLast, inRow := cpuTime(), last, 0
	for n := 0; ; n++ {
		select {
		case <-m.done:
			return
		case now := <-t.C:
			// Each look covers the time since the last: the ring of
			// stalls internal/lag keeps need not reach back over a run of
			// any length.
			if st := lag.In(last, now); st.Max > time.Duration(m.lagMax.Load()) {
				m.lagMax.Store(int64(st.Max))
			}
			last = now
			m.checkBudget()
			if n%20 == 0 { // ReadMemStats stops the world: once a second
				runtime.ReadMemStats(&ms)
				if h := int64(ms.HeapInuse); h > m.heap.Load() {
					m.heap.Store(h)
				}
				// The run's average hides a harness that was flat out for a
				// while: look at each second too.
				cpu := cpuTime()
				if share := (cpu - cpuLast).Seconds() / now.Sub(secLast).Seconds() / cores; share > saturatedCPU {
					if inRow++; inRow >= saturatedSeconds {
						m.busy.Store(true)
					}
				} else {
					inRow = 0
				}
				cpuLast, secLast = cpu, now
			}
		}
	}
}

func (m *monitor) stop() {
	close(m.done)
	<-m.stopped
	m.cpu = cpuTime() - m.cpu0
	m.wall = time.Since(m.start)
}

// figures are the monitor's figures for shard, which held streams at
// most.
func (m *monitor) figures(shard int, streams int64) loadreport.Harness {
	h := loadreport.Harness{
		Shard: shard, Streams: streams, CPUSeconds: m.cpu.Seconds(), Cores: runtime.GOMAXPROCS(0),
		PeakRSSBytes: peakRSS(), BaselineRSSBytes: m.baseline, HeapBytes: m.heap.Load(), LagMaxNS: m.lagMax.Load(),
	}
	if m.wall > 0 {
		h.CPUPercent = 100 * m.cpu.Seconds() / m.wall.Seconds()
	}
	if streams > 0 && h.PeakRSSBytes > h.BaselineRSSBytes {
		h.BytesPerStream = (h.PeakRSSBytes - h.BaselineRSSBytes) / streams
	}
	h.Saturated = h.CPUPercent > saturatedCPU*100*float64(h.Cores) || time.Duration(h.LagMaxNS) > saturatedLag || m.busy.Load()
	return h
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rss is the process's resident set now, from /proc (0 where there is
// none).
func rss() int64 { return procStatus("VmRSS:") }

// peakRSS is the process's peak resident set, from /proc (0 where there
// is none).
func peakRSS() int64 { return procStatus("VmHWM:") }

func procStatus(key string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
