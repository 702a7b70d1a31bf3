package record_test

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// big is a SotW response of about n bytes.
func big(n int, nonce string) *discovery.DiscoveryResponse {
	return &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: nonce,
		Resources: []*anypb.Any{{TypeUrl: wire.Cluster.URL, Value: make([]byte, n)}}}
}

// TestHugeResponseEndsTheStream: a server message over the proxy's limit
// ends the stream on both sides with ResourceExhausted, and the recording
// says that the recorder ended it, naming its limit.
func TestHugeResponseEndsTheStream(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{MaxMessageSize: 1 << 20})
	upstreamEnd := make(chan error, 1)
	s.script <- func(ss wire.SotWServerStream) error {
		if _, err := ss.Recv(); err != nil {
			return err
		}
		if err := ss.Send(big(2<<20, "1")); err != nil {
			return err
		}
		<-ss.Context().Done()
		upstreamEnd <- ss.Context().Err()
		return nil
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr()))
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
	err := cs.RecvMsg(&discovery.DiscoveryResponse{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "--max-message-size")
	assert.Error(t, <-upstreamEnd, "the server's stream is cancelled too")
	r.waitFor(t, "the close", hasNote(record.NoteClosedByProxy))
	assert.Contains(t, note(r.Transcript().Entries(), "ads#1", record.NoteClosedByProxy), "limit of 1048576 bytes")
}

// TestHugeRequestEndsTheStream is the same for a client message.
func TestHugeRequestEndsTheStream(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{MaxMessageSize: 1 << 20})
	upstreamEnd := make(chan error, 1)
	s.script <- func(ss wire.SotWServerStream) error {
		_, err := ss.Recv()
		upstreamEnd <- err
		return nil
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr()))
	_ = cs.SendMsg(&discovery.DiscoveryRequest{ResourceNames: []string{strings.Repeat("x", 2<<20)}})
	err := cs.RecvMsg(&discovery.DiscoveryResponse{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	r.waitFor(t, "the close", hasNote(record.NoteClosedByProxy))
	// The proxy may end the upstream stream before it ever reaches the
	// server's handler (the script is then never taken): that is the
	// server never getting the message too. A stream that reached it must
	// end with an error, within a bound.
	select {
	case err := <-upstreamEnd:
		assert.Error(t, err, "the server never gets the message, and its stream ends")
	case <-time.After(10 * time.Second):
		assert.Len(t, s.script, 1, "the server's stream neither ended nor never began")
	}
	assert.Contains(t, note(r.Transcript().Entries(), "ads#1", record.NoteClosedByProxy), "the client sent a message over")
}

// TestServerRefusalPassesThrough: a server that refuses a client message
// as over its own receive limit ends the stream with the very status
// grpc-go gives a message over the proxy's limit. The client gets the
// server's status as the server sent it, not one the proxy makes up
// about its own limit, and the recording says the server ended the
// stream, refusing a message of the size the client sent.
func TestServerRefusalPassesThrough(t *testing.T) {
	const serverMax = 1 << 10
	up, s := startScripted(t, grpc.MaxRecvMsgSize(serverMax))
	r := startProxy(t, up, record.Options{MaxMessageSize: 1 << 20})
	refused := make(chan error, 1)
	s.script <- func(ss wire.SotWServerStream) error {
		_, err := ss.Recv() // grpc-go refuses the message here
		refused <- err
		return err
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr()))
	req := &discovery.DiscoveryRequest{ResourceNames: []string{strings.Repeat("x", 2*serverMax)}}
	_ = cs.SendMsg(req)
	err := cs.RecvMsg(&discovery.DiscoveryResponse{})
	var serverErr error
	select {
	case serverErr = <-refused:
	case <-time.After(wait):
		require.FailNow(t, "the server's stream did not end within the wait bound", "%v", wait)
	}
	require.Equal(t, codes.ResourceExhausted, status.Code(serverErr), "the server refused the message: %v", serverErr)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, status.Convert(serverErr).Message(), status.Convert(err).Message(), "the server's own status reaches the client")
	assert.NotContains(t, status.Convert(err).Message(), "--max-message-size")
	assert.NotContains(t, status.Convert(err).Message(), "xdsconform record")

	r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
	entries := r.Transcript().Entries()
	assert.Empty(t, note(entries, "ads#1", record.NoteClosedByProxy), "the proxy did not end the stream")
	assert.Contains(t, note(entries, "ads#1", record.NoteClosedByServer),
		fmt.Sprintf("the server refused a message of %d bytes the client sent, over the server's own receive limit of %d bytes", proto.Size(req), serverMax))
}

// TestSilentServerStopsBounded: a server that never answers keeps the
// stream open until the recording stops; Stop then ends the client's
// stream, the server's, and every goroutine the proxy started, promptly.
func TestSilentServerStopsBounded(t *testing.T) {
	up, s := startScripted(t)
	before := runtime.NumGoroutine()
	p, err := record.Start(record.Options{Upstream: up, Dial: plaintext()})
	require.NoError(t, err)
	upstreamEnd := make(chan error, 1)
	arrived := make(chan struct{})
	s.script <- func(ss wire.SotWServerStream) error {
		_, _ = ss.Recv()
		close(arrived)
		<-ss.Context().Done()
		upstreamEnd <- ss.Context().Err()
		return nil
	}
	conn := dialRaw(t, p.Addr())
	cs, err := conn.NewStream(context.Background(), adsDesc, adsSotW)
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
	clientEnd := make(chan error, 1)
	go func() { clientEnd <- cs.RecvMsg(&discovery.DiscoveryResponse{}) }()
	// Wait for the request to reach the server: only then is there
	// something in flight to stop. The proxy records the request before
	// it has opened the server's stream, so the record alone is not that.
	waitRecorded(t, p, 1)
	select {
	case <-arrived:
	case <-time.After(wait):
		require.FailNow(t, "the request did not reach the server within the wait bound", "%v", wait)
	}
	// Stop ends the streams itself rather than waiting for them: the
	// upstream's stream below ends only when the proxy cancels it. The
	// wait for Stop to return is bounded, not timed.
	stopped := make(chan struct{})
	go func() { p.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(wait):
		require.FailNow(t, "Stop did not return within the wait bound", "%v", wait)
	}
	select {
	case err := <-clientEnd:
		assert.Equal(t, codes.Unavailable, status.Code(err))
	case <-time.After(wait):
		require.FailNow(t, "the client's stream did not end within the wait bound after Stop", "%v", wait)
	}
	select {
	case err := <-upstreamEnd:
		assert.Error(t, err)
	case <-time.After(wait):
		require.FailNow(t, "the server's stream did not end within the wait bound after Stop", "%v", wait)
	}
	entries := p.Transcript().Entries()
	assert.Equal(t, record.NoteClosedByProxy+"the recording stopped", note(entries, "ads#1", record.NoteClosedByProxy))
	_ = conn.Close()
	goroutinesSettle(t, before)
}

// TestFloodStaysBounded: a server flooding responses cannot grow the
// recording past the transcript caps; what is kept is the head and the
// tail, with the elision said in between, and every message is still
// forwarded.
func TestFloodStaysBounded(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{})
	const n, size = 2000, 2 << 10
	s.script <- func(ss wire.SotWServerStream) error {
		if _, err := ss.Recv(); err != nil {
			return err
		}
		for i := range n {
			if err := ss.Send(big(size, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr()))
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
	for range n {
		require.NoError(t, cs.RecvMsg(&discovery.DiscoveryResponse{}))
	}
	r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
	kept, elided, _ := r.Transcript().Kept()
	assert.LessOrEqual(t, kept, int64(transcript.HeadBytes+transcript.TailBytes))
	assert.Positive(t, elided)
	st := r.Stats()
	assert.Equal(t, int64(n+1), st.Forwarded)
	assert.Greater(t, st.Bytes, int64(n*size))
	entries := r.Transcript().Entries()
	assert.True(t, slices.ContainsFunc(entries, func(e transcript.Entry) bool { return strings.Contains(e.Note, "elided") }))
	last := entries[len(entries)-1]
	assert.Contains(t, last.Note, record.NoteClosedByServer, "the tail shows how it ended")
}

// TestLargeMessageRenderedInPart: a message over the transcript's entry
// cap is forwarded whole and recorded in part, the note saying so.
func TestLargeMessageRenderedInPart(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{})
	s.script <- func(ss wire.SotWServerStream) error {
		if _, err := ss.Recv(); err != nil {
			return err
		}
		return ss.Send(big(4<<20, "1"))
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr(), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(8<<20))))
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
	var got discovery.DiscoveryResponse
	require.NoError(t, cs.RecvMsg(&got))
	assert.Len(t, got.GetResources()[0].GetValue(), 4<<20)
	r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
	for _, e := range r.Transcript().Entries() {
		if e.Direction == transcript.Received {
			assert.LessOrEqual(t, len(e.Message), transcript.EntryBytes)
			assert.Contains(t, e.Note, "rendered in part")
		}
	}
}

// TestConnectionLimit: past MaxConns, connections are refused (their
// calls fail) and the recording says so; the first connection is served.
func TestConnectionLimit(t *testing.T) {
	up, fx := startRef(t)
	seedChain(t, fx, "n", "svc")
	r := startProxy(t, up, record.Options{MaxConns: 1})
	first := dial(t, r.Addr())
	cs := openADS(t, context.Background(), first)
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{Node: nodeN(), TypeUrl: wire.Listener.URL, ResourceNames: []string{"svc"}}))
	require.NoError(t, cs.RecvMsg(&discovery.DiscoveryResponse{}))
	second := dial(t, r.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cs2, err := second.NewStream(ctx, adsDesc, adsSotW)
	if err == nil {
		_ = cs2.SendMsg(&discovery.DiscoveryRequest{})
		err = cs2.RecvMsg(&discovery.DiscoveryResponse{})
	}
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Positive(t, r.Stats().Refused)
	assert.True(t, slices.ContainsFunc(r.Transcript().Entries(), func(e transcript.Entry) bool {
		return e.Stream == record.RecorderStream && strings.Contains(e.Note, "refused")
	}))
}

// TestSilentConnectionsHoldNoSlot: connections that never send the HTTP/2
// preface hold no MaxConns slot, so a real client that comes after them is
// served at once; they are closed after the handshake timeout, and the
// recording says so.
func TestSilentConnectionsHoldNoSlot(t *testing.T) {
	up, fx := startRef(t)
	seedChain(t, fx, "n", "svc")
	r := startProxy(t, up, record.Options{MaxConns: 2, HandshakeTimeout: 200 * time.Millisecond})
	for range 2 {
		c, err := net.Dial("tcp", r.Addr())
		require.NoError(t, err)
		defer c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn := dial(t, r.Addr())
	cs, err := conn.NewStream(ctx, adsDesc, adsSotW)
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{Node: nodeN(), TypeUrl: wire.Listener.URL, ResourceNames: []string{"svc"}}))
	require.NoError(t, cs.RecvMsg(&discovery.DiscoveryResponse{}))
	assert.Zero(t, r.Stats().Refused, "the real client was not refused")
	r.waitFor(t, "the silent connections' close", func(es []transcript.Entry) bool {
		n := 0
		for _, e := range es {
			if e.Stream == record.RecorderStream && strings.Contains(e.Note, "sent nothing within") {
				n++
			}
		}
		return n == 2
	})
}

// TestMaxMessages: Full is closed once the recording holds MaxMessages
// messages, and no more are recorded, though they are still forwarded.
func TestMaxMessages(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{MaxMessages: 3})
	s.script <- func(ss wire.SotWServerStream) error {
		if _, err := ss.Recv(); err != nil {
			return err
		}
		for i := range 5 {
			if err := ss.Send(big(10, strconv.Itoa(i))); err != nil {
				return err
			}
		}
		return nil
	}
	cs := openADS(t, context.Background(), dial(t, r.Addr()))
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
	for range 5 {
		require.NoError(t, cs.RecvMsg(&discovery.DiscoveryResponse{}))
	}
	select {
	case <-r.Full():
	case <-time.After(wait):
		t.Fatal("Full was not closed")
	}
	r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
	n := 0
	for _, e := range r.Transcript().Entries() {
		if e.Direction == transcript.Sent || e.Direction == transcript.Received {
			n++
		}
	}
	assert.Equal(t, 3, n)
	assert.Equal(t, int64(6), r.Stats().Forwarded)
}
