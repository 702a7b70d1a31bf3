// Package process runs the external programs the harness tests or plays
// against (xDS clients, control planes): each in a process group, and
// where the OS allows a cgroup, of its own, marked so that stopping it
// also stops whatever it spawned, even what left the group; with its
// output kept in a bounded tail for error messages. Shutdown, on the
// harness's way out, stops whatever is still running and removes the
// scratch directories left.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Options tune how a process is started.
type Options struct {
	// Env is added to os.Environ(); later entries win.
	Env []string
	// Dir is the working directory; empty means the harness's own.
	Dir string
	// StderrTail is how many bytes of output (stderr and stdout,
	// interleaved as they arrive) are kept for Tail; default 4096.
	StderrTail int
	// KeepStdin gives the process a stdin pipe that stays open until the
	// process is stopped. A child that exits on stdin EOF then also dies
	// when the harness dies without stopping it. Otherwise stdin is
	// /dev/null.
	KeepStdin bool
}

// Process is a running external program and its process group.
type Process struct {
	cmd    *exec.Cmd
	pgid   int
	marker string // LaunchEnv=id, in the environment of all it starts
	// lastSeen are the members Stop has seen: a process being killed
	// loses its environment (and so its marker) before it is a zombie,
	// so a later scan can miss one that still runs.
	lastSeen []int
	cg       *cgroup  // its cgroup; nil without one
	stdin    *os.File // write end held open for KeepStdin, else nil

	tail  *ring
	lines chan string

	readers sync.WaitGroup // output readers; done at EOF of both pipes
	exited  chan struct{}
	exitErr error // set before exited is closed

	stopOnce sync.Once
	stopErr  error
}

const (
	defaultTail = 4096
	// lineBuffer is how many stdout lines Lines holds before dropping.
	lineBuffer = 1024
	// maxLine caps one stdout line; the rest of an overlong line is
	// dropped from Lines (it still reaches Tail).
	maxLine = 64 << 10
	// drainDelay is how long exit waits for the output pipes to reach EOF
	// after the leader exited, so Tail holds its last words. A grandchild
	// still holding the pipes must not delay Exited for ever.
	drainDelay = 500 * time.Millisecond
	// killWait bounds how long Stop waits for the group to vanish after
	// SIGKILL; only an unkillable (D-state) process takes longer.
	killWait = 10 * time.Second
)

// StartShell runs `sh -c command`; see Start.
func StartShell(ctx context.Context, command string, opts Options) (*Process, error) {
	return Start(ctx, []string{"sh", "-c", command}, opts)
}

// Start runs argv in a new process group and, where the OS allows, a
// cgroup v2 group of its own, with its launch marker (LaunchEnv) in its
// environment: whatever it starts stays within reach of Stop (see
// contain.go). stdout and stderr are captured (Tail, and Lines for
// stdout). When ctx is done the program is stopped as by Stop with a
// one-second grace; pass a context that is never cancelled to tie the
// lifetime to Stop alone. After Shutdown it starts nothing.
func Start(ctx context.Context, argv []string, opts Options) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("start process: empty command")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	started, err := beginStart()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	defer started()
	tailSize := opts.StderrTail
	if tailSize <= 0 {
		tailSize = defaultTail
	}

	// Our own pipes rather than cmd.Stdout = writer: exec's copying
	// goroutines would make Wait block until every grandchild holding the
	// pipe has exited.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: stdout pipe: %w", argv[0], err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(outR, outW)
		return nil, fmt.Errorf("start %s: stderr pipe: %w", argv[0], err)
	}
	var inR, inW *os.File
	if opts.KeepStdin {
		if inR, inW, err = os.Pipe(); err != nil {
			closeAll(outR, outW, errR, errW)
			return nil, fmt.Errorf("start %s: stdin pipe: %w", argv[0], err)
		}
	}
	id := newLaunchID()
	// The marker goes last so that no caller's entry can replace it.
	env := append(append(os.Environ(), opts.Env...), LaunchEnv+"="+id)
	command := func(cgroupDir *os.File) *exec.Cmd {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Dir = opts.Dir
		// Own process group: Stop signals -pgid and so reaches every
		// descendant that did not leave the group itself.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if cgroupDir != nil {
			intoCgroup(cmd.SysProcAttr, cgroupDir)
		}
		cmd.Stdout, cmd.Stderr = outW, errW
		if inR != nil {
			cmd.Stdin = inR
		}
		return cmd
	}
	cg, cgDir := newCgroup(id)
	startGate.RLock() // until registered: see startGate
	cmd := command(cgDir)
	err = cmd.Start()
	if cgDir != nil {
		_ = cgDir.Close()
	}
	if err != nil && cg != nil {
		// Perhaps the kernel cannot start a process into a cgroup
		// (clone3 refused): try without, and if that works, do without
		// cgroups from now on.
		_ = cg.remove()
		cg = nil
		retry := command(nil)
		if retry.Start() == nil {
			disableCgroups(fmt.Sprintf("starting a process into a cgroup failed: %v", err))
			cmd, err = retry, nil
		}
	}
	if err != nil {
		startGate.RUnlock()
		closeAll(outR, outW, errR, errW, inR, inW)
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	// The child has its copies; ours would keep the pipes open for ever.
	closeAll(outW, errW, inR)

	p := &Process{
		cmd:    cmd,
		pgid:   cmd.Process.Pid, // Setpgid with Pgid 0: the group is named after the leader
		marker: LaunchEnv + "=" + id,
		cg:     cg,
		stdin:  inW,
		tail:   newRing(tailSize),
		lines:  make(chan string, lineBuffer),
		exited: make(chan struct{}),
	}
	register(p)
	startGate.RUnlock()
	p.readers.Add(2)
	go p.readStdout(outR)
	go p.readStderr(errR)
	go p.wait()
	if ctx.Done() != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = p.Stop(time.Second)
			case <-p.exited:
			}
		}()
	}
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (p *Process) wait() {
	err := p.cmd.Wait()
	drained := make(chan struct{})
	go func() { p.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainDelay):
	}
	p.exitErr = err
	// A program that ended leaving nothing behind needs no Stop to give
	// its cgroup back; one that left something keeps it until Stop.
	if p.cg != nil && !p.cg.populated() {
		_ = p.cg.remove()
	}
	close(p.exited)
}

func (p *Process) readStderr(r *os.File) {
	defer p.readers.Done()
	defer r.Close()
	_, _ = io.Copy(p.tail, r)
}

func (p *Process) readStdout(r *os.File) {
	defer p.readers.Done()
	defer r.Close()
	defer close(p.lines)
	buf := make([]byte, 32<<10)
	var line []byte
	overlong := false
	for {
		n, err := r.Read(buf)
		chunk := buf[:n]
		_, _ = p.tail.Write(chunk)
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				line, overlong = appendCapped(line, chunk, overlong)
				break
			}
			line, overlong = appendCapped(line, chunk[:i], overlong)
			p.emit(string(bytes.TrimSuffix(line, []byte("\r"))))
			line, overlong = line[:0], false
			chunk = chunk[i+1:]
		}
		if err != nil {
			if len(line) > 0 {
				p.emit(string(bytes.TrimSuffix(line, []byte("\r"))))
			}
			return
		}
	}
}

func appendCapped(line, b []byte, overlong bool) ([]byte, bool) {
	if room := maxLine - len(line); len(b) > room {
		return append(line, b[:room]...), true
	}
	return append(line, b...), overlong
}

// emit hands a line to Lines, dropping it when nobody keeps up: a
// chatty process must never block on the harness.
func (p *Process) emit(s string) {
	select {
	case p.lines <- s:
	default:
	}
}

// Pid is the process id of the leader, which is also the process group id.
func (p *Process) Pid() int { return p.pgid }

// Exited is closed once the leader has exited (and its output has been
// read, or briefly waited for).
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitErr is the leader's exit status once Exited is closed: nil for exit
// code 0, an *exec.ExitError otherwise. Before that it is nil.
func (p *Process) ExitErr() error {
	if !p.done() {
		return nil
	}
	return p.exitErr
}

// Tail returns the last bytes the process wrote to stderr and stdout.
func (p *Process) Tail() string { return p.tail.String() }

// Lines delivers stdout line by line (without the newline). It is
// buffered and lines are dropped when it is full; it is closed when
// stdout reaches EOF.
func (p *Process) Lines() <-chan string { return p.lines }

// AwaitLine reads stdout until a line starting with prefix and returns the
// rest of it: how a program the harness starts announces the address it
// serves on. It fails when the process exits first (saying how, with its
// output tail) or when ctx ends; it does not stop the process.
func (p *Process) AwaitLine(ctx context.Context, prefix string) (string, error) {
	lines := p.lines
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil // stdout closed: the exit is on its way
				continue
			}
			if rest, found := strings.CutPrefix(line, prefix); found {
				return rest, nil
			}
		case <-p.exited:
			return "", fmt.Errorf("exited before printing %q: %v; output: %s", prefix, p.ExitErr(), p.Tail())
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %q: %w; output: %s", prefix, ctx.Err(), p.Tail())
		}
	}
}

// ErrKilled is returned (wrapped) by Stop when the program ignored
// SIGTERM and had to be killed: it is gone, but it did not stop cleanly.
var ErrKilled = errors.New("killed with SIGKILL")

// Stop sends SIGTERM to the program and everything it started (its
// process group, its cgroup, every process carrying its launch marker),
// SIGKILL after grace, and returns once the leader has been reaped and
// none of them is alive; its scratch cgroup is then removed. It is
// idempotent and safe to call concurrently; every caller waits for the
// first to finish. The error says whether some had to be killed
// (ErrKilled, naming them by pid and program) or could not be, naming
// the survivors; the exit status is ExitErr.
func (p *Process) Stop(grace time.Duration) error {
	p.stopOnce.Do(func() { p.stopErr = p.stop(grace) })
	return p.stopErr
}

func (p *Process) stop(grace time.Duration) (err error) {
	defer func() { err = errors.Join(err, p.cleanup()) }()
	if p.stdin != nil {
		_ = p.stdin.Close()
	}
	if p.gone() {
		return nil
	}
	p.remember(p.Members())
	p.signal(syscall.SIGTERM)
	if p.waitGone(grace) {
		return nil
	}
	left := p.Members()
	p.remember(left)
	p.signal(syscall.SIGKILL)
	if p.waitGone(killWait) {
		return fmt.Errorf("%w: still running %v after SIGTERM: %s", ErrKilled, grace, describe(left))
	}
	return fmt.Errorf("still alive %v after SIGKILL: %s", killWait, describe(p.Members()))
}

// cleanup reaps the orphans stop killed, and any other that died meanwhile
// unreaped, removes the cgroup and forgets the program.
func (p *Process) cleanup() error {
	reapOrphans()
	var err error
	if p.cg != nil && !p.cg.populated() {
		err = p.cg.remove()
	}
	deregister(p)
	return err
}

// Members lists the live processes of the program: its leader and
// everything it started that is in its process group, its cgroup, or
// carries its launch marker. Zombies are not counted.
func (p *Process) Members() []Member {
	var ms []Member
	have := map[int]bool{}
	add := func(m Member) {
		if !have[m.PID] {
			have[m.PID] = true
			ms = append(ms, m)
		}
	}
	if p.cg != nil {
		for _, pid := range p.cg.procs() {
			if Alive(pid) {
				add(Member{PID: pid, Program: programName(pid)})
			}
		}
	}
	if live, err := scanProc(p.pgid, p.marker); err == nil {
		for _, m := range live {
			add(m)
		}
	} else if !p.done() || groupAlive(p.pgid) {
		add(Member{PID: p.pgid, Program: "process group"})
	}
	slices.SortFunc(ms, func(a, b Member) int { return a.PID - b.PID })
	return ms
}

// gone reports whether the leader has been reaped and nothing the
// program started lives. With a cgroup that is one file; without, a scan
// of /proc.
func (p *Process) gone() bool {
	if !p.done() {
		return false
	}
	if p.cg != nil {
		return !p.cg.populated()
	}
	live, err := scanProc(p.pgid, p.marker)
	if err != nil {
		return !groupAlive(p.pgid)
	}
	if len(live) > 0 {
		p.remember(live)
		return false
	}
	// Whatever the last scan saw must be dead now, not only unmarked.
	for _, pid := range p.lastSeen {
		if Alive(pid) {
			return false
		}
	}
	return true
}

// remember adds ms to the members Stop has seen (lastSeen).
func (p *Process) remember(ms []Member) {
	for _, m := range ms {
		if !slices.Contains(p.lastSeen, m.PID) {
			p.lastSeen = append(p.lastSeen, m.PID)
		}
	}
}

// signal sends sig to the process group, while it has a live member (a
// group whose leader is reaped and that has no live member may already
// have given its number to someone else), and to every other member.
func (p *Process) signal(sig syscall.Signal) {
	if !p.done() || groupAlive(p.pgid) {
		_ = signalGroup(p.pgid, sig)
	}
	if p.cg != nil {
		p.cg.signal(sig)
		return
	}
	live, _ := scanProc(p.pgid, p.marker)
	for _, m := range live {
		// Found by group or marker: it is the program's, so its pid is
		// not someone else's.
		_ = syscall.Kill(m.PID, sig)
	}
}

func (p *Process) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// waitGone polls until gone, or d has passed.
func (p *Process) waitGone(d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	tick := pollTick
	if p.cg == nil {
		tick = markerScanTick // a scan of /proc costs more than a cgroup file
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	exited := p.exited
	for {
		if p.gone() {
			return true
		}
		select {
		case <-deadline.C:
			return p.gone()
		case <-exited:
			exited = nil // wake once on exit, then poll
		case <-ticker.C:
		}
	}
}

func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pgid, err)
	}
	return nil
}
