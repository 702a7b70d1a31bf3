package process

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func waitExited(t *testing.T, p *Process) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatalf("process did not exit; output: %s", p.Tail())
	}
}

// awaitReady waits (bounded) for the shell's "ready" line.
func awaitReady(t *testing.T, p *Process) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.AwaitLine(ctx, "ready")
	require.NoError(t, err)
}

func TestExitAtOnce(t *testing.T) {
	p, err := StartShell(context.Background(), `echo out; echo "boom: $GREETING" >&2; exit 3`,
		Options{Env: []string{"GREETING=hi there"}})
	require.NoError(t, err)
	waitExited(t, p)

	var ee *exec.ExitError
	require.ErrorAs(t, p.ExitErr(), &ee)
	assert.Equal(t, 3, ee.ExitCode())
	assert.Contains(t, p.Tail(), "boom: hi there")
	assert.Contains(t, p.Tail(), "out")

	var lines []string
	for l := range p.Lines() { // closed at stdout EOF
		lines = append(lines, l)
	}
	assert.Equal(t, []string{"out"}, lines)
	require.NoError(t, p.Stop(time.Second), "Stop after exit is harmless")
}

func TestExitZeroAndDir(t *testing.T) {
	dir := t.TempDir()
	p, err := StartShell(context.Background(), `pwd`, Options{Dir: dir})
	require.NoError(t, err)
	waitExited(t, p)
	require.NoError(t, p.ExitErr())
	got := strings.TrimSpace(p.Tail())
	want, _ := filepath.EvalSymlinks(dir)
	assert.Equal(t, want, got)
}

func TestStopKillsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	// The shell ignores SIGTERM so Stop must escalate to SIGKILL; its
	// child sleep is in the same group and must go too.
	p, err := StartShell(context.Background(),
		`trap '' TERM; sleep 300 & echo $! > `+Quote(pidFile)+`; echo ready; wait`, Options{})
	require.NoError(t, err)

	select {
	case l := <-p.Lines():
		require.Equal(t, "ready", l)
	case <-time.After(10 * time.Second):
		t.Fatalf("no ready line; output: %s", p.Tail())
	}
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.True(t, Alive(child))
	require.True(t, groupAlive(p.Pid()))

	require.ErrorIs(t, p.Stop(200*time.Millisecond), ErrKilled, "it ignored SIGTERM")
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the leader exited")
	}
	assert.Error(t, p.ExitErr(), "killed by a signal")
	// The child may linger as a zombie if nobody reaps orphans, which
	// Alive does not count.
	assert.False(t, Alive(child), "child sleep survived Stop")
	assert.False(t, groupAlive(p.Pid()))
	require.ErrorIs(t, p.Stop(time.Second), ErrKilled, "idempotent")
}

func TestStopGraceful(t *testing.T) {
	p, err := StartShell(context.Background(), `trap 'echo bye; exit 0' TERM; echo ready; while :; do sleep 0.05; done`, Options{})
	require.NoError(t, err)
	awaitReady(t, p)
	require.NoError(t, p.Stop(10*time.Second))
	assert.Contains(t, p.Tail(), "bye")
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := StartShell(ctx, `echo ready; sleep 300`, Options{})
	require.NoError(t, err)
	awaitReady(t, p)
	cancel()
	waitExited(t, p)
	require.NoError(t, p.Stop(time.Second))
	assert.False(t, groupAlive(p.Pid()))
}

func TestKeepStdin(t *testing.T) {
	// cat exits at stdin EOF, which comes when the write end we hold closes.
	p, err := StartShell(context.Background(), `echo ready; cat; echo eof`, Options{KeepStdin: true})
	require.NoError(t, err)
	awaitReady(t, p)
	select {
	case <-p.Exited():
		t.Fatal("exited although stdin is open")
	case <-time.After(50 * time.Millisecond):
	}
	// What the harness dying does to the pipe.
	require.NoError(t, p.stdin.Close())
	waitExited(t, p)
	assert.NoError(t, p.ExitErr())
	assert.Contains(t, p.Tail(), "eof")
	require.NoError(t, p.Stop(time.Second))
}

func TestTailBounded(t *testing.T) {
	p, err := StartShell(context.Background(), `i=0; while [ $i -lt 200 ]; do echo "line $i" >&2; i=$((i+1)); done`, Options{StderrTail: 64})
	require.NoError(t, err)
	waitExited(t, p)
	note, tail, found := strings.Cut(p.Tail(), "\n")
	require.True(t, found)
	assert.Regexp(t, `^\[\d+ earlier bytes elided\]$`, note)
	assert.LessOrEqual(t, len(tail), 64)
	assert.True(t, strings.HasSuffix(tail, "line 199\n"), tail)
}

func TestRing(t *testing.T) {
	r := newRing(5)
	_, _ = r.Write([]byte("ab"))
	assert.Equal(t, "ab", r.String())
	_, _ = r.Write([]byte("cdefg"))
	assert.Equal(t, "[2 earlier bytes elided]\ncdefg", r.String())
	_, _ = r.Write([]byte("hi"))
	assert.Equal(t, "[4 earlier bytes elided]\nefghi", r.String())
	_, _ = r.Write([]byte("jklmnopq"))
	assert.Equal(t, "[12 earlier bytes elided]\nmnopq", r.String())
	_, _ = r.Write([]byte("r"))
	assert.Equal(t, "[13 earlier bytes elided]\nnopqr", r.String())

	r = newRing(4)
	_, _ = r.Write([]byte("abc"))
	_, _ = r.Write([]byte("de"))
	assert.Equal(t, "[1 earlier bytes elided]\nbcde", r.String())

	r = newRing(3)
	_, _ = r.Write([]byte("xyz"))
	assert.Equal(t, "xyz", r.String(), "exactly full: nothing elided")
}

func TestStartErrors(t *testing.T) {
	_, err := Start(context.Background(), nil, Options{})
	assert.Error(t, err)
	_, err = Start(context.Background(), []string{"/does/not/exist"}, Options{})
	assert.Error(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Start(ctx, []string{"true"}, Options{})
	assert.Error(t, err)
}

func TestExpand(t *testing.T) {
	got, err := Expand(`client --bootstrap {{.Bootstrap}} --target {{.Target}}`, map[string]string{
		"Bootstrap": "/tmp/dir with space/b.json",
		"Target":    `it's; rm -rf /`,
	})
	require.NoError(t, err)
	assert.Equal(t, `client --bootstrap '/tmp/dir with space/b.json' --target 'it'\''s; rm -rf /'`, got)

	// The quoting survives a real shell: each value is one argument.
	p, err := StartShell(context.Background(), mustExpand(t, `printf '%s\n' {{.A}} {{.B}}`, map[string]string{"A": `x y`, "B": `'$HOME"`}), Options{})
	require.NoError(t, err)
	waitExited(t, p)
	var lines []string
	for l := range p.Lines() {
		lines = append(lines, l)
	}
	assert.Equal(t, []string{"x y", `'$HOME"`}, lines)

	_, err = Expand(`client {{.Missing}}`, map[string]string{"Other": "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Missing")

	_, err = Expand(`client {{.Broken`, nil)
	assert.Error(t, err)
}

func mustExpand(t *testing.T, tmpl string, vars map[string]string) string {
	t.Helper()
	s, err := Expand(tmpl, vars)
	require.NoError(t, err)
	return s
}

func TestQuote(t *testing.T) {
	assert.Equal(t, `''`, Quote(""))
	assert.Equal(t, `'abc'`, Quote("abc"))
	assert.Equal(t, `'a'\''b'`, Quote("a'b"))
}

func TestAwaitLine(t *testing.T) {
	for _, tc := range []struct {
		name, command, want, err string
		timeout                  time.Duration
	}{
		{"announced", `echo noise; echo ADDR=127.0.0.1:1234; exec sleep 60`, "127.0.0.1:1234", "", 10 * time.Second},
		{"exits first", `echo noise; echo "cannot bind" >&2; exit 1`, "", "exited before printing", 10 * time.Second},
		{"never announces", `echo noise; exec sleep 60`, "", "context deadline exceeded", 200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := StartShell(context.Background(), tc.command, Options{})
			require.NoError(t, err)
			defer p.Stop(time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), tc.timeout)
			defer cancel()
			got, err := p.AwaitLine(ctx, "ADDR=")
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}
