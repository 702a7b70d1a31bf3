// Command istio-server is istiod's xDS server (Istio's pilot DiscoveryServer)
// as an xdsconform server target, built from its own version-pinned module:
// the server Istio's own xDS tests start (pilot/test/xds
// NewFakeDiscoveryServer: the real DiscoveryServer, push queue, debouncing
// and generators over an in-memory config store and service registry),
// registered on a plain grpc.NewServer() as the fake registers it (ADS
// only, SotW and delta), with the fixture API on the same plaintext port.
//
//	istio-server [-addr 127.0.0.1:0] [-debounce 100ms] [-log FILE] [-await-served=false]
//
// It prints "xds=HOST:PORT" on stdout once it serves and exits on SIGTERM
// or SIGINT (or when stdin, if a pipe, reaches EOF: the harness is gone).
//
// # Nodes
//
// Istio parses node ids as TYPE~IP~ID~DOMAIN and takes a sidecar's
// namespace from the first label of DOMAIN (pilot/pkg/model/context.go).
// Every pair gets a namespace of its own, and one root-namespace Sidecar
// (egress "./*") lets each sidecar see its own namespace only, so up to 256
// pairs run side by side: run the suite with
//
//	--node-id 'sidecar~127.0.0.1~{{.NodeID}}~{{.NodeID}}.svc.cluster.local'
//
// # Names and revisions (fixture API builds_content, generates_names)
//
// Istio builds xDS from its own model, so the fixture translates each
// resource the harness sets into Istio configuration in the node's
// namespace, and answers with the name Istio serves it under and the
// fields that tell its revisions apart:
//   - a cluster N is a ServiceEntry c-N (host N.c.xdsconform.test, TCP
//     port 80, static resolution) and a DestinationRule c-N carrying the
//     cluster's connect_timeout (the revision field); served as
//     outbound|80||N.c.xdsconform.test;
//   - an endpoint assignment N is a ServiceEntry e-N (host
//     N.e.xdsconform.test, TCP port 80) with one endpoint, 192.0.2.1 on the
//     assignment's first endpoint port (the revision field); served as
//     outbound|80||N.e.xdsconform.test;
//   - a route configuration N is a ServiceEntry r-N with an HTTP port of
//     its own, P, served as the route configuration "P"; each revision
//     gives the entry a host of its own, which becomes a virtual host's
//     domain (the revision field).
//
// Every sidecar also gets Istio's fixed resources (clusters
// BlackHoleCluster, PassthroughCluster, InboundPassthroughCluster; a
// catch-all virtual host in every route), and a ServiceEntry brings a
// cluster, an endpoint assignment and a listener whatever type it stands
// for: Istio serves derived configuration, not resources one by one.
//
// It does not require the xdsconform module, whose grpc and
// go-control-plane would raise Istio's: it builds its own copy of the
// fixture API's generated code (fixturepb, written by make generate).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"

	xdsfake "istio.io/istio/pilot/test/xds"
	istiolog "istio.io/istio/pkg/log"

	"github.com/xdsconform/xdsconform/e2e/peers/istio/fixturepb"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address for xDS and the fixture API")
	debounce := flag.Duration("debounce", 100*time.Millisecond, "how long istiod waits for quiet before it pushes a change (PILOT_DEBOUNCE_AFTER; istiod's default is 100ms)")
	logFile := flag.String("log", "", "file for Istio's own log (default: errors only, on stderr)")
	awaitServed := flag.Bool("await-served", true, "fixture calls return once istiod serves the change, as a conformance run needs; false: once the config store took it, as a load run needs, whose churn must not wait for istiod")
	flag.Parse()
	if err := run(*addr, *debounce, *logFile, *awaitServed); err != nil {
		fmt.Fprintf(os.Stderr, "istio-server: %v\n", err)
		os.Exit(1)
	}
}

// rootSidecar is the mesh-wide Sidecar: "./*" resolves to each proxy's own
// namespace (pilot/pkg/model/sidecar.go), so a pair's sidecar imports only
// the services of its own namespace, and Istio pushes it only their
// changes.
const rootSidecar = `apiVersion: networking.istio.io/v1
kind: Sidecar
metadata:
  name: default
  namespace: istio-system
spec:
  egress:
  - hosts: ["./*"]
`

func run(addr string, debounce time.Duration, logFile string, awaitServed bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := configureLog(logFile); err != nil {
		return err
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	t := &failer{}
	defer t.runCleanups()
	// The fake serves its own grpc server on an in-memory pipe, unused
	// here: the harness dials the port below.
	fs := xdsfake.NewFakeDiscoveryServer(t, xdsfake.FakeOptions{DebounceTime: debounce, ConfigString: rootSidecar})
	// Istio admits 15+5*GOMAXPROCS new streams a second, one at a time
	// (features.RequestLimit), and refuses the rest with
	// ResourceExhausted after a second: a limit that protects istiod from
	// reconnect storms of real fleets, which 256 pairs starting at once
	// would hit. Limit 0 disables it (discovery.go).
	fs.Discovery.RequestRateLimit = rate.NewLimiter(0, 0)

	g := grpc.NewServer()
	fs.Discovery.Register(g)
	var gen generator
	if awaitServed {
		gen = fakeGenerator{fs}
	}
	fixturepb.RegisterFixtureServer(g, newFixture(fs.Store(), gen, istioVersion()))
	serveErr := make(chan error, 1)
	go func() { serveErr <- g.Serve(lis) }()
	defer g.Stop()
	fmt.Printf("xds=%s\n", lis.Addr())

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

// configureLog sends Istio's log to file, or keeps only its errors on
// stderr: at its default level it logs every push and connection.
func configureLog(file string) error {
	o := istiolog.DefaultOptions()
	if file != "" {
		o.OutputPaths, o.ErrorOutputPaths = []string{file}, []string{file}
	} else {
		o.SetDefaultOutputLevel("all", istiolog.ErrorLevel)
		o.OutputPaths, o.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	}
	if err := istiolog.Configure(o); err != nil {
		return fmt.Errorf("configuring Istio's log: %w", err)
	}
	return nil
}

// istioVersion is the Istio module the binary was built with.
func istioVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "istio.io/istio" {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// failer is the test.Failer NewFakeDiscoveryServer reports to and
// registers its shutdown with (pkg/test/failer.go). Outside a test, a
// failure ends the server: Fatal may come from the fake's Serve goroutine,
// where nothing could return it, and the harness sees the exit and the
// message on stderr. Outside the process the fake holds only the
// temporary directories it asks for (TempDir), removed on a clean stop.
type failer struct {
	mu       sync.Mutex
	cleanups []func()
}

func (f *failer) fail(msg string) {
	fmt.Fprintf(os.Stderr, "istio-server: istio's fake discovery server: %s\n", strings.TrimSpace(msg))
	os.Exit(1)
}

func (f *failer) Fail()                     { f.fail("failed") }
func (f *failer) FailNow()                  { f.fail("failed") }
func (f *failer) Fatal(a ...any)            { f.fail(fmt.Sprint(a...)) }
func (f *failer) Fatalf(s string, a ...any) { f.fail(fmt.Sprintf(s, a...)) }
func (f *failer) Log(a ...any)              { fmt.Fprintln(os.Stderr, a...) }
func (f *failer) Logf(s string, a ...any)   { fmt.Fprintf(os.Stderr, s+"\n", a...) }
func (f *failer) Helper()                   {}
func (f *failer) Skip(a ...any)             { f.fail("skipped: " + fmt.Sprint(a...)) }

func (f *failer) TempDir() string {
	d, err := os.MkdirTemp("", "istio-server-")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = os.RemoveAll(d) })
	return d
}

func (f *failer) Cleanup(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups = append(f.cleanups, fn)
}

// runCleanups runs the fake's shutdown, last registered first.
func (f *failer) runCleanups() {
	f.mu.Lock()
	c := f.cleanups
	f.cleanups = nil
	f.mu.Unlock()
	for i := len(c) - 1; i >= 0; i-- {
		c[i]()
	}
}
