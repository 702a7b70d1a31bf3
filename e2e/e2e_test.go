//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/internal/regressions"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

func TestE2E(t *testing.T) {
	RunSpecs(t, "xdsconform e2e")
}

// timeouts are the CLI's defaults, except a longer quiet window: a real
// peer's must-not-happen violation must be seen on a loaded machine, or
// its known-failing entry would turn up as stale.
var timeouts = engine.Timeouts{Expect: engine.DefaultTimeouts.Expect, Quiet: time.Second, Scenario: engine.DefaultTimeouts.Scenario}

// peer is one real implementation and how to reach it.
type peer struct {
	// Name is the report's file name and the known-failing file's.
	Name string
	// Version is what the report says ran.
	Version string
	// Patched says what was changed in the peer for the run, if anything.
	Patched string
	// SkipUnreachable skips the peer's specs, with the reason, when its
	// start says it is unreachable (a container without a Docker engine).
	SkipUnreachable bool
	// SkipUnless, when set, says why the peer's specs are skipped (a
	// binary the user must supply and did not), or "" to run them.
	SkipUnless func() string
	// Note says how the run differed from the suite's usual one, and why
	// (COMPATIBILITY.md prints it under the peer table).
	Note string
	// Start returns the engine environment for the peer, and a stop func.
	Start func() (engine.Env, string, func(), error)
	// Catalogue is the suite the peer is checked against.
	Catalogue func() []*engine.Scenario
	// Role is "server" or "client".
	Role string
	// Timeouts replace the suite's for a peer that is slow by design
	// (zero: the suite's).
	Timeouts engine.Timeouts
	// Parallel caps the pairs run at once (zero: the engine's default).
	Parallel int
	// OneProtocolAtATime runs a family's SotW pairs, then its delta
	// pairs, for a peer whose streams of one protocol disturb those of
	// the other (a peer bug, reported in its known-failing file): each
	// verdict then speaks of the scenario's own rule, the same every run.
	OneProtocolAtATime bool
}

// timeouts are the peer's own timeouts, or the suite's.
func (p peer) timeouts() engine.Timeouts {
	if p.Timeouts == (engine.Timeouts{}) {
		return timeouts
	}
	return p.Timeouts
}

// describe declares p's specs: one per scenario family (labelled with the
// family, so `LABELS='server && nonce'` runs one area), all sharing one
// start of the peer, and one that checks p's known-failing list.
func describe(p peer, labels ...string) {
	Describe(p.Name, Ordered, ContinueOnFailure, Label(append(labels, p.Name, p.Role)...), func() {
		var (
			env    engine.Env
			target string
		)
		BeforeAll(func() {
			if p.SkipUnless != nil {
				if why := p.SkipUnless(); why != "" {
					Skip(fmt.Sprintf("%s: %s", p.Name, why))
				}
			}
			var stop func()
			var err error
			env, target, stop, err = p.Start()
			if p.SkipUnreachable && errors.Is(err, targets.ErrUnreachable) {
				Skip(fmt.Sprintf("%s: %v", p.Name, err))
			}
			require.NoError(GinkgoT(), err, "starting %s (did make e2e-deps run?)", p.Name)
			DeferCleanup(stop)
		})
		It("has a known-failing list that names only its scenarios", func() {
			known, err := knownfailing.Named(p.Name + ".txt")
			require.NoError(GinkgoT(), err)
			pairs, err := engine.Expand(p.Catalogue(), engine.Selection{})
			require.NoError(GinkgoT(), err)
			require.Empty(GinkgoT(), known.Unmatched(pairs), "known-failing entries that match no scenario")
		})
		// The regression files first: the families run in catalogue order,
		// robustness near the end, and a peer listed as crashing on one of
		// its scenarios (Envoy Gateway's node-less delta request) is gone
		// after it.
		if files := regressionsOf(p.Name); len(files) > 0 {
			It("still has the bugs of its files in scenarios/regressions", Label(regressions.Area), func() {
				runRegressions(p, env, target, files)
			})
		}
		for _, family := range families(p.Catalogue()) {
			It(fmt.Sprintf("fails exactly its known-failing %s scenarios", family), Label(family), func() {
				run(p, env, target, family)
			})
		}
	})
}

// families lists the scenario families of cat (the area in a scenario ID,
// "server/nonce/…" → "nonce"), in catalogue order.
func families(cat []*engine.Scenario) []string {
	var out []string
	for _, s := range cat {
		if f := family(s.ID); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func family(id string) string {
	parts := strings.SplitN(id, "/", 3)
	if len(parts) < 2 {
		return id
	}
	return parts[1]
}

// run runs one family of p's suite against env, writes its report and
// checks it against p's known-failing list.
func run(p peer, env engine.Env, target, fam string) {
	t := GinkgoT()
	known, err := knownfailing.Named(p.Name + ".txt")
	require.NoError(t, err)
	var cat []*engine.Scenario
	for _, s := range p.Catalogue() {
		if family(s.ID) == fam {
			cat = append(cat, s)
		}
	}
	pairs, err := engine.Expand(cat, engine.Selection{})
	require.NoError(t, err)
	started := time.Now()
	rs := runPairs(p, env, pairs, known)
	writeReport(p, fam, target, started, rs)
	judge(rs, known, func(r results.Result, reason string) string {
		return fmt.Sprintf("%s is listed as known-failing (%s) but %s: %s", r.FullName(), reason, r.Outcome, r.Message)
	})
}

// judge checks every result against the list known: a listed pair fails
// (breaking a rule its entry names), an unlisted one passes or is skipped.
// stale words the failure of a listed pair that did not fail.
func judge(rs []results.Result, known *engine.KnownFailing, stale func(r results.Result, reason string) string) {
	t := GinkgoT()
	for _, r := range rs {
		// Asked of the list, not of r.KnownFailing, which the engine fills
		// for passes and failures only: a listed pair that errors or is
		// skipped must show up too.
		if reason := known.ReasonFor(r.ID, r.Variant); reason != "" {
			if strings.Contains(reason, engine.TimingDependent) && r.Outcome == results.Pass {
				continue // the peer's own timing decides whether the violation shows
			}
			if strings.Contains(reason, engine.CrashesTarget) && r.Outcome == results.Error && strings.Contains(r.Message, "the target died during the run") {
				continue // an earlier pair listed as crashing the peer did, as listed
			}
			// A pair blocked by the listed rule is its failure too.
			require.True(t, r.Failed(), stale(r, reason))
			// The engine excuses only a failure of a rule the entry names.
			require.NotEmpty(t, r.KnownFailing, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			continue
		}
		if r.Outcome == results.Skip || r.Outcome == results.Unsupported {
			continue // reasons are in the report and in COMPATIBILITY.md; a MAY not implemented is no failure
		}
		require.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}

// runPairs runs pairs against p's env, as the CLI would (known-failing
// list known, p's timeouts, batches and parallelism), and returns the
// results in pair order.
func runPairs(p peer, env engine.Env, pairs []engine.Pair, known *engine.KnownFailing) []results.Result {
	cfg := engine.Config{Env: env, Timeouts: p.timeouts(), KnownFailing: known, Parallel: p.Parallel}
	if c, ok := env.(*targets.Clients); ok {
		cfg.Parallel = c.MaxParallel() // as the CLI does: client processes are capped
	}
	var rs []results.Result
	for _, batch := range batches(p, pairs, known) {
		got, interrupted := engine.Run(context.Background(), batch, cfg)
		require.False(GinkgoT(), interrupted)
		rs = append(rs, got...)
	}
	return inPairOrder(pairs, rs)
}

// batches splits pairs into the runs p needs: one, or one per protocol.
func batches(p peer, pairs []engine.Pair, known *engine.KnownFailing) [][]engine.Pair {
	// Pairs listed as crashing the peer run last, each on its own, so the
	// crash takes nothing else with it.
	var crashers []engine.Pair
	pairs = slices.DeleteFunc(slices.Clone(pairs), func(pr engine.Pair) bool {
		if strings.Contains(known.ReasonFor(pr.Scenario.ID, pr.Variant.String()), engine.CrashesTarget) {
			crashers = append(crashers, pr)
			return true
		}
		return false
	})
	var out [][]engine.Pair
	for _, b := range byProtocol(p, pairs) {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	for _, pr := range crashers {
		out = append(out, []engine.Pair{pr})
	}
	return out
}

// inPairOrder puts results run in batches back in the order of pairs, so
// the report reads the same however the pairs were batched.
func inPairOrder(pairs []engine.Pair, rs []results.Result) []results.Result {
	at := map[string]int{}
	for i, pr := range pairs {
		at[pr.FullName()] = i
	}
	slices.SortStableFunc(rs, func(a, b results.Result) int { return at[a.FullName()] - at[b.FullName()] })
	return rs
}

// byProtocol splits pairs by protocol for a peer that runs one at a time.
func byProtocol(p peer, pairs []engine.Pair) [][]engine.Pair {
	if !p.OneProtocolAtATime {
		return [][]engine.Pair{pairs}
	}
	var sotw, delta []engine.Pair
	for _, pr := range pairs {
		if pr.Variant.Protocol == wire.Delta {
			delta = append(delta, pr)
		} else {
			sotw = append(sotw, pr)
		}
	}
	return [][]engine.Pair{sotw, delta}
}

// writeReport writes the JSON report of one family run, out/PEER/FAMILY.json;
// the compatibility matrix is made of them. A name with a directory in it
// (regression/report) lands below out/PEER, where the matrix does not look.
func writeReport(p peer, fam, target string, started time.Time, rs []results.Result) {
	t := GinkgoT()
	run := results.Run{
		HarnessVersion: "e2e", Role: p.Role, Target: target, Started: started.UTC(),
		Duration: time.Since(started), Results: slices.Clone(rs), // the caller still reads the transcripts
		Options: map[string]string{"peer": p.Name, "version": p.Version, "patched": p.Patched, "note": p.Note,
			"timeout": p.timeouts().Expect.String(), "quiet": p.timeouts().Quiet.String()},
	}
	if dir := os.Getenv("XDSCONFORM_E2E_TRANSCRIPTS"); dir != "" {
		writeTranscripts(filepath.Join(dir, p.Name, fam+".txt"), rs)
	}
	for i := range run.Results {
		run.Results[i].Transcript = nil // the matrix needs verdicts; transcripts stay in CI logs
	}
	path := filepath.Join(outDir, p.Name, fam+".json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, reports.WriteFiles(run, "", path))
}

// writeTranscripts writes the transcript of every pair that did not pass,
// for reading a peer's verdicts against its code (XDSCONFORM_E2E_TRANSCRIPTS).
func writeTranscripts(path string, rs []results.Result) {
	t := GinkgoT()
	var b strings.Builder
	for _, r := range rs {
		if r.Outcome == results.Pass {
			continue
		}
		fmt.Fprintf(&b, "=== %s: %s: %s\n%s\n", r.FullName(), r.Outcome, r.Message, transcript.Format(r.Transcript))
	}
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// outDir is where reports go; make e2e-heavy points it at the committed
// e2e/heavy-results, since CI does not run the heavy peers.
var outDir = cmp.Or(os.Getenv("XDSCONFORM_E2E_OUT"), "out")

// clientEnv starts a client target for a peer.
func clientEnv(opts targets.ClientOptions) func() (engine.Env, string, func(), error) {
	return func() (engine.Env, string, func(), error) {
		c, err := targets.NewClients(opts)
		if err != nil {
			return nil, "", nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Preflight(ctx); err != nil { // a container target needs an engine
			return nil, "", nil, err
		}
		return c, c.Name(), func() {}, nil
	}
}

// serverProcess starts a control plane from its own binary, which prints
// "xds=HOST:PORT" once it serves xDS and the fixture API there (followed
// by " rest=URL" when it serves REST-JSON polling too), and
// returns it as a server target reached over the network, as a vendor's
// server would be.
func serverProcess(argv ...string) func() (engine.Env, string, func(), error) {
	return serverProcessWith(targets.ServerOptions{}, argv...)
}

// serverProcessWith is serverProcess with options of the peer's own (its
// node id form), Target, Fixture and REST filled in from the announcement.
func serverProcessWith(opts targets.ServerOptions, argv ...string) func() (engine.Env, string, func(), error) {
	return func() (engine.Env, string, func(), error) {
		proc, line, err := startAnnouncing(argv, "xds=")
		if err != nil {
			return nil, "", nil, err
		}
		// "HOST:PORT[ rest=URL hold=DURATION]": the REST-JSON endpoint,
		// when served, and how long it holds a long poll (REST-4).
		addr, rest, _ := strings.Cut(line, " rest=")
		rest, holdWord, _ := strings.Cut(rest, " hold=")
		stop := func() { _ = proc.Stop(2 * time.Second) }
		var hold time.Duration
		if holdWord != "" {
			d, err := time.ParseDuration(holdWord)
			if err != nil {
				stop()
				return nil, "", nil, fmt.Errorf("%s announced hold %q: %w", argv[0], holdWord, err)
			}
			hold = cmp.Or(d, targets.NoRESTHold) // 0s: it holds none
		}
		opts.Target, opts.Fixture, opts.REST, opts.RESTHold = addr, addr, rest, hold
		s, err := targets.StartServer(context.Background(), opts)
		if err != nil {
			stop()
			return nil, "", nil, fmt.Errorf("%s: %w; output: %s", argv[0], err, proc.Tail())
		}
		return s, s.Name, func() { s.Close(); stop() }, nil
	}
}

// startAnnouncing runs argv and waits (bounded) for the stdout line that
// starts with prefix, returning the rest of it.
func startAnnouncing(argv []string, prefix string) (*process.Process, string, error) {
	proc, err := process.Start(context.Background(), argv, process.Options{KeepStdin: true, StderrTail: 16 << 10})
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rest, err := proc.AwaitLine(ctx, prefix)
	if err != nil {
		_ = proc.Stop(time.Second)
		return nil, "", fmt.Errorf("%s: %w", argv[0], err)
	}
	return proc, rest, nil
}

// moduleVersion is the version of module path that the peer module in dir
// pins (binaries built with -buildvcs=false carry no reliable module list,
// so ask the go command).
func moduleVersion(dir, path string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Version}}", path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// peerDir is the absolute directory of a peer's manifest and driver.
func peerDir(name string) string {
	d, err := filepath.Abs(filepath.Join("peers", name))
	if err != nil {
		panic(err)
	}
	return d
}

// npmVersion reads the installed version of an npm package of a peer.
func npmVersion(peerName, pkg string) string {
	b, err := os.ReadFile(filepath.Join(peerDir(peerName), "node_modules", pkg, "package.json"))
	if err != nil {
		return "not installed"
	}
	var m struct{ Version string }
	if json.Unmarshal(b, &m) != nil {
		return "unknown"
	}
	return m.Version
}

// pythonGRPCVersion is Debian's python3-grpcio version, as the system
// python3 imports it.
func pythonGRPCVersion() string {
	out, err := exec.Command("/usr/bin/python3", "-c", "import grpc; print(grpc.__version__)").Output()
	if err != nil {
		return "not installed"
	}
	return strings.TrimSpace(string(out))
}

var _ = Describe("real management servers", Label("server"), func() {
	gcpDir := peerDir("go-control-plane")
	gcp := moduleVersion(gcpDir, "github.com/envoyproxy/go-control-plane")
	for _, p := range []peer{
		{Name: "go-control-plane-snapshot", Version: "go-control-plane " + gcp + " (SnapshotCache)", Role: "server",
			Start: serverProcess(gcpDir+"/bin/gcp-server", "-flavour", "snapshot"), Catalogue: scenarios.Server},
		{Name: "go-control-plane-linear", Version: "go-control-plane " + gcp + " (LinearCache)", Role: "server",
			Start: serverProcess(gcpDir+"/bin/gcp-server", "-flavour", "linear"), Catalogue: scenarios.Server},
	} {
		describe(p, "go-control-plane")
	}
})

var _ = Describe("real xDS clients", Label("client"), func() {
	grpcGo := peerDir("grpc-go")
	grpcJS := peerDir("grpc-js")
	core := peerDir("grpc-core")
	for _, p := range []peer{
		{Name: "grpc-go", Version: "grpc-go " + moduleVersion(grpcGo, "google.golang.org/grpc"), Role: "client",
			// Federation is always on (no switch in internal/envconfig);
			// nothing of TP2/TP3 (ads_stream.go reads only resources).
			Start: clientEnv(targets.ClientOptions{Command: grpcGo + "/bin/grpc-go-driver {{.Target}} {{.CSDS}}",
				Features: []string{targets.ClientFeatureXdstp}}),
			Catalogue: scenarios.Client},
		{Name: "grpc-js", Version: "@grpc/grpc-js-xds " + npmVersion("grpc-js", "@grpc/grpc-js-xds") + ", @grpc/grpc-js " + npmVersion("grpc-js", "@grpc/grpc-js"), Role: "client",
			// Federation (xdstp names, authorities) is on by default:
			// EXPERIMENTAL_FEDERATION in src/environment.ts. Nothing of
			// TP2/TP3 (xds-client.ts reads only resources).
			Start: clientEnv(targets.ClientOptions{Command: "node " + grpcJS + "/driver.js {{.Target}} {{.CSDS}}",
				Features: []string{targets.ClientFeatureXdstp}}),
			Catalogue: scenarios.Client},
		{Name: "grpc-core", Version: "gRPC C-core through Debian python3-grpcio " + pythonGRPCVersion(), Role: "client",
			// Federation is behind GRPC_EXPERIMENTAL_XDS_FEDERATION in
			// C-core 1.51 (off by default): switched on, so its xdstp
			// support is checked.
			Start: clientEnv(targets.ClientOptions{Command: "GRPC_EXPERIMENTAL_XDS_FEDERATION=true /usr/bin/python3 " + core + "/driver.py {{.Target}} {{.CSDS}}",
				Features: []string{targets.ClientFeatureXdstp}}),
			Note:      "run with GRPC_EXPERIMENTAL_XDS_FEDERATION=true, which 1.51 needs for xdstp names and authorities",
			Catalogue: scenarios.Client},
	} {
		describe(p)
	}
})
