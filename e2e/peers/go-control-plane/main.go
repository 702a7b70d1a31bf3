// Command gcp-server is go-control-plane as an xdsconform server target,
// built from its own version-pinned module: go-control-plane's xDS server
// over a SnapshotCache or a LinearCache, and the fixture API that drives
// that cache, on one plaintext gRPC port.
//
//	gcp-server -flavour snapshot|linear [-addr 127.0.0.1:0] [-ads-only]
//
// With -ads-only it registers ADS alone and no fixture API, as a control
// plane with no test build does: the e2e suite checks that the harness
// finds out, without a fixture, which variants such a server serves.
//
// It prints "xds=HOST:PORT" on stdout once it serves, followed on the same
// line by " rest=http://HOST:PORT" when the flavour serves REST-JSON
// polling (snapshot) on a port of its own, and exits on SIGTERM
// or SIGINT (or when stdin, if a pipe, reaches EOF: the harness is gone).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/gcpserver"
)

func main() {
	flavour := flag.String("flavour", "snapshot", "the cache: snapshot or linear")
	addr := flag.String("addr", "127.0.0.1:0", "address for xDS and the fixture API")
	adsOnly := flag.Bool("ads-only", false, "serve ADS alone (no per-type service) and no fixture API")
	flag.Parse()
	if err := run(gcpserver.Flavour(*flavour), *addr, *adsOnly); err != nil {
		fmt.Fprintf(os.Stderr, "gcp-server: %v\n", err)
		os.Exit(1)
	}
}

// adsOnly registers the ADS service alone on g.
type adsOnly struct{ g *grpc.Server }

func (a adsOnly) RegisterService(d *grpc.ServiceDesc, impl any) {
	if d.ServiceName == "envoy.service.discovery.v3.AggregatedDiscoveryService" {
		a.g.RegisterService(d, impl)
	}
}

func run(flavour gcpserver.Flavour, addr string, onlyADS bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv, err := gcpserver.New(ctx, flavour)
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	g := grpc.NewServer()
	if onlyADS {
		srv.Register(adsOnly{g})
	} else {
		srv.Register(g)
		fixturepb.RegisterFixtureServer(g, srv.FixtureServer())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- g.Serve(lis) }()
	defer g.Stop()
	announce := fmt.Sprintf("xds=%s", lis.Addr())
	if h := srv.RESTHandler(); h != nil {
		host, _, _ := net.SplitHostPort(lis.Addr().String())
		rlis, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return fmt.Errorf("listen for REST: %w", err)
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() { serveErr <- hs.Serve(rlis) }()
		defer hs.Close()
		// and how long it holds a poll at the current version: none.
		announce += fmt.Sprintf(" rest=http://%s hold=%s", rlis.Addr(), srv.RESTHold())
	}
	fmt.Println(announce)

	gone := make(chan struct{})
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); close(gone) }()
	}
	select {
	case <-ctx.Done():
		return nil
	case <-gone:
		return nil
	case err := <-serveErr:
		return fmt.Errorf("serve: %w", err)
	}
}
