// Command fixture-server is an example test build of a management server
// for xdsconform: a go-control-plane SnapshotCache served over ADS (SotW and
// delta) on one port, and the fixture API (docs/fixture-api.md) that drives
// the cache on another.
//
//	go run ./examples/fixture-server -xds-addr 127.0.0.1:18000 -fixture-addr 127.0.0.1:18001
//	xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001
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
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/examples/snapshotfixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
)

func main() {
	xdsAddr := flag.String("xds-addr", "127.0.0.1:18000", "xDS listen address (xdsconform --target)")
	fixtureAddr := flag.String("fixture-addr", "127.0.0.1:18001", "fixture API listen address (xdsconform --fixture)")
	flag.Parse()

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
	if err := run(ctx, xdsLis, fixtureLis); err != nil {
		log.Fatal(err)
	}
}

// run serves xDS on xdsLis and the fixture API on fixtureLis until ctx ends
// or a listener fails.
func run(ctx context.Context, xdsLis, fixtureLis net.Listener) error {
	// ads=false: with ads=true the SnapshotCache answers a SotW request only
	// once it names every resource of the type in the snapshot.
	snapshots := cache.NewSnapshotCache(false, cache.IDHash{}, nil)

	xdsSrv := grpc.NewServer()
	discovery.RegisterAggregatedDiscoveryServiceServer(xdsSrv, &ads{
		sotw:  sotw.NewServer(ctx, snapshots, nil),
		delta: delta.NewServer(ctx, snapshots, nil),
	})
	fixtureSrv := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fixtureSrv, snapshotfixture.New(snapshots))

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
