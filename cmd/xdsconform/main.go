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
	"syscall"

	"github.com/xdsconform/xdsconform/grpcgoclient"
)

// Exit codes, documented in the help text and the README.
const (
	exitOK          = 0
	exitFailures    = 1
	exitUsage       = 2
	exitUnreachable = 3
	exitInterrupted = 130
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	// The built-in grpc-go client target re-executes this binary: grpc-go
	// reads its xDS bootstrap once per process.
	grpcgoclient.RunChildIfRequested()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

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
