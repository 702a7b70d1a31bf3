//go:build unix

package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

// selftestEnv names the case TestSelftest runs; it runs only in the
// subprocesses the tests below start, which are this test binary again.
const selftestEnv = "XDSCONFORM_SELFTEST"

// selftestJSONEnv is where the case writes its JSON report, if set.
const selftestJSONEnv = "XDSCONFORM_SELFTEST_JSON"

// TestSelftest runs a suite of test scenarios against a fake target
// through runTests, as RunServerSuite does, so that the tests below can
// look at what go test makes of it from the outside: which subtests ran,
// passed, failed and were skipped, and what they said.
func TestSelftest(t *testing.T) {
	which := os.Getenv(selftestEnv)
	if which == "" {
		t.Skip("run by the go test subprocess tests of this package")
	}
	opts := ServerOptions{JSONReport: os.Getenv(selftestJSONEnv)}
	cat := outcomeCatalogue
	var ft *fakeTarget
	switch which {
	case "outcomes":
		opts.KnownFailing = knownList(t, outcomeKnown)
	case "failon-must":
		opts.FailOn, opts.Run = results.Must, []string{"server/selftest/fails-should"}
	case "concurrent":
		b := newBarrier(12)
		cat = nil
		for i := range 12 {
			cat = append(cat, scenario("pair-"+string(rune('a'+i)), func(t *engine.T) {
				if err := b.wait(20 * time.Second); err != nil {
					t.Failf("NONCE-1", "%v", err)
				}
			}, "NONCE-1"))
		}
	case "failfast", "deadline":
		cat = []*engine.Scenario{scenario("b1", blocks, "NONCE-1"), scenario("b2", blocks, "NONCE-1"), scenario("b3", blocks, "NONCE-1")}
		if which == "failfast" {
			cat = append(cat, scenario("first", failing("NONCE-1"), "NONCE-1"))
		}
		opts.Timeouts = engine.Timeouts{Expect: time.Second, Quiet: 100 * time.Millisecond, Scenario: 60 * time.Second}
	case "nothing":
		opts.Run = []string{"server/selftest/skips", "server/selftest/lacking"}
	case "died":
		cat = []*engine.Scenario{scenario("kills", func(*engine.T) {
			ft.mu.Lock()
			defer ft.mu.Unlock()
			ft.died = errors.New("connection refused (the fake target died)")
		}, "NONCE-1")}
	case "unreachable":
		// A port nobody listens on: the real target code reaches it.
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := lis.Addr().String()
		if err := lis.Close(); err != nil {
			t.Fatal(err)
		}
		RunServerSuite(t, ServerOptions{Server: targets.ServerOptions{Target: addr, ConnectTimeout: 2 * time.Second}, Scenarios: cat})
		return
	default:
		t.Fatalf("unknown case %q", which)
	}
	s, target := newFakeSuite(t, cat, opts)
	ft = target
	runTests(t, s)
}

// event is a test2json event.
type event struct {
	Action  string
	Test    string
	Output  string
	Elapsed float64
}

// goRun is what one go test process did.
type goRun struct {
	// final is each test's last action: pass, fail or skip.
	final map[string]string
	// output is each test's output, its subtests' not included.
	output map[string]string
	// elapsed is each test's time, in seconds.
	elapsed map[string]float64
	// all is the whole output, for messages.
	all string
	// report is the JSON report's path (a selftest's).
	report string
}

// goTool is the go command that built this test.
func goTool(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	_, err := os.Stat(p)
	require.NoError(t, err, "the go command is needed to read go test's events")
	return p
}

// command is a subprocess in a process group of its own, which ctx's end
// kills whole: go tool test2json and go test start the test binary as a
// child of theirs, which must not outlive the test either.
func command(ctx context.Context, t *testing.T, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, goTool(t), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// parseEvents reads test2json output.
func parseEvents(t *testing.T, out []byte) goRun {
	t.Helper()
	r := goRun{final: map[string]string{}, output: map[string]string{}, elapsed: map[string]float64{}, all: string(out)}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			continue // a build line, not an event
		}
		switch e.Action {
		case "pass", "fail", "skip":
			if e.Test == "" {
				continue // the package's own end
			}
			r.final[e.Test] = e.Action
			r.elapsed[e.Test] = e.Elapsed
		case "output":
			r.output[e.Test] += e.Output
		}
	}
	require.NoError(t, sc.Err())
	return r
}

// runSelftest runs TestSelftest's case which in a subprocess, with go
// test flags args (-test.*), and returns what go test made of it.
func runSelftest(t *testing.T, which string, args ...string) goRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmdArgs := []string{"tool", "test2json", "-t", os.Args[0], "-test.v=test2json", "-test.run", "^TestSelftest$"}
	cmdArgs = append(cmdArgs, args...)
	cmd := command(ctx, t, cmdArgs...)
	report := filepath.Join(t.TempDir(), "report.json")
	cmd.Env = append(os.Environ(), selftestEnv+"="+which, selftestJSONEnv+"="+report)
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err)
	}
	r := parseEvents(t, out)
	r.report = report
	return r
}

// sub is the subtest name of test scenario id in sotw-ads.
func sub(id string) string { return "TestSelftest/server/selftest/" + id + "/sotw-ads" }

// Every outcome shows in go test as RunServerSuite documents it.
func TestGoTestOutcomes(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "outcomes")
	want := map[string]struct {
		action string
		says   []string
	}{
		"passes":       {"pass", nil},
		"fails-must":   {"fail", []string{"broke NONCE-1 (MUST)", "the target broke NONCE-1 (evidence: expected X, got Y)", "rules broken: NONCE-1 (MUST)", "transcript: (empty)"}},
		"fails-should": {"fail", []string{"broke ACK-5 (SHOULD)"}},
		"may":          {"pass", []string{"unsupported", "GRP-2"}},
		"skips":        {"skip", []string{"the target does not serve this"}},
		"lacking":      {"skip", []string{"the fake target lacks it"}},
		"errors":       {"fail", []string{"error: the pair could not run to a verdict: the fixture refused the change"}},
		"known":        {"skip", []string{"known failure: NONCE-1: the fake target breaks it on purpose"}},
		"stale":        {"fail", []string{"stale known-failing entry", "was broken once", "remove the entry"}},
		"other-rule":   {"fail", []string{"broke NONCE-2 (MUST)", "listed as known-failing for NONCE-1"}},
		"blocked": {"fail", []string{"blocked by RES-1 (MUST): a precondition failed: the base resources were not served",
			"blocked by:   RES-1 (MUST), the rule its failed precondition rests on"}},
		"blocked-listed": {"skip", []string{"known failure: RES-1: the fake target never serves the base resources"}},
		"inconclusive": {"skip", []string{"inconclusive, the harness's own lag could explain a timing verdict either way: " +
			"ACK-5: the ACK of version 2 took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times"}},
	}
	for id, w := range want {
		assert.Equal(t, w.action, r.final[sub(id)], "%s\n%s", id, r.output[sub(id)])
		for _, s := range w.says {
			assert.Contains(t, r.output[sub(id)], s, id)
		}
	}
	assert.Equal(t, "fail", r.final["TestSelftest"])
	var ran []string
	for name := range r.final {
		if strings.HasPrefix(name, "TestSelftest/") {
			ran = append(ran, name)
		}
	}
	assert.Len(t, ran, len(want), "one subtest per pair: %v", ran)
	run, _, err := reports.ReadJSONFile(context.Background(), r.report)
	require.NoError(t, err)
	assert.Len(t, run.Results, len(want), "the report has every pair")
}

// Below FailOn, a broken rule is a warning, not a failure.
func TestGoTestFailOnMust(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "failon-must")
	assert.Equal(t, "pass", r.final[sub("fails-should")], r.all)
	assert.Contains(t, r.output[sub("fails-should")], "warning: broke ACK-5 (SHOULD), below FailOn MUST")
	assert.Equal(t, "pass", r.final["TestSelftest"])
}

// go test's -run selects pairs, and only the pairs it selects run: the
// others are no subtests, and the report, written from what the engine
// ran, has only the selected ones.
func TestGoTestRunSelectsPairs(t *testing.T) {
	t.Parallel()
	report := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := command(ctx, t, "tool", "test2json", "-t", os.Args[0], "-test.v=test2json",
		"-test.run", "^TestSelftest$/server/selftest/(passes|known)/")
	cmd.Env = append(os.Environ(), selftestEnv+"=outcomes", selftestJSONEnv+"="+report)
	out, err := cmd.Output()
	require.NoError(t, err, "the selected pairs pass or are known failures: %s", out)
	r := parseEvents(t, out)
	assert.Equal(t, map[string]string{"TestSelftest": "pass", sub("passes"): "pass", sub("known"): "skip"}, r.final)
	run, _, err := reports.ReadJSONFile(context.Background(), report)
	require.NoError(t, err)
	var ids []string
	for _, res := range run.Results {
		ids = append(ids, res.FullName())
	}
	assert.ElementsMatch(t, []string{"server/selftest/passes[sotw-ads]", "server/selftest/known[sotw-ads]"}, ids)
}

// The pairs run together, however small go test's -parallel: twelve
// pairs that each wait for all twelve to be running pass.
func TestGoTestPairsRunTogether(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "concurrent", "-test.parallel=1")
	assert.Equal(t, "pass", r.final["TestSelftest"], r.all)
	n := 0
	for name, a := range r.final {
		if strings.HasPrefix(name, "TestSelftest/") {
			n++
			assert.Equal(t, "pass", a, name)
		}
	}
	assert.Equal(t, 12, n)
}

// -failfast: the first failure stops the rest, which are skipped saying
// why; the pairs that were blocked do not wait out their own bounds.
func TestGoTestFailFast(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "failfast", "-test.failfast")
	assert.Equal(t, "fail", r.final[sub("first")], r.all)
	for _, id := range []string{"b1", "b2", "b3"} {
		assert.Equal(t, "skip", r.final[sub(id)], id)
		assert.Contains(t, r.output[sub(id)], "not finished: -failfast stopped the suite after server/selftest/first/sotw-ads failed", id)
	}
	// The skip message above shows the blocked pairs were stopped, not
	// waited out: a pair that reached its own 60 s bound would end as a
	// failure of its deadline instead.
	assert.Equal(t, "fail", r.final["TestSelftest"])
}

// Near go test's -timeout, the pairs still running fail saying so and the
// binary does not panic.
func TestGoTestDeadline(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "deadline", "-test.timeout=8s")
	for _, id := range []string{"b1", "b2", "b3"} {
		assert.Equal(t, "fail", r.final[sub(id)], id)
		assert.Contains(t, r.output[sub(id)], "did not finish", id)
		assert.Contains(t, r.output[sub(id)], "-timeout is near", id)
	}
	assert.Equal(t, "fail", r.final["TestSelftest"])
	assert.NotContains(t, r.all, "panic: test timed out")
}

// A run in which nothing could run fails, as `xdsconform` exits 2 then.
func TestGoTestNothingCouldRun(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "nothing")
	assert.Equal(t, "skip", r.final[sub("skips")])
	assert.Equal(t, "skip", r.final[sub("lacking")])
	assert.Equal(t, "fail", r.final["TestSelftest"])
	assert.Contains(t, r.output["TestSelftest"], "nothing could run: 2 selected pairs skipped")
}

// A target that died during the run fails the test, whatever the pairs
// said.
func TestGoTestTargetDied(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "died")
	assert.Equal(t, "pass", r.final[sub("kills")])
	assert.Equal(t, "fail", r.final["TestSelftest"])
	assert.Contains(t, r.output["TestSelftest"], "the target died during the run")
	assert.Contains(t, r.output["TestSelftest"], "connection refused (the fake target died)")
}

// A target that cannot be reached fails the test at once, with the cause,
// and no pair is a subtest.
func TestGoTestUnreachable(t *testing.T) {
	t.Parallel()
	r := runSelftest(t, "unreachable")
	assert.Equal(t, map[string]string{"TestSelftest": "fail"}, r.final, r.all)
	assert.Contains(t, r.output["TestSelftest"], "target unreachable")
	assert.Contains(t, r.output["TestSelftest"], "connection refused")
}

// The worked example, through go test itself: -run
// 'TestConformance/server/nonce/.*' runs exactly the nonce pairs of the
// catalogue, each a subtest, and they pass against go-control-plane.
func TestGoTestExampleRunsOnlyTheNoncePairs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs examples/embedded")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := command(ctx, t, "test", "-json", "-count=1", "-run", "TestConformance/server/nonce/.*", "./examples/embedded/")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "%s\n%s", stderr.String(), out)
	r := parseEvents(t, out)

	want := map[string]bool{}
	for _, s := range scenarios.Server() {
		if strings.HasPrefix(s.ID, "server/nonce/") {
			for _, v := range s.Variants {
				want["TestConformance/"+s.ID+"/"+v.String()] = true
			}
		}
	}
	require.NotEmpty(t, want)
	got := map[string]bool{}
	passed := 0
	for name, a := range r.final {
		if strings.HasPrefix(name, "TestConformance/") {
			got[name] = true
			if a == "pass" {
				passed++
			}
		}
	}
	assert.Equal(t, want, got, "exactly the nonce pairs are subtests")
	assert.Equal(t, "pass", r.final["TestConformance"])
	assert.Positive(t, passed, "some nonce pairs ran and passed")
	t.Logf("%d nonce subtests, %d passed, the rest skipped (variants the example does not serve); TestConformance took %.2fs",
		len(got), passed, r.elapsed["TestConformance"])
}

// goList runs go list in the module root and returns its lines.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cmd := command(ctx, t, append([]string{"list"}, args...)...)
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	return strings.Fields(string(out))
}

// A go test importer of conformance links no ginkgo (and so gets none of
// its flags), and the suite packages import no built-in peer and no
// container package themselves. The same listing of ginkgosuite shows
// that the check sees an import when there is one.
func TestImports(t *testing.T) {
	t.Parallel()
	has := func(pkgs []string, re string) []string {
		var out []string
		for _, p := range pkgs {
			if regexp.MustCompile(re).MatchString(p) {
				out = append(out, p)
			}
		}
		return out
	}
	const ginkgo = `^github\.com/onsi/ginkgo`
	assert.Empty(t, has(goList(t, "-deps", "./conformance"), ginkgo), "conformance links ginkgo")
	assert.NotEmpty(t, has(goList(t, "-deps", "./conformance/ginkgosuite"), ginkgo), "the check cannot see ginkgo")
	direct := goList(t, "-f", `{{join .Imports "\n"}}`, "./conformance", "./conformance/ginkgosuite")
	assert.Empty(t, has(direct, `xdsconform/(peers|docker)|testcontainers|opentelemetry`), "a direct import of a peer or the container stack")
	assert.NotEmpty(t, has(direct, `xdsconform/targets$`), "the listing names the direct imports")
}
