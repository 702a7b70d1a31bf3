package wire

import (
	"fmt"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtime "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/proto"
)

// TypePrefix is the prefix every v3 type URL starts with.
const TypePrefix = "type.googleapis.com/"

// ResourceWrapperURL is the type URL of envoy.service.discovery.v3.Resource,
// the wrapper a SotW server may only use for clients that opted in (TTL-5).
const ResourceWrapperURL = TypePrefix + "envoy.service.discovery.v3.Resource"

// Type is one of the eight v3 resource types of xds_protocol.rst, with the
// gRPC methods that serve it on its own per-type service.
type Type struct {
	// Short is the conventional abbreviation: LDS, RDS, SRDS, VHDS, CDS, EDS, SDS, RTDS.
	Short string
	// URL is the full type URL, e.g. type.googleapis.com/envoy.config.cluster.v3.Cluster.
	URL string
	// Service is the fully qualified per-type gRPC service.
	Service string
	// SotWMethod is the per-type SotW streaming method name; empty for VHDS,
	// which exists only in the incremental protocol (STREAM-10).
	SotWMethod string
	// DeltaMethod is the per-type incremental streaming method name.
	DeltaMethod string
	// Wildcard is true for the types a client may subscribe to by wildcard
	// (Listener and Cluster, WILD-1) and whose SotW responses carry the full
	// state (GRP-1).
	Wildcard bool
	// New returns an empty message of the type.
	New func() proto.Message
}

// The eight v3 resource types.
var (
	Listener = Type{Short: "LDS", URL: TypePrefix + "envoy.config.listener.v3.Listener",
		Service: "envoy.service.listener.v3.ListenerDiscoveryService", SotWMethod: "StreamListeners", DeltaMethod: "DeltaListeners",
		Wildcard: true, New: func() proto.Message { return &listener.Listener{} }}
	Route = Type{Short: "RDS", URL: TypePrefix + "envoy.config.route.v3.RouteConfiguration",
		Service: "envoy.service.route.v3.RouteDiscoveryService", SotWMethod: "StreamRoutes", DeltaMethod: "DeltaRoutes",
		New: func() proto.Message { return &route.RouteConfiguration{} }}
	ScopedRoute = Type{Short: "SRDS", URL: TypePrefix + "envoy.config.route.v3.ScopedRouteConfiguration",
		Service: "envoy.service.route.v3.ScopedRoutesDiscoveryService", SotWMethod: "StreamScopedRoutes", DeltaMethod: "DeltaScopedRoutes",
		New: func() proto.Message { return &route.ScopedRouteConfiguration{} }}
	VirtualHost = Type{Short: "VHDS", URL: TypePrefix + "envoy.config.route.v3.VirtualHost",
		Service: "envoy.service.route.v3.VirtualHostDiscoveryService", DeltaMethod: "DeltaVirtualHosts",
		New: func() proto.Message { return &route.VirtualHost{} }}
	Cluster = Type{Short: "CDS", URL: TypePrefix + "envoy.config.cluster.v3.Cluster",
		Service: "envoy.service.cluster.v3.ClusterDiscoveryService", SotWMethod: "StreamClusters", DeltaMethod: "DeltaClusters",
		Wildcard: true, New: func() proto.Message { return &cluster.Cluster{} }}
	Endpoint = Type{Short: "EDS", URL: TypePrefix + "envoy.config.endpoint.v3.ClusterLoadAssignment",
		Service: "envoy.service.endpoint.v3.EndpointDiscoveryService", SotWMethod: "StreamEndpoints", DeltaMethod: "DeltaEndpoints",
		New: func() proto.Message { return &endpoint.ClusterLoadAssignment{} }}
	Secret = Type{Short: "SDS", URL: TypePrefix + "envoy.extensions.transport_sockets.tls.v3.Secret",
		Service: "envoy.service.secret.v3.SecretDiscoveryService", SotWMethod: "StreamSecrets", DeltaMethod: "DeltaSecrets",
		New: func() proto.Message { return &tls.Secret{} }}
	Runtime = Type{Short: "RTDS", URL: TypePrefix + "envoy.service.runtime.v3.Runtime",
		Service: "envoy.service.runtime.v3.RuntimeDiscoveryService", SotWMethod: "StreamRuntime", DeltaMethod: "DeltaRuntime",
		New: func() proto.Message { return &runtime.Runtime{} }}
)

// AllTypes lists the eight types in xds_protocol.rst order.
var AllTypes = []Type{Listener, Route, ScopedRoute, VirtualHost, Cluster, Endpoint, Secret, Runtime}

// ADS service and methods.
const (
	ADSService     = "envoy.service.discovery.v3.AggregatedDiscoveryService"
	ADSSotWMethod  = "StreamAggregatedResources"
	ADSDeltaMethod = "DeltaAggregatedResources"
)

// String returns the type's short name.
func (t Type) String() string { return t.Short }

// Speaks reports whether the type can be carried by protocol p (VHDS is
// incremental only, STREAM-10).
func (t Type) Speaks(p Protocol) bool { return p == Delta || t.SotWMethod != "" }

// FullMethod returns the gRPC method that serves the type in variant v, in
// the "/service/method" form grpc-go expects. For ADS every type shares the
// aggregated method.
func (t Type) FullMethod(v Variant) (string, error) {
	if !t.Speaks(v.Protocol) {
		return "", fmt.Errorf("%s has no %s method", t.Short, v.Protocol)
	}
	if v.Transport == ADS {
		return MethodFor(v, Type{}), nil
	}
	return MethodFor(v, t), nil
}

// MethodFor returns "/service/method" for variant v; t is ignored for ADS.
func MethodFor(v Variant, t Type) string {
	if v.Transport == ADS {
		if v.Protocol == Delta {
			return "/" + ADSService + "/" + ADSDeltaMethod
		}
		return "/" + ADSService + "/" + ADSSotWMethod
	}
	if v.Protocol == Delta {
		return "/" + t.Service + "/" + t.DeltaMethod
	}
	return "/" + t.Service + "/" + t.SotWMethod
}

// TypeByURL finds a type by its type URL; the "type.googleapis.com/" prefix
// is optional because some clients omit it in status reports.
func TypeByURL(url string) (Type, bool) {
	full := url
	if !strings.HasPrefix(full, TypePrefix) {
		full = TypePrefix + url
	}
	for _, t := range AllTypes {
		if t.URL == full {
			return t, true
		}
	}
	// The list collection types (COLL-1) are found too, so a response of
	// one decodes and is of a known type.
	for _, c := range collections {
		if c.collection.URL == full {
			return c.collection, true
		}
	}
	return Type{}, false
}

// AllTypeURLs lists the type URLs of AllTypes, in the same order: what a
// server that serves every type claims.
func AllTypeURLs() []string {
	urls := make([]string, 0, len(AllTypes))
	for _, t := range AllTypes {
		urls = append(urls, t.URL)
	}
	return urls
}

// TypeByExactURL finds a type by its full type URL, the only form the
// protocol allows on the wire (STREAM-6, STREAM-7): a bare
// "envoy.config.cluster.v3.Cluster" is no type URL.
func TypeByExactURL(url string) (Type, bool) {
	t, ok := TypeByURL(url)
	return t, ok && t.URL == url
}

// TypeByShort finds a type by its short name (case-insensitive).
func TypeByShort(short string) (Type, bool) {
	for _, t := range AllTypes {
		if strings.EqualFold(t.Short, short) {
			return t, true
		}
	}
	return Type{}, false
}
