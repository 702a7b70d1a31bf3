package targets_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
)

// patient is a connect timeout no test here should wait out: every cause
// below is definitive, so the check must report it without waiting, and
// its message then carries no "(connect timeout …)".
const patient = 30 * time.Second

// serve serves g on a fresh loopback port until the test ends.
func serve(t *testing.T, g *grpc.Server) string {
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

// xdsServer serves the reference server's xDS services with opts.
func xdsServer(t *testing.T, opts ...grpc.ServerOption) string {
	g := grpc.NewServer(opts...)
	refserver.New().Register(g)
	return serve(t, g)
}

// garbage listens and answers every connection with bytes that are not
// HTTP/2, then closes it.
func garbage(t *testing.T, reply string) string {
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
			_, _ = c.Write([]byte(reply))
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = lis.Close(); <-done })
	return lis.Addr().String()
}

// refused is an address nothing listens on.
func refused(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())
	return addr
}

// TestStartServer_Unusable checks that every way a HOST:PORT target can be
// unusable is reported with its own cause, at once: the sentinel the CLI
// maps to its exit code (3 unreachable, 2 no xDS), and the words that name
// the cause.
func TestStartServer_Unusable(t *testing.T) {
	pki := newPKI(t)
	other := newPKI(t) // a CA that did not sign the server's certificate
	tlsServer := xdsServer(t, grpc.Creds(credentials.NewTLS(pki.serverTLS)))
	plainServer := xdsServer(t)
	fixtureOnly := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fixtureOnly, refserver.New().FixtureServer())
	fixtureAddr := serve(t, fixtureOnly)
	mutual := targets.TLSOptions{CAFile: pki.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile, ServerName: "envoy-gateway"}

	for _, tc := range []struct {
		name   string
		target string
		tls    targets.TLSOptions
		is     error
		cause  []string
	}{
		{name: "refused", target: refused(t), is: targets.ErrUnreachable, cause: []string{"connection refused"}},
		{name: "wrong CA", target: tlsServer, is: targets.ErrUnreachable,
			tls:   targets.TLSOptions{CAFile: other.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile, ServerName: "envoy-gateway"},
			cause: []string{"TLS handshake failed", "x509", "unknown authority"}},
		{name: "wrong server name", target: tlsServer, is: targets.ErrUnreachable,
			tls:   targets.TLSOptions{CAFile: pki.caFile, CertFile: pki.certFile, KeyFile: pki.keyFile, ServerName: "not-the-server"},
			cause: []string{"TLS handshake failed", "x509", "not-the-server"}},
		{name: "no client certificate", target: tlsServer, is: targets.ErrUnreachable,
			tls:   targets.TLSOptions{CAFile: pki.caFile, ServerName: "envoy-gateway"},
			cause: []string{"TLS", "certificate required", "--tls-cert and --tls-key"}},
		{name: "plaintext against TLS", target: tlsServer, is: targets.ErrUnreachable,
			cause: []string{"HTTP/2 preface", "--tls"}},
		{name: "TLS against plaintext", target: plainServer, tls: mutual, is: targets.ErrUnreachable,
			cause: []string{"TLS handshake failed", "does not look like a TLS handshake"}},
		{name: "garbage", target: garbage(t, "HELLO\x1b[31m not http/2\n"), is: targets.ErrNoXDS,
			cause: []string{"is not a gRPC server", "does not speak HTTP/2", `"HELLO\x1b[31m not http/2\n"`}},
		{name: "HTTP/1.1", target: garbage(t, "HTTP/1.1 400 Bad Request\r\n\r\n"), is: targets.ErrNoXDS,
			cause: []string{"is not a gRPC server", "does not speak HTTP/2", "an HTTP/1.x response", "HTTP/1.1 400"}},
		{name: "SSH", target: garbage(t, "SSH-2.0-OpenSSH_9.2\r\n"), is: targets.ErrNoXDS,
			cause: []string{"is not a gRPC server", "an SSH banner"}},
		{name: "silent close", target: garbage(t, ""), is: targets.ErrUnreachable,
			cause: []string{"closed the connection", "--tls"}},
		{name: "gRPC without xDS", target: fixtureAddr, is: targets.ErrNoXDS,
			cause: []string{fixtureAddr, "serves no xDS service", "it answered Unimplemented for ADS and every per-type discovery service",
				"it serves the fixture API", "give this address as --fixture"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: tc.target, TLS: tc.tls, ConnectTimeout: patient})
			t.Log(err)
			require.ErrorIs(t, err, tc.is)
			for _, c := range tc.cause {
				assert.Contains(t, err.Error(), c)
			}
			assert.NotContains(t, err.Error(), "connect timeout", "a definitive cause is reported without waiting out the timeout")
			if tc.is == targets.ErrNoXDS {
				assert.NotErrorIs(t, err, targets.ErrUnreachable, "a gRPC server without xDS is a configuration error, not an unreachable target")
			}
		})
	}

	t.Run("usable", func(t *testing.T) {
		for name, o := range map[string]targets.ServerOptions{
			"plaintext":  {Target: plainServer},
			"mutual TLS": {Target: tlsServer, TLS: mutual},
		} {
			o.ConnectTimeout = patient
			s, err := targets.StartServer(t.Context(), o)
			require.NoError(t, err, name)
			s.Close()
		}
	})
}

// TestPreflight_Silent checks the bounded wait: a port that accepts and
// says nothing is reported when the connect timeout runs out, naming it.
func TestPreflight_Silent(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := lis.Accept(); err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})
	_, err = targets.StartServer(t.Context(), targets.ServerOptions{Target: lis.Addr().String(), ConnectTimeout: 200 * time.Millisecond})
	require.ErrorIs(t, err, targets.ErrUnreachable)
	assert.Contains(t, err.Error(), "did not answer the HTTP/2 preface")
	assert.Contains(t, err.Error(), "connect timeout 200ms")
}

// TestServer_CheckAlive checks the liveness the engine consults: alive
// while the server serves, dead with the cause once it is gone, and then
// so for good (Died, Gone) without another probe.
func TestServer_CheckAlive(t *testing.T) {
	g := grpc.NewServer()
	refserver.New().Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: lis.Addr().String(), ConnectTimeout: patient})
	require.NoError(t, err)
	defer s.Close()

	require.NoError(t, s.CheckAlive(t.Context()))
	require.NoError(t, s.Died())
	select {
	case <-s.Gone():
		t.Fatal("Gone is closed while the target lives")
	default:
	}

	g.Stop()
	<-done
	err = s.CheckAlive(t.Context())
	require.ErrorIs(t, err, targets.ErrUnreachable)
	assert.Contains(t, err.Error(), "connection refused")
	assert.Equal(t, err, s.Died())
	<-s.Gone() // closed: a hang here is the failure

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	assert.True(t, errors.Is(s.CheckAlive(cancelled), targets.ErrUnreachable), "once dead, the verdict stands without a probe")
}

// TestServer_CheckAliveShared checks that callers arriving while a
// re-check is in progress share its verdict instead of probing again: the
// pairs that error together when a target dies cost one probe.
func TestServer_CheckAliveShared(t *testing.T) {
	addr := xdsServer(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		for {
			select {
			case c := <-accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	var dead atomic.Bool
	var dials atomic.Int32
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		to := addr
		if dead.Load() {
			dials.Add(1)
			to = silent.Addr().String()
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to)
	}
	s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: "127.0.0.1:1", Dialer: dialer, ConnectTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()

	dead.Store(true) // from now on the target accepts and never answers
	first := make(chan error, 1)
	go func() { first <- s.CheckAlive(t.Context()) }()
	c := <-accepted // the first probe is in progress
	defer c.Close()
	others := make(chan error, 5)
	for range 5 {
		go func() { others <- s.CheckAlive(t.Context()) }()
	}
	want := <-first
	require.ErrorIs(t, want, targets.ErrUnreachable)
	for range 5 {
		assert.Equal(t, want, <-others)
	}
	assert.Equal(t, int32(2), dials.Load(), "one check for every caller: a probe and its one retry")
}

// TestServer_CheckAliveRetries checks that one probe that times out does
// not declare a live target dead: the probe is retried once, and the
// target, answering the second time, stays alive.
func TestServer_CheckAliveRetries(t *testing.T) {
	addr := xdsServer(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			accepted <- c
		}
	}()
	t.Cleanup(func() {
		select {
		case c := <-accepted:
			_ = c.Close()
		default:
		}
	})
	var slowOnce atomic.Bool
	var dials, slow atomic.Int32
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		dials.Add(1)
		to := addr
		if slowOnce.CompareAndSwap(true, false) {
			slow.Add(1)
			to = silent.Addr().String() // accepts and never answers
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", to)
	}
	s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: "127.0.0.1:1", Dialer: dialer, ConnectTimeout: 300 * time.Millisecond})
	require.NoError(t, err)
	defer s.Close()

	before := dials.Load()
	slowOnce.Store(true)
	require.NoError(t, s.CheckAlive(t.Context()), "one probe that timed out is not a death")
	require.NoError(t, s.Died())
	assert.Equal(t, int32(1), slow.Load(), "the first probe met the silent port")
	assert.GreaterOrEqual(t, dials.Load()-before, int32(2), "the probe and its retry")
}
