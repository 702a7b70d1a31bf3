package gcpserver

import (
	"context"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// The tests in this file back the optional features each flavour claims
// (capabilities) and pin why the others are not claimed.

// countingCache counts the snapshots installed.
type countingCache struct {
	cache.SnapshotCache
	sets int
}

func (c *countingCache) SetSnapshot(ctx context.Context, node string, s cache.ResourceSnapshot) error {
	c.sets++
	return c.SnapshotCache.SetSnapshot(ctx, node, s)
}

// TestSnapshotBatch: a batch is one snapshot, installed once; a bad change
// applies nothing. (Versions per batch: TestSnapshotVersionsPerType.)
func TestSnapshotBatch(t *testing.T) {
	ctx := context.Background()
	c := &countingCache{SnapshotCache: cache.NewSnapshotCache(false, cache.IDHash{}, nopLogger{})}
	fx := fixture.FromServer(newSnapshotFixture(c))
	served, err := fx.Apply(ctx, "n1", []fixture.Change{
		fixture.SetChange(fixture.SetRequest{Type: wire.Cluster, Name: "c", Resource: wire.BuildAny(wire.Cluster, "c", 1)}),
		fixture.SetChange(fixture.SetRequest{Type: wire.Endpoint, Name: "c", Resource: wire.BuildAny(wire.Endpoint, "c", 1)}),
		fixture.DeleteChange(wire.Listener, "never-set"),
	})
	require.NoError(t, err)
	assert.Equal(t, []fixture.Served{{Name: "c"}, {Name: "c"}}, served)
	assert.Equal(t, 1, c.sets, "one SetSnapshot for the batch")
	snap, err := c.GetSnapshot("n1")
	require.NoError(t, err)
	assert.Len(t, snap.GetResources(wire.Cluster.URL), 1)
	assert.Len(t, snap.GetResources(wire.Endpoint.URL), 1)

	_, err = fx.Apply(ctx, "n1", []fixture.Change{
		fixture.DeleteChange(wire.Cluster, "c"),
		fixture.SetChange(fixture.SetRequest{Type: wire.Endpoint, Name: "x", Resource: wire.BuildAny(wire.Endpoint, "y", 1)}),
	})
	assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
	assert.ErrorContains(t, err, "change #1")
	assert.Equal(t, 1, c.sets, "nothing installed")
	after, err := c.GetSnapshot("n1")
	require.NoError(t, err)
	assert.Same(t, snap, after)
}

// TestSnapshotTTL: in SotW a resource with a TTL comes wrapped in a
// discovery Resource carrying it, to any client, whatever it advertises
// (TTL-1, TTL-5); delta drops the TTL, which is why only SotW claims "ttl".
func TestSnapshotTTL(t *testing.T) {
	h := start(t, Snapshot)
	ctx := context.Background()
	_, err := h.fx.SetWith(ctx, "n1", fixture.SetRequest{Type: wire.Cluster, Name: "a", Resource: wire.BuildAny(wire.Cluster, "a", 1), TTL: 30 * time.Second})
	require.NoError(t, err)
	h.set(t, "n1", wire.Cluster, "b", 1)
	ttlFeatures := []string{wire.FeatureTTL, wire.FeatureResourceInSotW}

	for _, features := range [][]string{ttlFeatures, nil} {
		cctx, cancel := context.WithCancel(ctx)
		c := fakeclient.New(cctx, h.conn, wire.SotWPerType, fakeclient.Options{NodeID: "n1", Timeout: waitTimeout, ClientFeatures: features})
		sendSotW(t, c, wire.Cluster, "", "", "a", "b")
		r := expect(t, c, wire.Cluster)
		byName := map[string]*discovery.Resource{}
		for _, a := range r.SotW.GetResources() {
			if a.GetTypeUrl() != wire.ResourceWrapperURL {
				continue
			}
			var w discovery.Resource
			require.NoError(t, a.UnmarshalTo(&w))
			byName[w.GetName()] = &w
		}
		require.Contains(t, byName, "a", "features %v: a is wrapped", features)
		assert.Equal(t, 30*time.Second, byName["a"].GetTtl().AsDuration())
		assert.NotNil(t, byName["a"].GetResource(), "not a heartbeat")
		assert.NotContains(t, byName, "b", "no TTL, no wrapper")
		var rules []string
		for _, v := range c.Violations() {
			rules = append(rules, v.Rule)
		}
		if features == nil {
			assert.Contains(t, rules, "TTL-5", "wrapped for a client that did not advertise resource-in-sotw")
		} else {
			assert.Empty(t, rules)
		}
		c.Close()
		cancel()
	}

	d := h.client(t, wire.DeltaPerType, "n1")
	sendDelta(t, d, wire.Cluster, "", []string{"a"}, nil)
	r := expect(t, d, wire.Cluster)
	require.Len(t, r.Delta.GetResources(), 1)
	assert.Nil(t, r.Delta.GetResources()[0].GetTtl(), "delta drops the TTL")
}

// TestUnclaimedFeaturesRefused: a request using a feature the flavour does
// not claim fails instead of being half honoured.
func TestUnclaimedFeaturesRefused(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		ctx := context.Background()
		res := wire.BuildAny(wire.Cluster, "a", 1)
		_, err := h.fx.SetWith(ctx, "n1", fixture.SetRequest{Type: wire.Cluster, Name: "a", Resource: res, Aliases: []string{"alias"}})
		assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
		assert.ErrorContains(t, err, `"aliases"`)
		_, err = h.fx.SetWith(ctx, "n1", fixture.SetRequest{Type: wire.Cluster, Name: "a", Resource: res, TTL: time.Second})
		_, err2 := h.fx.Apply(ctx, "n1", nil)
		if fl == Linear {
			assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
			assert.ErrorContains(t, err, `"ttl"`)
			assert.Equal(t, codes.Unimplemented, status.Code(err2), err2)
		} else {
			assert.NoError(t, err)
			assert.NoError(t, err2)
		}
	})
}
