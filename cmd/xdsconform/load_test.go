package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/reports/schema"
)

func TestLoadExitCodes(t *testing.T) {
	unreachable := closedPort(t)
	checkExitCodes(t, []exitCase{
		{"no target", []string{"load"}, exitUsage, "--target is required"},
		{"no fixture for shard 0", []string{"load", "--target", unreachable}, exitUsage, "fixture"},
		{"bad shard", []string{"load", "--target", "builtin:reference", "--shard", "2"}, exitUsage, "--shard \"2\": want I/N"},
		{"shard out of range", []string{"load", "--target", "builtin:reference", "--shard", "3/3", "--run-id", "x"}, exitUsage, "--shard 3/3"},
		{"shards without a run id", []string{"load", "--target", "builtin:reference", "--shard", "1/3"}, exitUsage, "--run-id"},
		{"bad profile", []string{"load", "--target", "builtin:reference", "--profile", "XDS=a"}, exitUsage, "--profile"},
		{"bad variant", []string{"load", "--target", "builtin:reference", "--variant", "rest-ish"}, exitUsage, "--variant"},
		{"bad transcripts", []string{"load", "--target", "builtin:reference", "--transcripts", "all"}, exitUsage, "--transcripts"},
		{"bad churn types", []string{"load", "--target", "builtin:reference", "--churn-types", "CDS,XDS"}, exitUsage, "--churn-types"},
		{"no clients", []string{"load", "--target", "builtin:reference", "--clients", "0"}, exitUsage, "--clients 0"},
		{"unreachable", []string{"load", "--target", unreachable, "--fixture", unreachable, "--connect-timeout", "1s"}, exitUnreachable, unreachable},
	})
}

// The Bar's command, at a scale a unit test affords: exit 0 and a JSON
// report giving push→ACK p99 and convergence per phase.
func TestLoadWritesJSON(t *testing.T) {
	js := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := run(t, "load", "--target", "builtin:go-control-plane", "--clients", "50", "--duration", "1s", "--churn", "5", "--json", js)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "churn")
	assert.Contains(t, stderr, "load: initial-sync", "progress goes to stderr")
	rep := readLoad(t, js)
	require.NotEmpty(t, rep.Phases)
	for _, p := range rep.Phases {
		if p.Name == loadreport.PhaseChurn {
			assert.Equal(t, int64(5*50), p.Latency.Count())
			assert.Positive(t, p.Latency.Quantile(0.99))
			assert.Equal(t, int64(5), p.Convergence.Count())
		}
	}
}

// A run past its memory budget stops, writes what ran, and fails with a
// line saying it was the harness's budget, not the target, that ended it.
func TestLoadStopsAtItsMemoryBudget(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1)) // the run lowers the process's soft limit to its budget
	js := filepath.Join(t.TempDir(), "r.json")
	// 1 MiB: less than the harness holds before its first stream.
	code, stdout, stderr := run(t, "load", "--target", "builtin:reference", "--clients", "20", "--duration", "1m", "--memory-budget", "1MiB", "--json", js)
	require.Equal(t, exitFailures, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	rep := readLoad(t, js)
	require.NotEmpty(t, rep.Unmeasured)
	assert.Contains(t, strings.Join(rep.Unmeasured, "\n"), "the harness stopped the run at its memory budget")
	assert.Contains(t, stdout, "over the 1 MiB budget (--memory-budget)")
	for _, p := range rep.Phases {
		if p.Name == loadreport.PhaseChurn {
			assert.Less(t, p.Changes, int64(2*60), "the budget stopped the churn before its minute of changes (2 a second)")
		}
	}
}

// --json - puts the report, and only it, on stdout.
func TestLoadJSONToStdout(t *testing.T) {
	code, stdout, stderr := run(t, "load", "--target", "builtin:reference", "--clients", "5", "--duration", "200ms", "--json", "-")
	require.Equal(t, exitOK, code, stderr)
	require.NoError(t, schema.ValidateLoadReport([]byte(stdout)), stdout)
	rep, err := loadreport.ReadJSON(strings.NewReader(stdout))
	require.NoError(t, err)
	assert.Equal(t, loadreport.Format, rep.Format)
	assert.NotContains(t, stderr, "load: ", "no progress beside a report on stdout (kubectl logs mixes the two)")
}

// Ctrl-C during the churn writes the report of what ran, and exits 130.
func TestLoadInterruptWritesReport(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOnWrite{marker: "load: churn", cancel: cancel}
	var out bytes.Buffer
	code := execute(ctx, []string{"load", "--target", "builtin:reference", "--clients", "10", "--duration", "1m", "--json", js}, &out, errw)
	assert.Equal(t, exitInterrupted, code, errw.String())
	rep := readLoad(t, js)
	assert.True(t, rep.Interrupted)
	assert.Equal(t, loadreport.PhaseChurn, rep.Phases[len(rep.Phases)-1].Name)
}

// readLoad reads a load report the CLI wrote, which must validate
// against the published schema and read back with loadreport.ReadJSON:
// every load report a test of the CLI writes is checked.
func readLoad(t *testing.T, path string) *loadreport.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, schema.ValidateLoadReport(b), path)
	rep, err := loadreport.ReadJSON(bytes.NewReader(b))
	require.NoError(t, err, path)
	return rep
}

// cliChild, set in a child process's environment to a JSON list of
// arguments, makes the test binary run the CLI with them (TestMain).
const cliChild = "XDSCONFORM_TEST_CLI_ARGS"

// Issue 15's proof of sharding, with processes as users run them: n shard
// processes on loopback, their reports merged, count what one process
// running the same plan counts. The server (the reference, with its
// fixture API on the same port) runs in this test's process, shared by
// every shard.
func TestLoadShardProcessesMergeToOneRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four processes")
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	ref := refserver.New()
	ref.Register(g)
	fixturepb.RegisterFixtureServer(g, ref.FixtureServer())
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	addr := lis.Addr().String()
	dir := t.TempDir()
	plan := func(runID, shard, out string) []string {
		return []string{"load", "--target", addr, "--fixture", addr, "--clients", "30", "--nodes", "6", "--streams-per-conn", "5",
			"--churn", "10", "--duration", "500ms", "--nack-burst", "2", "--burst-window", "300ms", "--settle", "5s",
			"--run-id", runID, "--shard", shard, "--json", out}
	}

	single := filepath.Join(dir, "single.json")
	code, _, stderr := run(t, plan("single", "0/1", single)...)
	require.Equal(t, exitOK, code, stderr)

	// Shard 0 first, the others once it has set the initial state; shard
	// 0 holds the churn back long enough for them all to sync.
	const n = 3
	var shards []string
	var children []*exec.Cmd
	var waits []chan error
	for i := range n {
		out := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i))
		shards = append(shards, out)
		args := plan("sharded", fmt.Sprintf("%d/%d", i, n), out)
		if i == 0 {
			args = append(args, "--churn-delay", "3s")
		}
		argv, _ := json.Marshal(args)
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), cliChild+"="+string(argv))
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		children = append(children, cmd)
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		lines := bufio.NewScanner(stderr)
		if i == 0 {
			for lines.Scan() && !strings.Contains(lines.Text(), "load: connect") {
			}
		}
		done := make(chan error, 1)
		go func() {
			var said []string
			for lines.Scan() { // drain, so the child never blocks writing
				said = append(said, lines.Text())
			}
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w; stderr: %s", err, strings.Join(said, " | "))
			}
			done <- err
		}()
		waits = append(waits, done)
	}
	for i, done := range waits {
		select {
		case err := <-done:
			require.NoError(t, err, "shard %d", i)
		case <-time.After(2 * time.Minute):
			_ = children[i].Process.Signal(syscall.SIGQUIT) // its goroutines, on its stderr
			t.Fatalf("shard %d still running after two minutes: %v", i, <-done)
		}
	}

	mergedPath := filepath.Join(dir, "merged.json")
	code, _, stderr = run(t, append([]string{"report", "merge", "--json", mergedPath}, shards...)...)
	require.Equal(t, exitOK, code, stderr)
	merged := readLoad(t, mergedPath)
	assert.Equal(t, []int{0, 1, 2}, merged.Shards)
	one := readLoad(t, single)
	for _, want := range one.Phases {
		got := findPhase(t, merged, want.Name)
		assert.Equal(t, []int64{want.Clients, want.Expected, want.Responses, want.Acks, want.Nacks, want.Violations, want.Missed, want.Changes},
			[]int64{got.Clients, got.Expected, got.Responses, got.Acks, got.Nacks, got.Violations, got.Missed, got.Changes},
			"%s: clients, expected, responses, ACKs, NACKs, violations, missed, changes", want.Name)
		assert.Equal(t, want.Latency.Count(), got.Latency.Count(), want.Name)
		t.Logf("%s push→ACK: one process p50 %s p99 %s; %d shards merged p50 %s p99 %s", want.Name,
			want.Latency.Quantile(0.5), want.Latency.Quantile(0.99), n, got.Latency.Quantile(0.5), got.Latency.Quantile(0.99))
	}
}

func findPhase(t *testing.T, rep *loadreport.Report, name string) loadreport.Phase {
	t.Helper()
	p, ok := rep.Phase(name)
	require.True(t, ok, "no %s phase", name)
	return p
}

// --slo judges the run: exit 1 naming the objective broken, with every
// report still written; exit 0 when every objective holds.
func TestLoadSLO(t *testing.T) {
	dir := t.TempDir()
	md, page := filepath.Join(dir, "r.md"), filepath.Join(dir, "r.html")
	base := []string{"load", "--target", "builtin:reference", "--clients", "5", "--duration", "200ms", "--markdown", md, "--html", page}
	code, _, stderr := run(t, append(base, "--slo", "p99<1ns,violations=0")...)
	assert.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, stderr, "SLO broken: p99<1ns")
	for _, f := range []string{md, page} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Contains(t, string(b), "churn", f)
	}
	code, _, stderr = run(t, append(base, "--slo", "violations=0,missed=0")...)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "SLO met")
	code, _, stderr = run(t, append(base, "--slo", "p99<<1s")...)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "--slo")
}

// Without --slo a run of one process is judged against the protocol: a
// server breaking a rule under load fails it (exit 1) naming the rule.
func TestLoadDefaultObjectives(t *testing.T) {
	code, stdout, stderr := run(t, "load", "--target", "builtin:reference", "--fault", "empty-nonce", "--clients", "5", "--duration", "200ms")
	assert.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, stderr, "SLO broken: violations=0")
	assert.Contains(t, stdout, "NONCE-1 (MUST)")
	code, _, stderr = run(t, "load", "--target", "builtin:reference", "--clients", "5", "--duration", "200ms")
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stderr, "SLO met: violations=0 (0), missed=0 (0), errors=0 (0)")
}
