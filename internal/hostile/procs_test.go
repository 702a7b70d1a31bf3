package hostile_test

// Part 3 of the hostile suite, "nothing left behind": clients that ignore
// SIGTERM, that detach a grandchild (setsid, double fork) which ignores it
// too, and a run interrupted while such a client is connected. Each client
// is the reference client run by the re-executed test binary, so that but
// for how it stops it would pass; its launched.Extra is a directory of the
// test's own, which names it in the environment of everything it starts
// (XH_EXTRA, inherited) and where it writes what the test waits for.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

func init() {
	registerClientMode("ref", refMode(false, false))
	registerClientMode("ref-ignores-sigterm", refMode(true, false))
	registerClientMode("ref-detaches", refMode(false, true))
	registerClientMode("ref-detaches-ignores-sigterm", refMode(true, true))
	registerClientMode("cgroup-probe", cgroupProbeMode)
}

// Files a client mode writes into its launched.Extra directory.
const (
	connectedFile  = "connected"      // the client holds what the server sent
	grandchildFile = "grandchild.pid" // the detached grandchild's pid
)

// clientLifetime bounds a hostile client that nobody stops: a leak the
// harness let through must not live for ever on the test machine.
const clientLifetime = 2 * time.Minute

// refMode is the reference client, optionally ignoring SIGTERM, optionally
// first detaching a grandchild that ignores SIGTERM and sleeps.
func refMode(ignoreTERM, detach bool) func(launched) int {
	return func(l launched) int {
		if ignoreTERM {
			signal.Ignore(syscall.SIGTERM)
		}
		if detach {
			// The subshell forks the setsid'd grandchild and exits at
			// once: the grandchild is an orphan in a session of its own.
			pidFile := filepath.Join(l.Extra, grandchildFile)
			script := `( setsid sh -c 'trap "" TERM; echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep ` +
				strconv.Itoa(int(clientLifetime/time.Second)) + `' "$1" & )`
			// Run, not Output: the grandchild keeps no pipe of ours open
			// (its stdio is /dev/null), so this returns at once.
			if err := exec.Command("sh", "-c", script, "sh", pidFile).Run(); err != nil {
				fmt.Fprintf(os.Stderr, "hostile client: detaching: %v\n", err)
				return 2
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), clientLifetime)
		defer cancel()
		rc, err := refclient.Start(ctx, refclient.Config{ServerAddr: l.Server, NodeID: l.NodeID, Cluster: l.Cluster,
			Variant: wire.SotWADS, Listener: l.Listener, Profile: refclient.ProfileGRPC})
		if err != nil {
			fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
			return 2
		}
		defer rc.Close()
		if err := awaitConnected(ctx, rc.CSDSAddr()); err != nil {
			fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
			return 2
		}
		if err := writeAtomically(filepath.Join(l.Extra, connectedFile), []byte(l.NodeID)); err != nil {
			fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
			return 2
		}
		select {
		case <-rc.Done():
		case <-ctx.Done():
		}
		return 0
	}
}

// awaitConnected reads the client's own status view until it holds a
// resource: the client has connected and been answered.
func awaitConnected(ctx context.Context, csds string) error {
	o, err := observer.DialCSDS(csds)
	if err != nil {
		return err
	}
	defer o.Close()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if rs, err := o.Observe(ctx); err == nil && len(rs) > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("never connected: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func writeAtomically(path string, b []byte) error {
	if err := os.WriteFile(path+".tmp", b, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

// awaitFile waits, bounded, for a file a hostile client writes.
func awaitFile(t *testing.T, cli *cliProc, path string) {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-cli.done:
			r := cli.Wait()
			t.Fatalf("xdsconform exited (%d) before %s appeared\nstdout: %s\nstderr: %s", r.Code, path, r.Stdout, r.Stderr)
		case <-deadline.C:
			t.Fatalf("%s never appeared", path)
		case <-tick.C:
		}
	}
}

// survivors lists the live processes whose environment holds XH_EXTRA=tag:
// everything a hostile client run with that tag started. Zombies hold no
// environment and are not counted (nobody may reap orphans here).
func survivors(t *testing.T, tag string) []string {
	t.Helper()
	want := []byte("\x00XH_EXTRA=" + tag + "\x00")
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		out = append(out, e.Name()+" ("+strings.TrimSpace(string(comm))+")")
		// Do not leave it to the next test either.
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return out
}

// scratchLeft lists what the harness left in TMPDIR.
func scratchLeft(t *testing.T, tmp string) []string {
	t.Helper()
	ents, err := os.ReadDir(tmp)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// cgroupsLeft lists the per-client cgroups the harness process pid left.
// The harness makes them under the cgroup v2 group it runs in, which it
// inherits from this test process (on a systemd host a user.slice/...
// scope, not the root of the hierarchy): process.CgroupDir finds that
// group as the harness does.
func cgroupsLeft(pid int) []string {
	dir, err := process.CgroupDir()
	if err != nil {
		return nil // no cgroup v2 group: the harness could make none either
	}
	m, _ := filepath.Glob(filepath.Join(dir, "xdsconform-"+strconv.Itoa(pid)+"-*"))
	return m
}

// cgroupProbeMode, run in a cgroup below the test's, starts a program as
// the harness does and checks that cgroupsLeft sees the group made for it
// while it runs, and no longer once it is stopped.
func cgroupProbeMode(launched) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "cgroup probe: "+format+"\n", args...)
		return 1
	}
	dir, err := process.CgroupDir()
	if err != nil {
		return fail("%v", err)
	}
	p, err := process.Start(context.Background(), []string{"sleep", "300"}, process.Options{})
	if err != nil {
		return fail("%v", err)
	}
	defer p.Stop(time.Second)
	left := cgroupsLeft(os.Getpid())
	if len(left) != 1 || filepath.Dir(left[0]) != dir {
		return fail("cgroupsLeft found %v, want the one group of the program under %s", left, dir)
	}
	procs, err := os.ReadFile(filepath.Join(left[0], "cgroup.procs"))
	if err != nil || !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(p.Pid())) {
		return fail("%s does not hold the program %d: %q %v", left[0], p.Pid(), procs, err)
	}
	if err := p.Stop(time.Second); err != nil {
		return fail("Stop: %v", err)
	}
	if left := cgroupsLeft(os.Getpid()); len(left) != 0 {
		return fail("groups left after Stop: %v", left)
	}
	return 0
}

// The check for leftover cgroups looks where the harness makes them, also
// when the harness does not run in the root of the hierarchy: the probe
// runs in a group of its own below the test's.
func TestCgroupsLeftLooksWhereTheHarnessMakesGroups(t *testing.T) {
	dir, err := process.CgroupDir()
	if err != nil {
		t.Skipf("no cgroup v2 group here: %v", err)
	}
	nested := filepath.Join(dir, "hostile-probe-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(nested, 0o755); err != nil {
		t.Skipf("cannot make a cgroup here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Rmdir(nested) })
	fd, err := os.Open(nested)
	require.NoError(t, err)
	defer fd.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clientModeEnv+"=cgroup-probe")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(fd.Fd())}
	out, err := cmd.CombinedOutput()
	if cmd.Process == nil {
		t.Skipf("cannot start a process into a cgroup here: %v", err)
	}
	require.NoError(t, err, "%s", out)
}

// procsRun is one CLI run of a hostile client mode on one scenario, with
// TMPDIR of its own.
type procsRun struct {
	tag, tmp string
	cli      *cliProc
}

func startProcsRun(t *testing.T, mode, run string) procsRun {
	t.Helper()
	r := procsRun{tag: t.TempDir(), tmp: t.TempDir()}
	r.cli = startCLI(t, cliOptions{Env: []string{"TMPDIR=" + r.tmp}}, "client",
		"--client-cmd", clientCmd(mode, r.tag), "--observer", "none", "--run", run, "--variant", "sotw-ads",
		"--start-timeout", "20s")
	return r
}

// checkNothingLeft asserts the bar of the issue after the run: no process
// of the client, no scratch directory, no cgroup.
func (r procsRun) checkNothingLeft(t *testing.T, res cliResult) {
	t.Helper()
	assert.Empty(t, survivors(t, r.tag), "processes of the client outlived the harness; stderr: %s", res.Stderr)
	assert.Empty(t, scratchLeft(t, r.tmp), "the harness left these in TMPDIR; stderr: %s", res.Stderr)
	assert.Empty(t, cgroupsLeft(r.cli.Pid()), "the harness left cgroups; stderr: %s", res.Stderr)
}

// scenarioProcs is a client scenario that needs no status view and that the
// reference client passes.
const scenarioProcs = "client/ack/version-and-nonce"

func TestProcs_ConformingClientPasses(t *testing.T) {
	// The control: the same client, stopping on SIGTERM, passes; so an
	// error below is how it stops and nothing else.
	r := startProcsRun(t, "ref", scenarioProcs)
	res := r.cli.Wait()
	require.Equal(t, 0, res.Code, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
	rs := res.report(t).Results
	require.NotEmpty(t, rs)
	for _, x := range rs {
		assert.Equal(t, results.Pass, x.Outcome, "%s: %s", x.ID, x.Message)
	}
	r.checkNothingLeft(t, res)
	assert.Less(t, res.MaxRSS, int64(maxRSS))
}

func TestProcs_StopOutcome(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		program string // what had to be killed
	}{
		{"ref-ignores-sigterm", filepath.Base(os.Args[0])},
		{"ref-detaches", "sleep"},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := startProcsRun(t, tc.mode, scenarioProcs)
			res := r.cli.Wait()
			require.Equal(t, 1, res.Code, "an error is not a success; stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
			rs := res.report(t).Results
			require.NotEmpty(t, rs)
			for _, x := range rs {
				require.Equal(t, results.Error, x.Outcome, "%s: %s", x.ID, x.Message)
				assert.Contains(t, x.Message, "ignored SIGTERM and had to be killed")
				assert.Regexp(t, `pid \d+ \(`+tc.program+`\)`, x.Message, "names what it killed by pid and program")
				assert.NotContains(t, x.Message, "XH_", "never the command line")
			}
			if tc.mode == "ref-detaches" {
				b, err := os.ReadFile(filepath.Join(r.tag, grandchildFile))
				require.NoError(t, err)
				assert.Contains(t, rs[0].Message, "pid "+strings.TrimSpace(string(b))+" (sleep)", "the detached grandchild is the one named")
			}
			r.checkNothingLeft(t, res)
			assert.Less(t, res.MaxRSS, int64(maxRSS))
		})
	}
}

// The bar: after an interrupted run against a SIGTERM-ignoring, detaching
// client, no process and no scratch directory are left. Several pairs run
// at once, so Ctrl-C also finds clients starting and stopping.
func TestProcs_InterruptLeavesNothing(t *testing.T) {
	for i := range 3 {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			r := startProcsRun(t, "ref-detaches-ignores-sigterm", "client/ack/*")
			awaitFile(t, r.cli, filepath.Join(r.tag, connectedFile))
			r.cli.Signal(syscall.SIGINT)
			res := r.cli.Wait()
			require.Equal(t, 130, res.Code, "stdout: %s\nstderr: %s", res.Stdout, res.Stderr)
			rs := res.report(t).Results
			require.NotEmpty(t, rs, "Ctrl-C writes the report of what ran")
			r.checkNothingLeft(t, res)
			assert.Less(t, res.MaxRSS, int64(maxRSS))
		})
	}
}
