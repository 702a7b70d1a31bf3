// Package grpcgoclient runs grpc-go's own xDS client
// (google.golang.org/grpc/xds) as a client under test. grpc-go reads its
// xDS bootstrap once per process, so every client is a child process: the
// harness binary re-executed with ChildEnv set, which RunChildIfRequested
// turns into the client driver. The child exposes CSDS, for the observer
// package, on an address it announces on stdout.
package grpcgoclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/xdsconform/xdsconform/internal/process"
)

// stopGrace is how long the child gets to exit on SIGTERM; it only has to
// close a channel and a server.
const stopGrace = 2 * time.Second

// Client is a running grpc-go xDS client process.
type Client struct {
	proc    *process.Process
	csds    string
	stopped atomic.Bool
}

// Launch starts a grpc-go client with the given bootstrap JSON, pointed at
// xds:///listener, and waits (bounded by ctx) until its CSDS server is
// up. ctx bounds only the start-up: the process runs until Stop. If the
// child exits first, the error carries its output.
func Launch(ctx context.Context, bootstrapJSON []byte, listener string) (*Client, error) {
	return launch(ctx, bootstrapJSON, "xds:///"+listener, nil)
}

// LaunchTarget is Launch for a channel target written out in full, such
// as xds://authority/name (gRFC A47 federation).
func LaunchTarget(ctx context.Context, bootstrapJSON []byte, target string) (*Client, error) {
	return launch(ctx, bootstrapJSON, target, nil)
}

// launch is Launch with extra child environment, which tests use to make
// the child fail.
func launch(ctx context.Context, bootstrapJSON []byte, target string, extraEnv []string) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch grpc-go client: %w", err)
	}
	// grpc-go does not fail on a malformed bootstrap until the channel
	// resolves, and then only by never connecting: catch it here.
	if !json.Valid(bootstrapJSON) {
		return nil, fmt.Errorf("launch grpc-go client: bootstrap is not valid JSON")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("launch grpc-go client: find own executable: %w", err)
	}
	opts := process.Options{
		Env: []string{
			ChildEnv + "=" + childValue,
			targetEnv + "=" + target,
			"GRPC_XDS_BOOTSTRAP_CONFIG=" + string(bootstrapJSON),
			// A bootstrap file name would take precedence over the config.
			"GRPC_XDS_BOOTSTRAP=",
		},
		StderrTail: 16 << 10,
		// The child exits on stdin EOF: no orphaned client if the
		// harness dies without calling Stop.
		KeepStdin: true,
	}
	opts.Env = append(opts.Env, extraEnv...)
	// -test.run=^$: if a test binary forgot RunChildIfRequested in
	// TestMain, the child runs no tests (and fails Launch below) instead
	// of running the tests that launch children, recursively.
	argv := []string{exe, "-test.run=^$"}
	proc, err := process.Start(context.WithoutCancel(ctx), argv, opts)
	if err != nil {
		return nil, fmt.Errorf("launch grpc-go client: %w", err)
	}
	c := &Client{proc: proc}

	addr, err := proc.AwaitLine(ctx, csdsPrefix)
	if err != nil {
		_ = proc.Stop(stopGrace)
		if ctx.Err() == nil { // it exited on its own
			return nil, fmt.Errorf("launch grpc-go client: %w", c.exitError("exited before serving CSDS"))
		}
		return nil, fmt.Errorf("launch grpc-go client: waiting for CSDS: %w", err)
	}
	c.csds = addr
	return c, nil
}

func (c *Client) exitError(what string) error {
	cause := "exit status 0"
	if err := c.proc.ExitErr(); err != nil {
		cause = err.Error()
	}
	msg := fmt.Sprintf("grpc-go client %s (%s)", what, cause)
	if tail := strings.TrimSpace(c.proc.Tail()); tail != "" {
		msg += "; output:\n" + tail
	} else {
		msg += "; no output (does main/TestMain call grpcgoclient.RunChildIfRequested?)"
	}
	return errors.New(msg)
}

// Output is the end of what the child printed so far, stdout and stderr
// as they came, bounded (16 KiB).
func (c *Client) Output() string { return c.proc.Tail() }

// CSDSAddr is the host:port of the child's CSDS server.
func (c *Client) CSDSAddr() string { return c.csds }

// Pid is the child's process id (and process group id).
func (c *Client) Pid() int { return c.proc.Pid() }

// Exited is closed when the child has exited.
func (c *Client) Exited() <-chan struct{} { return c.proc.Exited() }

// Err is nil while the child runs; afterwards it says why it exited, with
// the tail of its output.
func (c *Client) Err() error {
	select {
	case <-c.proc.Exited():
	default:
		return nil
	}
	if c.stopped.Load() {
		return c.exitError("stopped")
	}
	return c.exitError("exited")
}

// Stop terminates the child and everything in its process group and waits
// until they are gone. It is idempotent.
func (c *Client) Stop() {
	c.stopped.Store(true)
	// Stop escalates to SIGKILL itself; an error would mean an
	// unkillable process, about which nothing more can be done here.
	_ = c.proc.Stop(stopGrace)
}
