package process

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// What a started program may leave behind, and how it is found.
//
// A process group is the first net: Stop signals it. A program can leave
// it (setsid, a double fork), so every started program also runs:
//   - in a cgroup v2 group of its own where the OS lets the harness make
//     one: nothing it starts can leave it, and cgroup.kill ends them all;
//   - with a launch marker in its environment (LaunchEnv), which its
//     descendants inherit unless they clear it: Stop scans /proc for it;
//   - under a harness that is a child subreaper (EnableSubreaper), so an
//     orphan is re-parented to the harness rather than to init, and is
//     reaped by it once dead (reapOrphans), killed or not.

// LaunchEnv is the environment variable that marks every process a
// started program spawns with the program's launch id, so that a
// descendant that left the process group is still found and stopped.
const LaunchEnv = "XDSCONFORM_LAUNCH"

// ErrShuttingDown is returned by Start and MkdirScratch once Shutdown has
// begun: the harness is exiting and must not leave anything new behind.
var ErrShuttingDown = errors.New("the harness is shutting down")

// Member is a live process that belongs to a started program.
type Member struct {
	// PID is its process id.
	PID int
	// Program is the base name of its executable (or its kernel name when
	// that cannot be read), never its arguments, which may hold tokens.
	Program string
}

// String names the member as failure messages do: by pid and program.
func (m Member) String() string { return fmt.Sprintf("pid %d (%s)", m.PID, m.Program) }

func describe(ms []Member) string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		parts = append(parts, m.String())
	}
	return strings.Join(parts, ", ")
}

// registry knows every program started and every scratch directory made
// and not yet cleaned up, so that Shutdown can finish what the abandoned
// goroutines of an interrupted run did not.
var registry = struct {
	mu       sync.Mutex
	closed   bool
	starting sync.WaitGroup // Starts between the closed check and registration
	procs    map[*Process]struct{}
	dirs     map[string]struct{}
}{procs: map[*Process]struct{}{}, dirs: map[string]struct{}{}}

// startGate keeps reapOrphans out while a program's leader is started but
// not yet registered: it would take that leader, should it exit at once,
// for an orphan, and steal its exit status from its os/exec. Starts hold it
// shared, reapOrphans exclusively.
var startGate sync.RWMutex

// launchSeq numbers the launches of this harness process.
var launchSeq atomic.Uint64

// newLaunchID is unique among the launches of all harness processes on
// the machine: the harness's pid and a sequence number.
func newLaunchID() string {
	return strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(launchSeq.Add(1), 10)
}

// beginStart reserves a start; done must be called once the process is
// registered (or failed to start).
func beginStart() (done func(), err error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.closed {
		return nil, ErrShuttingDown
	}
	registry.starting.Add(1)
	return registry.starting.Done, nil
}

func register(p *Process) {
	registry.mu.Lock()
	registry.procs[p] = struct{}{}
	registry.mu.Unlock()
}

func deregister(p *Process) {
	registry.mu.Lock()
	delete(registry.procs, p)
	registry.mu.Unlock()
}

// isLeader reports whether pid is the leader of a registered program: a
// child the os/exec of its Process reaps, never to be reaped here.
func isLeader(pid int) bool {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	for p := range registry.procs {
		if p.pgid == pid {
			return true
		}
	}
	return false
}

// MkdirScratch makes a scratch directory (as os.MkdirTemp("", pattern))
// that Shutdown removes if RemoveScratch was not called.
func MkdirScratch(pattern string) (string, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.closed {
		return "", ErrShuttingDown
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", fmt.Errorf("making a scratch directory: %w", err)
	}
	registry.dirs[dir] = struct{}{}
	return dir, nil
}

// RemoveScratch removes a directory made by MkdirScratch, with everything
// in it. Stop the program using it first.
func RemoveScratch(dir string) error {
	// Removed before it is forgotten: a Shutdown running meanwhile then
	// removes it too, rather than letting the harness exit while this
	// removal (on an abandoned goroutine) is still under way.
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing scratch directory %s: %w", dir, err)
	}
	registry.mu.Lock()
	delete(registry.dirs, dir)
	registry.mu.Unlock()
	return nil
}

// Shutdown is the harness's last act before it exits, interrupted or not:
// it refuses new programs and scratch directories, stops every program
// still running (SIGTERM, SIGKILL after grace), waits until they and
// everything they started are gone, and removes every scratch directory
// left. It is bounded: grace plus the SIGKILL wait of Stop. The error
// names what could not be killed or removed.
func Shutdown(grace time.Duration) error {
	registry.mu.Lock()
	registry.closed = true
	registry.mu.Unlock()
	registry.starting.Wait() // a Start under way registers its process
	registry.mu.Lock()
	procs := make([]*Process, 0, len(registry.procs))
	for p := range registry.procs {
		procs = append(procs, p)
	}
	registry.mu.Unlock()

	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() {
			// Having to kill is expected here: the run was cut short.
			if err := p.Stop(grace); err != nil && !errors.Is(err, ErrKilled) {
				errs[i] = err
			}
		})
	}
	wg.Wait()

	registry.mu.Lock()
	dirs := make([]string, 0, len(registry.dirs))
	for d := range registry.dirs {
		dirs = append(dirs, d)
	}
	registry.mu.Unlock()
	slices.Sort(dirs)
	for _, d := range dirs {
		errs = append(errs, RemoveScratch(d))
	}
	return errors.Join(errs...)
}

// markerScanTick is how often Stop scans /proc for the launch's processes
// while it waits for them to go; a cgroup is read every pollTick.
const (
	pollTick       = 10 * time.Millisecond
	markerScanTick = 25 * time.Millisecond
)

// environChunk is how much of a /proc/PID/environ is held at once while
// looking for the marker: environments can be large, reads are bounded.
const environChunk = 16 << 10

// hasMarker reports whether r, a NUL-separated environment, holds the
// entry marker (e.g. "XDSCONFORM_LAUNCH=123-4"), reading it in bounded
// chunks.
func hasMarker(r io.Reader, marker string) bool {
	want := []byte("\x00" + marker + "\x00")
	buf := make([]byte, 0, environChunk+len(want))
	buf = append(buf, 0) // the first entry has no NUL before it
	chunk := make([]byte, environChunk)
	for {
		n, err := r.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if err != nil {
			// The last entry may lack its NUL.
			return bytes.Contains(append(buf, 0), want)
		}
		if bytes.Contains(buf, want) {
			return true
		}
		// Keep what could be the start of a match cut by the chunk.
		if keep := len(want) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
	}
}

// procMarked reports whether pid's environment holds marker.
func procMarked(pid int, marker string) bool {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	defer f.Close()
	return hasMarker(f, marker)
}

// programName names pid by its executable's base name, else by the
// kernel's name for it: never by its command line.
func programName(pid int) string {
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil {
		exe = strings.TrimSuffix(exe, " (deleted)")
		if i := strings.LastIndexByte(exe, '/'); i >= 0 {
			exe = exe[i+1:]
		}
		if exe != "" {
			return exe
		}
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}

// scanProc lists the live (not zombie) processes in process group pgid or
// whose environment holds marker.
func scanProc(pgid int, marker string) (live []Member, err error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("reading /proc: %w", err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pgrp, ok := procStat(pid)
		if !ok || state == 'Z' || state == 'X' {
			continue
		}
		if pgrp == pgid || (marker != "" && procMarked(pid, marker)) {
			live = append(live, Member{PID: pid, Program: programName(pid)})
		}
	}
	return live, nil
}

// procStatParent reads the state and parent of pid from /proc/PID/stat.
func procStatParent(pid int) (state byte, ppid int, ok bool) {
	f, ok := procStatFields(pid)
	if !ok {
		return 0, 0, false
	}
	pp, err := strconv.Atoi(string(f[1]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pp, true
}
