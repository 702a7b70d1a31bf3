//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/grpcgoclient"
	"github.com/xdsconform/xdsconform/knownfailing"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestMain lets the grpc-go client target re-execute this test binary.
func TestMain(m *testing.M) {
	grpcgoclient.RunChildIfRequested()
	os.Exit(m.Run())
}

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
	// Start returns the engine environment for the peer, and a stop func.
	Start func() (engine.Env, string, func(), error)
	// Catalogue is the suite the peer is checked against.
	Catalogue func() []*engine.Scenario
	// Role is "server" or "client".
	Role string
}

// run runs p's suite, writes its report and checks it against p's list.
func run(p peer) {
	t := GinkgoT()
	known, err := knownfailing.Named(p.Name + ".txt")
	require.NoError(t, err)
	env, target, stop, err := p.Start()
	require.NoError(t, err, "starting %s (did make e2e-deps run?)", p.Name)
	defer stop()
	pairs, err := engine.Expand(p.Catalogue(), engine.Selection{})
	require.NoError(t, err)
	cfg := engine.Config{Env: env, Timeouts: timeouts, KnownFailing: known}
	if c, ok := env.(*targets.Clients); ok {
		cfg.Parallel = c.MaxParallel() // as the CLI does: client processes are capped
	}
	started := time.Now()
	rs, interrupted := engine.Run(context.Background(), pairs, cfg)
	require.False(t, interrupted)
	writeReport(p, target, started, rs)
	require.Empty(t, known.Unmatched(pairs), "known-failing entries that match no scenario")
	for _, r := range rs {
		if reason := known.ReasonFor(r.ID, r.Variant); reason != "" {
			require.Equal(t, results.Fail, r.Outcome, "%s is listed as known-failing (%s) but %s: %s", r.FullName(), reason, r.Outcome, r.Message)
			continue
		}
		if r.Outcome == results.Skip {
			continue // reasons are in the report and in COMPATIBILITY.md
		}
		require.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}

// writeReport writes the JSON report the compatibility matrix is made of.
func writeReport(p peer, target string, started time.Time, rs []results.Result) {
	t := GinkgoT()
	run := results.Run{
		SchemaVersion: "1", HarnessVersion: "e2e", Role: p.Role, Target: target, Started: started.UTC(),
		Duration: time.Since(started), Results: rs,
		Options: map[string]string{"peer": p.Name, "version": p.Version, "patched": p.Patched,
			"timeout": timeouts.Expect.String(), "quiet": timeouts.Quiet.String()},
	}
	for i := range run.Results {
		run.Results[i].Transcript = nil // the matrix needs verdicts; transcripts stay in CI logs
	}
	b, err := json.MarshalIndent(run, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll("out", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join("out", p.Name+".json"), b, 0o644))
}

// clientEnv starts a client target for a peer.
func clientEnv(opts targets.ClientOptions) func() (engine.Env, string, func(), error) {
	return func() (engine.Env, string, func(), error) {
		c, err := targets.NewClients(opts)
		if err != nil {
			return nil, "", nil, err
		}
		return c, c.Name(), func() {}, nil
	}
}

// serverEnv starts a built-in server target.
func serverEnv(target string) func() (engine.Env, string, func(), error) {
	return func() (engine.Env, string, func(), error) {
		s, err := targets.StartServer(context.Background(), targets.ServerOptions{Target: target})
		if err != nil {
			return nil, "", nil, err
		}
		return s, s.Name, s.Close, nil
	}
}

// moduleVersion is the version of a Go module this build uses (test
// binaries carry no module list of their own, so ask the go command).
func moduleVersion(path string) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", path).Output()
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
	gcp := moduleVersion("github.com/envoyproxy/go-control-plane")
	for _, p := range []peer{
		{Name: "go-control-plane-snapshot", Version: "go-control-plane " + gcp + " (SnapshotCache)", Role: "server",
			Start: serverEnv(targets.BuiltinGoControlPlane), Catalogue: scenarios.Server},
		{Name: "go-control-plane-linear", Version: "go-control-plane " + gcp + " (LinearCache)", Role: "server",
			Start: serverEnv(targets.BuiltinGoControlPlaneLin), Catalogue: scenarios.Server},
	} {
		It(fmt.Sprintf("%s fails exactly its known-failing list", p.Name), Label(p.Name), func() { run(p) })
	}
})

var _ = Describe("real xDS clients", Label("client"), func() {
	grpcJS := peerDir("grpc-js")
	core := peerDir("grpc-core")
	for _, p := range []peer{
		{Name: "grpc-go", Version: "grpc-go " + moduleVersion("google.golang.org/grpc"), Role: "client",
			Start: clientEnv(targets.ClientOptions{Target: targets.BuiltinGRPCGo}), Catalogue: scenarios.Client},
		{Name: "grpc-js", Version: "@grpc/grpc-js-xds " + npmVersion("grpc-js", "@grpc/grpc-js-xds") + ", @grpc/grpc-js " + npmVersion("grpc-js", "@grpc/grpc-js"), Role: "client",
			Start:     clientEnv(targets.ClientOptions{Command: "node " + grpcJS + "/driver.js {{.Target}} {{.CSDS}}"}),
			Catalogue: scenarios.Client},
		{Name: "grpc-core", Version: "gRPC C-core through Debian python3-grpcio " + pythonGRPCVersion(), Role: "client",
			Start:     clientEnv(targets.ClientOptions{Command: "/usr/bin/python3 " + core + "/driver.py {{.Target}} {{.CSDS}}"}),
			Catalogue: scenarios.Client},
	} {
		It(fmt.Sprintf("%s fails exactly its known-failing list", p.Name), Label(p.Name), func() { run(p) })
	}
})
