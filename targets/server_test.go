package targets_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

func TestServer_NodeCluster(t *testing.T) {
	for _, tc := range []struct {
		name, option, want, wantErr string
	}{
		{name: "default", option: "", want: targets.DefaultNodeCluster},
		{name: "fixed", option: "envoy-gateway-system/eg", want: "envoy-gateway-system/eg"},
		{name: "per node", option: "envoy-gateway-system/{{.NodeID}}", want: "envoy-gateway-system/node-1"},
		{name: "not a template", option: "gw/{{.NodeID", wantErr: "--node-cluster"},
		{name: "unknown field", option: "gw/{{.Cluster}}", wantErr: "only {{.NodeID}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: targets.BuiltinReference, NodeCluster: tc.option})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, tc.want, s.NodeCluster("node-1"))
		})
	}
}

// TestStartServer_MutualTLS serves the reference server's xDS over mutual
// TLS, as Envoy Gateway does, with its fixture API in plaintext next to it,
// and runs a scenario through a custom dialer: the harness presents its
// client certificate, reaches the server only through the dialer, talks
// plaintext to the fixture only when told to, and sends the node.cluster it
// was given.
func TestStartServer_MutualTLS(t *testing.T) {
	pki := newPKI(t)
	ref := refserver.New()
	clusters := &recorder{}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(pki.serverTLS)), grpc.StreamInterceptor(clusters.intercept))
	ref.Register(g)
	xdsLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(xdsLis) }()
	t.Cleanup(g.Stop)
	fx := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fx, ref.FixtureServer())
	fxLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = fx.Serve(fxLis) }()
	t.Cleanup(fx.Stop)

	dialed := 0
	var mu sync.Mutex
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		mu.Lock()
		dialed++
		mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", xdsLis.Addr().String())
	}
	opts := targets.ServerOptions{
		Target:  "127.0.0.1:1", // reachable through the dialer only
		Fixture: fxLis.Addr().String(),
		TLS:     targets.TLSOptions{CAFile: pki.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile, ServerName: "envoy-gateway"},
		Dialer:  dialer, NodeCluster: "envoy-gateway-system/{{.NodeID}}", ConnectTimeout: 2 * time.Second,
	}

	t.Run("fixture over TLS fails", func(t *testing.T) {
		_, err := targets.StartServer(t.Context(), opts)
		require.ErrorContains(t, err, "fixture "+fxLis.Addr().String())
	})
	t.Run("no client certificate is unreachable", func(t *testing.T) {
		o := opts
		o.TLS.CertFile, o.TLS.KeyFile, o.FixturePlaintext = "", "", true
		_, err := targets.StartServer(t.Context(), o)
		require.ErrorIs(t, err, targets.ErrUnreachable)
	})
	t.Run("mutual TLS, plaintext fixture", func(t *testing.T) {
		o := opts
		o.FixturePlaintext = true
		s, err := targets.StartServer(t.Context(), o)
		require.NoError(t, err)
		defer s.Close()
		require.NotNil(t, s.Caps)
		pairs, err := engine.Expand(scenarios.Server(), engine.Selection{Run: []string{"server/ack/no-resend-after-ack[sotw-ads]"}})
		require.NoError(t, err)
		rs, _ := engine.Run(t.Context(), pairs, engine.Config{Env: s, Timeouts: engine.DefaultTimeouts})
		require.Len(t, rs, 1)
		require.Equal(t, results.Pass, rs[0].Outcome, rs[0].Message)
		mu.Lock()
		assert.Positive(t, dialed)
		mu.Unlock()
		seen := clusters.seen()
		require.NotEmpty(t, seen)
		for _, n := range seen {
			assert.Equal(t, "envoy-gateway-system/"+n.id, n.cluster, "node.cluster names the pair's node")
		}
	})
}

// recorder notes the node of each stream's first request.
type recorder struct {
	mu    sync.Mutex
	nodes []node
}

type node struct{ id, cluster string }

func (r *recorder) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &recordingStream{ServerStream: ss, r: r})
}

func (r *recorder) seen() []node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]node(nil), r.nodes...)
}

type recordingStream struct {
	grpc.ServerStream
	r    *recorder
	done bool
}

func (s *recordingStream) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil && !s.done {
		s.done = true
		if req, ok := m.(*discovery.DiscoveryRequest); ok {
			s.r.mu.Lock()
			s.r.nodes = append(s.r.nodes, node{req.GetNode().GetId(), req.GetNode().GetCluster()})
			s.r.mu.Unlock()
		}
	}
	return err
}

// pki is a CA, a server certificate for "envoy-gateway" that requires
// client certificates, and a client certificate, as files.
type pki struct {
	serverTLS                 *tls.Config
	caFile, certFile, keyFile string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	issue := func(serial int64, name string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: ca.NotBefore, NotAfter: ca.NotAfter}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	server := issue(2, "envoy-gateway", x509.ExtKeyUsageServerAuth)
	client := issue(3, "envoy", x509.ExtKeyUsageClientAuth)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(client.PrivateKey)
	require.NoError(t, err)
	return pki{
		serverTLS: &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		caFile:    write("ca.crt", "CERTIFICATE", caDER),
		certFile:  write("tls.crt", "CERTIFICATE", client.Certificate[0]),
		keyFile:   write("tls.key", "PRIVATE KEY", keyDER),
	}
}
