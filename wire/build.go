package wire

import (
	"fmt"
	"slices"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	runtime "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// Build returns a minimal valid resource of type t named name. rev selects
// the content: the same (name, rev) always yields the same message and
// different revs yield different messages, so a scenario can change a
// resource through the fixture and recognise exactly which revision the
// server delivered by comparing whole messages.
func Build(t Type, name string, rev int) proto.Message {
	switch t.URL {
	case Listener.URL:
		return &listener.Listener{
			Name:       name,
			StatPrefix: fmt.Sprintf("rev-%d", rev),
			Address:    socketAddress(10000 + rev%50000),
		}
	case Route.URL:
		return ClientRoute(name, "backend", rev)
	case ScopedRoute.URL:
		return &route.ScopedRouteConfiguration{
			Name:                   name,
			RouteConfigurationName: "routes",
			Key: &route.ScopedRouteConfiguration_Key{Fragments: []*route.ScopedRouteConfiguration_Key_Fragment{{
				Type: &route.ScopedRouteConfiguration_Key_Fragment_StringKey{StringKey: fmt.Sprintf("rev-%d", rev)},
			}}},
		}
	case VirtualHost.URL:
		return &route.VirtualHost{Name: name, Domains: []string{fmt.Sprintf("rev-%d.example.com", rev)}}
	case Cluster.URL:
		return &cluster.Cluster{
			Name:                 name,
			ConnectTimeout:       durationpb.New(time.Second + time.Duration(rev)*time.Millisecond),
			ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
			EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{EdsConfig: &core.ConfigSource{
				ResourceApiVersion:    core.ApiVersion_V3,
				ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
			}},
		}
	case Endpoint.URL:
		return &endpoint.ClusterLoadAssignment{
			ClusterName: name,
			Endpoints: []*endpoint.LocalityLbEndpoints{{
				LbEndpoints: []*endpoint.LbEndpoint{{HostIdentifier: &endpoint.LbEndpoint_Endpoint{
					Endpoint: &endpoint.Endpoint{Address: socketAddress(20000 + rev%40000)},
				}}},
			}},
		}
	case Secret.URL:
		return &tls.Secret{Name: name, Type: &tls.Secret_GenericSecret{GenericSecret: &tls.GenericSecret{
			Secret: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: fmt.Sprintf("not-a-real-secret-%d", rev)}},
		}}}
	case Runtime.URL:
		return &runtime.Runtime{Name: name, Layer: &structpb.Struct{Fields: map[string]*structpb.Value{
			"rev": structpb.NewNumberValue(float64(rev)),
		}}}
	}
	panic(fmt.Sprintf("wire.Build: unknown type %q", t.URL))
}

// BuildAny is Build packed into an Any.
func BuildAny(t Type, name string, rev int) *anypb.Any { return mustAny(Build(t, name, rev)) }

func socketAddress(port int) *core.Address {
	return &core.Address{Address: &core.Address_SocketAddress{SocketAddress: &core.SocketAddress{
		Address:       "127.0.0.1",
		PortSpecifier: &core.SocketAddress_PortValue{PortValue: uint32(port)},
	}}}
}

// Reencoded is a with its message encoded otherwise: the same message,
// its top-level fields in reverse order, as a peer serialising fields in
// another order (or a map in another order) would send it. Parsers
// accept fields in any order (the protobuf encoding guide), so the content
// is identical; only a comparison of bytes sees a change. A value that
// does not parse is returned as it is.
func Reencoded(a *anypb.Any) *anypb.Any {
	var fields [][]byte
	for b := a.GetValue(); len(b) > 0; {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			return a
		}
		fields, b = append(fields, b[:n]), b[n:]
	}
	slices.Reverse(fields)
	return &anypb.Any{TypeUrl: a.GetTypeUrl(), Value: slices.Concat(fields...)}
}

// WithFilterMetadata is cluster c with filter_metadata holding keys, each
// an empty Struct: content whose encoding holds a map of several entries,
// which a marshal that is not deterministic writes in a random order.
func WithFilterMetadata(c *cluster.Cluster, keys ...string) *cluster.Cluster {
	c.Metadata = &core.Metadata{FilterMetadata: map[string]*structpb.Struct{}}
	for _, k := range keys {
		c.Metadata.FilterMetadata[k] = &structpb.Struct{}
	}
	return c
}

// MustAny is m packed in an Any, for scenarios building content of their
// own; the harness's messages always pack.
func MustAny(m proto.Message) *anypb.Any { return mustAny(m) }
