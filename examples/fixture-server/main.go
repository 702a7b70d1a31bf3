// Command fixture-server is an example test build of a management server
// for xdsconform: a go-control-plane SnapshotCache served over ADS (SotW and
// delta) on one port, and the fixture API (docs/fixture-api.md) that drives
// the cache on another.
//
//	go run ./examples/fixture-server -xds-addr 127.0.0.1:18000 -fixture-addr 127.0.0.1:18001
//	xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001
//
// The fixture keeps the desired resources per node and per type, and
// installs a whole new snapshot on every change, each type at its own
// version. Only ADS is registered, and the capabilities say so: the
// harness then skips the per-type variants. Per-type services are
// registered the same way (see peers/gcpserver/handlers.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	// Every served type must be linked in, or UnmarshalNew cannot decode
	// it; cache/v3 already brings in all of them but Secret.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

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
	fixturepb.RegisterFixtureServer(fixtureSrv, newFixture(snapshots))

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

// typeURLs are the types served: all the SnapshotCache stores that the
// harness knows.
var typeURLs = []string{
	resource.ListenerType, resource.RouteType, resource.ScopedRouteType, resource.VirtualHostType,
	resource.ClusterType, resource.EndpointType, resource.SecretType, resource.RuntimeType,
}

// fixtureServer implements the fixture API over a SnapshotCache.
type fixtureServer struct {
	fixturepb.UnimplementedFixtureServer

	cache cache.SnapshotCache

	// mu serialises changes, so snapshots are installed in version order.
	mu    sync.Mutex
	nodes map[string]*node
}

// node is one node's desired state.
type node struct {
	// resources: type URL -> name -> resource.
	resources map[string]map[string]types.Resource
	// versions counts the changes per type URL. Counters only grow, also
	// across Reset: a client holding an old version must see a change.
	versions map[string]int
}

func newFixture(c cache.SnapshotCache) *fixtureServer {
	return &fixtureServer{cache: c, nodes: map[string]*node{}}
}

func (f *fixtureServer) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion:       "v1",
		Server:           "fixture-server example (go-control-plane SnapshotCache)",
		TypeUrls:         typeURLs,
		Variants:         []string{"sotw-ads", "delta-ads"},
		LegacyWildcard:   true,
		ExplicitWildcard: true,
		GeneratesNames:   false, // we serve the names the harness asks for
		NodeScoped:       true,  // the SnapshotCache keeps one snapshot per node id
	}, nil
}

func (f *fixtureServer) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	if !served(r.GetTypeUrl()) || r.GetResource().GetTypeUrl() != r.GetTypeUrl() {
		return nil, status.Errorf(codes.InvalidArgument, "type %q, resource of type %q", r.GetTypeUrl(), r.GetResource().GetTypeUrl())
	}
	m, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "unpack resource: %v", err)
	}
	// The cache keys resources by their own name.
	if got := cache.GetResourceName(m); r.GetName() == "" || got != r.GetName() {
		return nil, status.Errorf(codes.InvalidArgument, "resource names itself %q, request says %q", got, r.GetName())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	if n.resources[r.GetTypeUrl()] == nil {
		n.resources[r.GetTypeUrl()] = map[string]types.Resource{}
	}
	if old, ok := n.resources[r.GetTypeUrl()][r.GetName()]; !ok || !proto.Equal(old, m) {
		n.resources[r.GetTypeUrl()][r.GetName()] = m
		n.versions[r.GetTypeUrl()]++
	}
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.SetResourceResponse{Name: r.GetName()}, nil
}

func (f *fixtureServer) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	if !served(r.GetTypeUrl()) {
		return nil, status.Errorf(codes.InvalidArgument, "unsupported type %q", r.GetTypeUrl())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	if _, ok := n.resources[r.GetTypeUrl()][r.GetName()]; ok { // unknown names are not an error
		delete(n.resources[r.GetTypeUrl()], r.GetName())
		n.versions[r.GetTypeUrl()]++
	}
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.DeleteResourceResponse{}, nil
}

// Reset installs an empty snapshot rather than calling ClearSnapshot, which
// would also forget the node's open watches: they would never hear of the
// deletions.
func (f *fixtureServer) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	for url, named := range n.resources {
		if len(named) > 0 {
			n.versions[url]++
		}
	}
	n.resources = map[string]map[string]types.Resource{}
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.ResetResponse{}, nil
}

// node returns the state of node id, creating it; f.mu held.
func (f *fixtureServer) node(id string) *node {
	n := f.nodes[id]
	if n == nil {
		n = &node{resources: map[string]map[string]types.Resource{}, versions: map[string]int{}}
		f.nodes[id] = n
	}
	return n
}

// publish installs n as node id's snapshot; f.mu held. Every call publishes,
// even when nothing changed: until a node has a snapshot the cache leaves
// its requests unanswered, and the harness's first call is a Reset. Every
// type gets its own version, so a change to one type does not resend the
// others; unchanged versions answer no watch.
func (f *fixtureServer) publish(ctx context.Context, id string, n *node) error {
	var snap cache.Snapshot
	for _, url := range typeURLs {
		list := make([]types.Resource, 0, len(n.resources[url]))
		for _, m := range n.resources[url] {
			list = append(list, m)
		}
		snap.Resources[cache.GetResponseType(url)] = cache.NewResources(fmt.Sprintf("v%d", n.versions[url]), list)
	}
	if err := f.cache.SetSnapshot(ctx, id, &snap); err != nil {
		return status.Errorf(codes.Internal, "set snapshot for node %q: %v", id, err)
	}
	return nil
}

func served(typeURL string) bool { return slices.Contains(typeURLs, typeURL) }
