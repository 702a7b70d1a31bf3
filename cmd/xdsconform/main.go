// Command xdsconform is the xDS protocol conformance harness: it plays an
// xDS client against a management server, or a management server against
// an xDS client, and reports, rule by rule, where the target breaks the
// protocol.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	// The container targets (container:IMAGE) and the built-in ones
	// (builtin:…) register themselves with package targets.
	_ "github.com/xdsconform/xdsconform/docker"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/peers/builtin"
)

// Exit codes, documented in the help text and the README.
const (
	exitOK          = 0
	exitFailures    = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitInterrupted = 130
)

// version is the harness's version. A release or make build sets it with
// -ldflags "-X main.version=…"; left empty, it is resolved from the build
// information before main runs (version.go).
var version string

// memoryLimit is the Go runtime's soft memory limit for a run: under the
// 256 MiB a harness process must stay within against any target, with
// room for what the runtime does not count.
const memoryLimit = 160 << 20

func main() {
	// The built-in grpc-go client target re-executes this binary: grpc-go
	// reads its xDS bootstrap once per process.
	builtin.RunChildIfRequested()
	// Orphans of the clients the harness starts (a daemon's double fork)
	// are re-parented to it, within reach of Stop. Where the OS lacks
	// this, cgroups and the process group with the launch marker remain.
	_ = process.EnableSubreaper()
	// Everything the harness keeps is bounded in bytes, but garbage is
	// not: at Go's default pace a flood of large messages can leave the
	// heap at twice what is live. A soft limit makes the collector keep
	// up near it (GOMEMLIMIT, when set, wins).
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	// An interrupted run abandons pairs still stopping their clients:
	// nothing the harness started may outlive it, so wait for every
	// child to be gone and every scratch directory removed. The signals
	// stay caught meanwhile; this is bounded (grace, then SIGKILL).
	if err := process.Shutdown(shutdownGrace); err != nil {
		fmt.Fprintf(os.Stderr, "xdsconform: %v\n", err)
	}
	os.Exit(code)
}

// shutdownGrace is how long a client still running when the harness exits
// (an interrupted run) has after SIGTERM before it is killed.
const shutdownGrace = time.Second

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// codeOf maps an error from a command to its exit code.
func codeOf(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitUsage // cobra's own errors are flag and argument errors
}
