package docker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Where no engine answers, Available says so in one line, quickly, and
// wraps ErrNoEngine so callers can tell it from other failures.
func TestAvailableReportsAMissingEngineInOneLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Available(ctx)
	if err == nil {
		t.Skip("a Docker engine is reachable here; this test is about machines without one")
	}
	assert.True(t, errors.Is(err, ErrNoEngine), "%v", err)
	assert.NotContains(t, err.Error(), "\n")
}

// requireEngine skips the test, with the reason on one line, where no
// Docker engine is reachable (as on the machines this project is built
// on); on a Docker host the container tests run.
func requireEngine(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Available(ctx); err != nil {
		t.Skipf("skipped: %v", err)
	}
}

// An Envoy container starts with a mounted bootstrap, publishes its admin
// port, and is gone after Stop.
func TestEnvoyContainerStartsAndStops(t *testing.T) {
	requireEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	boot := []byte("admin:\n  address:\n    socket_address: {address: 0.0.0.0, port_value: 9901}\nnode: {id: docker-test, cluster: xdsconform}\n")
	c, err := StartClient(ctx, ClientRequest{Image: EnvoyImage(), Bootstrap: boot, ServerPort: 1})
	require.NoError(t, err)
	addr, err := c.AdminAddr(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, addr)
	require.NoError(t, c.Stop(ctx))
}
