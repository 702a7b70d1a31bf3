// Package snapshotfixture is the fixture API (docs/fixture-api.md) over a
// go-control-plane SnapshotCache: what a team whose management server is
// built on go-control-plane writes in a test build of it, so that
// xdsconform can create, change and delete resources. The examples use it:
// examples/fixture-server serves it on a port of its own next to a
// standalone server, examples/embedded in-process in a go test.
//
// It keeps the desired resources per node and per type, and installs a
// whole new snapshot on every change, each type at its own version. Its
// capabilities claim the ADS variants only (sotw-ads, delta-ads), as its
// users register only the aggregated service; a server that also
// registers the per-type services claims them too (see
// peers/gcpserver/handlers.go).
package snapshotfixture

import (
	"context"
	"fmt"
	"slices"
	"sync"

	// Every served type must be linked in, or UnmarshalNew cannot decode
	// it; cache/v3 already brings in all of them but Secret.
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
)

// TypeURLs are the types served: all the SnapshotCache stores that the
// harness knows.
var TypeURLs = []string{
	resource.ListenerType, resource.RouteType, resource.ScopedRouteType, resource.VirtualHostType,
	resource.ClusterType, resource.EndpointType, resource.SecretType, resource.RuntimeType,
}

// Server implements the fixture API over a SnapshotCache. Register it
// with fixturepb.RegisterFixtureServer.
type Server struct {
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

// New returns the fixture API over c. The cache must be created with
// ads=false: with ads=true the SnapshotCache answers a SotW request only
// once it names every resource of the type in the snapshot.
func New(c cache.SnapshotCache) *Server {
	return &Server{cache: c, nodes: map[string]*node{}}
}

// GetCapabilities implements fixturepb.FixtureServer.
func (f *Server) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion:     "v1",
		Server:         "go-control-plane SnapshotCache (xdsconform examples/snapshotfixture)",
		TypeUrls:       TypeURLs,
		Variants:       []string{"sotw-ads", "delta-ads"},
		LegacyWildcard: true,
		GeneratesNames: false, // we serve the names the harness asks for
		NodeScoped:     true,  // the SnapshotCache keeps one snapshot per node id
		// The SnapshotCache implements the explicit wildcard "*" in delta
		// only: in SotW it looks "*" up as a resource of that name
		// (cache/v3/simple.go:516-523), so only delta claims it.
		VariantCapabilities: []*fixturepb.VariantCapabilities{
			{Variant: "delta-ads", ExplicitWildcard: proto.Bool(true)},
		},
	}, nil
}

// SetResource implements fixturepb.FixtureServer.
func (f *Server) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
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

// DeleteResource implements fixturepb.FixtureServer.
func (f *Server) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
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

// Reset implements fixturepb.FixtureServer. It installs an empty snapshot rather than calling ClearSnapshot, which
// would also forget the node's open watches: they would never hear of the
// deletions.
func (f *Server) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
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
func (f *Server) node(id string) *node {
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
func (f *Server) publish(ctx context.Context, id string, n *node) error {
	var snap cache.Snapshot
	for _, url := range TypeURLs {
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

func served(typeURL string) bool { return slices.Contains(TypeURLs, typeURL) }
