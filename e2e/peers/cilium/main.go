// Command cilium-server is Cilium's xDS server as an xdsconform server
// target, built from its own version-pinned module: pkg/envoy/xds's Server
// over one Cache per type, served per type as Cilium's agent serves them
// (pkg/envoy/grpc.go: LDS, RDS, CDS, EDS and SDS, SotW only, LDS held until
// the node ACKed CDS), and the fixture API over those caches, on one
// plaintext gRPC port.
//
//	cilium-server [-addr 127.0.0.1:0]
//
// It prints "xds=HOST:PORT" on stdout once it serves and exits on SIGTERM
// or SIGINT (or when stdin, if a pipe, reaches EOF: the harness is gone).
//
// Cilium parses node ids as TYPE~IP~ID~DOMAIN and ends a stream whose
// first request carries any other (pkg/envoy/xds/node.go): run the suite
// with --node-id 'sidecar~127.0.0.1~{{.NodeID}}~cilium'.
//
// The fixture is not node-scoped: Cilium's cache serves every node the
// same resources (pkg/envoy/xds/cache.go: "This cache implementation
// ignores the proxy node identifiers"). It does not claim "batch", and
// ApplyChanges answers Unimplemented: each type has a cache of its own, so
// changes of several types reach clients one type at a time, as in Cilium.
//
// It does not require the xdsconform module, whose grpc and
// go-control-plane would raise Cilium's: it builds its own copy of the
// fixture API's generated code (fixturepb, written by make generate).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"sort"
	"sync"
	"syscall"

	"github.com/cilium/cilium/pkg/envoy/xds"
	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/e2e/peers/cilium/fixturepb"

	// The resource types the fixture unpacks.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// The type URLs of pkg/envoy/resources.go, written out: importing
// pkg/envoy would link the whole agent.
const (
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	secretType   = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
)

var types = []string{listenerType, routeType, clusterType, endpointType, secretType}

// ciliumVersion is the Cilium release the binary was built with, as its
// module pins it, for the fixture's capabilities.
func ciliumVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/cilium/cilium" {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address for xDS and the fixture API")
	flag.Parse()
	if err := run(*addr); err != nil {
		fmt.Fprintf(os.Stderr, "cilium-server: %v\n", err)
		os.Exit(1)
	}
}

func run(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	caches := map[string]*xds.Cache{}
	config := map[string]*xds.ResourceTypeConfiguration{}
	for _, t := range types {
		c := xds.NewCache(logger)
		caches[t] = c
		// As the agent configures each type (pkg/envoy/xds_server.go): the
		// cache as the source, an ACK observer over it.
		config[t] = &xds.ResourceTypeConfiguration{Source: c, AckObserver: xds.NewAckingResourceMutatorWrapper(logger, c, noMetrics{})}
	}
	// No restorer: nothing to restore in a fresh process.
	srv := xds.NewServer(logger, config, nil, noMetrics{})

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	g := grpc.NewServer()
	d := &discoveryServer{Server: srv}
	listenerservice.RegisterListenerDiscoveryServiceServer(g, d)
	routeservice.RegisterRouteDiscoveryServiceServer(g, d)
	clusterservice.RegisterClusterDiscoveryServiceServer(g, d)
	endpointservice.RegisterEndpointDiscoveryServiceServer(g, d)
	secretservice.RegisterSecretDiscoveryServiceServer(g, d)
	fixturepb.RegisterFixtureServer(g, &fixtureServer{caches: caches, byNode: map[string]map[key]bool{}})
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

// noMetrics is the xds.Metrics Cilium's agent feeds Prometheus with.
type noMetrics struct{}

func (noMetrics) IncreaseNACK(string)   {}
func (noMetrics) IncreaseACK(string)    {}
func (noMetrics) IncreaseCancel(string) {}

// errNotImplemented is what Cilium's delta and fetch methods return
// (pkg/envoy/grpc.go:29): a plain error, so clients see codes.Unknown.
var errNotImplemented = errors.New("not implemented")

// discoveryServer is pkg/envoy/grpc.go's xdsGRPCServer: each stream method
// hands the stream to the xDS server with its type; LDS waits for the
// node's CDS ACK (grpc.go:124-127); delta and fetch are not implemented.
type discoveryServer struct{ *xds.Server }

func (s *discoveryServer) StreamListeners(st listenerservice.ListenerDiscoveryService_StreamListenersServer) error {
	return s.HandleRequestStream(st.Context(), st, listenerType, clusterType)
}

func (s *discoveryServer) DeltaListeners(listenerservice.ListenerDiscoveryService_DeltaListenersServer) error {
	return errNotImplemented
}

func (s *discoveryServer) FetchListeners(context.Context, *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return nil, errNotImplemented
}

func (s *discoveryServer) StreamRoutes(st routeservice.RouteDiscoveryService_StreamRoutesServer) error {
	return s.HandleRequestStream(st.Context(), st, routeType, "")
}

func (s *discoveryServer) DeltaRoutes(routeservice.RouteDiscoveryService_DeltaRoutesServer) error {
	return errNotImplemented
}

func (s *discoveryServer) FetchRoutes(context.Context, *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return nil, errNotImplemented
}

func (s *discoveryServer) StreamClusters(st clusterservice.ClusterDiscoveryService_StreamClustersServer) error {
	return s.HandleRequestStream(st.Context(), st, clusterType, "")
}

func (s *discoveryServer) DeltaClusters(clusterservice.ClusterDiscoveryService_DeltaClustersServer) error {
	return errNotImplemented
}

func (s *discoveryServer) FetchClusters(context.Context, *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return nil, errNotImplemented
}

func (s *discoveryServer) StreamEndpoints(st endpointservice.EndpointDiscoveryService_StreamEndpointsServer) error {
	return s.HandleRequestStream(st.Context(), st, endpointType, "")
}

func (s *discoveryServer) DeltaEndpoints(endpointservice.EndpointDiscoveryService_DeltaEndpointsServer) error {
	return errNotImplemented
}

func (s *discoveryServer) FetchEndpoints(context.Context, *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return nil, errNotImplemented
}

func (s *discoveryServer) StreamSecrets(st secretservice.SecretDiscoveryService_StreamSecretsServer) error {
	return s.HandleRequestStream(st.Context(), st, secretType, "")
}

func (s *discoveryServer) DeltaSecrets(secretservice.SecretDiscoveryService_DeltaSecretsServer) error {
	return errNotImplemented
}

func (s *discoveryServer) FetchSecrets(context.Context, *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return nil, errNotImplemented
}

// key is one resource the fixture set.
type key struct{ typ, name string }

// fixtureServer drives the caches: what the agent does when its policy or
// Ingress model changes, Upsert and Delete into the type's cache.
type fixtureServer struct {
	fixturepb.UnimplementedFixtureServer
	caches map[string]*xds.Cache

	mu sync.Mutex
	// byNode is what each node's pairs set, for Reset: the cache itself
	// is shared by every node.
	byNode map[string]map[key]bool
}

func (f *fixtureServer) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion: "v1",
		Server:     "Cilium " + ciliumVersion() + " pkg/envoy/xds (per-type SotW services of pkg/envoy/grpc.go)",
		TypeUrls:   types,
		Variants:   []string{"sotw-pertype"},
		// An empty resource_names asks for every resource of the type
		// (cache.go GetResources); "*" is looked up as a name.
		LegacyWildcard: true,
	}, nil
}

func (f *fixtureServer) SetResource(_ context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	c, err := f.cache(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	if r.GetTtl() != nil || len(r.GetAliases()) > 0 || r.GetDynamicParameterConstraints() != nil || r.GetError() != nil || r.GetRedirect() != "" {
		return nil, status.Error(codes.Unimplemented, "Cilium's cache serves plain resources: no TTL, aliases, dynamic parameters, errors or redirects")
	}
	if r.GetResource().GetTypeUrl() != r.GetTypeUrl() {
		return nil, status.Errorf(codes.InvalidArgument, "resource of type %q set as %q", r.GetResource().GetTypeUrl(), r.GetTypeUrl())
	}
	msg, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "unpacking %s: %v", r.GetTypeUrl(), err)
	}
	c.Upsert(r.GetTypeUrl(), r.GetName(), msg)
	f.remember(r.GetNodeId(), key{r.GetTypeUrl(), r.GetName()}, true)
	return &fixturepb.SetResourceResponse{Name: r.GetName()}, nil
}

func (f *fixtureServer) DeleteResource(_ context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	c, err := f.cache(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	if r.GetDynamicParameterConstraints() != nil {
		return nil, status.Error(codes.Unimplemented, "Cilium's cache has no dynamic parameters")
	}
	c.Delete(r.GetTypeUrl(), r.GetName())
	f.remember(r.GetNodeId(), key{r.GetTypeUrl(), r.GetName()}, false)
	return &fixturepb.DeleteResourceResponse{}, nil
}

func (f *fixtureServer) Reset(_ context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	set := f.byNode[r.GetNodeId()]
	delete(f.byNode, r.GetNodeId())
	f.mu.Unlock()
	byType := map[string][]string{}
	for k := range set {
		byType[k.typ] = append(byType[k.typ], k.name)
	}
	for t, names := range byType {
		sort.Strings(names)
		// One transaction a type: one new version, as the agent's
		// updates bring.
		f.caches[t].TX(t, nil, names)
	}
	return &fixturepb.ResetResponse{}, nil
}

func (f *fixtureServer) cache(typeURL string) (*xds.Cache, error) {
	c, ok := f.caches[typeURL]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "Cilium serves no %q here", typeURL)
	}
	return c, nil
}

func (f *fixtureServer) remember(node string, k key, set bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !set {
		delete(f.byNode[node], k)
		return
	}
	if f.byNode[node] == nil {
		f.byNode[node] = map[key]bool{}
	}
	f.byNode[node][k] = true
}
