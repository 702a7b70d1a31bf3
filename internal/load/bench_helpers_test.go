package load_test

import (
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/loadreport"
)

// The benchmarks' helpers are tested here, so that a benchmark cannot
// report the wrong phase's figure, or leave a server running, unseen.

func TestFiguresAreTheChurnPhases(t *testing.T) {
	hist := func(ds ...time.Duration) *loadreport.Histogram {
		h := loadreport.NewHistogram()
		for _, d := range ds {
			h.Record(d)
		}
		return h
	}
	rep := &loadreport.Report{
		Phases: []loadreport.Phase{
			{Name: loadreport.PhaseConnect, Latency: hist(time.Second), Errors: 1},
			{Name: loadreport.PhaseInitialSync, Latency: hist(3 * time.Second), Missed: 2},
			{Name: loadreport.PhaseChurn, Latency: hist(10*time.Millisecond, 20*time.Millisecond), Convergence: hist(40 * time.Millisecond), Amplification: 1.5, Violations: 3},
			{Name: loadreport.PhaseBurst, Latency: hist(time.Minute), Convergence: hist(time.Minute), Amplification: 9},
		},
		Harness: []loadreport.Harness{{Streams: 1000, BytesPerStream: 20 << 10, CPUPercent: 80}},
	}
	got := figures(rep, true)
	assert.InDelta(t, 10, got["push-ack-p50-ms"], 0.1)
	assert.InDelta(t, 20, got["push-ack-p99-ms"], 0.1)
	assert.InDelta(t, 40, got["convergence-p99-ms"], 0.1)
	assert.InDelta(t, 3000, got["sync-p99-ms"], 5)
	assert.Equal(t, 1.5, got["amplification"])
	assert.Equal(t, 2.0, got["missed"])
	assert.Equal(t, 1.0, got["errors"])
	assert.Equal(t, 3.0, got["violations"])
	assert.Equal(t, 80.0, got["harness-cpu-pct"])
	assert.Equal(t, 20.0, got["KiB/stream"])

	_, ok := figures(rep, false)["KiB/stream"]
	assert.False(t, ok, "an in-process run's RSS includes the target's: no KiB/stream")
}

func TestCheckHeld(t *testing.T) {
	held := &loadreport.Report{Plan: loadreport.Plan{Clients: 10}, Harness: []loadreport.Harness{{Streams: 6}, {Streams: 4}}}
	assert.True(t, passes(func(tb testing.TB) { checkHeld(tb, held) }))
	short := &loadreport.Report{Plan: loadreport.Plan{Clients: 10}, Harness: []loadreport.Harness{{Streams: 9}}}
	assert.False(t, passes(func(tb testing.TB) { checkHeld(tb, short) }))
	cut := &loadreport.Report{Plan: loadreport.Plan{Clients: 1}, Harness: []loadreport.Harness{{Streams: 1}}, Interrupted: true}
	assert.False(t, passes(func(tb testing.TB) { checkHeld(tb, cut) }))
}

// passes runs f against a testing.TB that records a failure instead of
// failing the test, and reports whether f passed.
func passes(f func(testing.TB)) bool {
	tb := &recordingTB{}
	done := make(chan struct{})
	go func() { // FailNow ends the goroutine, as in a real test
		defer close(done)
		f(tb)
	}()
	<-done
	return !tb.failed
}

type recordingTB struct {
	testing.TB
	failed bool
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Fatalf(string, ...any) { r.failed = true; runtime.Goexit() }

func TestStartProcessStopsItAtCleanup(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep command to start: %v", err)
	}
	var cmd *exec.Cmd
	t.Run("holder", func(t *testing.T) {
		cmd = startProcess(t, newWatchedLog(nil), sleep, "300")
		require.Nil(t, cmd.ProcessState, "the child is running while the test is")
	})
	// The clean-up reaped it: Wait returned, with the child killed.
	require.NotNil(t, cmd.ProcessState, "the child outlived the test that started it")
	assert.False(t, cmd.ProcessState.Success())
}

func TestWatchedLogMatchesWholeLinesAndKeepsItsBound(t *testing.T) {
	l := newWatchedLog(fixtureServerUp)
	_, _ = l.Write([]byte("2026/01/01 00:00:00 xDS on 127.0.0.1:1234, fixture API on 127.0.0.1:56"))
	select {
	case m := <-l.matched:
		t.Fatalf("matched a line not yet ended: %q", m)
	default:
	}
	_, _ = l.Write([]byte("78\n"))
	select {
	case m := <-l.matched:
		assert.Equal(t, []string{"127.0.0.1:1234", "127.0.0.1:5678"}, m[1:])
	default:
		t.Fatal("no match once the line ended")
	}

	big := newWatchedLog(regexp.MustCompile("never"))
	for range 100 {
		_, _ = big.Write([]byte(strings.Repeat("x", 4096)))
	}
	assert.Len(t, big.String(), maxLog)
}
