package grpcgoclient

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/xds" // registers the xds:/// resolver and the xDS balancers
	"google.golang.org/grpc/xds/csds"

	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
)

// ChildEnv is the environment variable that turns a re-executed harness
// binary into a grpc-go xDS client; its value is childValue.
const ChildEnv = "XDSCONFORM_CHILD"

const (
	childValue = "grpc-go-client"
	// targetEnv carries the channel target, xds:///<listener>.
	targetEnv = "XDSCONFORM_TARGET"
	// csdsPrefix starts the one stdout line the child prints when ready.
	csdsPrefix = "XDSCONFORM_CSDS="
)

// RunChildIfRequested runs the grpc-go client driver and exits if this
// process was started by Launch; otherwise it returns at once. Call it
// first thing in main() and in TestMain of every package that Launches,
// since Launch re-executes the current binary.
func RunChildIfRequested() {
	if os.Getenv(ChildEnv) != childValue {
		return
	}
	if err := runChild(); err != nil {
		fmt.Fprintf(os.Stderr, "grpc-go client: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runChild is the driver: one xDS channel, kept connecting, and a CSDS
// server showing what its xDS client holds. grpc-go read the bootstrap
// from GRPC_XDS_BOOTSTRAP_CONFIG when it was initialised, which is why
// this runs in a process of its own.
func runChild() error {
	target := os.Getenv(targetEnv)
	if target == "" {
		return fmt.Errorf("%s not set", targetEnv)
	}
	// Signals first, so a Stop racing with start-up is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("channel to %s: %w", target, err)
	}
	defer conn.Close()
	// Leave idle mode without an RPC: the resolver starts and the xDS
	// client subscribes to the listener, then follows the chain.
	conn.Connect()

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("csds listener: %w", err)
	}
	cs, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		return fmt.Errorf("csds server: %w", err)
	}
	defer cs.Close()
	srv := grpc.NewServer()
	status.RegisterClientStatusDiscoveryServiceServer(srv, cs)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	defer srv.Stop()

	if _, err := fmt.Fprintf(os.Stdout, "%s%s\n", csdsPrefix, lis.Addr()); err != nil {
		return fmt.Errorf("announce csds address: %w", err)
	}

	select {
	case <-sigs:
		return nil
	case <-stdinClosed():
		// The harness died (or let go of us) without stopping us.
		return nil
	case err := <-serveErr:
		return fmt.Errorf("csds server: %w", err)
	}
}

// stdinClosed is closed when stdin, if it is a pipe, reaches EOF. Launch
// keeps the write end open, so EOF means the harness is gone. Any other
// stdin (a terminal, /dev/null) is not watched.
func stdinClosed() <-chan struct{} {
	ch := make(chan struct{})
	fi, err := os.Stdin.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return ch
	}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(ch)
	}()
	return ch
}
