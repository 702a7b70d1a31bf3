package hostile_test

// The shared scaffold of the hostile-peer suite.
//
//   - TestMain builds the xdsconform binary once (without -race, so the
//     peak RSS measured is what a user's run costs) into a temporary
//     directory; xdsconformBin is its path.
//   - startCLI runs it as a subprocess with a time bound and returns a
//     handle (signal it, wait for it); runCLI runs it to the end. Both
//     write the JSON and JUnit reports into the test's temporary directory
//     unless cliOptions.NoReports, and collect stdout, stderr, both
//     reports and the child's peak RSS (from wait4's rusage) in a
//     cliResult.
//   - Every run is checked, whatever its test, for the bars every hostile
//     mode must meet (checkEveryRun): peak RSS under maxRSS, each artefact
//     under maxArtefact, and nothing left behind once it exited: no process
//     carrying its launch marker, nothing in its TMPDIR (one of its own
//     unless cliOptions.Env sets one), no cgroup of its.
//   - registerClientMode registers a hostile xDS client mode under a name,
//     from an init function of a test file; clientCmd(mode) is the
//     --client-cmd that re-executes this test binary in that mode, and a
//     mode reads its launch parameters with launchedClient().

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/results"
)

// xdsconformBin is the binary under test, built by TestMain.
var xdsconformBin string

// clientModeEnv names the hostile client mode a re-executed test binary
// runs instead of its tests.
const clientModeEnv = "XDSCONFORM_HOSTILE_CLIENT"

// clientModes are the hostile client modes, by name.
var clientModes = map[string]func(launched) int{}

// registerClientMode makes mode available to clientCmd; call it from an
// init function. run returns the process's exit code.
func registerClientMode(mode string, run func(launched) int) {
	if _, dup := clientModes[mode]; dup {
		panic("hostile client mode registered twice: " + mode)
	}
	clientModes[mode] = run
}

// launched are the parameters the harness gave a launched client (its
// --client-cmd template variables), as a re-executed mode sees them.
type launched struct {
	// Server is the harness's management server, host:port.
	Server string
	// Listener is the listener name the client must ask for.
	Listener string
	// NodeID and Cluster identify the client.
	NodeID, Cluster string
	// CSDS and Admin are the addresses the client should serve its status
	// view on.
	CSDS, Admin string
	// Dir is the scenario's scratch directory.
	Dir string
	// Bootstrap is the gRPC bootstrap's path.
	Bootstrap string
	// Extra is whatever the test put in clientCmd's extra argument.
	Extra string
}

// launchVars maps launched's fields to the template variables that fill
// them, passed through the environment as XH_<VAR>.
var launchVars = []string{"Server", "Listener", "NodeID", "Cluster", "CSDS", "Admin", "Dir", "Bootstrap"}

// clientCmd is a --client-cmd that runs this test binary as the hostile
// client mode, with extra (any string) handed to it as launched.Extra.
func clientCmd(mode, extra string) string {
	if _, ok := clientModes[mode]; !ok {
		panic("unknown hostile client mode: " + mode)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s=%s XH_EXTRA=%s", clientModeEnv, shellQuote(mode), shellQuote(extra))
	for _, v := range launchVars {
		fmt.Fprintf(&b, " XH_%s={{.%s}}", strings.ToUpper(v), v)
	}
	fmt.Fprintf(&b, " exec %s -test.run='^$'", shellQuote(os.Args[0]))
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func launchedFromEnv() launched {
	get := func(v string) string { return os.Getenv("XH_" + strings.ToUpper(v)) }
	return launched{Server: get("Server"), Listener: get("Listener"), NodeID: get("NodeID"), Cluster: get("Cluster"),
		CSDS: get("CSDS"), Admin: get("Admin"), Dir: get("Dir"), Bootstrap: get("Bootstrap"), Extra: os.Getenv("XH_EXTRA")}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv(clientModeEnv); mode != "" {
		run, ok := clientModes[mode]
		if !ok {
			fmt.Fprintf(os.Stderr, "hostile client: unknown mode %q\n", mode)
			os.Exit(2)
		}
		os.Exit(run(launchedFromEnv()))
	}
	dir, err := os.MkdirTemp("", "xdsconform-hostile-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	xdsconformBin = filepath.Join(dir, "xdsconform")
	build := exec.Command("go", "build", "-o", xdsconformBin, "./cmd/xdsconform")
	build.Dir = "../.." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building xdsconform: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cliOptions shape one run of the binary.
type cliOptions struct {
	// Timeout bounds the run; past it the process group is killed and the
	// test fails. Default 2 minutes.
	Timeout time.Duration
	// Env is added to the environment.
	Env []string
	// NoReports leaves out --json and --junit.
	NoReports bool
}

// cliResult is what one run left behind.
type cliResult struct {
	// Code is the exit code (-1 when killed by a signal).
	Code int
	// Stdout and Stderr are the console output.
	Stdout, Stderr string
	// JSON and JUnit are the report files' contents (nil when not written).
	JSON, JUnit []byte
	// JSONPath and JUnitPath are where they were asked for.
	JSONPath, JUnitPath string
	// MaxRSS is the subprocess's peak resident set size in bytes: its own
	// VmHWM, sampled every peakSample until it exits (samplePeakRSS).
	MaxRSS int64
}

// artefacts are every output of the run, by name, for size and secret
// checks.
func (r cliResult) artefacts() map[string][]byte {
	return map[string][]byte{"stdout": []byte(r.Stdout), "stderr": []byte(r.Stderr), "json": r.JSON, "junit": r.JUnit}
}

// report decodes the JSON report.
func (r cliResult) report(t *testing.T) results.Run {
	t.Helper()
	require.NotEmpty(t, r.JSON, "no JSON report written; stderr: %s", r.Stderr)
	var run results.Run
	require.NoError(t, json.Unmarshal(r.JSON, &run))
	return run
}

// cliProc is a running xdsconform subprocess.
type cliProc struct {
	t                   *testing.T
	peak                atomic.Int64 // VmHWM sampled from /proc, bytes
	tmp                 string       // its TMPDIR, when the scaffold chose it
	cmd                 *exec.Cmd
	stdout, stderr      *bytes.Buffer
	jsonPath, junitPath string
	cancel              context.CancelFunc
	done                chan struct{}
	err                 error
}

// startCLI starts the binary with args (plus --json and --junit into the
// test's temporary directory unless opts.NoReports).
func startCLI(t *testing.T, opts cliOptions, args ...string) *cliProc {
	t.Helper()
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	p := &cliProc{t: t, stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, done: make(chan struct{})}
	if !opts.NoReports {
		dir := t.TempDir()
		p.jsonPath, p.junitPath = filepath.Join(dir, "report.json"), filepath.Join(dir, "report.xml")
		args = append(args, "--json", p.jsonPath, "--junit", p.junitPath)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	p.cancel = cancel
	p.cmd = exec.CommandContext(ctx, xdsconformBin, args...)
	p.cmd.Env = append(os.Environ(), opts.Env...)
	if !slices.ContainsFunc(opts.Env, func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }) {
		p.tmp = t.TempDir()
		p.cmd.Env = append(p.cmd.Env, "TMPDIR="+p.tmp)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// Its own process group, so a timeout kills whatever it started too.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p.cmd.Cancel = func() error { return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
	resetPeakRSS()
	require.NoError(t, p.cmd.Start())
	go p.samplePeakRSS()
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-p.done
	})
	return p
}

// Signal sends sig to the binary (not its group: the harness must pass it
// on itself).
func (p *cliProc) Signal(sig syscall.Signal) {
	p.t.Helper()
	require.NoError(p.t, p.cmd.Process.Signal(sig))
}

// Pid is the subprocess's process id.
func (p *cliProc) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the binary to exit (bounded by the run's timeout, after
// which it is killed and the test fails) and collects what it left.
func (p *cliProc) Wait() cliResult {
	p.t.Helper()
	<-p.done
	p.cancel()
	st := p.cmd.ProcessState
	r := cliResult{Code: st.ExitCode(), Stdout: p.stdout.String(), Stderr: p.stderr.String(),
		JSONPath: p.jsonPath, JUnitPath: p.junitPath}
	r.MaxRSS = p.peak.Load()
	if ru, ok := st.SysUsage().(*syscall.Rusage); ok && r.MaxRSS == 0 {
		r.MaxRSS = ru.Maxrss * 1024 // never sampled: the kernel's upper bound (see resetPeakRSS)
	}
	if p.jsonPath != "" {
		r.JSON, _ = os.ReadFile(p.jsonPath)
		r.JUnit, _ = os.ReadFile(p.junitPath)
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		p.t.Fatalf("xdsconform %v was killed: it did not finish within its bound\nstdout: %s\nstderr: %s", p.cmd.Args[1:], r.Stdout, r.Stderr)
	}
	p.checkEveryRun(r)
	return r
}

// maxArtefact bounds each artefact of a run (console, stderr, JSON, JUnit)
// against any hostile mode: what a user's CI keeps must stay readable.
const maxArtefact = 16 << 20

// checkEveryRun asserts the bars every run must meet, whatever the
// hostile mode: bounded memory and artefacts, and nothing left behind.
func (p *cliProc) checkEveryRun(r cliResult) {
	t := p.t
	t.Helper()
	assert.Less(t, r.MaxRSS, int64(maxRSS), "peak RSS of xdsconform %v", p.cmd.Args[1:])
	for name, b := range r.artefacts() {
		assert.Less(t, len(b), maxArtefact, "%s of xdsconform %v", name, p.cmd.Args[1:])
	}
	marker := []byte("\x00" + process.LaunchEnv + "=" + strconv.Itoa(p.cmd.Process.Pid) + "-")
	var left []string
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), marker) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		left = append(left, e.Name()+" ("+strings.TrimSpace(string(comm))+")")
		_ = syscall.Kill(pid, syscall.SIGKILL) // not left to the next test either
	}
	assert.Empty(t, left, "processes xdsconform started outlived it")
	if p.tmp != "" {
		ents, err := os.ReadDir(p.tmp)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		assert.Empty(t, names, "xdsconform left these in its TMPDIR")
	}
	assert.Empty(t, cgroupsLeft(p.cmd.Process.Pid), "xdsconform left cgroups")
}

// peakSample is how often the child's own high-water mark is read.
const peakSample = 2 * time.Millisecond

// samplePeakRSS reads the child's VmHWM (the high-water mark of its own
// memory, which the kernel keeps monotonic) from /proc/PID/status until it
// exits. Unlike the peak wait4 reports, it is the child's alone (see
// resetPeakRSS); growth in its last sampling interval can be missed.
func (p *cliProc) samplePeakRSS() {
	path := fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)
	tick := time.NewTicker(peakSample)
	defer tick.Stop()
	for {
		if b, err := os.ReadFile(path); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					if kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64); err == nil && kb*1024 > p.peak.Load() {
						p.peak.Store(kb * 1024)
					}
				}
			}
		}
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
	}
}

// resetPeakRSS makes the peak RSS the kernel reports for the next child
// its own, as near as can be. Go starts a child sharing this process's
// memory until exec (vfork), and exec records that memory's peak as the
// child's starting peak: after an in-process hostile server grew this
// process, every child would report at least that. So the heap is
// returned to the OS and this process's peak is reset to its current
// size (clear_refs 5, Linux 4.0+); what the child then reports is its own
// peak or this process's current size, whichever is larger: an upper
// bound, so the bar it is held to stays a bar.
func resetPeakRSS() {
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// runCLI runs the binary to the end; see startCLI.
func runCLI(t *testing.T, opts cliOptions, args ...string) cliResult {
	t.Helper()
	return startCLI(t, opts, args...).Wait()
}

// maxRSS is the bar of the issue: a harness process stays under it
// against every hostile mode.
const maxRSS = 256 << 20

// TestScaffold checks the scaffold itself against the reference peers: a
// clean run exits 0, writes both reports and stays small; a hostile client
// mode is re-executed and reaches the harness.
func TestScaffold(t *testing.T) {
	r := runCLI(t, cliOptions{}, "server", "--target", "builtin:reference", "--run", "server/ack/*", "--variant", "sotw-ads")
	require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	run := r.report(t)
	require.NotEmpty(t, run.Results)
	require.NotEmpty(t, r.JUnit)

	r = runCLI(t, cliOptions{}, "client", "--client-cmd", clientCmd("exit-at-once", "bye"), "--run", "client/ack/*",
		"--start-timeout", "2s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	for _, res := range r.report(t).Results {
		if res.Outcome != results.Skip {
			require.Equal(t, results.Error, res.Outcome, "%s: %s", res.ID, res.Message)
			require.Contains(t, res.Message, "hostile client says bye")
		}
	}
}

func init() {
	registerClientMode("exit-at-once", func(l launched) int {
		fmt.Fprintf(os.Stderr, "hostile client says %s (server %s, listener %s)\n", l.Extra, l.Server, l.Listener)
		return 3
	})
}
