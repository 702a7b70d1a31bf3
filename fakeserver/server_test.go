package fakeserver_test

import (
	"net"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// The fake client plays the client under test: both fakes speak the wire
// exactly as told, so each side's view can be checked against the other's.
func start(t *testing.T, v wire.Variant) (*fakeserver.Server, *fakeclient.Client, *transcript.Transcript) {
	t.Helper()
	tr := transcript.New()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: v, Timeout: 2 * time.Second, Quiet: 100 * time.Millisecond, Transcript: tr})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := fakeclient.New(t.Context(), conn, v, fakeclient.Options{NodeID: "n1", Timeout: 2 * time.Second})
	t.Cleanup(c.Close)
	return srv, c, tr
}

func TestExchangeInEveryVariant(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			ctx := t.Context()
			srv, c, tr := start(t, v)
			require.NoError(t, c.Subscribe(wire.Cluster, "c1"))
			st, err := srv.StreamFor(ctx, wire.Cluster, 0)
			require.NoError(t, err)
			req, err := st.Next(ctx, wire.Cluster)
			require.NoError(t, err)
			assert.Equal(t, "n1", req.Node().GetId())
			assert.Equal(t, []string{"c1"}, req.Names())
			first, err := st.First(ctx)
			require.NoError(t, err)
			assert.Same(t, req, first)

			if v.Protocol == wire.Delta {
				_, err = st.RespondDelta(ctx, wire.Cluster, "1", []proto.Message{wire.ClientCluster("c1", 1)})
			} else {
				_, err = st.Respond(ctx, wire.Cluster, "1", wire.ClientCluster("c1", 1))
			}
			require.NoError(t, err)
			resp, err := c.Expect(wire.Cluster)
			require.NoError(t, err)
			require.NoError(t, c.Ack(wire.Cluster, resp))
			ack, err := st.Next(ctx, wire.Cluster)
			require.NoError(t, err)
			assert.Equal(t, resp.Nonce, ack.Nonce())
			assert.Nil(t, ack.ErrorDetail())

			got, err := st.None(ctx, wire.Cluster)
			require.NoError(t, err)
			assert.Nil(t, got, "nothing more was sent")
			assert.Empty(t, srv.Violations())
			assert.Contains(t, tr.String(), "c1")
		})
	}
}

func TestEndForcesReconnect(t *testing.T) {
	ctx := t.Context()
	srv, c, _ := start(t, wire.SotWADS)
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	st, err := srv.StreamFor(ctx, wire.Listener, 0)
	require.NoError(t, err)
	_, err = st.Next(ctx, wire.Listener)
	require.NoError(t, err)

	require.NoError(t, st.End(ctx, status.Error(codes.Unavailable, "restarting")))
	require.ErrorIs(t, st.Err(), fakeserver.ErrEnded, "End returns once the ending is recorded")
	_, err = c.Expect(wire.Listener) // returns as soon as the stream closes
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(c.StreamClosed(wire.Listener)))
	_, err = st.Next(ctx, wire.Listener)
	var ce *fakeserver.ClosedError
	require.ErrorAs(t, err, &ce, "a wait on an ended stream fails at once")

	c.Reconnect(wire.Listener)
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	st2, err := srv.StreamFor(ctx, wire.Listener, st.ID)
	require.NoError(t, err)
	assert.Greater(t, st2.ID, st.ID)
	err = st.Send(ctx, &discovery.DiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "x"})
	require.ErrorAs(t, err, &ce, "nothing can be sent on an ended stream")
	assert.ErrorIs(t, ce.Err, fakeserver.ErrEnded, "and the error says how it ended")
}

// An outage ends the streams, refuses the next connections (two raw
// dials, accepted and closed), then serves again on the same address: the
// client's next stream is the server's next one.
func TestOutageRefusesThenServesAgain(t *testing.T) {
	ctx := t.Context()
	srv, c, _ := start(t, wire.SotWADS)
	addr := srv.Addr()
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	st, err := srv.StreamFor(ctx, wire.Listener, 0)
	require.NoError(t, err)
	// Dial until the outage is over. Before the stop a dial reaches the
	// gRPC server; one that reaches it as it stops, or finds nothing
	// between the stop and the refusing listener, is tried again; the
	// outage counts only the dials its listener refused, so dialling
	// stops when it returns, not after two closes seen here (a close by
	// the stopping gRPC server looks the same from this side).
	over := make(chan struct{})
	dials := make(chan int, 1)
	go func() {
		closes := 0
		defer func() { dials <- closes }()
		for {
			select {
			case <-over:
				return
			default:
			}
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			_, err = conn.Read(make([]byte, 1)) // closed by the server: EOF
			_ = conn.Close()
			if err == nil {
				// The gRPC server, not yet stopped, spoke (its settings
				// frame): not a refusal.
				time.Sleep(5 * time.Millisecond)
				continue
			}
			closes++
		}
	}()
	refused, err := srv.Outage(ctx, 2, 20*time.Second)
	close(over)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, <-dials, 2, "the dials saw their connections closed")
	assert.Equal(t, 2, refused)
	assert.Equal(t, addr, srv.Addr(), "the same address")
	require.ErrorIs(t, st.Err(), fakeserver.ErrEnded, "the outage ended the stream")

	c.Reconnect(wire.Listener)
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	st2, err := srv.StreamFor(ctx, wire.Listener, st.ID)
	require.NoError(t, err)
	assert.Greater(t, st2.ID, st.ID)

	// A client that does not try again is not waited for.
	refused, err = srv.Outage(ctx, 2, 50*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, 0, refused)
	c.Reconnect(wire.Listener)
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	_, err = srv.StreamFor(ctx, wire.Listener, st2.ID)
	require.NoError(t, err, "serving again")
}

func TestViolations(t *testing.T) {
	ctx := t.Context()
	srv, c, _ := start(t, wire.SotWADS)
	req := c.SotWRequest(wire.Listener, []string{"l1"})
	req.ResponseNonce = "never-sent"
	require.NoError(t, c.SendSotW(wire.Listener, req))
	req = c.SotWRequest(wire.Listener, []string{"l1"})
	req.TypeUrl = ""
	require.NoError(t, c.SendSotW(wire.Listener, req))
	req = c.SotWRequest(wire.Listener, []string{"l1"})
	req.TypeUrl = strings.TrimPrefix(wire.Listener.URL, wire.TypePrefix) // no type URL without its prefix
	require.NoError(t, c.SendSotW(wire.Listener, req))
	req = c.SotWRequest(wire.Listener, []string{"r/h"})
	req.TypeUrl = wire.VirtualHost.URL // VirtualHosts exist only in delta
	require.NoError(t, c.SendSotW(wire.Listener, req))
	require.NoError(t, c.SendSotW(wire.Listener, c.SotWRequest(wire.Listener, []string{"l1"})))
	st, err := srv.StreamFor(ctx, wire.Listener, 0)
	require.NoError(t, err)
	// Requests are checked in order before they are visible: once the
	// last one is, every violation is recorded.
	for range 2 {
		_, err = st.Next(ctx, wire.Listener)
		require.NoError(t, err)
	}
	var rules []string
	for _, v := range srv.Violations() {
		rules = append(rules, v.Rule)
	}
	assert.Equal(t, []string{"NONCE-5", "STREAM-6", "STREAM-6", "STREAM-10"}, rules)
}

func TestWrongMethodIsAViolation(t *testing.T) {
	ctx := t.Context()
	srv, _, _ := start(t, wire.DeltaADS)
	// The client under test speaks SotW where delta is expected.
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	sotw := fakeclient.New(ctx, conn, wire.SotWADS, fakeclient.Options{NodeID: "n2", Timeout: time.Second})
	defer sotw.Close()
	require.NoError(t, sotw.Subscribe(wire.Listener, "l1"))
	require.Eventually(t, func() bool { return len(srv.Violations()) == 1 }, 2*time.Second, time.Millisecond)
	assert.Equal(t, "variant", srv.Violations()[0].Rule)
	_, err = srv.StreamFor(ctx, wire.Listener, 0)
	require.ErrorIs(t, err, fakeserver.ErrTimeout, "a SotW stream does not serve a delta variant")
}

// A wait on a stream the client left says so, and no other end does;
// gRPC statuses compare by code and message (status.Error.Is).
func TestEndedByClient(t *testing.T) {
	ctx := t.Context()
	srv, c, _ := start(t, wire.SotWADS)
	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	st, err := srv.StreamFor(ctx, wire.Listener, 0)
	require.NoError(t, err)
	_, err = st.Next(ctx, wire.Listener)
	require.NoError(t, err)
	c.Close() // the client leaves the stream
	_, err = st.Next(ctx, wire.Listener)
	assert.True(t, fakeserver.EndedByClient(err), "the wait on a stream the client left: %v", err)

	assert.False(t, fakeserver.EndedByClient(status.Error(codes.Canceled, "the harness's server stopped")))
	assert.False(t, fakeserver.EndedByClient(fakeserver.ErrTimeout))
	assert.False(t, fakeserver.EndedByClient(nil))
}
