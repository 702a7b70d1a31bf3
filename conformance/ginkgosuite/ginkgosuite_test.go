//go:build unix

package ginkgosuite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/examples/embedded"
	embeddedclient "github.com/xdsconform/xdsconform/examples/embedded-client"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// specsEnv names the case TestSpecs runs; it runs only in the
// subprocesses the tests below start (this test binary again, with
// ginkgo's flags), and writes the conformance JSON report to
// specsReportEnv.
const (
	specsEnv       = "XDSCONFORM_GINKGO_SPECS"
	specsReportEnv = "XDSCONFORM_GINKGO_REPORT"
)

// scenario is a test scenario in sotw-ads citing rule, at rule's level.
func scenario(id, rule string, body func(*engine.T)) *engine.Scenario {
	levels := map[string]results.Level{"NONCE-1": results.Must, "NONCE-2": results.Must, "ACK-5": results.Should, "GRP-2": results.May}
	return &engine.Scenario{ID: "server/selftest/" + id, Title: "test scenario " + id, Requirements: []string{rule},
		Level: levels[rule], Variants: []wire.Variant{wire.SotWADS}, Run: body}
}

// selftestCatalogue covers the outcome mappings, and eight pairs that
// pass only when all eight run at once.
func selftestCatalogue() []*engine.Scenario {
	fails := func(rule string) func(*engine.T) {
		return func(t *engine.T) { t.Failf(rule, "the target broke %s (evidence: expected X, got Y)", rule) }
	}
	cat := []*engine.Scenario{
		scenario("passes", "NONCE-1", func(*engine.T) {}),
		scenario("fails-must", "NONCE-1", fails("NONCE-1")),
		scenario("fails-should", "ACK-5", fails("ACK-5")),
		scenario("may", "GRP-2", fails("GRP-2")),
		scenario("skips", "NONCE-1", func(t *engine.T) { t.Skipf("the target does not serve this") }),
		scenario("errors", "NONCE-1", func(t *engine.T) { t.Abortf("the fixture refused the change") }),
		scenario("known", "NONCE-1", fails("NONCE-1")),
		scenario("stale", "NONCE-1", func(*engine.T) {}),
		scenario("blocked", "NONCE-1", func(t *engine.T) { t.Block("RES-1", "the base resources were not served") }),
		scenario("inconclusive", "ACK-5", func(t *engine.T) {
			t.Doubt("ACK-5", "the ACK of version 2", 1200*time.Millisecond, time.Second, engine.LagStats{Total: 400 * time.Millisecond, Max: 300 * time.Millisecond})
		}),
	}
	var (
		mu      sync.Mutex
		arrived int
		all     = make(chan struct{})
	)
	for i := range 8 {
		cat = append(cat, scenario(fmt.Sprintf("together-%d", i), "NONCE-2", func(t *engine.T) {
			mu.Lock()
			if arrived++; arrived == 8 {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
			case <-time.After(20 * time.Second):
				t.Failf("NONCE-2", "the eight pairs did not run at once")
			}
		}))
	}
	return cat
}

const selftestKnown = `
server/selftest/known NONCE-1: broken on purpose
server/selftest/stale NONCE-1: was broken once
`

// clientEnv, set, makes this test binary the xDS client under test of the
// "client" case (examples/embedded-client's client).
const clientEnv = "XDSCONFORM_GINKGO_CLIENT"

// TestMain runs the example client when the client suite launches this
// binary, and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(clientEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		if err := embeddedclient.Run(ctx, os.Getenv("XDSCONFORM_TARGET"), os.Getenv("XDSCONFORM_CSDS_ADDR")); err != nil {
			fmt.Fprintln(os.Stderr, "example client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestSpecs runs the ginkgo suite of a case against the example server
// (or, for "client", the example client).
func TestSpecs(t *testing.T) {
	which := os.Getenv(specsEnv)
	if which == "" {
		t.Skip("run by the ginkgo subprocess tests of this package")
	}
	srv, err := embedded.Start()
	require.NoError(t, err)
	defer func() { assert.NoError(t, srv.Stop()) }()
	known, err := engine.ParseKnownFailing(strings.NewReader(selftestKnown), "selftest")
	require.NoError(t, err)
	opts := conformance.ServerOptions{
		Server:       targets.ServerOptions{Target: srv.XDS, Fixture: srv.Fixture},
		Scenarios:    selftestCatalogue(),
		KnownFailing: known,
		JSONReport:   os.Getenv(specsReportEnv),
		Timeouts:     engine.Timeouts{Expect: time.Second, Quiet: 100 * time.Millisecond},
	}
	if which == "client" {
		self := "'" + strings.ReplaceAll(os.Args[0], "'", `'\''`) + "'"
		DescribeClientSuite(conformance.ClientOptions{
			Client:     targets.ClientOptions{Command: clientEnv + "=1 exec " + self},
			Run:        []string{"client/nonce/*"},
			JSONReport: os.Getenv(specsReportEnv),
		})
		RunSpecs(t, "ginkgosuite client selftest")
		return
	}
	switch which {
	case "suite":
	case "bad-options":
		opts.FailOn = results.May
	case "unreachable":
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		opts.Server = targets.ServerOptions{Target: lis.Addr().String(), ConnectTimeout: 2 * time.Second}
		require.NoError(t, lis.Close())
	default:
		t.Fatalf("unknown case %q", which)
	}
	DescribeServerSuite(opts, Label("conformance"))
	RunSpecs(t, "ginkgosuite selftest")
}

// specs is what one ginkgo run did: each spec's state and failure, by
// its It text, and the conformance report's pairs.
type specs struct {
	state   map[string]string
	failure map[string]string
	output  map[string]string
	ran     []string
	labels  []string
}

// runSpecs runs TestSpecs's case in a subprocess with ginkgo flags args.
func runSpecs(t *testing.T, which string, args ...string) specs {
	t.Helper()
	dir := t.TempDir()
	ginkgoReport, report := filepath.Join(dir, "ginkgo.json"), filepath.Join(dir, "conformance.json")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"-test.run", "^TestSpecs$", "-ginkgo.json-report", ginkgoReport}, args...)...)
	cmd.Env = append(os.Environ(), specsEnv+"="+which, specsReportEnv+"="+report)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	raw, err := os.ReadFile(ginkgoReport)
	require.NoError(t, err, "ginkgo wrote no report:\n%s", out)
	var reps []types.Report
	require.NoError(t, json.Unmarshal(raw, &reps))
	require.Len(t, reps, 1)
	s := specs{state: map[string]string{}, failure: map[string]string{}, output: map[string]string{}}
	for _, sr := range reps[0].SpecReports {
		if sr.LeafNodeType != types.NodeTypeIt {
			continue
		}
		s.state[sr.LeafNodeText] = sr.State.String()
		s.labels = append(s.labels, sr.Labels()...)
		s.failure[sr.LeafNodeText] = sr.Failure.Message
		s.output[sr.LeafNodeText] = sr.CapturedGinkgoWriterOutput
	}
	if _, err := os.Stat(report); err == nil {
		run, _, err := reports.ReadJSONFile(context.Background(), report)
		require.NoError(t, err)
		for _, r := range run.Results {
			s.ran = append(s.ran, strings.TrimPrefix(r.ID, "server/selftest/"))
		}
	}
	return s
}

func name(id string) string { return "server/selftest/" + id + "/sotw-ads" }

// Every outcome shows in ginkgo as the package documents it, and the
// pairs run together in BeforeAll.
func TestGinkgoOutcomes(t *testing.T) {
	t.Parallel()
	s := runSpecs(t, "suite")
	want := map[string]string{"passes": "passed", "fails-must": "failed", "fails-should": "failed", "may": "passed",
		"skips": "skipped", "errors": "failed", "known": "skipped", "stale": "failed", "blocked": "failed", "inconclusive": "skipped"}
	for i := range 8 {
		want[fmt.Sprintf("together-%d", i)] = "passed"
	}
	for id, state := range want {
		assert.Equal(t, state, s.state[name(id)], "%s: %s", id, s.failure[name(id)])
	}
	assert.Len(t, s.state, len(want), "one It per pair")
	assert.Contains(t, s.failure[name("fails-must")], "broke NONCE-1 (MUST)")
	assert.Contains(t, s.failure[name("fails-must")], "expected X, got Y")
	assert.Contains(t, s.output[name("fails-must")], "transcript: (empty)")
	assert.Contains(t, s.failure[name("errors")], "error: the pair could not run to a verdict: the fixture refused the change")
	assert.Contains(t, s.failure[name("known")], "known failure: NONCE-1: broken on purpose")
	assert.Contains(t, s.failure[name("skips")], "the target does not serve this")
	assert.Contains(t, s.failure[name("stale")], "stale known-failing entry")
	assert.Contains(t, s.output[name("may")], "unsupported")
	assert.Contains(t, s.failure[name("blocked")], "blocked by RES-1 (MUST): a precondition failed: the base resources were not served")
	assert.Contains(t, s.failure[name("blocked")], "blocked by:   RES-1 (MUST), the rule its failed precondition rests on")
	assert.Contains(t, s.failure[name("inconclusive")], "inconclusive, the harness's own lag could explain a timing verdict either way: "+
		"ACK-5: the ACK of version 2 took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times")
	assert.Len(t, s.ran, len(want))
}

// --focus and --label-filter select specs, and only the selected pairs
// run (the conformance report has them alone).
func TestGinkgoSelection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"focus", []string{"-ginkgo.focus", "server/selftest/(passes|known)/"}, []string{"passes", "known"}},
		{"label filter", []string{"-ginkgo.label-filter", "SHOULD || MAY"}, []string{"fails-should", "may", "inconclusive"}},
		{"label filter on a rule", []string{"-ginkgo.label-filter", "NONCE-1 && !MUST"}, nil},
		{"skip", []string{"-ginkgo.label-filter", "selftest && MUST", "-ginkgo.skip", "together|fails|errors|known|stale"}, []string{"passes", "skips", "blocked"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := runSpecs(t, "suite", tc.args...)
			var ran []string
			for text, state := range s.state {
				// A spec ginkgo filtered out is skipped with no message;
				// one whose pair was skipped says why.
				if state != "skipped" || s.failure[text] != "" {
					ran = append(ran, strings.TrimSuffix(strings.TrimPrefix(text, "server/selftest/"), "/sotw-ads"))
				}
			}
			assert.ElementsMatch(t, tc.want, ran, "specs run")
			assert.ElementsMatch(t, tc.want, s.ran, "pairs run")
		})
	}
}

// A spec BeforeAll did not foresee (a --focus that matches only through
// the suite description) runs its pair on its own.
func TestGinkgoUnforeseenSpecRunsAlone(t *testing.T) {
	t.Parallel()
	s := runSpecs(t, "suite", "-ginkgo.focus", "^ginkgosuite selftest xdsconform server suite server/selftest/passes/")
	assert.Equal(t, "passed", s.state[name("passes")], s.failure[name("passes")])
	assert.Equal(t, []string{"passes"}, s.ran)
}

// Options that cannot be used fail one spec, saying why.
func TestGinkgoBadOptions(t *testing.T) {
	t.Parallel()
	s := runSpecs(t, "bad-options")
	assert.Equal(t, map[string]string{"options": "failed"}, s.state)
	assert.Contains(t, s.failure["options"], "FailOn")
	assert.Empty(t, s.ran)
}

// A target that cannot be reached fails BeforeAll, so the first spec
// fails with the cause and ginkgo skips the rest.
func TestGinkgoUnreachable(t *testing.T) {
	t.Parallel()
	s := runSpecs(t, "unreachable")
	failed := 0
	for text, state := range s.state {
		switch state {
		case "failed":
			failed++
			assert.Contains(t, s.failure[text], "target unreachable")
		default:
			assert.Equal(t, "skipped", state, text)
		}
	}
	assert.Equal(t, 1, failed, "%v", s.state)
	assert.Empty(t, s.ran)
}

// The client suite runs as specs too: the nonce family against the
// example client (grpc-go's), each pair an It that passes or is skipped.
func TestGinkgoClientSuite(t *testing.T) {
	t.Parallel()
	s := runSpecs(t, "client")
	require.NotEmpty(t, s.state)
	passed := 0
	for text, state := range s.state {
		assert.True(t, strings.HasPrefix(text, "client/nonce/"), text)
		assert.Contains(t, []string{"passed", "skipped"}, state, "%s: %s", text, s.failure[text])
		if state == "passed" {
			passed++
		}
	}
	assert.Positive(t, passed)
	assert.Len(t, s.ran, len(s.state), "every nonce pair ran")
	assert.Contains(t, s.labels, "client")
}

func TestPairLabels(t *testing.T) {
	p := conformance.Pair{Name: "server/nonce/distinct/sotw-ads", ID: "server/nonce/distinct", Variant: "sotw-ads",
		Level: results.Must, Requirements: []string{"NONCE-2", "NONCE-1", "NONCE-2"}}
	assert.Equal(t, []string{"server", "nonce", "MUST", "sotw-ads", "NONCE-2", "NONCE-1"}, PairLabels(p))
	for _, l := range PairLabels(p) {
		_, err := types.ValidateAndCleanupLabel(l, types.CodeLocation{})
		assert.NoError(t, err, l)
	}
}
