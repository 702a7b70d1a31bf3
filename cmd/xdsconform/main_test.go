package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/docker"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/peers/grpcgoclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/reports/schema"
	"github.com/xdsconform/xdsconform/results"
)

// TestMain lets the built-in grpc-go client re-execute this test binary.
func TestMain(m *testing.M) {
	grpcgoclient.RunChildIfRequested()
	if mode := os.Getenv(misbehavingClient); mode != "" {
		os.Exit(runMisbehavingClient(mode, os.Args[len(os.Args)-1]))
	}
	if args := os.Getenv(cliChild); args != "" {
		// A test's child process running the CLI (load_test.go's shards).
		var argv []string
		if err := json.Unmarshal([]byte(args), &argv); err != nil {
			os.Exit(exitUsage)
		}
		os.Exit(execute(context.Background(), argv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// readRun reads a JSON report, which must validate against the committed
// JSON Schema: every report a test of the CLI writes is checked.
func readRun(t *testing.T, path string) results.Run {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, schema.ValidateJSONReport(b), path)
	var run results.Run
	require.NoError(t, json.Unmarshal(b, &run))
	return run
}

// exitCase is one invocation and the exit code it must give; a non-empty
// stderr must appear in the one line the CLI writes to stderr.
type exitCase struct {
	name   string
	args   []string
	code   int
	stderr string
}

func checkExitCodes(t *testing.T, cases []exitCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := run(t, tc.args...)
			assert.Equal(t, tc.code, code, "stderr: %s", stderr)
			assert.Contains(t, stderr, tc.stderr)
			if tc.stderr != "" {
				assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
			}
		})
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.txt")
	require.NoError(t, os.WriteFile(broken, []byte("server/nonce/non-empty\n"), 0o644))
	unreachable := closedPort(t)
	// An xDS server without a fixture API: as --target it is reachable, as
	// --fixture it answers Unimplemented.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	refserver.New().Register(g)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	notFixture := lis.Addr().String()
	checkExitCodes(t, []exitCase{
		{"unknown flag", []string{"server", "--target", "builtin:reference", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"missing target", []string{"server"}, exitUsage, "--target is required: HOST:PORT, container:IMAGE, or one of builtin:reference, builtin:go-control-plane, builtin:go-control-plane-linear"},
		{"bad target", []string{"server", "--target", "nonsense"}, exitUsage, "want HOST:PORT"},
		{"unknown builtin", []string{"server", "--target", "builtin:nope"}, exitUsage, "unknown built-in"},
		{"bad level", []string{"server", "--target", "builtin:reference", "--level", "OFTEN"}, exitUsage, "unknown level"},
		{"bad container env", []string{"server", "--target", "container:example/cp", "--container-env", "NOVALUE"}, exitUsage, "--container-env"},
		{"bad node cluster", []string{"server", "--target", "builtin:reference", "--node-cluster", "gw/{{.Cluster}}"}, exitUsage, "--node-cluster"},
		{"bad variant", []string{"server", "--target", "builtin:reference", "--variant", "grpc"}, exitUsage, "unknown variant"},
		{"bad transcripts", []string{"server", "--target", "builtin:reference", "--transcripts", "passing"}, exitUsage, `--transcripts "passing": want failing, all or none`},
		{"bad transcripts on run", []string{"run", "--transcripts", "some"}, exitUsage, `--transcripts "some"`},
		{"empty run pattern", []string{"run", "--run", ""}, exitUsage, "--run: an empty pattern"},
		{"empty pattern among others", []string{"server", "--target", "builtin:reference", "--run", "server/nonce/*,"}, exitUsage, "--run: an empty pattern"},
		{"empty skip pattern", []string{"client", "--target", "builtin:reference", "--skip", ""}, exitUsage, "--skip: an empty pattern"},
		{"unknown fault", []string{"server", "--target", "builtin:reference", "--fault", "nope"}, exitUsage, "--fault"},
		{"broken known-failing", []string{"server", "--target", "builtin:reference", "--known-failing", broken}, exitUsage, "has no reason"},
		{"missing known-failing", []string{"server", "--target", "builtin:reference", "--known-failing", filepath.Join(dir, "absent")}, exitUsage, "known-failing"},
		{"pattern matches nothing", []string{"server", "--target", "builtin:reference", "--run", "server/nonce/*,server/no/such"}, exitUsage, "--run server/no/such: matches no scenario"},
		{"nothing selected", []string{"server", "--target", "builtin:reference", "--run", "server/nonce/*", "--skip", "*"}, exitUsage, "no scenario matched"},
		{"everything skipped", []string{"client", "--target", "builtin:grpc-go", "--variant", "delta-ads", "--run", "client/ack/*"}, exitUsage, "nothing could run: all"},
		{"tls on a built-in", []string{"server", "--target", "builtin:reference", "--tls-server-name", "x"}, exitUsage, "--tls-server-name: builtin:reference is served in-process without TLS"},
		{"fixture on a built-in", []string{"server", "--target", "builtin:go-control-plane", "--fixture", "127.0.0.1:1"}, exitUsage, "brings its own fixture"},
		{"container flag elsewhere", []string{"server", "--target", "builtin:reference", "--container-env", "A=B"}, exitUsage, "--container-env: only apply to --target container:IMAGE"},
		{"tls key alone", []string{"server", "--target", unreachable, "--tls-key", "key.pem"}, exitUsage, "--tls-cert and --tls-key go together"},
		{"fixture plaintext alone", []string{"server", "--target", unreachable, "--fixture-plaintext"}, exitUsage, "--fixture-plaintext needs --fixture"},
		{"tls server name alone", []string{"server", "--target", unreachable, "--tls-server-name", "xds.example.com"}, exitUsage, "--tls-server-name needs TLS"},
		{"tls off by name", []string{"server", "--target", unreachable, "--tls=false", "--tls-server-name", "x"}, exitUsage, "--tls-server-name needs TLS"},
		{"plaintext fixture without tls", []string{"server", "--target", unreachable, "--fixture", unreachable, "--fixture-plaintext"}, exitUsage, "only matters when the xDS connection uses TLS"},
		{"zero connect timeout", []string{"server", "--target", unreachable, "--connect-timeout", "0"}, exitUsage, "--connect-timeout must be positive"},
		{"port out of range", []string{"server", "--target", "127.0.0.1:99999"}, exitUsage, "port 99999 is out of range"},
		{"fixture port out of range", []string{"server", "--target", unreachable, "--fixture", "127.0.0.1:0"}, exitUsage, "--fixture \"127.0.0.1:0\": port 0 is out of range"},
		{"listen port out of range", []string{"client", "--target", "builtin:reference", "--listen", "127.0.0.1:70000"}, exitUsage, "--listen"},
		{"report in a missing directory", []string{"server", "--target", "builtin:reference", "--json", filepath.Join(dir, "no", "such", "r.json")}, exitUsage, "cannot write to"},
		{"unreachable", []string{"server", "--target", unreachable, "--connect-timeout", "300ms"}, exitUnreachable, unreachable},
		{"not a fixture", []string{"server", "--target", notFixture, "--fixture", notFixture}, exitUsage, "--fixture " + notFixture},
		{"reference passes", []string{"server", "--target", "builtin:reference", "--run", "server/nonce/*"}, exitOK, ""},
		{"fault fails", []string{"server", "--target", "builtin:reference", "--fault", "empty-nonce", "--run", "server/nonce/non-empty", "--timeout", "1s"}, exitFailures, ""},
	})
}

// TestOldReportRemoved: a run that cannot reach its target, or stops at a
// usage error, leaves no report, never the one a previous run wrote at
// that path (CI would upload yesterday's green).
func TestOldReportRemoved(t *testing.T) {
	dir := t.TempDir()
	junit, js := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"unreachable", []string{"server", "--target", closedPort(t), "--connect-timeout", "300ms"}, exitUnreachable},
		{"flag combination", []string{"server", "--target", "builtin:reference", "--tls"}, exitUsage},
		{"unknown flag after the paths", []string{"server", "--target", "builtin:reference", "--junit", junit, "--json", js, "--bogus"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range []string{junit, js} {
				require.NoError(t, os.WriteFile(p, []byte("yesterday's green"), 0o644))
			}
			code, _, stderr := run(t, append(tc.args, "--junit", junit, "--json", js)...)
			require.Equal(t, tc.code, code, stderr)
			assert.NoFileExists(t, junit)
			assert.NoFileExists(t, js)
		})
	}
}

// evilNameFixture is the reference server's fixture under a server name
// that carries terminal control sequences.
type evilNameFixture struct{ fixturepb.FixtureServer }

const evilName = "evil \x1b]0;owned\x07\x1b[2J server"

func (f evilNameFixture) GetCapabilities(ctx context.Context, in *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	caps, err := f.FixtureServer.GetCapabilities(ctx, in)
	if err != nil {
		return nil, err
	}
	caps.Server = evilName
	return caps, nil
}

// TestTerminalOutputSanitised: what the target says about itself (here
// its fixture's server name) reaches the console escaped, never as a
// control sequence that would retitle or clear the terminal.
func TestTerminalOutputSanitised(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	ref := refserver.New()
	ref.Register(g)
	fixturepb.RegisterFixtureServer(g, evilNameFixture{ref.FixtureServer()})
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	addr := lis.Addr().String()
	code, out, stderr := run(t, "server", "--target", addr, "--fixture", addr, "--run", "server/nonce/non-empty[sotw-ads]")
	require.Equal(t, exitOK, code, stderr)
	assert.NotContains(t, out, "\x1b", "no raw escape byte on the console")
	assert.NotContains(t, out, "\x07")
	assert.Contains(t, out, `evil \x1b]0;owned\x07\x1b[2J server`, "the name is shown, escaped")
}

func TestKnownFailingFile(t *testing.T) {
	dir := t.TempDir()
	kf := filepath.Join(dir, "kf.txt")
	// A listed failure does not fail the run.
	require.NoError(t, os.WriteFile(kf, []byte("# faulty on purpose\nserver/nonce/non-empty[*] NONCE-1: empty nonces\n"), 0o644))
	code, out, _ := run(t, "server", "--target", "builtin:reference", "--fault", "empty-nonce", "--run", "server/nonce/non-empty", "--known-failing", kf, "--timeout", "1s")
	assert.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "XFAIL")
	// A listed scenario that passes is a stale entry and fails the run.
	code, out, _ = run(t, "server", "--target", "builtin:reference", "--run", "server/nonce/non-empty", "--known-failing", kf)
	assert.Equal(t, exitFailures, code, out)
	assert.Contains(t, out, "XPASS")
}

// checkJUnit validates a JUnit report against the common JUnit XSD (where
// xmllint is installed: .ci/run installs it).
func checkJUnit(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := schema.ValidateJUnit(ctx, b); errors.Is(err, schema.ErrNoXmllint) {
		t.Log(err)
	} else {
		assert.NoError(t, err, path)
	}
}

func TestReports(t *testing.T) {
	dir := t.TempDir()
	junit, js := filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.json")
	code, _, stderr := run(t, "server", "--target", "builtin:reference", "--fault", "reuse-nonce", "--run", "server/nonce/*[sotw-ads]", "--timeout", "1s", "--junit", junit, "--json", js)
	assert.Equal(t, exitFailures, code, stderr)

	var suites struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(b, &suites))
	require.NotEmpty(t, suites.Suites)
	assert.Positive(t, suites.Suites[0].Failures)
	checkJUnit(t, junit)

	run := readRun(t, js)
	assert.Equal(t, "server", run.Role)
	require.NotEmpty(t, run.Results)
	for _, r := range run.Results {
		if r.Outcome == results.Fail {
			assert.NotEmpty(t, r.Transcript, r.FullName())
			assert.NotEmpty(t, r.Message, r.FullName())
		}
	}
}

// --transcripts decides which transcripts the report files keep; the
// console's failure details are the same whatever it says.
func TestTranscriptsFlag(t *testing.T) {
	args := []string{"server", "--target", "builtin:reference", "--fault", "answer-stale-nonce", "--run", "server/nonce/*[sotw-ads]", "--timeout", "1s", "-v"}
	var outs []string
	for _, p := range []string{"failing", "all", "none"} {
		js := filepath.Join(t.TempDir(), "r.json")
		code, out, stderr := run(t, append(args, "--transcripts", p, "--json", js)...)
		require.Equal(t, exitFailures, code, stderr)
		outs = append(outs, out)
		rep := readRun(t, js)
		assert.Equal(t, p, rep.Options["transcripts"])
		var passes, fails int
		for _, r := range rep.Results {
			switch r.Outcome {
			case results.Pass:
				passes++
				assert.Equal(t, p == "all", len(r.Transcript) > 0, "%s: %s", p, r.FullName())
			case results.Fail:
				fails++
				assert.Equal(t, p != "none", len(r.Transcript) > 0, "%s: %s", p, r.FullName())
			}
		}
		require.Positive(t, passes)
		require.Positive(t, fails)
	}
	for _, out := range outs {
		assert.Contains(t, out, "transcript (", "the console shows failure details under every policy")
	}
}

func TestListJSON(t *testing.T) {
	code, out, stderr := run(t, "list", "--json")
	require.Equal(t, exitOK, code, stderr)
	var list []listedScenario
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	roles := map[string]int{}
	for _, s := range list {
		roles[s.Role]++
	}
	assert.GreaterOrEqual(t, roles["server"], 40)
	assert.GreaterOrEqual(t, roles["client"], 30)
	for _, s := range list {
		assert.NoError(t, requirements.Validate(s.Requirements), s.ID)
		assert.NotEmpty(t, s.Variants, s.ID)
		assert.Contains(t, []string{"MUST", "SHOULD", "MAY"}, s.Level, s.ID)
	}
}

// list takes the suites' selection flags and shows what a run with them
// would run: the scenarios with a selected pair, each with only its
// selected variants.
func TestListSelects(t *testing.T) {
	code, out, stderr := run(t, "list", "--json", "--run", "server/nonce/*", "--skip", "*distinct*", "--variant", "delta-ads", "--level", "MUST")
	require.Equal(t, exitOK, code, stderr)
	var list []listedScenario
	require.NoError(t, json.Unmarshal([]byte(out), &list))
	require.NotEmpty(t, list)
	for _, s := range list {
		assert.True(t, strings.HasPrefix(s.ID, "server/nonce/"), s.ID)
		assert.NotContains(t, s.ID, "distinct")
		assert.Equal(t, []string{"delta-ads"}, s.Variants, s.ID)
		assert.Equal(t, "MUST", s.Level, s.ID)
	}
	checkExitCodes(t, []exitCase{
		{"nothing selected", []string{"list", "--run", "nope/*"}, exitUsage, "no scenario matched the selection"},
		{"empty pattern", []string{"list", "--run", ""}, exitUsage, "--run: an empty pattern"},
		{"bad level", []string{"list", "--level", "OFTEN"}, exitUsage, "--level"},
		{"bad variant", []string{"list", "--variant", "grpc"}, exitUsage, "--variant"},
	})
}

// The embedded default passes: go-control-plane and grpc-go fail only what
// their shipped known-failing lists say, and one report holds both suites.
func TestDefaultRun(t *testing.T) {
	js, junit := filepath.Join(t.TempDir(), "r.json"), filepath.Join(t.TempDir(), "r.xml")
	// The CLI's default expect timeout: both suites run at once, with
	// grpc-go processes built with -race, on two cores. A long quiet window,
	// so go-control-plane's must-not-happen violations are seen under load.
	code, out, stderr := run(t, "run", "--quiet", "1s", "--json", js, "--junit", junit)
	assert.Equal(t, exitOK, code, "stdout:\n%s\nstderr:\n%s", out, stderr)
	assert.Contains(t, out, "XFAIL")
	run := readRun(t, js)
	assert.Equal(t, results.RoleBoth, run.Role)
	checkJUnit(t, junit)
	// Sized for CI: transcripts of the pairs that did not pass only,
	// resend loops folded.
	for _, p := range []string{js, junit} {
		fi, err := os.Stat(p)
		require.NoError(t, err)
		t.Logf("%s: %d bytes", filepath.Base(p), fi.Size())
		assert.Less(t, fi.Size(), int64(1<<20), p)
	}
	assert.Equal(t, "failing", run.Options["transcripts"])
	for _, r := range run.Results {
		if r.Outcome == results.Pass && r.KnownFailing == "" {
			assert.Empty(t, r.Transcript, r.FullName())
		}
		if r.KnownFailing != "" && r.Outcome == results.Fail {
			assert.NotEmpty(t, r.Transcript, r.FullName())
		}
	}
	roles := map[string]bool{}
	for _, r := range run.Results {
		roles[strings.SplitN(r.ID, "/", 2)[0]] = true
	}
	assert.Equal(t, map[string]bool{"server": true, "client": true}, roles)
}

// cancelOnWrite cancels a context the first time output containing marker
// is written: a deterministic Ctrl-C in the middle of a run.
type cancelOnWrite struct {
	bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	if strings.Contains(string(p), w.marker) {
		w.cancel()
	}
	return w.Buffer.Write(p)
}

// WriteString shadows bytes.Buffer's, which io.WriteString would call.
func (w *cancelOnWrite) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Ctrl-C in the middle of a run still writes the report of what ran.
func TestInterruptWritesReport(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &cancelOnWrite{marker: "PASS  ", cancel: cancel}
	var errb bytes.Buffer
	code := execute(ctx, []string{"server", "--target", "builtin:reference", "--parallel", "1", "--json", js}, out, &errb)
	assert.Equal(t, exitInterrupted, code, errb.String())
	run := readRun(t, js)
	assert.True(t, run.Interrupted)
	assert.NotEmpty(t, run.Results)
	assert.Less(t, len(run.Results), 100, "the run stopped early")
}

// Where no Docker engine is reachable (as on the machines this project is
// built on), a container target is an unreachable target: one line naming
// the target and exit code 3, before any scenario runs.
func TestContainerTargetsWithoutDockerEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if docker.Available(ctx) == nil {
		t.Skip("a Docker engine is reachable here; the container targets are exercised by the docker package's tests")
	}
	checkExitCodes(t, []exitCase{
		{"client container", []string{"client", "--target", "container:envoyproxy/envoy:v1.36-latest"}, exitUnreachable, "container:envoyproxy/envoy:v1.36-latest needs a Docker engine"},
		{"server container", []string{"server", "--target", "container:example/control-plane:1", "--container-fixture-port", "18001"}, exitUnreachable, "container:example/control-plane:1 needs a Docker engine"},
		{"container without image", []string{"client", "--target", "container:"}, exitUsage, "name an image"},
	})
}
