package transcript

import (
	"fmt"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcher "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsconform/xdsconform/wire"
)

// realisticResponse is a CDS response as a control plane serves a mesh:
// n EDS clusters over ADS, each with its timeouts, circuit breakers and
// an upstream TLS context (validation only: no key, nothing to redact).
func realisticResponse(n int) *discovery.DiscoveryResponse {
	resp := &discovery.DiscoveryResponse{VersionInfo: "v42", TypeUrl: wire.Cluster.URL, Nonce: "17"}
	for i := range n {
		name := fmt.Sprintf("outbound|8080||svc-%d.ns.svc.cluster.local", i)
		tlsCtx, err := anypb.New(&tls.UpstreamTlsContext{Sni: fmt.Sprintf("svc-%d.ns.svc.cluster.local", i),
			CommonTlsContext: &tls.CommonTlsContext{
				AlpnProtocols: []string{"h2", "http/1.1"},
				ValidationContextType: &tls.CommonTlsContext_ValidationContext{ValidationContext: &tls.CertificateValidationContext{
					TrustedCa: &core.DataSource{Specifier: &core.DataSource_Filename{Filename: "/etc/certs/root-cert.pem"}},
					MatchTypedSubjectAltNames: []*tls.SubjectAltNameMatcher{{
						SanType: tls.SubjectAltNameMatcher_URI,
						Matcher: &matcher.StringMatcher{MatchPattern: &matcher.StringMatcher_Exact{Exact: fmt.Sprintf("spiffe://cluster.local/ns/ns/sa/svc-%d", i)}},
					}},
				}},
			}})
		if err != nil {
			panic(err)
		}
		c, err := anypb.New(&cluster.Cluster{
			Name:                 name,
			AltStatName:          name,
			ConnectTimeout:       durationpb.New(10 * time.Second),
			ClusterDiscoveryType: &cluster.Cluster_Type{Type: cluster.Cluster_EDS},
			LbPolicy:             cluster.Cluster_LEAST_REQUEST,
			EdsClusterConfig: &cluster.Cluster_EdsClusterConfig{ServiceName: name, EdsConfig: &core.ConfigSource{
				ResourceApiVersion:    core.ApiVersion_V3,
				ConfigSourceSpecifier: &core.ConfigSource_Ads{Ads: &core.AggregatedConfigSource{}},
			}},
			CircuitBreakers: &cluster.CircuitBreakers{Thresholds: []*cluster.CircuitBreakers_Thresholds{{
				MaxConnections: wrapperspb.UInt32(4294967295), MaxPendingRequests: wrapperspb.UInt32(4294967295),
				MaxRequests: wrapperspb.UInt32(4294967295), MaxRetries: wrapperspb.UInt32(4294967295),
			}}},
			TransportSocket: &core.TransportSocket{Name: "envoy.transport_sockets.tls",
				ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: tlsCtx}},
		})
		if err != nil {
			panic(err)
		}
		resp.Resources = append(resp.Resources, c)
	}
	return resp
}

// BenchmarkRecord is what recording costs a fake peer or the record
// proxy per message (Record only), and what a transcript costs from
// recording to report (Record then Entries, which renders).
func BenchmarkRecord(b *testing.B) {
	resp := realisticResponse(4)
	b.Logf("wire %d bytes", proto.Size(resp))
	b.Run("Record", func(b *testing.B) {
		b.ReportAllocs()
		tr := New()
		for b.Loop() {
			tr.Record("ads#1", Received, resp)
		}
	})
	b.Run("Record+Entries", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tr := New()
			tr.Record("ads#1", Received, resp)
			if len(tr.Entries()[0].Message) == 0 {
				b.Fatal("nothing rendered")
			}
		}
	})
}
