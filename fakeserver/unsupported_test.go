package fakeserver_test

import (
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

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// dial connects a raw gRPC client to srv, as the client under test would.
func dial(t *testing.T, srv *fakeserver.Server) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// call opens a stream on method, sends req and returns how it ended.
func call(t *testing.T, conn *grpc.ClientConn, method string, req *discovery.DiscoveryRequest) error {
	t.Helper()
	cs, err := conn.NewStream(t.Context(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	require.NoError(t, err)
	// A send fails once the server has ended the stream; the status comes
	// from the receive side either way.
	_ = cs.SendMsg(req)
	return cs.RecvMsg(&discovery.DiscoveryResponse{})
}

// TestUnsupported_V2Client plays a client that speaks only xDS v2: its
// calls are answered Unimplemented, recorded (bounded, once per method),
// signalled at once, and described as v2, not as a client that never
// connected.
func TestUnsupported_V2Client(t *testing.T) {
	tr := transcript.New()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 2 * time.Second, Transcript: tr})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn := dial(t, srv)

	err = call(t, conn, "/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats", &discovery.DiscoveryRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	select {
	case <-srv.V2Called():
		t.Fatal("V2Called closed before any v2 call")
	default:
	}
	const ads = "/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources"
	for range 3 { // a client retries
		err := call(t, conn, ads, &discovery.DiscoveryRequest{TypeUrl: "type.googleapis.com/envoy.api.v2.Listener"})
		assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	}
	err = call(t, conn, "/envoy.api.v2.ClusterDiscoveryService/StreamClusters", &discovery.DiscoveryRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	<-srv.V2Called() // closed: a hang here is the failure

	calls := srv.UnsupportedCalls()
	assert.Equal(t, []string{"/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats", ads, "/envoy.api.v2.ClusterDiscoveryService/StreamClusters"}, calls, "each method once, in order")
	msg := fakeserver.Unsupported(calls)
	assert.Equal(t, "the client speaks xDS v2 ("+ads+", /envoy.api.v2.ClusterDiscoveryService/StreamClusters), which this harness does not test", msg)
	assert.Empty(t, srv.Streams(), "no v3 stream opened")

	var notes int
	for _, e := range tr.Entries() {
		if strings.Contains(e.Note, "does not serve") {
			notes++
		}
	}
	assert.Equal(t, 3, notes, "the transcript notes each method once")
}

// TestUnsupported_Bounded checks that a client calling ever new methods
// keeps the record bounded.
func TestUnsupported_Bounded(t *testing.T) {
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn := dial(t, srv)
	for i := range 20 {
		err := call(t, conn, "/some.Service/Method"+strings.Repeat("x", i), &discovery.DiscoveryRequest{})
		require.Equal(t, codes.Unimplemented, status.Code(err))
	}
	calls := srv.UnsupportedCalls()
	assert.Len(t, calls, 8)
	assert.Contains(t, fakeserver.Unsupported(calls[:1]), "which is not an xDS v3 discovery service")
}

func TestIsV2(t *testing.T) {
	for method, want := range map[string]bool{
		"/envoy.service.discovery.v2.AggregatedDiscoveryService/StreamAggregatedResources": true,
		"/envoy.api.v2.ListenerDiscoveryService/StreamListeners":                           true,
		"/envoy.service.discovery.v2.SecretDiscoveryService/StreamSecrets":                 true,
		"/envoy.service.load_stats.v2.LoadReportingService/StreamLoadStats":                true,
		"/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources": false,
		"/envoy.service.load_stats.v3.LoadReportingService/StreamLoadStats":                false,
		"/grpc.health.v1.Health/Watch":                                                     false,
	} {
		assert.Equal(t, want, fakeserver.IsV2(method), method)
	}
}

// TestRecvLimit checks that a request over grpc-go's default 4 MiB
// receive limit, and under the fake server's, is received: xDS sets no
// limit.
func TestRecvLimit(t *testing.T) {
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn := dial(t, srv)
	big := strings.Repeat("n", 5<<20)
	cs, err := conn.NewStream(t.Context(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true},
		wire.MethodFor(wire.SotWADS, wire.Type{}))
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{big}}))
	st, err := srv.StreamFor(t.Context(), wire.Cluster, 0)
	require.NoError(t, err)
	r, err := st.Next(t.Context(), wire.Cluster)
	require.NoError(t, err)
	require.Len(t, r.Names(), 1)
	assert.Len(t, r.Names()[0], 5<<20)

	small, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 2 * time.Second, MaxRecvSize: 1 << 20})
	require.NoError(t, err)
	t.Cleanup(small.Close)
	err = call(t, dial(t, small), wire.MethodFor(wire.SotWADS, wire.Type{}), &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{big}})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "a request over the configured limit is refused: %v", err)
}
