package targets

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/bootstrap"
)

// A --bootstrap-template sees the scenario's servers per authority, the
// default server filled in where an authority has none of its own.
func TestRenderBootstrapTemplate(t *testing.T) {
	spec := LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "l", Target: "xds://a.test/l",
		Authorities: []bootstrap.Authority{{Name: "a.test", ServerAddr: "127.0.0.1:2"}, {Name: "b.test"}}}
	got, err := renderBootstrapTemplate(`{{.NodeID}} {{.Target}} {{index .AuthorityServers "a.test"}} {{index .AuthorityServers "b.test"}}{{range .Authorities}} {{.Name}}{{end}} {{.CSDS}}`, spec, "127.0.0.1:9")
	require.NoError(t, err)
	assert.Equal(t, "n xds://a.test/l 127.0.0.1:2 127.0.0.1:1 a.test b.test 127.0.0.1:9", string(got))
	_, err = renderBootstrapTemplate(`{{.NoSuchVar}}`, spec, "")
	assert.Error(t, err)
	_, err = NewClients(ClientOptions{Target: BuiltinReference, BootstrapTemplate: "x"})
	assert.ErrorContains(t, err, "--client-cmd")
	_, err = NewClients(ClientOptions{Command: "true", BootstrapTemplate: "{{"})
	assert.Error(t, err)
	assert.Equal(t, "xds:///l", LaunchSpec{Listener: "l"}.ChannelTarget())
}

// The example of docs/client-role.md renders a valid gRPC bootstrap.
func TestBootstrapTemplateDocExample(t *testing.T) {
	const example = `{"xds_servers": [{"server_uri": "{{.Server}}", "channel_creds": [{"type": "insecure"}]}],
 "node": {"id": "{{.NodeID}}", "cluster": "{{.Cluster}}"},
 {{- if .DefaultListenerTemplate}} "client_default_listener_resource_name_template": "{{.DefaultListenerTemplate}}",{{end}}
 "authorities": { {{- range $i, $a := .Authorities}}{{if $i}},{{end}}
   "{{$a.Name}}": {"xds_servers": [{"server_uri": "{{index $.AuthorityServers $a.Name}}", "channel_creds": [{"type": "insecure"}]}]}
 {{- end}} }}`
	for _, spec := range []LaunchSpec{
		{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "l"},
		{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "l", DefaultListenerTemplate: "xdstp://a/envoy.config.listener.v3.Listener/%s",
			Authorities: []bootstrap.Authority{{Name: "a", ServerAddr: "127.0.0.1:2"}, {Name: "b"}}},
	} {
		got, err := renderBootstrapTemplate(example, spec, "")
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, json.Unmarshal(got, &doc), string(got))
		assert.Len(t, doc["authorities"], len(spec.Authorities), string(got))
	}
}
