package transcript

import (
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

const leafKey = "-----BEGIN EC PRIVATE KEY-----not-a-real-key"

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

// clusterWithKey is a cluster as Consul serves it: the proxy's leaf
// certificate and key inline in its upstream TLS context.
func clusterWithKey(t *testing.T) *anypb.Any {
	inline := func(s string) *core.DataSource {
		return &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: s}}
	}
	ctx := &tls.UpstreamTlsContext{CommonTlsContext: &tls.CommonTlsContext{TlsCertificates: []*tls.TlsCertificate{{
		CertificateChain: inline("-----BEGIN CERTIFICATE-----public"),
		PrivateKey:       inline(leafKey),
	}}}}
	c := &cluster.Cluster{Name: "api", TransportSocket: &core.TransportSocket{
		Name: "tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: mustAny(t, ctx)},
	}}
	return mustAny(t, c)
}

// Key material inlined in any resource, at any depth and through nested
// Anys and Resource wrappers, never reaches a transcript; what is not
// secret (the certificate, the names) stays, and the message recorded is
// left as it was.
func TestRedactScrubsInlineKeys(t *testing.T) {
	res := clusterWithKey(t)
	wrapped := mustAny(t, &discovery.Resource{Name: "api", Resource: clusterWithKey(t)})
	for _, tc := range []struct {
		name string
		msg  proto.Message
	}{
		{"sotw", &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{res}}},
		{"sotw wrapped", &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{wrapped}}},
		{"delta", &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*discovery.Resource{{Name: "api", Resource: res}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.msg)
			tr := New()
			tr.Record("ads#1", Received, tc.msg)
			got := string(tr.Entries()[0].Message)
			assert.NotContains(t, got, "not-a-real-key")
			assert.Contains(t, got, RedactedSecret)
			assert.Contains(t, got, "-----BEGIN CERTIFICATE-----public")
			assert.True(t, proto.Equal(before, tc.msg), "Redact modified the recorded message")
		})
	}
}

// A response without key material is recorded as it is, not re-encoded.
func TestRedactLeavesOtherResponsesAlone(t *testing.T) {
	m := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "c", 1)}}
	assert.Same(t, proto.Message(m), Redact(m))
}
