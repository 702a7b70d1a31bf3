package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"google.golang.org/grpc"
)

// Reach checks, within timeout, that addr can carry gRPC: it accepts a
// connection, completes the TLS handshake when tlsOpts asks for TLS, and
// answers the HTTP/2 preface. Unlike Preflight it opens no stream on the
// target, so a server that a recording sits in front of sees only the
// client's own streams. It returns the dial options that reach addr (its
// credentials, and dialer when not nil). A failure wraps ErrUnreachable,
// or ErrNoXDS when what answered does not speak HTTP/2, and names the
// cause in one line.
func Reach(ctx context.Context, addr string, tlsOpts TLSOptions, dialer func(context.Context, string) (net.Conn, error), timeout time.Duration) ([]grpc.DialOption, error) {
	creds, cfg, err := transportCredentials(tlsOpts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := newProbe(addr, dialer, cfg).check(ctx); err != nil {
		timedOut := ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
		if timedOut && !errors.Is(err, ErrNoXDS) {
			err = fmt.Errorf("%w (connect timeout %v)", err, timeout)
		}
		return nil, err
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	if dialer != nil {
		opts = append(opts, grpc.WithContextDialer(dialer))
	}
	return opts, nil
}
