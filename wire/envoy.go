package wire

import (
	"fmt"
	"strings"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
)

// The builders below make the resources an Envoy-profile client follows:
// it takes every listener and cluster (wildcard), then asks by name for the
// routes of its listeners and the endpoints of its clusters. Clusters and
// endpoints are ClientCluster and ClientEndpoints (an EDS cluster over
// ADS); listeners are socket listeners, not API listeners. As with the
// chain builders, rev changes the content and the same (name, rev) always
// gives the same message.

// HCMFilterName is the well-known name of the HTTP connection manager
// network filter.
const HCMFilterName = "envoy.filters.network.http_connection_manager"

// EnvoyListener is a socket listener whose one filter chain holds an HTTP
// connection manager taking its routes over RDS, from ADS, as route.
func EnvoyListener(name, route string, rev int) *listener.Listener {
	m := rdsManager(route, rev, "envoy.filters.http.router")
	return &listener.Listener{
		Name: name,
		// Port 0: an Envoy given it binds a port of its own choosing.
		Address: &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
			Address: "127.0.0.1", PortSpecifier: &core.SocketAddress_PortValue{PortValue: 0},
		}}},
		StatPrefix: fmt.Sprintf("listener-rev-%d", rev),
		FilterChains: []*listener.FilterChain{{
			Filters: []*listener.Filter{{
				Name:       HCMFilterName,
				ConfigType: &listener.Filter_TypedConfig{TypedConfig: mustAny(m)},
			}},
		}},
	}
}

// EnvoyDefaultChainListener is EnvoyListener with its one filter chain as
// the default_filter_chain, the chain of connections no other matches.
func EnvoyDefaultChainListener(name, route string, rev int) *listener.Listener {
	l := EnvoyListener(name, route, rev)
	l.DefaultFilterChain, l.FilterChains = l.FilterChains[0], nil
	return l
}

// RouteWithVHDS is a route configuration whose virtual hosts come on demand
// over VHDS, from ADS: a client asks for the VirtualHost named
// VirtualHostName(name, host) when it has a request for host. Its own
// static virtual host serves no real domain.
func RouteWithVHDS(name string, rev int) *route.RouteConfiguration {
	return &route.RouteConfiguration{
		Name: name,
		Vhds: &route.Vhds{ConfigSource: adsSource()},
		VirtualHosts: []*route.VirtualHost{{
			Name:    fmt.Sprintf("static-rev-%d", rev),
			Domains: []string{fmt.Sprintf("rev-%d.invalid", rev)},
		}},
	}
}

// VirtualHostName is the VHDS resource name of host in route configuration
// routeConfig: "<route configuration>/<host>".
func VirtualHostName(routeConfig, host string) string { return routeConfig + "/" + host }

// VHDSVirtualHost is the VirtualHost resource name (see VirtualHostName),
// serving its host and sending every request to cluster.
func VHDSVirtualHost(name, cluster string, rev int) *route.VirtualHost {
	vh := ClientRoute(name, cluster, rev).VirtualHosts[0]
	vh.Name, vh.Domains = name, []string{name[strings.LastIndex(name, "/")+1:]}
	return vh
}
