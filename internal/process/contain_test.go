//go:build linux

package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helperEnv makes a re-executed test binary run a helper (helpers, by
// name) instead of the tests: what is process-wide (Shutdown, the
// subreaper) is tried in a process of its own.
const helperEnv = "PROCESS_TEST_HELPER"

var helpers = map[string]func() error{
	"shutdown":       shutdownHelper,
	"subreaper":      subreaperHelper,
	"orphan-stop":    orphanStopHelper,
	"orphan-sigchld": orphanSigchldHelper,
}

func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		if err := helpers[name](); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	// Every test stops what it starts: whatever Shutdown still finds is a
	// leak of the package, and so is a cgroup left behind.
	if err := Shutdown(time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "Shutdown after the tests:", err)
		code = 1
	}
	if base := cgroupBase(); base != "" {
		left, _ := filepath.Glob(filepath.Join(base, "xdsconform-"+strconv.Itoa(os.Getpid())+"-*"))
		if len(left) > 0 {
			fmt.Fprintln(os.Stderr, "cgroups left behind:", left)
			code = 1
		}
	}
	os.Exit(code)
}

// runHelper re-executes the test binary as helper name, bounded.
func runHelper(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+name)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "helper %s: %s", name, out)
}

// detachScript starts a grandchild that leaves the process group and the
// session (setsid, double fork), ignores SIGTERM, writes its pid to
// pidFile and sleeps; the shell then says ready and, with exitFirst,
// exits at once, else waits.
func detachScript(pidFile string, exitFirst bool) string {
	end := "while :; do sleep 1; done"
	if exitFirst {
		end = "exit 0"
	}
	return `( setsid sh -c 'trap "" TERM; echo $$ > ` + Quote(pidFile) + `.tmp; mv ` + Quote(pidFile) + `.tmp ` + Quote(pidFile) + `; exec sleep 300' & ) ;` +
		` while [ ! -s ` + Quote(pidFile) + ` ]; do sleep 0.01; done; echo ready; ` + end
}

func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// withoutCgroups runs the test as on a machine that allows no cgroup.
func withoutCgroups(t *testing.T) {
	t.Helper()
	was := cgroups.off.Load()
	cgroups.off.Store(true)
	t.Cleanup(func() { cgroups.off.Store(was) })
}

// mechanisms runs f with a cgroup (where the machine allows one) and
// without.
func mechanisms(t *testing.T, f func(t *testing.T)) {
	t.Run("cgroup", func(t *testing.T) {
		if cgroupBase() == "" {
			t.Skipf("no usable cgroup v2 here: %s", containment())
		}
		f(t)
	})
	t.Run("marker", func(t *testing.T) {
		withoutCgroups(t)
		f(t)
	})
}

func TestStopKillsDetachedGrandchild(t *testing.T) {
	for _, exitFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("leader exits first %v", exitFirst), func(t *testing.T) {
			mechanisms(t, func(t *testing.T) {
				pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
				p, err := StartShell(context.Background(), detachScript(pidFile, exitFirst), Options{})
				require.NoError(t, err)
				awaitReady(t, p)
				gc := readPid(t, pidFile)
				require.True(t, Alive(gc))
				_, pgrp, _ := procStat(gc)
				require.NotEqual(t, p.Pid(), pgrp, "the grandchild left the group")
				if exitFirst {
					waitExited(t, p)
				}

				err = p.Stop(100 * time.Millisecond)
				require.ErrorIs(t, err, ErrKilled, "the grandchild ignores SIGTERM")
				assert.Contains(t, err.Error(), fmt.Sprintf("pid %d (sleep)", gc), "named by pid and program")
				assert.False(t, Alive(gc), "the detached grandchild survived Stop")
				assert.Empty(t, p.Members())
			})
		})
	}
}

func TestStopGracefulDetached(t *testing.T) {
	mechanisms(t, func(t *testing.T) {
		// A detached grandchild that does stop on SIGTERM is a clean stop.
		pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
		script := strings.Replace(detachScript(pidFile, false), `trap "" TERM; `, "", 1)
		p, err := StartShell(context.Background(), script, Options{})
		require.NoError(t, err)
		awaitReady(t, p)
		gc := readPid(t, pidFile)
		require.NoError(t, p.Stop(10*time.Second))
		assert.False(t, Alive(gc))
	})
}

func TestMembersNameTheProgramOnly(t *testing.T) {
	mechanisms(t, func(t *testing.T) {
		// Arguments may hold tokens: a member is named by its program.
		p, err := Start(context.Background(), []string{"sh", "-c", "echo ready; read x", "--token=s3cr3t"}, Options{KeepStdin: true})
		require.NoError(t, err)
		defer p.Stop(time.Second)
		awaitReady(t, p)
		ms := p.Members()
		require.Len(t, ms, 1)
		assert.Equal(t, p.Pid(), ms[0].PID)
		assert.NotEqual(t, "?", ms[0].Program)
		assert.Equal(t, fmt.Sprintf("pid %d (%s)", p.Pid(), ms[0].Program), describe(ms))
		assert.NotContains(t, describe(ms), "s3cr3t")
	})
}

func TestCgroupHoldsTheProgram(t *testing.T) {
	if cgroupBase() == "" {
		t.Skipf("no usable cgroup v2 here: %s", containment())
	}
	p, err := StartShell(context.Background(), `echo ready; exec sleep 300`, Options{})
	require.NoError(t, err)
	awaitReady(t, p)
	require.NotNil(t, p.cg, "a program starts in a cgroup where the OS allows one")
	assert.Contains(t, p.cg.procs(), p.Pid(), "the leader is in it from the start")
	dir := p.cg.dir
	require.NoError(t, p.Stop(time.Second))
	assert.NoDirExists(t, dir, "Stop gives the cgroup back")

	// A program that ends on its own leaving nothing gives it back too.
	p, err = StartShell(context.Background(), `exit 0`, Options{})
	require.NoError(t, err)
	waitExited(t, p)
	assert.NoDirExists(t, p.cg.dir)
	require.NoError(t, p.Stop(time.Second))
}

func TestLaunchMarker(t *testing.T) {
	p, err := StartShell(context.Background(), `echo "$`+LaunchEnv+`"`, Options{Env: []string{LaunchEnv + "=forged"}})
	require.NoError(t, err)
	waitExited(t, p)
	require.NoError(t, p.Stop(time.Second))
	got := strings.TrimSpace(p.Tail())
	assert.Equal(t, p.marker, LaunchEnv+"="+got, "the caller's environment cannot replace the marker")
	assert.True(t, strings.HasPrefix(got, strconv.Itoa(os.Getpid())+"-"), got)
}

func TestHasMarker(t *testing.T) {
	const m = LaunchEnv + "=12-3"
	long := strings.Repeat("A=", environChunk/2) // pushes the marker past a chunk
	for _, tc := range []struct {
		name, env string
		want      bool
	}{
		{"first", m + "\x00B=2\x00", true},
		{"middle", "A=1\x00" + m + "\x00B=2\x00", true},
		{"last without NUL", "A=1\x00" + m, true},
		{"across chunks", long + "\x00" + m + "\x00", true},
		{"longer id", "A=1\x00" + m + "4\x00", false},
		{"as a value", "A=" + m + "\x00", false},
		{"absent", "A=1\x00B=2\x00", false},
		{"empty", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, hasMarker(strings.NewReader(tc.env), m))
			assert.Equal(t, tc.want, hasMarker(iotest.OneByteReader(strings.NewReader(tc.env)), m), "one byte at a time")
		})
	}
}

func TestCgroupV2Dir(t *testing.T) {
	hybrid := `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	unified := `25 20 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
`
	container := `30 25 0:26 /docker/abc /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw
`
	escaped := `41 31 0:38 / /mnt/my\040cgroups rw - cgroup2 none rw
`
	for _, tc := range []struct {
		name, mountinfo, self, want, err string
	}{
		{"hybrid", hybrid, "4:memory:/x\n0::/\n", "/sys/fs/cgroup/unified", ""},
		{"unified", unified, "0::/user.slice/user-1000.slice/session-2.scope\n", "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope", ""},
		{"bind-mounted part", container, "0::/docker/abc/sub\n", "/sys/fs/cgroup/sub", ""},
		{"bind mount of another part", container, "0::/docker/abcd\n", "", "no cgroup v2 hierarchy"},
		{"escaped mount point", escaped, "0::/a\n", "/mnt/my cgroups/a", ""},
		{"v1 only", "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", "0::/\n", "", "no cgroup v2 hierarchy"},
		{"in no v2 group", unified, "4:memory:/x\n", "", "no cgroup v2 group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cgroupV2Dir([]byte(tc.mountinfo), []byte(tc.self))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestScratch(t *testing.T) {
	dir, err := MkdirScratch("process-test-")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600))
	require.NoError(t, RemoveScratch(dir))
	assert.NoDirExists(t, dir)
}

func TestShutdown(t *testing.T) { runHelper(t, "shutdown") }

// shutdownHelper: Shutdown stops a program that ignores SIGTERM and
// everything it detached, removes the scratch directories, and refuses
// to start anything afterwards.
func shutdownHelper() error {
	dir, err := MkdirScratch("process-test-")
	if err != nil {
		return err
	}
	pidFile := filepath.Join(dir, "grandchild.pid")
	p, err := StartShell(context.Background(), `trap '' TERM; `+detachScript(pidFile, false), Options{Dir: dir})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.AwaitLine(ctx, "ready"); err != nil {
		return err
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := Shutdown(100 * time.Millisecond); err != nil {
		return fmt.Errorf("Shutdown: %w", err)
	}
	switch {
	case Alive(p.Pid()):
		return fmt.Errorf("the leader %d survived Shutdown", p.Pid())
	case Alive(gc):
		return fmt.Errorf("the detached grandchild %d survived Shutdown", gc)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		return fmt.Errorf("scratch directory %s left: %v", dir, err)
	}
	if _, err := StartShell(context.Background(), "true", Options{}); !errors.Is(err, ErrShuttingDown) {
		return fmt.Errorf("Start after Shutdown: %v", err)
	}
	if _, err := MkdirScratch("process-test-"); !errors.Is(err, ErrShuttingDown) {
		return fmt.Errorf("MkdirScratch after Shutdown: %v", err)
	}
	return nil
}

func TestSubreaper(t *testing.T) { runHelper(t, "subreaper") }

// subreaperHelper: as a subreaper without a cgroup, the harness inherits
// a detached grandchild, kills it with Stop and reaps it, leaving no
// zombie.
func subreaperHelper() error {
	if err := EnableSubreaper(); err != nil {
		return err
	}
	disableCgroups("the test does without")
	dir, err := os.MkdirTemp("", "process-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	pidFile := filepath.Join(dir, "grandchild.pid")
	p, err := StartShell(context.Background(), detachScript(pidFile, true), Options{})
	if err != nil {
		return err
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the shell did not exit: %s", p.Tail())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return err
	}
	gc, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, ppid, ok := procStatParent(gc); !ok || ppid != os.Getpid() {
		return fmt.Errorf("the orphan %d has parent %d, not the subreaper %d", gc, ppid, os.Getpid())
	}
	err = p.Stop(100 * time.Millisecond)
	if !errors.Is(err, ErrKilled) {
		return fmt.Errorf("Stop: %v, want ErrKilled", err)
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(gc)); !os.IsNotExist(err) {
		return fmt.Errorf("the orphan %d is still there (a zombie not reaped?): %v", gc, err)
	}
	if !strings.Contains(containment(), "child subreaper") {
		return fmt.Errorf("containment() = %q", containment())
	}
	return nil
}

// orphanScript starts a grandchild that leaves the process group and the
// session (setsid, double fork), so that the harness as subreaper inherits
// it; it writes its pid to pidFile and exits on its own once the FIFO fifo
// is opened and closed by a writer. The shell says ready once the pid is
// written, then runs end.
func orphanScript(pidFile, fifo, end string) string {
	return `( setsid sh -c 'echo $$ > ` + Quote(pidFile) + `.tmp; mv ` + Quote(pidFile) + `.tmp ` + Quote(pidFile) + `; read x < ` + Quote(fifo) + `' & ) ;` +
		` while [ ! -s ` + Quote(pidFile) + ` ]; do sleep 0.01; done; echo ready; ` + end
}

// startOrphan runs orphanScript in a scratch directory and returns the
// program, the orphan's pid and a function that makes the orphan exit.
func startOrphan(dir, end string) (p *Process, orphan int, release func() error, err error) {
	pidFile, fifo := filepath.Join(dir, "orphan.pid"), filepath.Join(dir, "orphan.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		return nil, 0, nil, fmt.Errorf("mkfifo: %w", err)
	}
	p, err = StartShell(context.Background(), orphanScript(pidFile, fifo, end), Options{})
	if err != nil {
		return nil, 0, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.AwaitLine(ctx, "ready"); err != nil {
		_ = p.Stop(time.Second)
		return nil, 0, nil, err
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		_ = p.Stop(time.Second)
		return nil, 0, nil, err
	}
	orphan, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	release = func() error {
		// Opening for writing waits for the orphan's read end, which
		// it opened before the pid file was there: no wait here.
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("opening the orphan's FIFO: %w", err)
		}
		return f.Close()
	}
	return p, orphan, release, nil
}

// awaitProc polls /proc/pid/stat until done says the pid reached the state
// wanted, or fails after a bound: the kernel gives no event for "became a
// zombie" or "was reaped" that a non-parent can wait on.
func awaitProc(pid int, what string, done func(state byte, ppid int, ok bool) bool) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		state, ppid, ok := procStatParent(pid)
		if done(state, ppid, ok) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pid %d: not %s after 10s (state %q, parent %d, in /proc %v)", pid, what, state, ppid, ok)
		}
		time.Sleep(pollTick)
	}
}

func zombieOf(self int) func(byte, int, bool) bool {
	return func(state byte, ppid int, ok bool) bool { return ok && state == 'Z' && ppid == self }
}

func reaped(_ byte, _ int, ok bool) bool { return !ok }

func TestStopReapsOrphansThatExitedOnTheirOwn(t *testing.T) { runHelper(t, "orphan-stop") }

// orphanStopHelper: an orphan that exits on its own, unseen by any Stop
// (it was never alive when one looked), is a zombie of the subreaper;
// the next Stop reaps it.
func orphanStopHelper() error {
	if err := becomeSubreaper(); err != nil { // no SIGCHLD reaper: Stop alone
		return err
	}
	dir, err := os.MkdirTemp("", "process-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, orphan, release, err := startOrphan(dir, "exit 0")
	if err != nil {
		return err
	}
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the shell did not exit: %s", p.Tail())
	}
	if err := release(); err != nil {
		return err
	}
	if err := awaitProc(orphan, "a zombie of the harness", zombieOf(os.Getpid())); err != nil {
		return err
	}
	if err := p.Stop(time.Second); err != nil {
		return fmt.Errorf("Stop: %w", err)
	}
	if state, ppid, ok := procStatParent(orphan); ok {
		return fmt.Errorf("the orphan %d is left after Stop (state %q, parent %d)", orphan, state, ppid)
	}
	return nil
}

func TestSigchldReapsOrphans(t *testing.T) { runHelper(t, "orphan-sigchld") }

// orphanSigchldHelper: with EnableSubreaper, an orphan that exits on its
// own while its program still runs is reaped without any Stop, and the
// leaders' exit statuses still reach their os/exec.
func orphanSigchldHelper() error {
	if err := EnableSubreaper(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "process-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, orphan, release, err := startOrphan(dir, "exec sleep 300")
	if err != nil {
		return err
	}
	defer p.Stop(time.Second)
	if _, ppid, _ := procStatParent(orphan); ppid != os.Getpid() {
		return fmt.Errorf("the orphan %d has parent %d, not the subreaper %d", orphan, ppid, os.Getpid())
	}
	// No Stop runs until the orphan is reaped: only the reaper can.
	if err := release(); err != nil {
		return err
	}
	if err := awaitProc(orphan, "reaped", reaped); err != nil {
		return fmt.Errorf("the orphan stayed a zombie of the harness: %w", err)
	}
	// Leaders that exit at once, each a SIGCHLD and a scan: the reaper
	// must leave each exit status to its os/exec.
	const n = 32
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			q, err := StartShell(context.Background(), "exit 3", Options{})
			if err != nil {
				errs[i] = err
				return
			}
			<-q.Exited()
			if err := q.Stop(time.Second); err != nil {
				errs[i] = err
				return
			}
			var ee *exec.ExitError
			if !errors.As(q.ExitErr(), &ee) || ee.ExitCode() != 3 {
				errs[i] = fmt.Errorf("leader %d: exit status %v, want exit code 3", q.Pid(), q.ExitErr())
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	select {
	case <-p.Exited():
		return fmt.Errorf("the program ended: %v", p.ExitErr())
	default:
	}
	if err := p.Stop(time.Second); err != nil {
		return fmt.Errorf("Stop: %w", err)
	}
	var ee *exec.ExitError
	if !errors.As(p.ExitErr(), &ee) {
		return fmt.Errorf("the program's exit status %v is not its own (reaped by someone else?)", p.ExitErr())
	}
	return nil
}

// TestConcurrentCgroupFailures: Starts that fail to make a cgroup at the
// same time each record why; run under -race.
func TestConcurrentCgroupFailures(t *testing.T) {
	cgroupBase() // base is found once, before the test replaces it
	wasBase, wasOff := cgroups.base, cgroups.off.Load()
	cgroups.base = filepath.Join(t.TempDir(), "missing") // no group can be made here
	cgroups.off.Store(false)
	t.Cleanup(func() {
		cgroups.base = wasBase
		cgroups.off.Store(wasOff)
	})
	const n = 8
	var wg sync.WaitGroup
	procs := make([]*Process, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { procs[i], errs[i] = StartShell(context.Background(), "exit 0", Options{}) })
		// Also fail without starting anything, so that two failures are
		// concurrent whatever the timing of the Starts.
		wg.Go(func() { disableCgroups(fmt.Sprintf("failure %d", i)) })
		wg.Go(func() { _ = containment() })
	}
	wg.Wait()
	for i, p := range procs {
		require.NoError(t, errs[i])
		assert.Nil(t, p.cg)
		require.NoError(t, p.Stop(time.Second))
	}
	assert.Contains(t, containment(), "no cgroup (")
}
