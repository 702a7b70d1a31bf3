package refclient

import (
	"fmt"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// ref is a resource another resource points at: the edge the client follows
// to decide what to watch next.
type ref struct {
	typ  string // type URL
	name string
}

// hcmURL is the only api_listener a gRPC-style client understands.
const hcmURL = wire.TypePrefix + "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"

// knownLbPolicies are the lb_policy values the client can honour; anything
// else makes a Cluster invalid, as in gRPC.
var knownLbPolicies = map[cluster.Cluster_LbPolicy]bool{
	cluster.Cluster_ROUND_ROBIN:      true,
	cluster.Cluster_LEAST_REQUEST:    true,
	cluster.Cluster_RING_HASH:        true,
	cluster.Cluster_RANDOM:           true,
	cluster.Cluster_MAGLEV:           true,
	cluster.Cluster_CLUSTER_PROVIDED: true,
}

// validate checks a decoded resource against the profile the client
// follows and returns what it references.
func (c *Client) validate(m proto.Message) ([]ref, error) {
	if c.envoy {
		return c.checkEnvoy(m)
	}
	if cl, ok := m.(*cluster.Cluster); ok && cl.GetType() == cluster.Cluster_EDS {
		if err := c.checkXdstpCluster(cl.GetName(), cl.GetEdsClusterConfig().GetServiceName()); err != nil {
			return nil, err
		}
	}
	if lc, ok := m.(*listener.ListenerCollection); ok {
		return c.collectionRefs(lc)
	}
	refs, err := check(m, c.fault(FaultAnyConfigSource))
	if err != nil {
		return refs, err
	}
	if rc, ok := m.(*route.RouteConfiguration); ok && c.fault(FaultWeightedClustersIgnored) {
		refs = routeRefs(rc, false) // RES-1 broken
	}
	for _, r := range refs {
		if err := c.checkLocator(r.name); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// check validates a decoded resource of the gRPC client profile and returns
// what it references. Types the client does not follow (SDS, RTDS, ...) only
// need to decode: they are never watched, so they are ignored anyway (RES-3).
// anySource accepts config sources other than ADS (the any-config-source
// fault).
func check(m proto.Message, anySource bool) ([]ref, error) {
	switch r := m.(type) {
	case *listener.Listener:
		return checkListener(r, anySource)
	case *route.RouteConfiguration:
		if r.GetName() == "" {
			return nil, fmt.Errorf("route configuration has no name")
		}
		return routeRefs(r, true), nil
	case *cluster.Cluster:
		return checkCluster(r, anySource)
	case *endpoint.ClusterLoadAssignment:
		if r.GetClusterName() == "" {
			return nil, fmt.Errorf("cluster load assignment has no cluster_name")
		}
		return nil, nil
	}
	return nil, nil
}

// checkListener accepts only API listeners holding an HttpConnectionManager
// whose routes come over ADS or inline (STREAM-11).
func checkListener(l *listener.Listener, anySource bool) ([]ref, error) {
	al := l.GetApiListener().GetApiListener()
	if al == nil {
		return nil, fmt.Errorf("listener %q: no api_listener", l.GetName())
	}
	if al.GetTypeUrl() != hcmURL {
		return nil, fmt.Errorf("listener %q: api_listener is %q, not an HttpConnectionManager", l.GetName(), al.GetTypeUrl())
	}
	return hcmRefs(l, al, anySource)
}

// hcmRefs decodes the HttpConnectionManager a of listener l and returns
// what its routes name: the RDS route configuration, which must come over
// ADS, the one source this client speaks (anySource lifts that: the
// any-config-source fault), or the clusters of inline routes. API and
// socket listeners (envoy.go) both read their managers here, so the two
// profiles cannot drift on what a manager references.
func hcmRefs(l *listener.Listener, a *anypb.Any, anySource bool) ([]ref, error) {
	var h hcm.HttpConnectionManager
	if err := a.UnmarshalTo(&h); err != nil {
		return nil, fmt.Errorf("listener %q: decode HttpConnectionManager: %v", l.GetName(), err)
	}
	switch rs := h.GetRouteSpecifier().(type) {
	case *hcm.HttpConnectionManager_Rds:
		if rs.Rds.GetConfigSource().GetAds() == nil && !anySource { // else STREAM-11 broken
			return nil, fmt.Errorf("listener %q: rds config_source is not ADS, the only source this client speaks", l.GetName())
		}
		if rs.Rds.GetRouteConfigName() == "" {
			return nil, fmt.Errorf("listener %q: rds has no route_config_name", l.GetName())
		}
		return []ref{{wire.Route.URL, rs.Rds.GetRouteConfigName()}}, nil
	case *hcm.HttpConnectionManager_RouteConfig:
		return routeRefs(rs.RouteConfig, true), nil
	}
	return nil, fmt.Errorf("listener %q: HttpConnectionManager has neither rds nor route_config", l.GetName())
}

// routeRefs lists the clusters named by the route actions of rc, once
// each; those of weighted_clusters only when weighted.
func routeRefs(rc *route.RouteConfiguration, weighted bool) []ref {
	var out []ref
	seen := map[string]bool{}
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			out = append(out, ref{wire.Cluster.URL, name})
		}
	}
	for _, vh := range rc.GetVirtualHosts() {
		for _, r := range vh.GetRoutes() {
			a := r.GetRoute()
			add(a.GetCluster())
			for _, wc := range a.GetWeightedClusters().GetClusters() {
				if weighted {
					add(wc.GetName())
				}
			}
		}
	}
	return out
}

// checkCluster accepts EDS clusters over ADS and the discovery types that
// need no EDS, with a load-balancing policy the client knows.
func checkCluster(c *cluster.Cluster, anySource bool) ([]ref, error) {
	if !knownLbPolicies[c.GetLbPolicy()] {
		return nil, fmt.Errorf("cluster %q: unsupported lb_policy %v", c.GetName(), c.GetLbPolicy())
	}
	if _, custom := c.GetClusterDiscoveryType().(*cluster.Cluster_ClusterType); custom {
		return nil, fmt.Errorf("cluster %q: custom cluster types are not supported", c.GetName())
	}
	switch c.GetType() {
	case cluster.Cluster_EDS:
		if c.GetEdsClusterConfig().GetEdsConfig().GetAds() == nil && !anySource { // else STREAM-11 broken
			return nil, fmt.Errorf("cluster %q: eds_config is not ADS", c.GetName())
		}
		name := c.GetEdsClusterConfig().GetServiceName()
		if name == "" {
			name = c.GetName()
		}
		return []ref{{wire.Endpoint.URL, name}}, nil
	case cluster.Cluster_LOGICAL_DNS, cluster.Cluster_STATIC:
		return nil, nil
	}
	return nil, fmt.Errorf("cluster %q: unsupported discovery type %v", c.GetName(), c.GetType())
}
