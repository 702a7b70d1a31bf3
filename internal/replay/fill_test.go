package replay_test

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"os"
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// secret is a TLS certificate Secret with a real key pair, a session
// ticket key and a generic secret, the three kinds a recording redacts.
func secret(t *testing.T) (*tlsv3.Secret, []byte, []byte) {
	t.Helper()
	var f replay.Filler
	key, cert, err := f.KeyPair()
	require.NoError(t, err)
	return &tlsv3.Secret{Name: "server-cert", Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: cert}},
		PrivateKey:       &core.DataSource{Specifier: &core.DataSource_InlineBytes{InlineBytes: key}},
	}}}, key, cert
}

// TestSecretNeverInFileAndFilled records a TLS Secret passing through the
// proxy: its private key reaches no byte of the file, in any form, and a
// replay fills the placeholder with a generated key whose certificate
// matches it, so the pair loads.
func TestSecretNeverInFileAndFilled(t *testing.T) {
	up, fx := startRef(t)
	sec, key, _ := secret(t)
	_, err := fx.Set(context.Background(), "n1", wire.Secret, "server-cert", mustAny(t, sec))
	require.NoError(t, err)

	p, err := record.Start(record.Options{Upstream: up, Dial: plaintext()})
	require.NoError(t, err)
	defer p.Stop()
	conn, err := grpc.NewClient(p.Addr(), plaintext()...)
	require.NoError(t, err)
	defer conn.Close()
	c := fakeclient.New(context.Background(), conn, wire.SotWADS, fakeclient.Options{NodeID: "n1", Timeout: wait})
	require.NoError(t, c.Subscribe(wire.Secret, "server-cert"))
	got, err := c.Expect(wire.Secret)
	require.NoError(t, err)
	require.NoError(t, c.Ack(wire.Secret, got))
	// The client got the real key: the proxy changes nothing.
	gotSecret := got.Get("server-cert").(*tlsv3.Secret)
	assert.Equal(t, key, gotSecret.GetTlsCertificate().GetPrivateKey().GetInlineBytes())
	c.Close()
	p.Stop()

	path := t.TempDir() + "/rec.json"
	require.NoError(t, transcript.WriteFile(path, p.File("test")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	file := string(b)
	for _, form := range []string{string(key), base64.StdEncoding.EncodeToString(key)} {
		assert.NotContains(t, file, form)
	}
	for _, line := range strings.Split(string(key), "\n") {
		if len(line) > 20 && !strings.HasPrefix(line, "-----") {
			assert.NotContains(t, file, line, "a line of the key")
		}
	}

	f, err := transcript.ReadFile(context.Background(), path)
	require.NoError(t, err)
	plan, err := replay.NewPlan(f)
	require.NoError(t, err)
	var resp *discovery.DiscoveryResponse
	for _, st := range plan.Steps {
		if st.Kind == replay.Response {
			resp = st.Message.(*discovery.DiscoveryResponse)
		}
	}
	require.NotNil(t, resp)
	var filler replay.Filler
	n, err := filler.Fill(resp)
	require.NoError(t, err)
	assert.Positive(t, n)
	var filled tlsv3.Secret
	require.NoError(t, resp.GetResources()[0].UnmarshalTo(&filled))
	tc := filled.GetTlsCertificate()
	newKey := tc.GetPrivateKey().GetInlineBytes()
	assert.NotEqual(t, key, newKey, "a generated key, not the recorded one")
	assert.Contains(t, string(newKey), "PRIVATE KEY")
	_, err = tls.X509KeyPair(tc.GetCertificateChain().GetInlineBytes(), newKey)
	assert.NoError(t, err, "the generated key and its certificate load as a pair")
}

// TestFillKinds fills each kind of placeholder with material of its kind,
// and leaves alone what is no placeholder.
func TestFillKinds(t *testing.T) {
	ph := []byte(transcript.RedactedSecret)
	s := &tlsv3.Secret{Name: "keys", Type: &tlsv3.Secret_SessionTicketKeys{SessionTicketKeys: &tlsv3.TlsSessionTicketKeys{
		Keys: []*core.DataSource{{Specifier: &core.DataSource_InlineBytes{InlineBytes: ph}}},
	}}}
	g := &tlsv3.Secret{Name: "token", Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
		Secret: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: transcript.RedactedSecret}},
	}}}
	plain := &tlsv3.Secret{Name: "plain", Type: &tlsv3.Secret_GenericSecret{GenericSecret: &tlsv3.GenericSecret{
		Secret: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: "not a placeholder"}},
	}}}
	resp := &discovery.DiscoveryResponse{TypeUrl: wire.Secret.URL}
	for _, m := range []*tlsv3.Secret{s, g, plain} {
		resp.Resources = append(resp.Resources, mustAny(t, m))
	}
	var f replay.Filler
	n, err := f.Fill(resp)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	var out [3]tlsv3.Secret
	for i := range out {
		require.NoError(t, resp.GetResources()[i].UnmarshalTo(&out[i]))
	}
	assert.Len(t, out[0].GetSessionTicketKeys().GetKeys()[0].GetInlineBytes(), 80)
	tok := out[1].GetGenericSecret().GetSecret().GetInlineString()
	assert.True(t, strings.HasPrefix(tok, "xdsconform-replay-") && len(tok) > 20, tok)
	assert.Equal(t, "not a placeholder", out[2].GetGenericSecret().GetSecret().GetInlineString())
}
