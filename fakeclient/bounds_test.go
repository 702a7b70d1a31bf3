package fakeclient_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// TestResponseQueueBoundedByBytes: a server sends far more than the
// client keeps. The scenario reads the kept head in order, then gets
// ErrOverflow, never a later response as the next one nor silence; the
// transcript counts the rest; what was consumed frees the run's budget.
func TestResponseQueueBoundedByBytes(t *testing.T) {
	ctx := t.Context()
	report, queues := transcript.NewBudget(64<<20), transcript.NewBudget(64<<20)
	tr := transcript.NewIn(report, queues)
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := fakeclient.New(ctx, conn, wire.SotWADS, fakeclient.Options{NodeID: "n", Timeout: 5 * time.Second, Transcript: tr})
	t.Cleanup(c.Close)

	require.NoError(t, c.Subscribe(wire.Cluster, "big"))
	st, err := srv.StreamFor(ctx, wire.Cluster, 0)
	require.NoError(t, err)
	_, err = st.Next(ctx, wire.Cluster)
	require.NoError(t, err)
	const sent = 40
	big := &cluster.Cluster{Name: "big", AltStatName: strings.Repeat("b", 500<<10)}
	for i := range sent {
		_, err := st.Respond(ctx, wire.Cluster, fmt.Sprint(i), big)
		require.NoError(t, err)
	}
	// A last response of another type, as large: it comes after every
	// cluster response, and the full queue has no room for it either.
	_, err = st.Respond(ctx, wire.Listener, "1", &listener.Listener{Name: "l", StatPrefix: big.AltStatName})
	require.NoError(t, err)
	_, err = c.Expect(wire.Listener)
	require.ErrorIs(t, err, fakeclient.ErrOverflow)

	queued, _ := c.Queued()
	assert.LessOrEqual(t, queued, int64(fakeclient.QueueBytes))
	n, bytes := tr.UnkeptTotal()
	kept := sent + 1 - int(n)
	require.Positive(t, kept)
	require.Less(t, kept, sent)
	assert.Greater(t, bytes, int64(sent-kept)*(1<<20), "counted at twice the wire size")
	for i := range kept {
		r, err := c.Expect(wire.Cluster)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprint(i), r.Version, "the head is kept in order")
	}
	_, err = c.Expect(wire.Cluster)
	require.ErrorIs(t, err, fakeclient.ErrOverflow)
	_, err = c.ExpectNoneWithin(10*time.Millisecond, wire.Cluster)
	require.ErrorIs(t, err, fakeclient.ErrOverflow, "an overflowed queue is not silence")

	queued, borrowed := c.Queued()
	assert.Zero(t, queued, "consumed responses free their room")
	assert.Zero(t, borrowed)
	assert.Zero(t, queues.Used(), "consumed responses give back what they borrowed")
	keptBytes, _, _ := tr.Kept()
	assert.Equal(t, keptBytes, report.Used(), "the report's budget holds only the transcript")
	assert.LessOrEqual(t, keptBytes, int64(transcript.HeadBytes+transcript.TailBytes))
}
