package record_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// wait bounds every wait for something that must happen.
const wait = 10 * time.Second

// startRef serves a reference server and returns its address and fixture.
func startRef(t *testing.T, opts ...grpc.ServerOption) (string, fixture.Fixture) {
	t.Helper()
	ref := refserver.New()
	addr := recordtest.Serve(t, ref.Register, opts...)
	return addr, fixture.FromServer(ref.FixtureServer())
}

// seedChain sets the chain a gRPC client follows from listener, for node.
func seedChain(t *testing.T, fx fixture.Fixture, node, listener string) {
	t.Helper()
	ctx := context.Background()
	for _, r := range []struct {
		t    wire.Type
		name string
		res  any
	}{
		{wire.Listener, listener, wire.ClientListener(listener, "route-a", 1)},
		{wire.Route, "route-a", wire.ClientRoute("route-a", "cluster-a", 1)},
		{wire.Cluster, "cluster-a", wire.Build(wire.Cluster, "cluster-a", 1)},
		{wire.Endpoint, "cluster-a", wire.Build(wire.Endpoint, "cluster-a", 1)},
	} {
		_, err := fx.Set(ctx, node, r.t, r.name, mustAny(t, r.res))
		require.NoError(t, err)
	}
}

// recorder is a proxy whose recording a test can wait on.
type recorder struct {
	*record.Proxy
	notify chan struct{}
}

// startProxy starts a recording proxy in front of upstream, stopped when
// the test ends.
func startProxy(t *testing.T, upstream string, opts record.Options) *recorder {
	t.Helper()
	r := &recorder{notify: make(chan struct{}, 1)}
	opts.Upstream = upstream
	opts.Dial = append(opts.Dial, grpc.WithTransportCredentials(insecure.NewCredentials()))
	prev := opts.OnRecord
	opts.OnRecord = func(dir transcript.Direction) {
		if prev != nil {
			prev(dir)
		}
		select {
		case r.notify <- struct{}{}:
		default:
		}
	}
	p, err := record.Start(opts)
	require.NoError(t, err)
	r.Proxy = p
	t.Cleanup(p.Stop)
	return r
}

// waitFor waits (bounded) until the recording satisfies cond.
func (r *recorder) waitFor(t *testing.T, what string, cond func([]transcript.Entry) bool) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		if cond(r.Transcript().Entries()) {
			return
		}
		select {
		case <-r.notify:
		case <-deadline.C:
			require.FailNowf(t, "timed out", "waiting %v for %s; recording:\n%s", wait, what, r.Transcript())
		}
	}
}

// dial connects to addr in plaintext.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// goroutinesSettle waits (bounded) until no more goroutines run than
// before, plus slack for the runtime's own: nothing the code under test
// started may outlive it.
func goroutinesSettle(t *testing.T, before int) {
	t.Helper()
	if !assert.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+2 }, wait, 10*time.Millisecond, "goroutines leaked") {
		buf := make([]byte, 1<<20)
		n := runtime.Stack(buf, true)
		require.FailNowf(t, "goroutines leaked", "%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:n])
	}
}

// has reports whether entries hold one of direction dir and kind on a
// stream whose name starts with prefix.
func has(entries []transcript.Entry, prefix string, dir transcript.Direction, kind string) bool {
	return slices.ContainsFunc(entries, func(e transcript.Entry) bool {
		return len(e.Stream) >= len(prefix) && e.Stream[:len(prefix)] == prefix && e.Direction == dir && e.Kind == kind
	})
}

// plaintext are the dial options of a plaintext upstream.
func plaintext() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
}

// dialRaw is dial without the test's cleanup, for a test that closes the
// connection itself before counting goroutines.
func dialRaw(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, plaintext()...)
	require.NoError(t, err)
	return conn
}

var adsDesc = &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}

// waitRecorded waits (bounded) until p recorded n messages.
func waitRecorded(t *testing.T, p *record.Proxy, n int64) {
	t.Helper()
	require.Eventuallyf(t, func() bool { return p.Stats().Recorded >= n }, wait, 5*time.Millisecond, "waiting %v for %d messages recorded", wait, n)
}

func nodeN() *core.Node { return &core.Node{Id: "n"} }
