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
	"syscall"
	"time"

	"golang.org/x/net/http2"
)

// ErrNoXDS marks a target that answers but serves no xDS service — a gRPC
// server without it, typically the fixture API's port, or a server of
// another protocol: a configuration error (the CLI exits 2).
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
// words, wrapping ErrUnreachable, or ErrNoXDS when what answered speaks
// another protocol than HTTP/2 and TLS.
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
	case n > 0 && plaintextHint(p, got) != "":
		return fmt.Errorf("%w: %s does not speak HTTP/2 (so not gRPC): it answered the HTTP/2 preface with %q%s", ErrUnreachable, p.addr, got, plaintextHint(p, got))
	case n > 0:
		// Something answered, in another protocol: the address is wrong,
		// not unreachable.
		return fmt.Errorf("%s is not a gRPC server, so it %w: it does not speak HTTP/2 and answered the HTTP/2 preface with %s", p.addr, ErrNoXDS, whatAnswered(got))
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

// whatAnswered names the protocol of the first bytes got a server sent,
// when they show it, with the bytes quoted (escaped).
func whatAnswered(got []byte) string {
	switch {
	case bytes.HasPrefix(got, []byte("HTTP/1.")):
		return fmt.Sprintf("an HTTP/1.x response (%q)", got)
	case bytes.HasPrefix(got, []byte("SSH-")):
		return fmt.Sprintf("an SSH banner (%q)", got)
	case bytes.HasPrefix(got, []byte("<")):
		// An HTTP/1.x server that answers a request it cannot parse
		// with a bare error page (Python's http.server does).
		return fmt.Sprintf("what looks like an HTML page (%q)", got)
	}
	return fmt.Sprintf("%q", got)
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
