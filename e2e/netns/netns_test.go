//go:build linux

package netns_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/e2e/netns"
	"github.com/xdsconform/xdsconform/internal/process"
)

// TestDialer_ReachesTheNamespaceOnly listens inside a private namespace and
// dials it: the dialer gets through, and the port the listener holds is
// free in the harness's own namespace, so the listener was not there.
func TestDialer_ReachesTheNamespaceOnly(t *testing.T) {
	if err := netns.Available(t.Context()); err != nil {
		t.Skip(err)
	}
	// The line says loopback is up: the wrapper brings it up before exec.
	proc, err := process.Start(t.Context(), netns.Command("sh", "-c", "echo up; exec sleep 60"), process.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = proc.Stop(time.Second) })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = proc.AwaitLine(ctx, "up")
	require.NoError(t, err)
	pid := proc.Pid()

	var lis net.Listener
	require.NoError(t, netns.Do(pid, func() error {
		var err error
		lis, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}))
	defer lis.Close()
	go func() {
		c, err := lis.Accept()
		if err == nil {
			_, _ = c.Write([]byte("in"))
			c.Close()
		}
	}()

	conn, err := netns.Dialer(pid)(t.Context(), lis.Addr().String())
	require.NoError(t, err)
	got, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Equal(t, "in", string(got))
	conn.Close()

	here, err := net.Listen("tcp", lis.Addr().String())
	require.NoError(t, err, "the port is free outside the namespace")
	here.Close()

	require.NoError(t, proc.Stop(time.Second))
	require.Error(t, netns.Do(pid, func() error { return nil }), "the namespace went with its process")
}

func TestDialer_WantsAnIP(t *testing.T) {
	_, err := netns.Dialer(1)(t.Context(), "localhost:18000")
	require.ErrorContains(t, err, "want an IP address")
}
