package bootstrap

import (
	"bytes"
	"encoding/json"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3" // resolves the protocol options Any
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/wire"
)

func TestGRPC(t *testing.T) {
	b, err := GRPC(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Cluster: "c1"})
	require.NoError(t, err)

	type server struct {
		ServerURI      string              `json:"server_uri"`
		ChannelCreds   []map[string]string `json:"channel_creds"`
		ServerFeatures []string            `json:"server_features"`
	}
	type doc struct {
		XDSServers []server `json:"xds_servers"`
		Node       struct {
			ID       string            `json:"id"`
			Cluster  string            `json:"cluster"`
			Locality map[string]string `json:"locality"`
		} `json:"node"`
	}
	var got doc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got), string(b))

	var want doc
	want.XDSServers = []server{{ServerURI: "127.0.0.1:5000", ChannelCreds: []map[string]string{{"type": "insecure"}}, ServerFeatures: []string{"xds_v3"}}}
	want.Node.ID, want.Node.Cluster, want.Node.Locality = "n1", "c1", map[string]string{"zone": "z"}
	assert.Equal(t, want, got)

	b, err = GRPC(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", ServerFeatures: []string{"xds_v3", "ignore_resource_deletion"}})
	require.NoError(t, err)
	got = doc{}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, []string{"xds_v3", "ignore_resource_deletion"}, got.XDSServers[0].ServerFeatures)

	_, err = GRPC(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Variant: wire.DeltaADS})
	assert.Error(t, err, "gRPC clients cannot be told to speak delta")
}

func TestEnvoy(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			b, err := Envoy(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Cluster: "c1", Variant: v, AdminAddr: "127.0.0.1:9901"})
			require.NoError(t, err)

			// Parsing into the real Bootstrap message catches misspelt
			// fields, and its validation rules catch missing ones.
			var bs bootstrapv3.Bootstrap
			require.NoError(t, protojson.Unmarshal(b, &bs), string(b))
			require.NoError(t, bs.ValidateAll())

			assert.Equal(t, "n1", bs.GetNode().GetId())
			assert.Equal(t, "c1", bs.GetNode().GetCluster())
			assert.Equal(t, uint32(9901), bs.GetAdmin().GetAddress().GetSocketAddress().GetPortValue())

			clusters := bs.GetStaticResources().GetClusters()
			require.Len(t, clusters, 1)
			xc := clusters[0]
			assert.Equal(t, "xds_cluster", xc.GetName())
			assert.Equal(t, "STATIC", xc.GetType().String())
			sa := xc.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			assert.Equal(t, "127.0.0.1", sa.GetAddress())
			assert.Equal(t, uint32(5000), sa.GetPortValue())
			assert.Contains(t, xc.GetTypedExtensionProtocolOptions(), "envoy.extensions.upstreams.http.v3.HttpProtocolOptions")

			want := core.ApiConfigSource_GRPC
			if v.IsDelta() {
				want = core.ApiConfigSource_DELTA_GRPC
			}
			dr := bs.GetDynamicResources()
			for _, cs := range []*core.ConfigSource{dr.GetLdsConfig(), dr.GetCdsConfig()} {
				assert.Equal(t, core.ApiVersion_V3, cs.GetResourceApiVersion())
				if v.IsADS() {
					assert.NotNil(t, cs.GetAds())
				} else {
					assert.Nil(t, cs.GetAds())
					assert.Equal(t, want, cs.GetApiConfigSource().GetApiType())
					assert.Equal(t, "xds_cluster", cs.GetApiConfigSource().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName())
				}
			}
			if v.IsADS() {
				assert.Equal(t, want, dr.GetAdsConfig().GetApiType())
				assert.Equal(t, core.ApiVersion_V3, dr.GetAdsConfig().GetTransportApiVersion())
				assert.Equal(t, "xds_cluster", dr.GetAdsConfig().GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName())
			} else {
				assert.Nil(t, dr.GetAdsConfig())
			}
		})
	}
}

func TestEnvoyHostName(t *testing.T) {
	b, err := Envoy(Params{ServerAddr: "localhost:5000", NodeID: "n1"})
	require.NoError(t, err)
	var bs bootstrapv3.Bootstrap
	require.NoError(t, protojson.Unmarshal(b, &bs))
	assert.Equal(t, "STRICT_DNS", bs.GetStaticResources().GetClusters()[0].GetType().String())
	assert.Nil(t, bs.GetAdmin(), "no AdminAddr, no admin")
}

func TestInvalidParams(t *testing.T) {
	for name, p := range map[string]Params{
		"no server":   {NodeID: "n"},
		"no node":     {ServerAddr: "127.0.0.1:1"},
		"no port":     {ServerAddr: "127.0.0.1", NodeID: "n"},
		"bad port":    {ServerAddr: "127.0.0.1:http", NodeID: "n"},
		"bad admin":   {ServerAddr: "127.0.0.1:1", NodeID: "n", AdminAddr: "9901"},
		"empty host":  {ServerAddr: ":1", NodeID: "n"},
		"port range":  {ServerAddr: "127.0.0.1:70000", NodeID: "n"},
		"nothing set": {},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := GRPC(p)
			assert.Error(t, err)
			_, err = Envoy(p)
			assert.Error(t, err)
		})
	}
}

// The federation fields of gRFC A47: an authorities map whose entries
// carry their own servers and template, and the default template.
func TestGRPCAuthorities(t *testing.T) {
	b, err := GRPC(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1",
		DefaultListenerTemplate: "xdstp:///envoy.config.listener.v3.Listener/%s",
		Authorities: []Authority{
			{Name: "a.example", ServerAddr: "127.0.0.1:5001", ListenerTemplate: "xdstp://a.example/envoy.config.listener.v3.Listener/t/%s"},
			{Name: "b.example"},
		}})
	require.NoError(t, err)
	var got struct {
		Default     string `json:"client_default_listener_resource_name_template"`
		Authorities map[string]struct {
			Servers []struct {
				URI string `json:"server_uri"`
			} `json:"xds_servers"`
			Template string `json:"client_listener_resource_name_template"`
		} `json:"authorities"`
	}
	require.NoError(t, json.Unmarshal(b, &got), string(b))
	assert.Equal(t, "xdstp:///envoy.config.listener.v3.Listener/%s", got.Default)
	require.Len(t, got.Authorities, 2)
	a := got.Authorities["a.example"]
	require.Len(t, a.Servers, 1)
	assert.Equal(t, "127.0.0.1:5001", a.Servers[0].URI)
	assert.Equal(t, "xdstp://a.example/envoy.config.listener.v3.Listener/t/%s", a.Template)
	assert.Empty(t, got.Authorities["b.example"].Servers, "an authority without servers uses the top-level ones")

	_, err = GRPC(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Authorities: []Authority{{Name: "a"}, {Name: "a"}}})
	assert.Error(t, err, "an authority given twice")
}

// The REST variant polls LDS and CDS over REST-JSON through an HTTP/1.1
// xds_cluster; a CDS file replaces cds_config by a path_config_source.
func TestEnvoyRESTAndFiles(t *testing.T) {
	parse := func(p Params) *bootstrapv3.Bootstrap {
		b, err := Envoy(p)
		require.NoError(t, err)
		var bs bootstrapv3.Bootstrap
		require.NoError(t, protojson.Unmarshal(b, &bs), string(b))
		require.NoError(t, bs.ValidateAll())
		return &bs
	}
	bs := parse(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Variant: wire.REST})
	assert.Empty(t, bs.GetStaticResources().GetClusters()[0].GetTypedExtensionProtocolOptions(), "REST polls are HTTP/1.1")
	dr := bs.GetDynamicResources()
	assert.Nil(t, dr.GetAdsConfig())
	for _, cs := range []*core.ConfigSource{dr.GetLdsConfig(), dr.GetCdsConfig()} {
		api := cs.GetApiConfigSource()
		assert.Equal(t, core.ApiConfigSource_REST, api.GetApiType())
		assert.Equal(t, []string{"xds_cluster"}, api.GetClusterNames())
		assert.Equal(t, RESTRefreshDelay, api.GetRefreshDelay().AsDuration())
		assert.Equal(t, RESTRequestTimeout, api.GetRequestTimeout().AsDuration())
	}

	bs = parse(Params{ServerAddr: "127.0.0.1:5000", NodeID: "n1", Variant: wire.SotWADS,
		CDSFile: &FileSource{Path: "/tmp/x/cds.yaml", WatchedDirectory: "/tmp/x"}})
	dr = bs.GetDynamicResources()
	assert.NotNil(t, dr.GetLdsConfig().GetAds(), "listeners still come over ADS")
	pcs := dr.GetCdsConfig().GetPathConfigSource()
	assert.Equal(t, "/tmp/x/cds.yaml", pcs.GetPath())
	assert.Equal(t, "/tmp/x", pcs.GetWatchedDirectory().GetPath())
}
