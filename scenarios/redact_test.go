package scenarios

import (
	"fmt"
	"strings"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// failures collects what a require step reports.
type failures struct{ msgs []string }

func (f *failures) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *failures) FailNow() {}

// withKey is cluster c (a copy) with a private key inlined in its TLS
// context, as a server that differs from what was set could serve it.
func withKey(t *testing.T, c proto.Message, key string) *cluster.Cluster {
	t.Helper()
	out := proto.Clone(c).(*cluster.Cluster)
	ctx, err := anypb.New(&tls.UpstreamTlsContext{CommonTlsContext: &tls.CommonTlsContext{TlsCertificates: []*tls.TlsCertificate{{
		PrivateKey: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: key}},
	}}}})
	require.NoError(t, err)
	out.TransportSocket = &core.TransportSocket{Name: "tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: ctx}}
	return out
}

// A whole-message mismatch shows the served resource through the
// redactor: the difference is visible, the key is not; two resources that
// differ only in a key are said to.
func TestRequireSameMessageRedacts(t *testing.T) {
	const key = "MARKER-same-message-key"
	want := wire.Build(wire.Cluster, "c", 1)
	var f failures
	requireSameMessage(&f, want, withKey(t, want, key), "cluster %q", "c")
	all := strings.Join(f.msgs, "\n")
	require.NotEmpty(t, f.msgs)
	assert.NotContains(t, all, key)
	assert.Contains(t, all, "transport_socket")

	f = failures{}
	requireSameMessage(&f, withKey(t, want, key+"-old"), withKey(t, want, key), "cluster %q", "c")
	all = strings.Join(f.msgs, "\n")
	assert.Contains(t, all, "differ only in fields redacted")
	assert.NotContains(t, all, key)
}

// A revision mismatch never quotes a key, neither the one served nor the
// one the fixture's revision fields want at the same path.
func TestRevisionMismatchRedacts(t *testing.T) {
	const served, wanted = "MARKER-revision-served-key", "MARKER-revision-wanted-key"
	base := wire.Build(wire.Cluster, "c", 1)
	fields, err := fixture.RevisionOf(withKey(t, base, wanted))
	require.NoError(t, err)
	raw := fixture.Mismatch(withKey(t, base, served), fields)
	require.Contains(t, raw, served, "the unredacted mismatch this test guards against")
	why := revisionMismatch(withKey(t, base, served), fields)
	assert.NotEmpty(t, why)
	assert.NotContains(t, why, served)
	assert.NotContains(t, why, wanted)
	assert.Empty(t, revisionMismatch(withKey(t, base, wanted), fields))
}

// A served resource that does not render (an Any of a type this build
// does not link) makes no wanted value a secret: it differs from its
// redacted form everywhere, not only at a secret's path.
func TestRevisionMismatchUnrenderableRemembersNothing(t *testing.T) {
	const name = "cluster-unrenderable-name"
	got := withKey(t, wire.Build(wire.Cluster, name, 1), "MARKER-unrenderable-key")
	got.TypedExtensionProtocolOptions = map[string]*anypb.Any{"x": {TypeUrl: "type.googleapis.com/acme.v1.Unlinked", Value: []byte("abc")}}
	why := revisionMismatch(got, []*fixturepb.RevisionField{{Path: "name", Value: name}, {Path: "connect_timeout", Value: "9s"}})
	assert.Contains(t, why, "cannot render")
	assert.Equal(t, name, transcript.Scrub(name))
}
