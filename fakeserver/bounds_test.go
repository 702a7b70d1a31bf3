package fakeserver_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// flood opens an ADS stream on srv, sends reqs, half-closes and waits for
// the server to end the stream: every request has then been received.
func flood(t *testing.T, srv *fakeserver.Server, reqs []*discovery.DiscoveryRequest) {
	t.Helper()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ss, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	for _, r := range reqs {
		require.NoError(t, ss.Send(r))
	}
	require.NoError(t, ss.CloseSend())
	for {
		if _, err := ss.Recv(); err != nil {
			require.ErrorIs(t, err, io.EOF, "the server ends the stream once it has read everything")
			return
		}
	}
}

func startServer(t *testing.T, tr *transcript.Transcript) *fakeserver.Server {
	t.Helper()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 2 * time.Second, Quiet: 50 * time.Millisecond, Transcript: tr})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// TestViolationsBoundedPerRule: a client breaking an invariant on every
// request costs three violations and a count, not one per request.
func TestViolationsBoundedPerRule(t *testing.T) {
	tr := transcript.New()
	srv := startServer(t, tr)
	var reqs []*discovery.DiscoveryRequest
	for range 2000 {
		reqs = append(reqs, &discovery.DiscoveryRequest{TypeUrl: "bogus/" + strings.Repeat("t", 4000)})
	}
	flood(t, srv, reqs)
	vs := srv.Violations()
	require.Len(t, vs, 3)
	for _, v := range vs {
		assert.Equal(t, "STREAM-6", v.Rule)
		assert.Less(t, len(v.Message), 1200, "a violation quoting what the client sent is cut")
	}
	assert.Contains(t, vs[2].Message, "(and 1997 more violations of STREAM-6)")
	violations := 0
	for _, e := range tr.Entries() {
		if strings.HasPrefix(e.Note, "violation:") {
			violations++
		}
	}
	assert.Equal(t, 3, violations, "only the kept violations are events")
}

// TestRequestQueueBoundedByBytes: past QueueBytes a stream keeps nothing
// more; a scenario reads the head in order, then gets ErrOverflow rather
// than a later request or silence, and the transcript counts the rest.
func TestRequestQueueBoundedByBytes(t *testing.T) {
	tr := transcript.New()
	srv := startServer(t, tr)
	name := strings.Repeat("n", 100<<10)
	const sent = 60
	var reqs []*discovery.DiscoveryRequest
	for range sent {
		reqs = append(reqs, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{name}})
	}
	flood(t, srv, reqs)
	queued, _ := srv.Queued()
	assert.LessOrEqual(t, queued, int64(fakeserver.QueueBytes))
	assert.Greater(t, queued, int64(fakeserver.QueueBytes-(110<<10)), "the queue is used up to within one request")

	st, err := srv.StreamFor(t.Context(), wire.Cluster, 0)
	require.NoError(t, err)
	kept := len(st.Requests())
	require.Positive(t, kept)
	require.Less(t, kept, sent)
	for i := 1; i <= kept; i++ {
		r, err := st.Next(t.Context(), wire.Cluster)
		require.NoError(t, err)
		require.Equal(t, i, r.Seq, "the head is kept in order")
	}
	_, err = st.Next(t.Context(), wire.Cluster)
	require.ErrorIs(t, err, fakeserver.ErrOverflow)
	_, err = st.None(t.Context(), wire.Cluster)
	require.ErrorIs(t, err, fakeserver.ErrOverflow, "an overflowed queue is not silence")

	n, bytes := tr.UnkeptTotal()
	assert.Equal(t, int64(sent-kept), n)
	assert.Greater(t, bytes, int64(sent-kept)*(100<<10))
	kb, _, _ := tr.Kept()
	assert.LessOrEqual(t, kb, int64(transcript.HeadBytes+transcript.TailBytes))
}

// TestQueueDrawsOnTheRunsBudget: past its floor a server's queue borrows
// from the run's queue budget, and gives it back on Close. The report's
// budget is spent (by the transcripts of pairs that finished before):
// that must not starve the queue, or what a pair's peer can queue would
// depend on which pairs ran before it.
func TestQueueDrawsOnTheRunsBudget(t *testing.T) {
	report, queues := transcript.NewBudget(64<<10), transcript.NewBudget(512<<10)
	earlier := transcript.NewIn(report, queues)
	for range 200 {
		earlier.Event("s", strings.Repeat("e", 1000))
	}
	require.Greater(t, report.Used(), report.Limit()-2000, "the report's budget is spent")
	tr := transcript.NewIn(report, queues)
	srv := startServer(t, tr)
	name := strings.Repeat("m", 50<<10)
	var reqs []*discovery.DiscoveryRequest
	for range 40 {
		reqs = append(reqs, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{name}})
	}
	flood(t, srv, reqs)
	queued, borrowed := srv.Queued()
	assert.Greater(t, borrowed, int64(400<<10), "the queue borrows most of its budget, however spent the report's is")
	assert.LessOrEqual(t, queued, int64(512<<10+64<<10), "the floor plus the whole budget at most")
	assert.Equal(t, borrowed, queues.Used())
	assert.LessOrEqual(t, queues.Used(), queues.Limit())
	n, _ := tr.UnkeptTotal()
	assert.Positive(t, n)
	srv.Close()
	assert.Zero(t, queues.Used(), "Close gives back the %d bytes the queue borrowed", borrowed)
	kept, _, _ := tr.Kept()
	earlierKept, _, _ := earlier.Kept()
	assert.Equal(t, kept+earlierKept, report.Used(), "the report's budget holds only transcripts")
}

// TestStreamsBounded: a client that opens streams in a loop has those
// past the bound refused, and the pair cannot pass on what was refused.
func TestStreamsBounded(t *testing.T) {
	tr := transcript.New()
	srv := startServer(t, tr)
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	client := discovery.NewAggregatedDiscoveryServiceClient(conn)
	refused := 0
	for range 1030 {
		ss, err := client.StreamAggregatedResources(ctx)
		require.NoError(t, err)
		require.NoError(t, ss.CloseSend())
		if _, err := ss.Recv(); err != nil && !errors.Is(err, io.EOF) {
			assert.Contains(t, err.Error(), "at most 1024 streams")
			refused++
		}
	}
	assert.Equal(t, 6, refused)
	assert.Len(t, srv.Streams(), 1024)
	n, _ := tr.UnkeptTotal()
	assert.Equal(t, int64(6), n)
}
