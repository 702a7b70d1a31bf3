package targets

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// TestReach: a gRPC server is reached, with the options to dial it; a
// closed port is unreachable, a port that speaks another protocol serves
// no xDS, and a port that never answers times out, each in one line.
func TestReach(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	defer func() { g.Stop(); <-done }()
	opts, err := Reach(context.Background(), lis.Addr().String(), TLSOptions{}, nil, 5*time.Second)
	require.NoError(t, err)
	assert.NotEmpty(t, opts)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := closed.Addr().String()
	closed.Close()
	_, err = Reach(context.Background(), addr, TLSOptions{}, nil, 5*time.Second)
	assert.ErrorIs(t, err, ErrUnreachable)

	other, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer other.Close()
	go func() {
		for {
			c, err := other.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\n"))
			_, _ = io.Copy(io.Discard, c) // until the probe hangs up
			_ = c.Close()
		}
	}()
	_, err = Reach(context.Background(), other.Addr().String(), TLSOptions{}, nil, 5*time.Second)
	assert.ErrorIs(t, err, ErrNoXDS)
	assert.Contains(t, err.Error(), "SSH banner")

	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	_, err = Reach(context.Background(), silent.Addr().String(), TLSOptions{}, nil, 200*time.Millisecond)
	assert.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "connect timeout")
}
