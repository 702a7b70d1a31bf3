package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// start runs the example on port-0 listeners and returns client
// connections to its xDS and fixture ports; the test's end stops it and
// checks that run returned.
func start(t *testing.T) (xds, fx *grpc.ClientConn) {
	t.Helper()
	return startSeeded(t, seeding{})
}

// startSeeded is start with -seed.
func startSeeded(t *testing.T, seed seeding) (xds, fx *grpc.ClientConn) {
	t.Helper()
	xdsLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fixtureLis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, xdsLis, fixtureLis, seed) }()
	dial := func(addr string) *grpc.ClientConn {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		return conn
	}
	xds, fx = dial(xdsLis.Addr().String()), dial(fixtureLis.Addr().String())
	t.Cleanup(func() {
		_ = xds.Close()
		_ = fx.Close()
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("run did not return after its context ended")
		}
	})
	return xds, fx
}

func TestCapabilities(t *testing.T) {
	_, conn := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	caps, err := fixture.FromConn(conn).Capabilities(ctx)
	require.NoError(t, err)
	assert.Equal(t, fixture.APIVersion, caps.GetApiVersion())
	assert.ElementsMatch(t, []string{"sotw-ads", "delta-ads"}, caps.GetVariants())
	assert.Contains(t, caps.GetTypeUrls(), wire.Cluster.URL)
	assert.True(t, caps.GetNodeScoped())
	assert.False(t, caps.GetGeneratesNames())
}

// TestSetIsServed checks the wiring end to end: a resource set through the
// fixture is served to its node over ADS.
func TestSetIsServed(t *testing.T) {
	xds, conn := start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fx := fixture.FromConn(conn)
	const node, name = "example-node", "example-cluster"
	require.NoError(t, fx.Reset(ctx, node))

	served, err := fx.Set(ctx, node, wire.Cluster, name, wire.BuildAny(wire.Cluster, name, 1))
	require.NoError(t, err)
	assert.Equal(t, name, served.Name)

	s, err := discovery.NewAggregatedDiscoveryServiceClient(xds).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{
		Node: &core.Node{Id: node}, TypeUrl: wire.Cluster.URL, ResourceNames: []string{name},
	}))
	r, err := s.Recv()
	require.NoError(t, err)
	require.Len(t, r.GetResources(), 1)
	assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl())
	assert.Equal(t, "v1", r.GetVersionInfo())
}

// The shipped seed and bootstrap agree: the seed serves the bootstrap's
// node its chain. Applied again (SIGHUP) after a revision changed, the
// change is pushed to a client that holds the resource.
func TestSeedServesAndReloads(t *testing.T) {
	var boot struct {
		Node struct {
			ID string `json:"id"`
		} `json:"node"`
	}
	b, err := os.ReadFile("bootstrap.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &boot))
	shipped, err := readSeed("seed.yaml")
	require.NoError(t, err)
	require.Equal(t, boot.Node.ID, shipped.Node, "the seed serves the bootstrap's node")

	path := filepath.Join(t.TempDir(), "seed.yaml")
	seed := `node: n
resources:
  - {type: LDS, name: svc, ref: route}
  - {type: RDS, name: route, ref: cl}
  - {type: CDS, name: cl, revision: 1}
  - {type: EDS, name: cl}
`
	require.NoError(t, os.WriteFile(path, []byte(seed), 0o644))
	first, err := readSeed(path)
	require.NoError(t, err)
	reload := make(chan os.Signal, 1)
	xds, _ := startSeeded(t, seeding{path: path, first: first, reload: reload})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := discovery.NewAggregatedDiscoveryServiceClient(xds).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{Node: &core.Node{Id: "n"}, TypeUrl: wire.Cluster.URL, ResourceNames: []string{"cl"}}))
	r, err := s.Recv()
	require.NoError(t, err)
	require.Len(t, r.GetResources(), 1, "the seeded cluster is served from the start")
	require.NoError(t, s.Send(&discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"cl"}, VersionInfo: r.GetVersionInfo(), ResponseNonce: r.GetNonce()}))

	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(seed, "revision: 1", "revision: 2", 1)), 0o644))
	reload <- syscall.SIGHUP
	pushed, err := s.Recv()
	require.NoError(t, err)
	require.Len(t, pushed.GetResources(), 1)
	assert.NotEqual(t, r.GetVersionInfo(), pushed.GetVersionInfo(), "the changed revision is pushed")
	assert.False(t, proto.Equal(r.GetResources()[0], pushed.GetResources()[0]), "with the changed content")

	_, err = readSeed(filepath.Join(t.TempDir(), "none.yaml"))
	assert.Error(t, err)
	require.NoError(t, os.WriteFile(path, []byte("node: n\nresources:\n  - {type: XDS, name: a}\n"), 0o644))
	_, err = readSeed(path)
	assert.ErrorContains(t, err, `type "XDS": want LDS, RDS, CDS or EDS`)
}
