package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// wait bounds every wait for something that must happen.
const wait = 10 * time.Second

// startRef serves a reference server with faults and returns its address
// and fixture.
func startRef(t *testing.T, faults ...refserver.Fault) (string, fixture.Fixture) {
	t.Helper()
	ref := refserver.New(faults...)
	return recordtest.Serve(t, ref.Register), fixture.FromServer(ref.FixtureServer())
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

// seedChain sets, for node, the chain from listener "svc" to two
// clusters and their endpoints, at revision rev.
func seedChain(t *testing.T, fx fixture.Fixture, node string, rev int) {
	t.Helper()
	ctx := context.Background()
	set := func(ty wire.Type, name string, m proto.Message) {
		_, err := fx.Set(ctx, node, ty, name, mustAny(t, m))
		require.NoError(t, err)
	}
	set(wire.Listener, "svc", wire.ClientListener("svc", "route-a", rev))
	set(wire.Route, "route-a", wire.ClientRoutes("route-a", rev, "cluster-a", "cluster-b"))
	for _, c := range []string{"cluster-a", "cluster-b"} {
		set(wire.Cluster, c, wire.Build(wire.Cluster, c, rev))
		set(wire.Endpoint, c, wire.Build(wire.Endpoint, c, rev))
	}
}

var chain = []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint}

// recordChain records the reference client following the chain from a
// reference server (seeded for node) through the recording proxy, in
// variant v, until it ACKed every type, and returns the file.
func recordChain(t *testing.T, v wire.Variant, node string) *transcript.File {
	t.Helper()
	return recordChainThen(t, v, node, nil)
}

// recordChainThen is recordChain, then runs then (when not nil) with the
// server's fixture, the entries so far, and a bounded wait for the
// recording to satisfy a condition, before it stops.
func recordChainThen(t *testing.T, v wire.Variant, node string, then func(fx fixture.Fixture, entries []transcript.Entry, await func(func([]transcript.Entry) bool))) *transcript.File {
	t.Helper()
	up, fx := startRef(t)
	seedChain(t, fx, node, 1)
	notify := make(chan struct{}, 1)
	p, err := record.Start(record.Options{Upstream: up, Dial: plaintext(), OnRecord: func(transcript.Direction) {
		select {
		case notify <- struct{}{}:
		default:
		}
	}})
	require.NoError(t, err)
	defer p.Stop()
	c, err := refclient.Start(context.Background(), refclient.Config{ServerAddr: p.Addr(), NodeID: node, Variant: v, Listener: "svc"})
	require.NoError(t, err)
	defer c.Close()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	await := func(done func([]transcript.Entry) bool) {
		for !done(p.Transcript().Entries()) {
			select {
			case <-notify:
			case <-deadline.C:
				require.FailNowf(t, "timed out", "waiting on the recording:\n%s", p.Transcript())
			}
		}
	}
	await(func(es []transcript.Entry) bool { return recordtest.Acked(es, chain...) })
	if then != nil {
		then(fx, p.Transcript().Entries(), await)
	}
	c.Close()
	p.Stop()
	return p.File("test")
}

func plaintext() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
}

// replayAgainst replays f's client side against the server at addr.
func replayAgainst(t *testing.T, f *transcript.File, addr string, opts replay.ServerOptions) *replay.Result {
	t.Helper()
	plan, err := replay.NewPlan(f)
	require.NoError(t, err)
	opts.Against = addr
	opts.Connect = func() (*grpc.ClientConn, error) { return grpc.NewClient(addr, plaintext()...) }
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Quiet == 0 {
		opts.Quiet = 300 * time.Millisecond
	}
	res, err := replay.Server(context.Background(), plan, opts)
	require.NoError(t, err)
	return res
}
