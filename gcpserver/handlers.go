package gcpserver

import (
	"context"

	clusterservice "github.com/envoyproxy/go-control-plane/envoy/service/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	endpointservice "github.com/envoyproxy/go-control-plane/envoy/service/endpoint/v3"
	listenerservice "github.com/envoyproxy/go-control-plane/envoy/service/listener/v3"
	routeservice "github.com/envoyproxy/go-control-plane/envoy/service/route/v3"
	runtimeservice "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	secretservice "github.com/envoyproxy/go-control-plane/envoy/service/secret/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/rest/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// handlers is a line-for-line copy of the dispatch layer of
// go-control-plane's pkg/server/v3 (server.go:167-352 in v0.14.0) for the
// eight xDS types: every method hands the stream to the unmodified sotw,
// delta or rest server with the method's type URL.
//
// Why a copy: pkg/server/v3 imports the separate module
// github.com/envoyproxy/go-control-plane/ratelimit for its RLS config
// service, which our go.mod does not require, and adding a module is not
// ours to do. The protocol logic lives entirely in pkg/server/sotw/v3,
// pkg/server/delta/v3 and the caches, which run as released; the only code
// not from go-control-plane is the one-line dispatch below.
type handlers struct {
	sotw  sotw.Server
	delta delta.Server
	rest  rest.Server
}

// Compile-time checks that handlers serves every service Register adds.
var (
	_ discovery.AggregatedDiscoveryServiceServer      = (*handlers)(nil)
	_ listenerservice.ListenerDiscoveryServiceServer  = (*handlers)(nil)
	_ routeservice.RouteDiscoveryServiceServer        = (*handlers)(nil)
	_ routeservice.ScopedRoutesDiscoveryServiceServer = (*handlers)(nil)
	_ routeservice.VirtualHostDiscoveryServiceServer  = (*handlers)(nil)
	_ clusterservice.ClusterDiscoveryServiceServer    = (*handlers)(nil)
	_ endpointservice.EndpointDiscoveryServiceServer  = (*handlers)(nil)
	_ secretservice.SecretDiscoveryServiceServer      = (*handlers)(nil)
	_ runtimeservice.RuntimeDiscoveryServiceServer    = (*handlers)(nil)
)

// newHandlers mirrors server.NewServer with no callbacks.
func newHandlers(ctx context.Context, c cache.Cache, opts ...config.XDSOption) *handlers {
	return &handlers{
		sotw:  sotw.NewServer(ctx, c, nil, opts...),
		delta: delta.NewServer(ctx, c, nil, opts...),
		rest:  rest.NewServer(c, nil),
	}
}

func (h *handlers) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return h.sotw.StreamHandler(s, resource.AnyType)
}

func (h *handlers) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return h.delta.DeltaStreamHandler(s, resource.AnyType)
}

func (h *handlers) StreamListeners(s listenerservice.ListenerDiscoveryService_StreamListenersServer) error {
	return h.sotw.StreamHandler(s, resource.ListenerType)
}

func (h *handlers) DeltaListeners(s listenerservice.ListenerDiscoveryService_DeltaListenersServer) error {
	return h.delta.DeltaStreamHandler(s, resource.ListenerType)
}

func (h *handlers) FetchListeners(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.ListenerType)
}

func (h *handlers) StreamRoutes(s routeservice.RouteDiscoveryService_StreamRoutesServer) error {
	return h.sotw.StreamHandler(s, resource.RouteType)
}

func (h *handlers) DeltaRoutes(s routeservice.RouteDiscoveryService_DeltaRoutesServer) error {
	return h.delta.DeltaStreamHandler(s, resource.RouteType)
}

func (h *handlers) FetchRoutes(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.RouteType)
}

func (h *handlers) StreamScopedRoutes(s routeservice.ScopedRoutesDiscoveryService_StreamScopedRoutesServer) error {
	return h.sotw.StreamHandler(s, resource.ScopedRouteType)
}

func (h *handlers) DeltaScopedRoutes(s routeservice.ScopedRoutesDiscoveryService_DeltaScopedRoutesServer) error {
	return h.delta.DeltaStreamHandler(s, resource.ScopedRouteType)
}

func (h *handlers) FetchScopedRoutes(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.ScopedRouteType)
}

// DeltaVirtualHosts is VHDS's only method: go-control-plane has no SotW or
// REST VHDS handler, matching the protocol (STREAM-10).
func (h *handlers) DeltaVirtualHosts(s routeservice.VirtualHostDiscoveryService_DeltaVirtualHostsServer) error {
	return h.delta.DeltaStreamHandler(s, resource.VirtualHostType)
}

func (h *handlers) StreamClusters(s clusterservice.ClusterDiscoveryService_StreamClustersServer) error {
	return h.sotw.StreamHandler(s, resource.ClusterType)
}

func (h *handlers) DeltaClusters(s clusterservice.ClusterDiscoveryService_DeltaClustersServer) error {
	return h.delta.DeltaStreamHandler(s, resource.ClusterType)
}

func (h *handlers) FetchClusters(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.ClusterType)
}

func (h *handlers) StreamEndpoints(s endpointservice.EndpointDiscoveryService_StreamEndpointsServer) error {
	return h.sotw.StreamHandler(s, resource.EndpointType)
}

func (h *handlers) DeltaEndpoints(s endpointservice.EndpointDiscoveryService_DeltaEndpointsServer) error {
	return h.delta.DeltaStreamHandler(s, resource.EndpointType)
}

func (h *handlers) FetchEndpoints(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.EndpointType)
}

func (h *handlers) StreamSecrets(s secretservice.SecretDiscoveryService_StreamSecretsServer) error {
	return h.sotw.StreamHandler(s, resource.SecretType)
}

func (h *handlers) DeltaSecrets(s secretservice.SecretDiscoveryService_DeltaSecretsServer) error {
	return h.delta.DeltaStreamHandler(s, resource.SecretType)
}

func (h *handlers) FetchSecrets(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.SecretType)
}

func (h *handlers) StreamRuntime(s runtimeservice.RuntimeDiscoveryService_StreamRuntimeServer) error {
	return h.sotw.StreamHandler(s, resource.RuntimeType)
}

func (h *handlers) DeltaRuntime(s runtimeservice.RuntimeDiscoveryService_DeltaRuntimeServer) error {
	return h.delta.DeltaStreamHandler(s, resource.RuntimeType)
}

func (h *handlers) FetchRuntime(ctx context.Context, req *discovery.DiscoveryRequest) (*discovery.DiscoveryResponse, error) {
	return h.fetch(ctx, req, resource.RuntimeType)
}

// fetch is server.go's Fetch* body: pin the type URL, then ask the cache.
func (h *handlers) fetch(ctx context.Context, req *discovery.DiscoveryRequest, typeURL string) (*discovery.DiscoveryResponse, error) {
	if req == nil {
		return nil, status.Errorf(codes.Unavailable, "empty request")
	}
	req.TypeUrl = typeURL
	return h.rest.Fetch(ctx, req)
}
