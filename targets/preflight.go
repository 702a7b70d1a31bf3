package targets

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/wire"
)

// ErrNoXDS marks a target that speaks gRPC but serves no xDS service: a
// configuration error (the CLI exits 2), typically --target pointed at the
// fixture API's port.
var ErrNoXDS = errors.New("serves no xDS service")

// probe reaches a target's xDS address below gRPC, the way its gRPC
// connections do (same dialer, same TLS configuration), so that a target
// that cannot be used is named by its cause — a refused port, an x509
// error, bytes that are not HTTP/2 — at once, rather than by grpc-go's
// last connectivity state after the whole connect timeout.
type probe struct {
	addr string
	dial func(ctx context.Context, addr string) (net.Conn, error)
	tls  *tls.Config // nil: plaintext
}

// newProbe is the probe of addr through dial (nil: TCP) with TLS
// configuration cfg (nil: plaintext). The configuration is completed as
// grpc-go's credentials complete it: the server name defaults to the
// address's host, and HTTP/2 is asked for by ALPN.
func newProbe(addr string, dial func(context.Context, string) (net.Conn, error), cfg *tls.Config) *probe {
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	if cfg != nil {
		cfg = cfg.Clone()
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		cfg.NextProtos = []string{http2.NextProtoTLS}
	}
	return &probe{addr: addr, dial: dial, tls: cfg}
}

// check connects, completes the TLS handshake if any, and exchanges the
// HTTP/2 connection prefaces, all within ctx. A failure is the cause in
// words, wrapping ErrUnreachable.
func (p *probe) check(ctx context.Context) error {
	conn, err := p.dial(ctx, p.addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnreachable, p.addr, err)
	}
	defer conn.Close()
	// The handshake and the preface exchange below honour ctx through the
	// connection's deadline; without one they would wait on a peer that
	// never answers.
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()
	if p.tls != nil {
		tc := tls.Client(conn, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("%w: %s: TLS handshake failed: %w%s", ErrUnreachable, p.addr, err, tlsHint(err))
		}
		if got := tc.ConnectionState().NegotiatedProtocol; got != http2.NextProtoTLS {
			return fmt.Errorf("%w: %s: the TLS handshake did not select HTTP/2 by ALPN (selected %q), which gRPC requires", ErrUnreachable, p.addr, got)
		}
		conn = tc
	}
	return p.http2(conn)
}

// tlsHint says what a TLS handshake error usually means, when it is the
// plainest sign of a target that is not on TLS at all.
func tlsHint(err error) string {
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) {
		return " (the target does not seem to speak TLS: drop --tls?)"
	}
	return ""
}

// http2 sends the client's connection preface and an empty SETTINGS frame
// and reads the server's: an HTTP/2 server's first frame is SETTINGS on
// stream 0. Anything else is not an HTTP/2 server, and so not gRPC.
func (p *probe) http2(conn net.Conn) error {
	// The preface, then a SETTINGS frame with no settings: a 9-byte
	// header, length 0, type SETTINGS (4), no flags, stream 0.
	hello := append([]byte(http2.ClientPreface), 0, 0, 0, byte(http2.FrameSettings), 0, 0, 0, 0, 0)
	if _, err := conn.Write(hello); err != nil {
		return fmt.Errorf("%w: %s: sending the HTTP/2 preface: %v", ErrUnreachable, p.addr, err)
	}
	// Enough to show what the peer sent in a message, and bounded.
	buf := make([]byte, 24)
	n, err := io.ReadAtLeast(conn, buf, 9)
	got := buf[:n]
	switch {
	case n >= 9 && http2.FrameType(got[3]) == http2.FrameSettings && bytes.Equal(got[5:9], []byte{0, 0, 0, 0}):
		return nil
	case n > 0:
		return fmt.Errorf("%w: %s does not speak HTTP/2 (so not gRPC): it answered the HTTP/2 preface with %q%s", ErrUnreachable, p.addr, got, plaintextHint(p, got))
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		// A reset is a close that found the preface unread.
		return fmt.Errorf("%w: %s closed the connection in answer to the HTTP/2 preface without a byte%s", ErrUnreachable, p.addr, plaintextHint(p, nil))
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: %s accepted a connection but did not answer the HTTP/2 preface in time (%w)", ErrUnreachable, p.addr, err)
	}
	if p.tls != nil {
		// After the handshake, a server that wants a client certificate
		// says so here (TLS 1.3 checks it after the client has finished).
		hint := ""
		if strings.Contains(err.Error(), "certificate required") {
			hint = " (the server wants a client certificate: --tls-cert and --tls-key)"
		}
		return fmt.Errorf("%w: %s: TLS: %w%s", ErrUnreachable, p.addr, err, hint)
	}
	return fmt.Errorf("%w: %s: reading the HTTP/2 preface: %v", ErrUnreachable, p.addr, err)
}

// plaintextHint suggests --tls when a plaintext preface met what a TLS
// server sends to a client that is not speaking TLS: an alert record
// (content type 21, version 3.x) or an immediate close.
func plaintextHint(p *probe, got []byte) string {
	if p.tls != nil {
		return ""
	}
	if got == nil || len(got) >= 2 && got[0] == 0x15 && got[1] == 0x03 {
		return " (a TLS port? connect with --tls)"
	}
	return ""
}

// xdsMethods are the discovery methods a management server may serve:
// ADS first, then every per-type service, SotW and delta.
func xdsMethods() []string {
	out := []string{
		wire.MethodFor(wire.Variant{Protocol: wire.SotW, Transport: wire.ADS}, wire.Type{}),
		wire.MethodFor(wire.Variant{Protocol: wire.Delta, Transport: wire.ADS}, wire.Type{}),
	}
	for _, t := range wire.AllTypes {
		for _, p := range []wire.Protocol{wire.SotW, wire.Delta} {
			if t.Speaks(p) {
				out = append(out, wire.MethodFor(wire.Variant{Protocol: p, Transport: wire.PerType}, t))
			}
		}
	}
	return out
}

// silentServes is how long a discovery stream the harness has half-closed
// may stay silent before the method counts as served: a server that does
// not serve a method answers Unimplemented at once, one that serves it
// either ends the stream (the client has nothing more to say) or waits.
const silentServes = time.Second

// servesXDS checks, over conn, that the target serves at least one xDS
// discovery method. ADS is tried first and alone, so a server that serves
// it sees one empty stream; only a server without ADS is asked about the
// per-type methods. A gRPC server that answers Unimplemented to all of
// them is ErrNoXDS; a connection that fails is ErrUnreachable with grpc's
// cause.
func servesXDS(ctx context.Context, conn *grpc.ClientConn, md map[string]string, addr string) error {
	if len(md) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(md))
	}
	methods := xdsMethods()
	served, err := anyServed(ctx, conn, methods[:1])
	if err != nil || served {
		return err
	}
	served, err = anyServed(ctx, conn, methods[1:])
	if err != nil || served {
		return err
	}
	return fmt.Errorf("%s is a gRPC server but %w: ADS and every per-type discovery service answered Unimplemented (is it the fixture API's port?)", addr, ErrNoXDS)
}

// anyServed asks every one of methods at once and reports whether one is
// served, as soon as one is.
func anyServed(ctx context.Context, conn *grpc.ClientConn, methods []string) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan error, len(methods))
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, m := range methods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- askMethod(ctx, conn, m)
		}()
	}
	for range methods {
		err := <-answers
		switch status.Code(err) {
		case codes.Unimplemented:
			continue
		case codes.Unavailable:
			// The connection itself failed: grpc's message carries the
			// cause (its last connection error).
			return false, fmt.Errorf("%w: %s: %v", ErrUnreachable, conn.Target(), status.Convert(err).Message())
		case codes.DeadlineExceeded:
			if ctx.Err() != nil {
				return false, fmt.Errorf("%w: %s did not answer a discovery stream in time", ErrUnreachable, conn.Target())
			}
		}
		return true, nil
	}
	return false, nil
}

// askMethod opens a stream on method, half-closes it at once and returns
// how it ended: Unimplemented when the method is not served, nil when the
// stream stayed silent for silentServes (served, waiting for a request).
func askMethod(ctx context.Context, conn *grpc.ClientConn, method string) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cs, err := conn.NewStream(sctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		return err
	}
	if err := cs.CloseSend(); err != nil {
		return err
	}
	silent := time.AfterFunc(silentServes, cancel)
	defer silent.Stop()
	err = cs.RecvMsg(&discovery.DiscoveryResponse{})
	if !silent.Stop() && ctx.Err() == nil {
		return nil // silent: it serves the method and waits for a request
	}
	if err == io.EOF {
		return nil // ended with OK: served
	}
	return err
}
