// Command fixture-server is an example test build of a management server
// for xdsconform: a go-control-plane SnapshotCache served over ADS (SotW and
// delta) on one port, and the fixture API (docs/fixture-api.md) that drives
// the cache on another.
//
//	go run ./examples/fixture-server -xds-addr 127.0.0.1:18000 -fixture-addr 127.0.0.1:18001
//	xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001
//
// With -seed FILE it serves, from the start, the resources the file lists
// for one node (seed.go: a gRPC client's chain, from its listener to its
// endpoints), and applies the file again on SIGHUP, so that a change made
// to it reaches the client as a configuration change would:
//
//	go run ./examples/fixture-server -seed examples/fixture-server/seed.yaml &
//	GRPC_XDS_BOOTSTRAP=examples/fixture-server/bootstrap.json my-grpc-client xds:///my-service
//	# edit seed.yaml (a revision), then: kill -HUP %1
//
// The fixture API is package examples/snapshotfixture: it keeps the
// desired resources per node and per type, and installs a whole new
// snapshot on every change, each type at its own version. Only ADS is
// registered, and the capabilities say so: the harness then skips the
// per-type variants. Per-type services are registered the same way (see
// peers/gcpserver/handlers.go). examples/embedded runs the same server
// in-process in a go test.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/examples/snapshotfixture"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
)

func main() {
	xdsAddr := flag.String("xds-addr", "127.0.0.1:18000", "xDS listen address (xdsconform --target)")
	fixtureAddr := flag.String("fixture-addr", "127.0.0.1:18001", "fixture API listen address (xdsconform --fixture)")
	seed := flag.String("seed", "", "YAML file of resources to serve one node from the start, applied again on SIGHUP (see seed.yaml)")
	logRequests := flag.Bool("log-requests", false, "log every discovery request (type, version, nonce, names) on standard error")
	flag.Parse()
	var seeded *seedFile
	if *seed != "" {
		var err error
		if seeded, err = readSeed(*seed); err != nil {
			log.Fatal(err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	xdsLis, err := net.Listen("tcp", *xdsAddr)
	if err != nil {
		log.Fatal(err)
	}
	fixtureLis, err := net.Listen("tcp", *fixtureAddr)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("xDS on %s, fixture API on %s", xdsLis.Addr(), fixtureLis.Addr())
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	if err := run(ctx, xdsLis, fixtureLis, seeding{path: *seed, first: seeded, reload: hup, logRequests: *logRequests}); err != nil {
		log.Fatal(err)
	}
}

// seeding is what -seed asks of run: the file, as read at start (nil: no
// seeding), and the signal to apply it again on.
type seeding struct {
	path   string
	first  *seedFile
	reload <-chan os.Signal
	// logRequests logs every discovery request: a script can wait on
	// the log for a client's ACK before it changes the configuration.
	logRequests bool
}

// run serves xDS on xdsLis and the fixture API on fixtureLis until ctx ends
// or a listener fails, seeded as seed says.
func run(ctx context.Context, xdsLis, fixtureLis net.Listener, seed seeding) error {
	// ads=false: with ads=true the SnapshotCache answers a SotW request only
	// once it names every resource of the type in the snapshot.
	snapshots := cache.NewSnapshotCache(false, cache.IDHash{}, nil)

	xdsSrv := grpc.NewServer()
	var sotwCallbacks sotw.Callbacks
	var deltaCallbacks delta.Callbacks
	if seed.logRequests {
		sotwCallbacks, deltaCallbacks = requestLog{}, requestLog{}
	}
	discovery.RegisterAggregatedDiscoveryServiceServer(xdsSrv, &ads{
		sotw:  sotw.NewServer(ctx, snapshots, sotwCallbacks),
		delta: delta.NewServer(ctx, snapshots, deltaCallbacks),
	})
	fixtureSrv := grpc.NewServer()
	fixtures := snapshotfixture.New(snapshots)
	fixturepb.RegisterFixtureServer(fixtureSrv, fixtures)
	if seed.first != nil {
		if err := seed.first.apply(ctx, fixture.FromServer(fixtures), nil); err != nil {
			return fmt.Errorf("-seed %s: %w", seed.path, err)
		}
		log.Printf("serving node %q the %d resources of %s (SIGHUP applies it again)", seed.first.Node, len(seed.first.Resources), seed.path)
		go reseed(ctx, fixture.FromServer(fixtures), seed)
	}

	errc := make(chan error, 2)
	go func() { errc <- xdsSrv.Serve(xdsLis) }()
	go func() { errc <- fixtureSrv.Serve(fixtureLis) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc: // Serve returns nil only after Stop
	}
	xdsSrv.Stop()
	fixtureSrv.Stop()
	return err
}

// ads hands ADS streams to go-control-plane's SotW and delta servers.
type ads struct {
	sotw  sotw.Server
	delta delta.Server
}

func (a *ads) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return a.sotw.StreamHandler(s, resource.AnyType)
}

func (a *ads) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return a.delta.DeltaStreamHandler(s, resource.AnyType)
}

// reseed applies the seed file again on every signal of seed.reload,
// until ctx ends; a file that no longer reads is logged and skipped.
func reseed(ctx context.Context, fx fixture.Fixture, seed seeding) {
	current := seed.first
	for {
		select {
		case <-ctx.Done():
			return
		case <-seed.reload:
		}
		next, err := readSeed(seed.path)
		if err == nil {
			err = next.apply(ctx, fx, current)
		}
		if err != nil {
			log.Printf("-seed %s: not applied: %v", seed.path, err)
			continue
		}
		current = next
		log.Printf("applied %s again: node %q, %d resources", seed.path, next.Node, len(next.Resources))
	}
}

// requestLog logs each discovery request in one line: its type, the
// version and nonce it echoes (an ACK has both, a NACK an error too) and
// the names it carries. It is go-control-plane's SotW and delta callbacks
// (the package's own CallbackFuncs would pull in another module).
type requestLog struct{}

func shortType(url string) string { return url[strings.LastIndexByte(url, '.')+1:] }

func (requestLog) OnStreamRequest(_ int64, r *discovery.DiscoveryRequest) error {
	log.Printf("request %s version=%q nonce=%q error=%t names=%q", shortType(r.GetTypeUrl()), r.GetVersionInfo(), r.GetResponseNonce(), r.GetErrorDetail() != nil, r.GetResourceNames())
	return nil
}

func (requestLog) OnStreamDeltaRequest(_ int64, r *discovery.DeltaDiscoveryRequest) error {
	log.Printf("delta request %s nonce=%q error=%t subscribe=%q unsubscribe=%q", shortType(r.GetTypeUrl()), r.GetResponseNonce(), r.GetErrorDetail() != nil, r.GetResourceNamesSubscribe(), r.GetResourceNamesUnsubscribe())
	return nil
}

func (requestLog) OnStreamOpen(context.Context, int64, string) error      { return nil }
func (requestLog) OnStreamClosed(int64, *core.Node)                       {}
func (requestLog) OnDeltaStreamOpen(context.Context, int64, string) error { return nil }
func (requestLog) OnDeltaStreamClosed(int64, *core.Node)                  {}
func (requestLog) OnStreamResponse(context.Context, int64, *discovery.DiscoveryRequest, *discovery.DiscoveryResponse) {
}
func (requestLog) OnStreamDeltaResponse(int64, *discovery.DeltaDiscoveryRequest, *discovery.DeltaDiscoveryResponse) {
}
