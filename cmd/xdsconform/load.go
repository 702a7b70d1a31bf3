package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/load"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

const loadLong = `Run a load test: many simulated xDS clients against one management server.

The harness sets every client's resources through the fixture API, opens
the streams (connect), waits until every client has ACKed its whole
profile (initial sync), then changes resources at --churn changes a second
for --duration (churn) and, with --nack-burst, sets resources the clients
NACK and then sets them right (burst). It measures, per phase, push→ACK
latency and convergence as HDR histograms, responses per change per client
(amplification), NACKs, resends, missed pushes, protocol violations (the
cheap invariants on every stream, all of them on sampled clients), and the
harness's own CPU and memory, so a saturated harness is not taken for a
slow server.

Profiles:
  grpc   listener → route → cluster → endpoints, each subscribed once the one
         before it arrived (a gRPC client)
  envoy  wildcard listeners and clusters, then routes and endpoints (Envoy)
  TYPE=NAME,...;TYPE=NAME,...   your own: types LDS, RDS, CDS, EDS, RTDS, in
         the order subscribed; * subscribes LDS or CDS by wildcard

A fixture that builds the content it serves (builds_content: Consul's or
Envoy Gateway's adapter) drops the marker each resource carries; the
clients then tell changes apart by a cluster's connect_timeout and an
assignment's endpoint port, which such a fixture copies: give a profile of
CDS and EDS (e.g. 'CDS=cluster;EDS=cluster'), one shard, no --nack-burst.

Beyond one machine: run N processes with --shard 0/N ... --shard N-1/N and
the same --run-id and plan; shard 0 drives the fixture; merge their JSON
reports with 'xdsconform report merge' (docs/load.md).

Exit codes: 0 the run met its objectives (--slo; without it, a run of one
process is judged against ` + defaultLoadSLO + `, a shard
is judged when merged); 1 an objective failed, or the run measured nothing
(no stream opened, the fixture set nothing, no client synced, a phase whose
changes reached no client: the line says which, judged or not); 2 usage; 3
the target could not be reached, died during the run, or its fixture
stopped answering (3 calls in a row past their deadline); 130 interrupted
(the report of what ran is still written, with no verdict).`

const loadExample = `  # 2,000 gRPC-like clients against go-control-plane, built in
  xdsconform load --target builtin:go-control-plane --clients 2000 --duration 10s --json out.json

  # your server, 10,000 clients on 100 connections, failing CI on a regression
  xdsconform load --target 127.0.0.1:18000 --fixture 127.0.0.1:18001 --clients 10000 \
      --streams-per-conn 100 --churn 20 --duration 60s --slo 'p99<500ms,violations=0'

  # shard 1 of 4 of one run
  xdsconform load --target xds:18000 --clients 40000 --shard 1/4 --run-id nightly-42 --json -`

type loadFlags struct {
	target         serverFlags
	clients        int
	nodes          int
	profile        string
	variant        string
	streamsPerConn int
	churn          float64
	churnTypes     string
	duration       time.Duration
	nackBurst      int
	burstWindow    time.Duration
	shard          string
	runID          string
	transcripts    string
	syncTimeout    time.Duration
	settle         time.Duration
	startWait      time.Duration
	churnDelay     time.Duration
	memoryBudget   memorySize
	padding        byteSize
	outputs        loadOutputs
}

func newLoadCmd(out io.Writer) *cobra.Command {
	f := &loadFlags{}
	c := &cobra.Command{
		Use:     "load --target HOST:PORT|builtin:NAME [flags]",
		Short:   "Load-test a management server with many simulated xDS clients",
		Long:    loadLong,
		Example: loadExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runLoad(c, out, f)
		},
	}
	f.target.registerTarget(c)
	fs := c.Flags()
	fs.IntVar(&f.clients, "clients", 100, "simulated xDS clients (over every shard)")
	fs.IntVar(&f.nodes, "nodes", 0, "distinct node ids the clients share (0: one per client)")
	fs.StringVar(&f.profile, "profile", load.ProfileGRPC, "subscription profile: grpc, envoy, or TYPE=NAME,...;TYPE=NAME,...")
	fs.StringVar(&f.variant, "variant", wire.SotWADS.String(), "protocol variant: sotw-ads, sotw-pertype, delta-ads, delta-pertype")
	fs.IntVar(&f.streamsPerConn, "streams-per-conn", 1, "streams sharing one gRPC connection (1: one connection a stream, as real clients do)")
	fs.Float64Var(&f.churn, "churn", 2, "fixture changes a second during the churn phase (0: no churn)")
	fs.StringVar(&f.churnTypes, "churn-types", "", "types the churn changes, e.g. CDS,EDS (default: every type of the profile)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "how long the churn lasts")
	fs.IntVar(&f.nackBurst, "nack-burst", 0, "bad resources the burst phase sets, which the clients NACK (0: no burst; go-control-plane's SnapshotCache resends a NACKed snapshot at once, so a burst against it is a storm by design)")
	fs.DurationVar(&f.burstWindow, "burst-window", load.DefaultBurstWindow, "how long the burst's bad resources stay bad")
	fs.StringVar(&f.shard, "shard", "0/1", "run shard I of N (0-based); shard 0 drives the fixture")
	fs.StringVar(&f.runID, "run-id", "", "names the run (node ids, resource names); the shards of one run must share it (default: a random one, single process only)")
	fs.StringVar(&f.transcripts, "transcripts", "sampled:1000", "off, or sampled:N (one client in N keeps a transcript and checks every invariant)")
	fs.DurationVar(&f.syncTimeout, "sync-timeout", load.DefaultSyncTimeout, "bound on the connect and initial-sync phases")
	fs.DurationVar(&f.settle, "settle", load.DefaultSettle, "bound on the wait for convergence after a phase's last change")
	fs.DurationVar(&f.startWait, "start-wait", load.DefaultStartWait, "shards other than 0: how long to wait for shard 0's first change")
	fs.Var(&f.padding, "resource-padding", "pad every resource the run sets with this many bytes (e.g. 1MiB), to measure what big responses cost the server and the harness (docs/load.md#memory)")
	fs.Var(&f.memoryBudget, "memory-budget", "the most the harness's live heap may hold (streams, responses being received, an in-process target): past it the run stops, reports what ran and fails saying so (default 1GiB plus 64KiB a client of this shard, and at most nine tenths of GOMEMLIMIT when that is set)")
	fs.DurationVar(&f.churnDelay, "churn-delay", 0, "shard 0: wait this long after its own clients synced before the churn, so the other shards' clients sync first")
	f.outputs.register(c, "the run's")
	return c
}

func (f *loadFlags) options(c *cobra.Command) (load.Options, error) {
	o := load.Options{
		MemoryBudget: int64(f.memoryBudget), Padding: int(f.padding),
		Clients: f.clients, Nodes: f.nodes, Profile: f.profile, StreamsPerConn: f.streamsPerConn,
		Churn: f.churn, Duration: f.duration, NackBurst: f.nackBurst, BurstWindow: f.burstWindow,
		RunID: f.runID, SyncTimeout: f.syncTimeout, Settle: f.settle, StartWait: f.startWait, ChurnDelay: f.churnDelay,
	}
	v, err := wire.ParseVariant(f.variant)
	if err != nil {
		return o, usageError("--variant: %v", err)
	}
	o.Variant = v
	if f.churnTypes != "" {
		if o.ChurnTypes, err = load.ParseTypes(f.churnTypes); err != nil {
			return o, usageError("%v", err)
		}
	}
	i, n, ok := strings.Cut(f.shard, "/")
	o.Shard, err = strconv.Atoi(i)
	if err == nil {
		o.Shards, err = strconv.Atoi(n)
	}
	if !ok || err != nil {
		return o, usageError("--shard %q: want I/N, e.g. 0/4", f.shard)
	}
	switch {
	case f.transcripts == "off":
	case strings.HasPrefix(f.transcripts, "sampled:"):
		k, err := strconv.Atoi(strings.TrimPrefix(f.transcripts, "sampled:"))
		if err != nil || k < 1 {
			return o, usageError("--transcripts %q: want off or sampled:N with N >= 1", f.transcripts)
		}
		o.SampleEvery = k
	default:
		return o, usageError("--transcripts %q: want off or sampled:N", f.transcripts)
	}
	if o.RunID == "" {
		if o.Shards > 1 {
			return o, usageError("--shard %s: the shards of one run must share --run-id; give one", f.shard)
		}
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.RunID = hex.EncodeToString(b[:])
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--sync-timeout", f.syncTimeout}, {"--settle", f.settle}, {"--start-wait", f.startWait}, {"--burst-window", f.burstWindow}} {
		if d.v <= 0 {
			return o, usageError("%s must be positive", d.name)
		}
	}
	if f.churnDelay < 0 {
		return o, usageError("--churn-delay must not be negative")
	}
	if o.Shards > 0 && o.Shard == 0 && f.target.fixture == "" && !strings.HasPrefix(f.target.target, targets.BuiltinPrefix) && !strings.HasPrefix(f.target.target, targets.ContainerPrefix) {
		return o, usageError("%v", load.ErrNoFixture)
	}
	return o, nil
}

func runLoad(c *cobra.Command, out io.Writer, f *loadFlags) error {
	if err := f.target.validate(c); err != nil {
		return err
	}
	o, err := f.options(c)
	if err != nil {
		return err
	}
	if f.outputs.slo == "" && o.Shards == 1 {
		// A run of one process is judged even without --slo: the protocol
		// held under load. A shard is judged in the merge, where the other
		// shards' counts are.
		f.outputs.slo = defaultLoadSLO
	}
	outs, slo, err := f.outputs.prepare("")
	if err != nil {
		return err
	}
	if err := load.Check(o); err != nil {
		return usageError("%v", err)
	}
	opts, err := f.target.targetOptions()
	if err != nil {
		return err
	}
	if o.MemoryBudget == 0 {
		o.MemoryBudget = load.DefaultMemoryBudget(o.Clients / o.Shards)
		if os.Getenv("GOMEMLIMIT") != "" {
			// A limit the environment set (a pod's, say) is the memory
			// the process must stay within: the run stops at nine tenths
			// of it, with its report, rather than being killed without.
			o.MemoryBudget = min(o.MemoryBudget, debug.SetMemoryLimit(-1)/10*9)
		}
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The harness's soft limit is sized for the suites; a load run holds
		// what its plan asks for (tens of kilobytes a stream), and a
		// collector racing a limit below that would take all the CPU.
		// Within the run's memory budget, where the collector must work
		// hardest before the budget stops the run.
		debug.SetMemoryLimit(min(memoryLimit+int64(o.Clients)*loadBytesPerClient, o.MemoryBudget))
	}
	if os.Getenv("GOGC") == "" {
		// Most of a load run's heap is its streams' state, alive to the
		// end: at Go's default pace the garbage on top of it would add half
		// again to the harness's memory for little CPU saved.
		debug.SetGCPercent(loadGCPercent)
	}
	srv, err := startServer(c.Context(), opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	// What the run is doing, on stderr; not when a report goes to stdout,
	// where a log collector (kubectl logs) may mix the two streams.
	if !toStdout(outs) {
		progress := c.ErrOrStderr()
		o.OnPhase = func(phase string) { fmt.Fprintf(progress, "load: %s\n", phase) }
	}
	rep, err := load.Run(c.Context(), load.Target{Name: srv.Name, Address: f.target.target, Server: srv, InProcess: strings.HasPrefix(f.target.target, targets.BuiltinPrefix)}, o, version)
	if err != nil {
		// Run refuses only a plan it cannot run (or a missing fixture)
		// before it starts anything: a usage error either way.
		return usageError("%v", err)
	}
	interrupted := rep.Interrupted || c.Context().Err() != nil
	// A target that died, or whose fixture stopped answering, explains
	// whatever the run then measured or did not: the run is not judged,
	// and its one line is that cause (exit 3, as in the suites).
	died := srv.Died()
	if !toStdout(outs) {
		summarize(out, rep)
	}
	err = f.outputs.write(out, c.ErrOrStderr(), rep, outs, slo, !interrupted && died == nil)
	var ee *exitError
	switch {
	case err != nil && !(errors.As(err, &ee) && ee.code == exitFailures):
		return err // a report that could not be written
	case interrupted:
		// Exit 130 prints nothing of its own: this is the line that says
		// why there is no verdict. Not beside a report on standard output,
		// which says so itself, where a log collector (kubectl logs) would
		// mix the line into it.
		if !toStdout(outs) {
			fmt.Fprintf(c.ErrOrStderr(), "xdsconform: interrupted%s: no SLO verdict; the report says what ran\n", duringPhase(rep))
		}
		return &exitError{code: exitInterrupted, err: context.Canceled}
	case died != nil && errors.Is(died, engine.ErrUnusable):
		return &exitError{code: exitUnreachable, err: fmt.Errorf("the load run stopped early: %w", died)}
	case died != nil:
		return &exitError{code: exitUnreachable, err: fmt.Errorf("the target died during the load run: %w", died)}
	}
	return err
}

// duringPhase is " during the PHASE phase", naming the last phase rep
// ran, or "" when none ran.
func duringPhase(rep *loadreport.Report) string {
	if len(rep.Phases) == 0 {
		return ""
	}
	return fmt.Sprintf(" during the %s phase", rep.Phases[len(rep.Phases)-1].Name)
}

// loadBytesPerClient is what the memory limit grows by per client: a
// generous bound of what a client's streams hold.
const loadBytesPerClient = 256 << 10

// defaultLoadSLO judges a single-process run given no --slo: no rule
// broken, no client left behind, no stream failed.
const defaultLoadSLO = "violations=0,missed=0,errors=0"

// loadGCPercent is the collector's pace in a load run (Go's default:
// 100). Measured against examples/fixture-server at 10,000 clients on
// 100 connections: 50 held 20.0 KiB a stream, 30 holds 18.3 at 8% more
// CPU, 25 holds 17.7 at 16% more.
const loadGCPercent = 30

// summarize prints a few lines per phase (unless a report goes to
// standard output: it is then the output).
func summarize(out io.Writer, rep *loadreport.Report) {
	fmt.Fprintf(out, "load run %s against %s: %d clients, profile %s, %s\n", rep.RunID, rep.Target, rep.Plan.Clients, rep.Plan.Profile, rep.Plan.Variant)
	for _, p := range rep.Phases {
		fmt.Fprintf(out, "  %-12s %6.2fs  responses %d  acks %d  nacks %d  resends %d  missed %d  violations %d  errors %d",
			p.Name, float64(p.EndNS-p.StartNS)/1e9, p.Responses, p.Acks, p.Nacks, p.Resends, p.Missed, p.Violations, p.Errors)
		if n := p.Latency.Count(); n > 0 {
			fmt.Fprintf(out, "  %s p50 %s p99 %s max %s", loadreport.LatencyTimed(p.Name), p.Latency.Quantile(0.5), p.Latency.Quantile(0.99), p.Latency.Max())
		}
		if p.Convergence != nil && p.Convergence.Count() > 0 {
			fmt.Fprintf(out, "  convergence p99 %s", p.Convergence.Quantile(0.99))
		}
		if p.Expected > 0 && (p.Name == loadreport.PhaseChurn || p.Name == loadreport.PhaseBurst) {
			fmt.Fprintf(out, "  amplification %.2f", p.Amplification)
		}
		fmt.Fprintln(out)
	}
	for _, v := range rep.Violations {
		fmt.Fprintf(out, "  violation %s (%s) x%d: %s\n", v.Rule, v.Level, v.Count, v.Message)
	}
	for _, h := range rep.Harness {
		fmt.Fprintf(out, "  harness shard %d: %d streams, %.0f%% CPU of %d cores, peak RSS %d MiB (%d KiB/stream)\n", h.Shard, h.Streams, h.CPUPercent, h.Cores, h.PeakRSSBytes>>20, h.BytesPerStream>>10)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(out, "  note: %s\n", n)
	}
	if rep.Interrupted {
		fmt.Fprintln(out, "  interrupted: the figures cover what ran, and are not judged")
	}
	for _, u := range rep.Unmeasured {
		fmt.Fprintf(out, "  nothing measured: %s\n", u)
	}
}
