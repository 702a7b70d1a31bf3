package refserver

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// A batch that lands while a stream is pushing an earlier change is seen
// whole or not at all (ApplyChanges), so its cluster still goes before
// the listener that came with it (CONS-1). The stream reads every type of
// the node at one moment: read type by type, it would see the batch's
// listener but not its cluster, and push the listener first. The batch is
// applied from a hook right after the stream's view of the clusters, so
// the outcome does not depend on timing.
func TestPushSeesABatchWhole(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		t.Run(v.String(), func(t *testing.T) {
			s := New()
			var armed atomic.Bool
			applied := make(chan error, 1)
			var e *env
			s.hooks.viewed = func(url string) {
				if url != wire.Cluster.URL || !armed.CompareAndSwap(true, false) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
				defer cancel()
				_, err := e.fx.Apply(ctx, node, []fixture.Change{
					fixture.SetChange(fixture.SetRequest{Type: wire.Cluster, Name: "c2", Resource: wire.BuildAny(wire.Cluster, "c2", 1)}),
					fixture.SetChange(fixture.SetRequest{Type: wire.Listener, Name: "l", Resource: wire.BuildAny(wire.Listener, "l", 2)}),
				})
				applied <- err
			}
			e = serveOn(t, s)
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Listener, "l", 1)
			c := e.client(v)
			for _, sub := range []struct {
				typ   wire.Type
				names []string
			}{{wire.Cluster, []string{"c1", "c2"}}, {wire.Listener, []string{"l"}}} {
				require.NoError(t, c.Subscribe(sub.typ, sub.names...))
				require.NoError(t, c.Ack(sub.typ, expect(t, c, sub.typ)))
			}

			armed.Store(true)
			e.set(wire.Endpoint, "unwatched", 1) // a change the stream pushes nothing of: it only wakes it
			select {
			case err := <-applied:
				require.NoError(t, err)
			case <-time.After(streamTimeout):
				t.Fatal("the stream never looked at the store")
			}
			r, err := c.ExpectAnyWithin(streamTimeout, wire.Cluster, wire.Listener)
			require.NoError(t, err)
			assert.Equal(t, wire.Cluster.URL, r.TypeURL, "the batch's cluster goes before its listener")
			assert.Contains(t, r.Names(), "c2")
		})
	}
}
