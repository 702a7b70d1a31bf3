package hostile_test

// Part 4 of issue 11, through the CLI: a target that cannot be used is
// exit 3 (or 2 when it is gRPC without xDS) with its cause in one line; a
// target that dies mid-run is one line and errors for the rest; a
// response over grpc-go's default 4 MiB is accepted; a client on xDS v2 is
// named as such.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	pemenc "encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
)

// serveGRPC serves g on a fresh loopback port until the test ends (or g
// is stopped) and returns the address.
func serveGRPC(t *testing.T, g *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() { g.Stop(); <-done })
	return lis.Addr().String()
}

// refTarget serves the reference server's xDS (with opts) and its fixture
// API on two ports, as a real server under test with a fixture does. The
// xDS server is returned so a test can stop it.
func refTarget(t *testing.T, opts ...grpc.ServerOption) (xds *grpc.Server, xdsAddr, fixtureAddr string) {
	t.Helper()
	ref := refserver.New()
	xds = grpc.NewServer(opts...)
	ref.Register(xds)
	fx := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fx, ref.FixtureServer())
	return xds, serveGRPC(t, xds), serveGRPC(t, fx)
}

// stderrLine checks that stderr is exactly one line and returns it.
func stderrLine(t *testing.T, r cliResult) string {
	t.Helper()
	line := strings.TrimSuffix(r.Stderr, "\n")
	require.NotEmpty(t, line, "stdout: %s", r.Stdout)
	require.NotContains(t, line, "\n", "one line on stderr")
	return line
}

// testPKI is a CA (caFile), a server TLS configuration with a
// certificate for serverName signed by it, and otherCA, the PEM of a CA
// that signed nothing.
type testPKI struct {
	caFile, otherCA string
	serverTLS       *tls.Config
	serverName      string
}

func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	dir := t.TempDir()
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true,
			BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		require.NoError(t, err)
		ca, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return ca, key, der
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pemenc.EncodeToMemory(&pemenc.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	ca, caKey, caDER := newCA("hostile test CA")
	_, _, otherDER := newCA("a CA that signed nothing")
	issue := func(serial int64, name string, usage x509.ExtKeyUsage) tls.Certificate {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: ca.NotBefore, NotAfter: ca.NotAfter}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	}
	server := issue(2, "xds.test", x509.ExtKeyUsageServerAuth)
	return testPKI{
		caFile:     write("ca.crt", "CERTIFICATE", caDER),
		otherCA:    write("other-ca.crt", "CERTIFICATE", otherDER),
		serverTLS:  &tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS12},
		serverName: "xds.test",
	}
}

// garbagePort answers every connection with bytes that are not HTTP/2.
func garbagePort(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n"))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = lis.Close(); <-done })
	return lis.Addr().String()
}

// TestTransport_Unusable: every way a target's port can be unusable exits
// 3 with the cause in its one stderr line (the x509 or handshake cause for
// TLS: a bar of the issue), and a port that answers without xDS (a gRPC
// server without it, an SSH banner) exits 2;
// no report is left behind and nothing ran.
func TestTransport_Unusable(t *testing.T) {
	pki := newTestPKI(t)
	_, tlsAddr, _ := refTarget(t, grpc.Creds(credentials.NewTLS(pki.serverTLS)))
	_, plainAddr, fixtureAddr := refTarget(t)
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		cause []string
	}{
		{name: "wrong CA", args: []string{"--target", tlsAddr, "--tls-ca", pki.otherCA, "--tls-server-name", pki.serverName},
			code: 3, cause: []string{"TLS handshake failed", "x509: certificate signed by unknown authority"}},
		{name: "wrong server name", args: []string{"--target", tlsAddr, "--tls-ca", pki.caFile, "--tls-server-name", "not-xds.test"},
			code: 3, cause: []string{"TLS handshake failed", "x509: certificate is valid for xds.test, not not-xds.test"}},
		{name: "plaintext against TLS", args: []string{"--target", tlsAddr},
			code: 3, cause: []string{"HTTP/2 preface", "--tls"}},
		{name: "TLS against plaintext", args: []string{"--target", plainAddr, "--tls-ca", pki.caFile},
			code: 3, cause: []string{"TLS handshake failed", "first record does not look like a TLS handshake"}},
		// Something answered, and it is not xDS: a configuration error
		// (issue 13), like a gRPC server without xDS.
		{name: "garbage", args: []string{"--target", garbagePort(t)},
			code: 2, cause: []string{"does not speak HTTP/2", `"SSH-2.0-OpenSSH_9.6\r\n"`}},
		{name: "gRPC without xDS", args: []string{"--target", fixtureAddr},
			code: 2, cause: []string{fixtureAddr, "serves no xDS service", "Unimplemented"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A connect timeout no run may wait out: every cause here is
			// definitive, so it is reported at once (the CLI's bound
			// would kill a run that waited, failing the test).
			r := runCLI(t, cliOptions{Timeout: time.Minute}, append([]string{"server", "--connect-timeout", "10m"}, tc.args...)...)
			require.Equal(t, tc.code, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			line := stderrLine(t, r)
			for _, c := range tc.cause {
				assert.Contains(t, line, c)
			}
			assert.NotContains(t, line, "connect timeout")
			assert.Nil(t, r.JSON, "no report from a run that could not start")
		})
	}
}

// TestTransport_TargetDies: a server that dies after a few streams gives
// one stderr line saying so and exit 3; every pair that had not passed
// before is an error with that one cause, none a failure, and the report
// of what ran is written. The run ends promptly: pairs in flight are
// cancelled and the rest do not start (a run that waited out its
// timeouts would pass the CLI's bound and fail the test).
func TestTransport_TargetDies(t *testing.T) {
	var streams atomic.Int32
	var once sync.Once
	var xds *grpc.Server
	const dieAfter = 6
	xds, addr, fixtureAddr := refTarget(t, grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		if streams.Add(1) == dieAfter {
			once.Do(func() { go xds.Stop() }) // Stop waits for handlers: not from one
		}
		return h(srv, ss)
	}))
	r := runCLI(t, cliOptions{Timeout: 90 * time.Second}, "server", "--target", addr, "--fixture", fixtureAddr,
		"--run", "server/version/*,server/resources/*,server/nonce/*", "--parallel", "2", "--scenario-timeout", "10m")
	require.Equal(t, 3, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	line := stderrLine(t, r)
	assert.Contains(t, line, "the target died during the run")
	assert.Contains(t, line, addr)

	run := r.report(t)
	var errored int
	for _, res := range run.Results {
		switch res.Outcome {
		case results.Pass:
		case results.Error:
			errored++
			assert.True(t, strings.HasPrefix(res.Message, "the target died during the run: "), "%s: %s", res.FullName(), res.Message)
			assert.Contains(t, res.Message, addr)
		default:
			t.Errorf("%s: %s, want pass (before the death) or error (after): %s", res.FullName(), res.Outcome, res.Message)
		}
	}
	assert.Greater(t, errored, len(run.Results)/2, "most pairs come after the death")
	assert.Less(t, r.MaxRSS, int64(maxRSS))
	t.Logf("%d of %d pairs errored with the death's cause; peak RSS %d MiB", errored, len(run.Results), r.MaxRSS>>20)
}

// padTo adds control_plane.identifier of n bytes to every response: a
// response as large as a big real configuration, correct in every way the
// scenarios check.
func padTo(n int) grpc.StreamServerInterceptor {
	pad := &core.ControlPlane{Identifier: strings.Repeat("p", n)}
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, paddedStream{ss, pad})
	}
}

type paddedStream struct {
	grpc.ServerStream
	pad *core.ControlPlane
}

func (p paddedStream) SendMsg(m any) error {
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		r = proto.Clone(r).(*discovery.DiscoveryResponse)
		r.ControlPlane = p.pad
		m = r
	case *discovery.DeltaDiscoveryResponse:
		r = proto.Clone(r).(*discovery.DeltaDiscoveryResponse)
		r.ControlPlane = p.pad
		m = r
	}
	return p.ServerStream.SendMsg(m)
}

// TestTransport_LargeResponse: a response over grpc-go's default 4 MiB
// and under the harness's default limit is accepted; over a limit set
// lower with --max-recv-size, the pair is an error that names the flag,
// and the transcript says the harness closed the stream.
func TestTransport_LargeResponse(t *testing.T) {
	_, addr, fixtureAddr := refTarget(t, grpc.StreamInterceptor(padTo(5<<20)))
	args := []string{"server", "--target", addr, "--fixture", fixtureAddr, "--run", "server/ack/no-resend-after-ack", "--variant", "sotw-ads"}

	r := runCLI(t, cliOptions{}, args...)
	require.Equal(t, 0, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	run := r.report(t)
	require.Len(t, run.Results, 1)
	assert.Equal(t, results.Pass, run.Results[0].Outcome, run.Results[0].Message)
	assert.Less(t, r.MaxRSS, int64(maxRSS))
	t.Logf("peak RSS with 5 MiB responses: %d MiB", r.MaxRSS>>20)

	r = runCLI(t, cliOptions{}, append(args, "--max-recv-size", "4MiB")...)
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	res := r.report(t).Results
	require.Len(t, res, 1)
	assert.Equal(t, results.Error, res[0].Outcome)
	assert.Contains(t, res[0].Message, "over the harness's receive limit")
	assert.Contains(t, res[0].Message, "--max-recv-size")
	assert.NotContains(t, string(r.JSON), "closed by target")
}

// TestTransport_V2Client: a client that speaks only xDS v2 is reported as
// such, for every pair, not as a client that never connected.
func TestTransport_V2Client(t *testing.T) {
	r := runCLI(t, cliOptions{}, "client", "--client-cmd", clientCmd("xds-v2", ""), "--run", "client/ack/*",
		"--start-timeout", "30s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	ran := 0
	for _, res := range r.report(t).Results {
		if res.Outcome == results.Skip {
			continue
		}
		ran++
		assert.Equal(t, results.Error, res.Outcome, res.FullName())
		assert.Equal(t, "the client speaks xDS v2 (/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources), which this harness does not test", res.Message, res.FullName())
	}
	assert.Positive(t, ran)
}

func init() {
	// xds-v2 opens the v2 ADS stream, as an Envoy with a v2 bootstrap
	// does, and waits to be stopped.
	registerClientMode("xds-v2", func(l launched) int {
		conn, err := grpc.NewClient(l.Server, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
			"/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources")
		if err == nil {
			_ = cs.SendMsg(&discovery.DiscoveryRequest{TypeUrl: "type.googleapis.com/envoy.api.v2.Listener"})
			err = cs.RecvMsg(&discovery.DiscoveryResponse{})
		}
		fmt.Fprintf(os.Stderr, "v2 ADS: %v\n", err)
		<-ctx.Done() // the harness stops it
		return 0
	})
}
