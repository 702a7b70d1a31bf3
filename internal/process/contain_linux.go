package process

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// subreaper records that the harness became a child subreaper.
var subreaper atomic.Bool

// EnableSubreaper makes the harness a child subreaper: a process its
// programs start and then abandon (a daemon's double fork) is re-parented
// to the harness instead of to init, so it stays within reach of Stop and
// is reaped by it. An orphan that exits on its own is reaped too, when the
// harness is told of it (SIGCHLD) and after every Stop, so that zombies do
// not pile up for the rest of the run. The setting is process-wide and
// inherited by nothing; call it once, early in main, in a program that
// starts children only through this package (a child started otherwise
// could be reaped before its own Wait). Where the OS lacks it the error
// says so and the harness carries on with the process group and the launch
// marker.
func EnableSubreaper() error {
	if err := becomeSubreaper(); err != nil {
		return err
	}
	sigchld := make(chan os.Signal, 1) // SIGCHLDs that arrive during a scan coalesce
	signal.Notify(sigchld, syscall.SIGCHLD)
	go reapOnSigchld(sigchld)
	return nil
}

// becomeSubreaper is EnableSubreaper without the SIGCHLD reaper, so that a
// test can tell what Stop reaps from what the reaper does.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a child subreaper: %w", err)
	}
	subreaper.Store(true)
	return nil
}

// reapSpacing is the least time between two scans of /proc by the SIGCHLD
// reaper: a client that forks and orphans short-lived children in a loop
// must not keep the harness scanning /proc without pause. Zombies wait at
// most that long, and a zombie holds only its process table entry.
const reapSpacing = 100 * time.Millisecond

// reapOnSigchld reaps orphans each time a child of the harness changed
// state, for the life of the process (the subreaper setting lasts as
// long).
func reapOnSigchld(sigchld <-chan os.Signal) {
	for range sigchld {
		reapOrphans()
		// A rate limit, not a synchronisation: a SIGCHLD arriving now
		// waits in the channel for the next scan.
		time.Sleep(reapSpacing)
	}
}

// reapOrphans reaps every zombie child of the harness that is not the
// leader of a program it started: orphans re-parented to it as subreaper
// that have exited, on their own or killed by Stop. It waits for each such
// pid alone (never wait4(-1), which would steal a leader's exit status
// from its os/exec) and without blocking. A harness that is no subreaper
// has no children but leaders, and reaps nothing here.
func reapOrphans() {
	if !subreaper.Load() {
		return
	}
	// No leader is between its start and its registration while the gate
	// is held, so a zombie that is not a registered leader is an orphan.
	startGate.Lock()
	defer startGate.Unlock()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, ppid, ok := procStatParent(pid)
		if !ok || state != 'Z' || ppid != self || isLeader(pid) {
			continue
		}
		// A zombie's pid cannot be reused until it is reaped: this is
		// still the orphan.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}

// cgroups is the cgroup v2 directory under which each program gets a group
// of its own, found once; off is set when making or using a group failed,
// and the harness then does without.
var cgroups struct {
	once sync.Once
	base string // "" when there is no usable cgroup v2 hierarchy; set by once

	mu  sync.Mutex // guards why: concurrent Starts may fail to make a group at once
	why string     // why base is not used, for containment

	off atomic.Bool
}

// CgroupDir is the cgroup v2 directory of the calling process, found from
// /proc/self/mountinfo and /proc/self/cgroup as the harness finds the
// directory under which it makes a group for each program (programs'
// groups are named xdsconform-PID-N, PID the harness's). It is exported so
// that a program that starts the harness, which inherits its caller's
// group, can tell where to look for groups the harness left behind.
func CgroupDir() (string, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("finding the cgroup v2 directory: %w", err)
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("finding the cgroup v2 directory: %w", err)
	}
	return cgroupV2Dir(mountinfo, self)
}

func cgroupBase() string {
	cgroups.once.Do(func() {
		base, err := CgroupDir()
		if err != nil {
			setCgroupsWhy(err.Error())
			return
		}
		cgroups.base = base
	})
	if cgroups.off.Load() {
		return ""
	}
	return cgroups.base
}

func setCgroupsWhy(why string) {
	cgroups.mu.Lock()
	cgroups.why = why
	cgroups.mu.Unlock()
}

// disableCgroups makes the harness do without cgroups from now on.
func disableCgroups(why string) {
	setCgroupsWhy(why)
	cgroups.off.Store(true)
}

// containment says how the programs the harness starts are kept from
// escaping it: a cgroup (and where), a subreaper, or the process group
// and the launch marker alone. The tests use it to say why they skip.
func containment() string {
	var parts []string
	if base := cgroupBase(); base != "" {
		parts = append(parts, "cgroup v2 under "+base)
	} else {
		cgroups.mu.Lock()
		why := cgroups.why
		cgroups.mu.Unlock()
		parts = append(parts, "no cgroup ("+why+")")
	}
	if subreaper.Load() {
		parts = append(parts, "child subreaper")
	}
	return strings.Join(append(parts, "process group", LaunchEnv+" marker"), ", ")
}

// cgroupV2Dir finds the harness's own cgroup v2 directory from
// /proc/self/mountinfo and /proc/self/cgroup: the unified hierarchy may be
// mounted anywhere (/sys/fs/cgroup, /sys/fs/cgroup/unified in hybrid
// setups), and the mount may show only part of it (a cgroup namespace, a
// container's bind mount).
func cgroupV2Dir(mountinfo, selfCgroup []byte) (string, error) {
	var path string
	found := false
	for line := range strings.SplitSeq(string(selfCgroup), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			path, found = rest, true
			break
		}
	}
	if !found {
		return "", errors.New("the harness is in no cgroup v2 group")
	}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		// "id parent major:minor root mountpoint options [optional...] - fstype source superoptions"
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 || qf[0] != "cgroup2" {
			continue
		}
		root, mnt := unescapeMount(pf[3]), unescapeMount(pf[4])
		if root != "/" && path != root && !strings.HasPrefix(path, root+"/") {
			continue // this mount does not show the harness's group
		}
		rel := path
		if root != "/" {
			rel = strings.TrimPrefix(path, root)
		}
		return filepath.Join(mnt, rel), nil
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading mountinfo: %w", err)
	}
	return "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroup is the cgroup v2 group of one program.
type cgroup struct {
	dir string
}

// newCgroup makes the group for launch id and opens it for
// CLONE_INTO_CGROUP. A failure (no delegation, read-only mount) turns
// cgroups off for the rest of the run.
func newCgroup(id string) (*cgroup, *os.File) {
	base := cgroupBase()
	if base == "" {
		return nil, nil
	}
	dir := filepath.Join(base, "xdsconform-"+id)
	if err := os.Mkdir(dir, 0o755); err != nil {
		disableCgroups(fmt.Sprintf("cannot make a group under %s: %v", base, err))
		return nil, nil
	}
	f, err := os.Open(dir)
	if err != nil {
		_ = os.Remove(dir)
		disableCgroups(fmt.Sprintf("cannot open a group under %s: %v", base, err))
		return nil, nil
	}
	return &cgroup{dir: dir}, f
}

// intoCgroup makes the child start in the group whose directory is open
// as f (clone3 with CLONE_INTO_CGROUP): it is in the group before it can
// run, let alone fork.
func intoCgroup(attr *syscall.SysProcAttr, f *os.File) {
	attr.UseCgroupFD = true
	attr.CgroupFD = int(f.Fd())
}

// procs lists the live processes in the group.
func (c *cgroup) procs() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range strings.FieldsSeq(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// populated reports whether a process still lives in the group. When the
// group cannot be read it answers from cgroup.procs.
func (c *cgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if err != nil {
		return len(c.procs()) > 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v != "0"
		}
	}
	return len(c.procs()) > 0
}

// signal sends sig to every process in the group; SIGKILL goes through
// cgroup.kill where the kernel has it (5.14), which also catches a process
// forked while the list is read.
func (c *cgroup) signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		if err := os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	for _, pid := range c.procs() {
		_ = syscall.Kill(pid, sig)
	}
}

// rmdirWait bounds how long remove retries a group the kernel still
// counts as busy just after its last process exited.
const rmdirWait = time.Second

// remove deletes the (empty) group.
func (c *cgroup) remove() error {
	deadline := time.Now().Add(rmdirWait)
	for {
		err := syscall.Rmdir(c.dir)
		if err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing cgroup %s: %w", c.dir, err)
		}
		time.Sleep(pollTick) // the kernel gives no event for "removable"
	}
}
