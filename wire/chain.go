package wire

import (
	"fmt"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The chain builders below make the resources a gRPC-style xDS client
// follows from the name it was pointed at: Listener → (RDS) RouteConfiguration
// → (CDS) Cluster → (EDS) ClusterLoadAssignment. Each is valid for gRPC's
// xDS client (API listener with an HTTP connection manager, ConfigSources
// pointing at ADS: STREAM-11), so the client-role scenarios can drive any
// such client one hop at a time. As with Build, rev changes the content and
// the same (name, rev) always gives the same message.

// ClientListener is an API listener whose routes come over RDS as route.
func ClientListener(name, route string, rev int) *listener.Listener {
	return &listener.Listener{
		Name:        name,
		ApiListener: &listener.ApiListener{ApiListener: mustAny(rdsManager(route, rev, "router"))},
	}
}

// rdsManager is an HTTP connection manager taking its routes over RDS,
// from ADS, as route, with one router filter named routerName.
func rdsManager(route string, rev int, routerName string) *hcm.HttpConnectionManager {
	return &hcm.HttpConnectionManager{
		StatPrefix: fmt.Sprintf("rev-%d", rev),
		RouteSpecifier: &hcm.HttpConnectionManager_Rds{Rds: &hcm.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: route,
		}},
		HttpFilters: []*hcm.HttpFilter{{
			Name:       routerName,
			ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: mustAny(&router.Router{})},
		}},
	}
}

// ClientRoute is a route configuration sending every request to cluster.
func ClientRoute(name, cluster string, rev int) *route.RouteConfiguration {
	return &route.RouteConfiguration{
		Name: name,
		VirtualHosts: []*route.VirtualHost{{
			Name:    fmt.Sprintf("vh-rev-%d", rev),
			Domains: []string{"*"},
			Routes: []*route.Route{{
				Match:  &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"}},
				Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_Cluster{Cluster: cluster}}},
			}},
		}},
	}
}

// ClientRoutes is a route configuration using every one of clusters: path
// prefix /<i>/ goes to clusters[i], and the last cluster also takes the rest.
func ClientRoutes(name string, rev int, clusters ...string) *route.RouteConfiguration {
	rc := ClientRoute(name, clusters[len(clusters)-1], rev)
	vh := rc.VirtualHosts[0]
	var routes []*route.Route
	for i, c := range clusters[:len(clusters)-1] {
		routes = append(routes, &route.Route{
			Match:  &route.RouteMatch{PathSpecifier: &route.RouteMatch_Prefix{Prefix: fmt.Sprintf("/%d/", i)}},
			Action: &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_Cluster{Cluster: c}}},
		})
	}
	vh.Routes = append(routes, vh.Routes...)
	return rc
}

// WeightedRoute is a route configuration whose one route splits traffic
// between clusters (weighted_clusters): a client needs every one of them.
// The weights add up to 100, the total_weight a client of the older API
// (gRPC C-core) still checks them against when it is unset.
func WeightedRoute(name string, rev int, clusters ...string) *route.RouteConfiguration {
	rc := ClientRoute(name, clusters[0], rev)
	wc := &route.WeightedCluster{}
	left := uint32(100)
	for i, c := range clusters {
		w := left / uint32(len(clusters)-i)
		left -= w
		wc.Clusters = append(wc.Clusters, &route.WeightedCluster_ClusterWeight{Name: c, Weight: wrapperspb.UInt32(w)})
	}
	rc.VirtualHosts[0].Routes[0].Action = &route.Route_Route{Route: &route.RouteAction{ClusterSpecifier: &route.RouteAction_WeightedClusters{WeightedClusters: wc}}}
	return rc
}

// ClientCluster is an EDS cluster over ADS; its endpoints are the
// ClusterLoadAssignment of the same name. rev shows in the circuit
// breaker's max_requests, a field gRPC clients read: a client that keeps
// only what it parsed (grpc-js) sees a change of revision as a change.
func ClientCluster(name string, rev int) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second + time.Duration(rev)*time.Millisecond),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
		EdsClusterConfig:     &cluster.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
		LbPolicy:             cluster.Cluster_ROUND_ROBIN,
		CircuitBreakers:      maxRequests(rev),
	}
}

func maxRequests(rev int) *cluster.CircuitBreakers {
	return &cluster.CircuitBreakers{Thresholds: []*cluster.CircuitBreakers_Thresholds{{
		MaxRequests: wrapperspb.UInt32(uint32(1000 + rev)),
	}}}
}

// ClientDNSCluster is a LOGICAL_DNS cluster: it needs no EDS, so turning a
// ClientCluster into one makes the client drop its interest in the
// cluster's endpoints.
func ClientDNSCluster(name string, rev int) *cluster.Cluster {
	return &cluster.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(time.Second + time.Duration(rev)*time.Millisecond),
		ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_LOGICAL_DNS},
		LbPolicy:             cluster.Cluster_ROUND_ROBIN,
		LoadAssignment:       ClientEndpoints(name, rev),
		CircuitBreakers:      maxRequests(rev),
	}
}

// ClientEndpoints is one locality with one endpoint on 127.0.0.1.
func ClientEndpoints(name string, rev int) *endpoint.ClusterLoadAssignment {
	return &endpoint.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpoint.LocalityLbEndpoints{{
			Locality:            &core.Locality{Region: "r", Zone: "z"},
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints: []*endpoint.LbEndpoint{{HostIdentifier: &endpoint.LbEndpoint_Endpoint{
				Endpoint: &endpoint.Endpoint{Address: socketAddress(20000 + rev%40000)},
			}}},
		}},
	}
}

// InvalidListener is a listener every gRPC-style client must reject: it has
// no API listener, so the client cannot find its routes.
func InvalidListener(name string, rev int) *listener.Listener {
	return &listener.Listener{Name: name, StatPrefix: fmt.Sprintf("invalid-rev-%d", rev)}
}

// NonADSListener is ClientListener with its RDS config source pointing at
// a gRPC API config source instead of ADS: valid for Envoy, invalid for a
// gRPC client (STREAM-11).
func NonADSListener(name, route string, rev int) *listener.Listener {
	l := ClientListener(name, route, rev)
	m := &hcm.HttpConnectionManager{}
	if err := l.ApiListener.ApiListener.UnmarshalTo(m); err != nil {
		panic(fmt.Sprintf("wire: %v", err)) // cannot happen: packed above
	}
	m.GetRds().ConfigSource = nonADSSource()
	l.ApiListener.ApiListener = mustAny(m)
	return l
}

// NonADSCluster is ClientCluster with its EDS config source pointing at a
// gRPC API config source instead of ADS: valid for Envoy, invalid for a
// gRPC client (STREAM-11).
func NonADSCluster(name string, rev int) *cluster.Cluster {
	c := ClientCluster(name, rev)
	c.EdsClusterConfig.EdsConfig = nonADSSource()
	return c
}

// nonADSSource is a config source of another management server, reached
// through the API of a gRPC service, not ADS.
func nonADSSource() *core.ConfigSource {
	return &core.ConfigSource{
		ResourceApiVersion: core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_ApiConfigSource{ApiConfigSource: &core.ApiConfigSource{
			ApiType:             core.ApiConfigSource_GRPC,
			TransportApiVersion: core.ApiVersion_V3,
			GrpcServices: []*core.GrpcService{{TargetSpecifier: &core.GrpcService_EnvoyGrpc_{
				EnvoyGrpc: &core.GrpcService_EnvoyGrpc{ClusterName: "some-other-server"},
			}}},
		}},
	}
}

// InvalidCluster is a cluster every gRPC-style client must reject: its
// EDS config points at a non-ADS config source (STREAM-11) and it names
// an unknown load-balancing policy.
func InvalidCluster(name string, rev int) *cluster.Cluster {
	c := ClientCluster(name, rev)
	c.EdsClusterConfig.EdsConfig = &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Path{Path: "/does/not/exist"},
	}
	c.LbPolicy = cluster.Cluster_LbPolicy(9999)
	return c
}

func adsSource() *core.ConfigSource {
	return &core.ConfigSource{
		ResourceApiVersion:    core.ApiVersion_V3,
		ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
	}
}

func mustAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(fmt.Sprintf("wire: packing %T: %v", m, err)) // cannot happen for generated messages
	}
	return a
}
