package load_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/internal/load"
	_ "github.com/xdsconform/xdsconform/peers/builtin" // builtin:… targets
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// The load benchmarks (make bench) report what a load run measured as
// benchmark metrics. They never fail on a figure: wall-clock and memory
// figures depend on the machine and on what else runs on it. They fail
// only when a run could not be made or did not hold its streams.

// BenchmarkLoadBuiltin is a small load run against each built-in target,
// in-process (500 clients, a 2 s churn at 2 changes a second): what the
// suites' speed is to the conformance suites, ns/op being one whole run.
// The target shares the process, so no memory figure is reported: see
// BenchmarkLoadFixtureServer for those.
func BenchmarkLoadBuiltin(b *testing.B) {
	for _, target := range []string{targets.BuiltinReference, targets.BuiltinGoControlPlane, targets.BuiltinGoControlPlaneLin} {
		b.Run(target, func(b *testing.B) {
			ctx := b.Context()
			srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: target})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(srv.Close)
			var rep *loadreport.Report
			n := 0
			for b.Loop() {
				n++
				rep, err = load.Run(ctx, load.Target{Name: target, Server: srv, InProcess: true}, load.Options{
					Clients: 500, StreamsPerConn: 1, Variant: wire.SotWADS, Churn: 2, Duration: 2 * time.Second,
					Shards: 1, RunID: "bench" + strconv.Itoa(n), SampleEvery: 100,
				}, "bench")
				if err != nil {
					b.Fatal(err)
				}
				checkHeld(b, rep)
			}
			report(b, rep, false)
		})
	}
}

// BenchmarkLoadFixtureServer is the bar of issue 15: 10,000 clients
// against an out-of-process target (examples/fixture-server, a
// go-control-plane SnapshotCache), on 100 streams a connection and on one
// connection a stream. Each run is the xdsconform CLI as a user runs it,
// in a process of its own: a process's peak RSS (VmHWM) only ever grows,
// so in this one the earlier runs would weigh on the later ones' figures.
func BenchmarkLoadFixtureServer(b *testing.B) {
	dir := b.TempDir()
	cli := buildCommand(b, dir, "xdsconform", "../../cmd/xdsconform")
	fxs := buildCommand(b, dir, "fixture-server", "../../examples/fixture-server")
	for _, perConn := range []int{100, 1} {
		b.Run(fmt.Sprintf("clients=10000/streams-per-conn=%d", perConn), func(b *testing.B) {
			var rep *loadreport.Report
			for b.Loop() {
				// A fresh server a run, so no run inherits the state (and
				// the nodes) of the one before.
				xds, fixture := startFixtureServer(b, fxs)
				out := filepath.Join(b.TempDir(), "load.json")
				runCommand(b, cliRunBound, cli, "load", "--target", xds, "--fixture", fixture,
					"--clients", "10000", "--streams-per-conn", strconv.Itoa(perConn),
					"--churn", "2", "--duration", "10s", "--json", out)
				// Exit 1 (an objective broken: a run of one process must
				// miss nothing, break nothing, lose no stream) is a figure
				// like the others, reported below, not a failure.
				rep = readReport(b, out)
				checkHeld(b, rep)
			}
			report(b, rep, true)
		})
	}
}

// cliRunBound bounds one CLI run of BenchmarkLoadFixtureServer: the
// connect and initial sync are bounded by --sync-timeout (60 s), the
// churn by its 10 s and the settle (10 s), the clean-up by 30 s.
const cliRunBound = 5 * time.Minute

// checkHeld fails the benchmark when the run did not hold every stream of
// its plan, or was cut short: the figures would then be of another run.
func checkHeld(b testing.TB, rep *loadreport.Report) {
	b.Helper()
	if rep.Interrupted {
		b.Fatalf("the run was interrupted; notes: %q", rep.Notes)
	}
	var held int64
	for _, h := range rep.Harness {
		held += h.Streams
	}
	if held < int64(rep.Plan.Clients) {
		b.Fatalf("the run held %d streams at most, for %d clients; notes: %q", held, rep.Plan.Clients, rep.Notes)
	}
}

// report reports rep's figures as the benchmark's metrics, and its notes
// in the log.
func report(b *testing.B, rep *loadreport.Report, memory bool) {
	for unit, v := range figures(rep, memory) {
		b.ReportMetric(v, unit)
	}
	for _, n := range rep.Notes {
		b.Log("note: " + n)
	}
}

// figures are the metrics of a report: the churn phase's push→ACK
// latency, convergence and amplification, the initial sync's p99, what
// was missed and failed over the whole run, and the harness's CPU and,
// when memory is set (the harness ran alone in its process), its RSS per
// stream.
func figures(rep *loadreport.Report, memory bool) map[string]float64 {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	out := map[string]float64{}
	var missed, errs, violations int64
	for _, p := range rep.Phases {
		missed += p.Missed
		errs += p.Errors
		violations += p.Violations
		switch p.Name {
		case loadreport.PhaseInitialSync:
			out["sync-p99-ms"] = ms(p.Latency.Quantile(0.99))
		case loadreport.PhaseChurn:
			out["push-ack-p50-ms"] = ms(p.Latency.Quantile(0.5))
			out["push-ack-p99-ms"] = ms(p.Latency.Quantile(0.99))
			if p.Convergence != nil {
				out["convergence-p99-ms"] = ms(p.Convergence.Quantile(0.99))
			}
			out["amplification"] = p.Amplification
		}
	}
	out["missed"], out["errors"], out["violations"] = float64(missed), float64(errs), float64(violations)
	var cpu, streams, added float64
	for _, h := range rep.Harness {
		cpu += h.CPUPercent
		streams += float64(h.Streams)
		added += float64(h.BytesPerStream * h.Streams)
	}
	out["harness-cpu-pct"] = cpu
	if memory && streams > 0 {
		out["KiB/stream"] = added / streams / 1024
	}
	return out
}

// buildCommand builds the main package at pkg (relative to this
// package's directory) into dir, or skips the benchmark when it cannot:
// no go command, or a build that fails here.
func buildCommand(b *testing.B, dir, name, pkg string) string {
	b.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		b.Skipf("cannot build %s for an out-of-process run: no go command on PATH: %v", name, err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), buildBound)
	defer cancel()
	bin := filepath.Join(dir, name)
	out, err := exec.CommandContext(ctx, goCmd, "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		b.Skipf("cannot build %s for an out-of-process run: %v\n%s", name, err, clip(out))
	}
	return bin
}

// buildBound bounds one go build: a cold one takes a minute or two on two
// busy cores.
const buildBound = 10 * time.Minute

// fixtureServerUp is what examples/fixture-server logs once it listens.
var fixtureServerUp = regexp.MustCompile(`xDS on (\S+), fixture API on (\S+)\n`)

// startFixtureServer starts the fixture-server binary at bin on ports the
// kernel picks (so no other process can take them between a pick and the
// bind), reads them from its log, and stops it when tb ends, however it
// ends.
func startFixtureServer(tb testing.TB, bin string) (xds, fixture string) {
	tb.Helper()
	logs := newWatchedLog(fixtureServerUp)
	startProcess(tb, logs, bin, "-xds-addr", "127.0.0.1:0", "-fixture-addr", "127.0.0.1:0")
	select {
	case m := <-logs.matched:
		return m[1], m[2]
	case <-time.After(serverStartBound):
		tb.Fatalf("%s did not say where it listens within %s; its log:\n%s", bin, serverStartBound, logs.String())
	}
	return "", ""
}

// serverStartBound bounds the wait for the fixture-server to listen.
const serverStartBound = 30 * time.Second

// startProcess starts bin with args, its stdout and stderr to w, and
// registers a clean-up that kills it and waits for it (bounded): a
// benchmark that fails or is interrupted leaves no process behind. Where
// the platform allows it, the child also dies with this process (see
// dieWithParent), should this one be killed before its clean-ups run.
func startProcess(tb testing.TB, w io.Writer, bin string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = w, w
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(processExitBound):
			tb.Errorf("%s (pid %d) did not exit within %s of being killed", bin, cmd.Process.Pid, processExitBound)
		}
	})
	return cmd
}

// processExitBound bounds the wait for a killed process to be reaped.
const processExitBound = 10 * time.Second

// runCommand runs bin with args to its end, within bound, and fails tb
// with its output when it fails, unless with exit code 1: the load
// command's "an objective was broken", which leaves a whole report.
func runCommand(tb testing.TB, bound time.Duration, bin string, args ...string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(tb.Context(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	logs := newWatchedLog(nil)
	cmd.Stdout, cmd.Stderr = logs, logs
	dieWithParent(cmd)
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == objectiveBroken && ctx.Err() == nil:
		tb.Logf("%s: an objective was broken (exit %d); its output:\n%s", filepath.Base(bin), objectiveBroken, logs.String())
	default:
		tb.Fatalf("%s %q: %v (bound %s); its output:\n%s", filepath.Base(bin), args, err, bound, logs.String())
	}
}

// objectiveBroken is the exit code of a load run that ran but broke an
// objective (--slo, or the default one of a run of one process).
const objectiveBroken = 1

// readReport reads the JSON load report at path, as report merge does
// (strict, bounded by loadreport.MaxJSONSize).
func readReport(tb testing.TB, path string) *loadreport.Report {
	tb.Helper()
	rep, err := loadreport.ReadJSONFile(context.Background(), path)
	if err != nil {
		tb.Fatalf("reading the load report: %v", err)
	}
	return rep
}

// watchedLog keeps the last maxLog bytes written to it, and sends on
// matched the first match of re (nil: none) in what was written.
type watchedLog struct {
	re      *regexp.Regexp
	matched chan []string

	mu   sync.Mutex
	buf  []byte
	sent bool
}

// maxLog bounds what a watchedLog keeps.
const maxLog = 64 << 10

func newWatchedLog(re *regexp.Regexp) *watchedLog {
	return &watchedLog{re: re, matched: make(chan []string, 1)}
}

func (l *watchedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > maxLog {
		l.buf = append(l.buf[:0], l.buf[len(l.buf)-maxLog:]...)
	}
	if l.re != nil && !l.sent {
		if m := l.re.FindStringSubmatch(string(l.buf)); m != nil {
			l.sent = true
			l.matched <- m
		}
	}
	return len(p), nil
}

// String is what the log kept.
func (l *watchedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// clip bounds command output quoted in a message.
func clip(b []byte) string {
	if len(b) > 4096 {
		return "…" + string(b[len(b)-4096:])
	}
	return string(b)
}
