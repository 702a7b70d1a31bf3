package targets_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// A --client-cmd client is stopped with everything it started and its
// scratch directory removed; one that ignores SIGTERM says so in Stop's
// error, which makes its pair an error.
func TestClients_CommandStop(t *testing.T) {
	for _, tc := range []struct {
		name, body, err string
	}{
		// READY writes the marker the test waits for: only once the
		// process that must ignore SIGTERM has set its trap, so that Stop
		// cannot come before it.
		{"stops on SIGTERM", `READY; exec sleep 300`, ""},
		{"ignores SIGTERM", `trap '' TERM; READY; exec sleep 300`, "ignored SIGTERM and had to be killed"},
		{"detached child ignores SIGTERM", `( setsid sh -c "trap '' TERM; READY; exec sleep 300" & ); exec sleep 300`, "ignored SIGTERM and had to be killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := filepath.Join(t.TempDir(), "dir")
			ready := `echo {{.Dir}} > ` + process.Quote(started) + `.tmp && mv ` + process.Quote(started) + `.tmp ` + process.Quote(started)
			c, err := targets.NewClients(targets.ClientOptions{Command: strings.Replace(tc.body, "READY", ready, 1), Observer: targets.ObserveNone})
			require.NoError(t, err)
			run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.SotWADS})
			require.NoError(t, err)
			var dir string
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(started)
				dir = strings.TrimSpace(string(b))
				return err == nil
			}, 10*time.Second, 10*time.Millisecond, "the client command never ran")
			require.DirExists(t, dir)

			err = run.Stop()
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, process.ErrKilled)
				assert.ErrorContains(t, err, tc.err)
				assert.ErrorContains(t, err, "(sleep)", "names what it killed by program")
			}
			assert.NoDirExists(t, dir, "the scratch directory outlived the client")
		})
	}
}

// A --client-cmd runs where the harness was started, so that relative
// paths in it mean what they mean on the command line, or in --client-dir;
// {{.Dir}} stays the scenario's scratch directory either way.
func TestClients_CommandDir(t *testing.T) {
	here, err := os.Getwd()
	require.NoError(t, err)
	elsewhere := t.TempDir()
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"default: the harness's directory", "", here},
		{"--client-dir", elsewhere, elsewhere},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "where")
			q := process.Quote(out)
			cmd := `echo "$(pwd -P)" {{.Dir}} > ` + q + `.tmp && mv ` + q + `.tmp ` + q + `; exec sleep 300`
			c, err := targets.NewClients(targets.ClientOptions{Command: cmd, Dir: tc.dir, Observer: targets.ObserveNone})
			require.NoError(t, err)
			run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.SotWADS})
			require.NoError(t, err)
			defer func() { require.NoError(t, run.Stop()) }()
			var fields []string
			require.Eventually(t, func() bool {
				b, err := os.ReadFile(out)
				fields = strings.Fields(string(b))
				return err == nil
			}, 10*time.Second, 10*time.Millisecond, "the client command never ran")
			require.Len(t, fields, 2)
			want, err := filepath.EvalSymlinks(tc.want)
			require.NoError(t, err)
			assert.Equal(t, want, fields[0], "the working directory")
			assert.NotEqual(t, fields[0], fields[1], "{{.Dir}} is the scratch directory, not the working one")
			assert.DirExists(t, fields[1])
		})
	}

	file := filepath.Join(elsewhere, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, tc := range []struct {
		opts targets.ClientOptions
		err  string
	}{
		{targets.ClientOptions{Target: targets.BuiltinReference, Dir: elsewhere}, "--client-dir only applies to --client-cmd"},
		{targets.ClientOptions{Command: "true", Dir: filepath.Join(elsewhere, "absent")}, "no such file or directory"},
		{targets.ClientOptions{Command: "true", Dir: file}, "not a directory"},
	} {
		_, err := targets.NewClients(tc.opts)
		assert.ErrorContains(t, err, tc.err)
	}
}

// A message about a launched client that did not come up in time names
// --start-timeout and carries what the client printed, or says that it
// printed nothing; a client the harness does not read adds nothing.
func TestClients_StartTimeoutMessage(t *testing.T) {
	err := targets.StartTimeoutError("the client never connected", 1500*time.Millisecond, errors.New("timed out"))
	assert.EqualError(t, err, "the client never connected within --start-timeout 1.5s (raise it if the client is only slow to start): timed out")

	for _, tc := range []struct {
		name, cmd, note string
	}{
		{"says why", `echo 'waiting for the config service' >&2; exec sleep 300`, "\nThe client's output ends with:\nwaiting for the config service\n"},
		{"says nothing", `exec sleep 300`, "\nThe client has printed nothing."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := targets.NewClients(targets.ClientOptions{Command: tc.cmd, Observer: targets.ObserveNone})
			require.NoError(t, err)
			run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.SotWADS})
			require.NoError(t, err)
			defer func() { require.NoError(t, run.Stop()) }()
			// The output is read as the process writes it: wait for it.
			assert.Eventually(t, func() bool { return targets.OutputNote(run) == tc.note }, 10*time.Second, 10*time.Millisecond,
				"note: %q", targets.OutputNote(run))
		})
	}

	c, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference})
	require.NoError(t, err)
	run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.SotWADS})
	require.NoError(t, err)
	defer func() { require.NoError(t, run.Stop()) }()
	assert.Empty(t, targets.OutputNote(run), "an in-process client prints nowhere the harness reads")
	assert.Empty(t, targets.OutputNote(nil))
}
