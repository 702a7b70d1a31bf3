package scenarios

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/peers/gcpserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// otherPairs plays the other pairs on a server that is not node-scoped.
// Before each change a scenario makes to a type whose responses have
// started flowing, it changes a resource of that type for another node and
// waits until the server has sent the resulting push, so the scenario's
// stream always holds a full-state response produced before the change.
type otherPairs struct {
	fixture.Fixture
	mu      sync.Mutex
	n       int
	sent    map[string]int           // responses sent on open streams, per node and type URL
	waiting map[string]chan struct{} // closed at the next response to the node of the type
}

// intercept counts the responses the server sends (a gRPC stream
// interceptor on the server's side).
func (o *otherPairs) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	cs := &countingStream{ServerStream: ss, o: o, sent: map[string]int{}}
	defer func() {
		// A closed stream no longer receives pushes.
		o.mu.Lock()
		for url, n := range cs.sent {
			o.sent[url] -= n
		}
		o.mu.Unlock()
	}()
	return h(srv, cs)
}

type countingStream struct {
	grpc.ServerStream
	o    *otherPairs
	node string // from the stream's first request
	sent map[string]int
}

func (c *countingStream) RecvMsg(m any) error {
	err := c.ServerStream.RecvMsg(m)
	if r, ok := m.(*discovery.DiscoveryRequest); ok && err == nil && c.node == "" {
		c.node = r.GetNode().GetId()
	}
	return err
}

func key(node, typeURL string) string { return node + " " + typeURL }

func (c *countingStream) SendMsg(m any) error {
	err := c.ServerStream.SendMsg(m)
	if r, ok := m.(*discovery.DiscoveryResponse); ok && err == nil {
		k := key(c.node, r.GetTypeUrl())
		c.o.mu.Lock()
		c.o.sent[k]++
		c.sent[k]++
		if ch := c.o.waiting[k]; ch != nil {
			close(ch)
			delete(c.o.waiting, k)
		}
		c.o.mu.Unlock()
	}
	return err
}

func (o *otherPairs) push(ctx context.Context, node string, t wire.Type) error {
	k := key(node, t.URL)
	o.mu.Lock()
	if o.sent[k] == 0 {
		o.mu.Unlock()
		return nil // nobody subscribed yet
	}
	o.n++
	ch := make(chan struct{})
	o.waiting[k] = ch
	o.mu.Unlock()
	name := "other-pair-" + t.Short
	if _, err := o.Fixture.Set(ctx, "another-node", t, name, wire.BuildAny(t, name, o.n)); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (o *otherPairs) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	if err := o.push(ctx, node, t); err != nil {
		return fixture.Served{}, err
	}
	return o.Fixture.Set(ctx, node, t, name, res)
}

func (o *otherPairs) Delete(ctx context.Context, node string, t wire.Type, name string) error {
	if err := o.push(ctx, node, t); err != nil {
		return err
	}
	return o.Fixture.Delete(ctx, node, t, name)
}

// Regression: on a shared server (the standalone go-control-plane
// LinearCache of the e2e suite), the wildcard scenarios took the first
// response after their change for the response to it, and failed when
// another pair's push came first.
func TestWildcardScenariosTolerateOtherPairsPushes(t *testing.T) {
	ctx := t.Context()
	impl, err := gcpserver.New(ctx, gcpserver.Linear)
	require.NoError(t, err)
	others := &otherPairs{sent: map[string]int{}, waiting: map[string]chan struct{}{}}
	srv, err := targets.ServeInProcess(ctx, "go-control-plane LinearCache with other pairs", impl, grpc.StreamInterceptor(others.intercept))
	require.NoError(t, err)
	defer srv.Close()
	require.False(t, srv.Caps.GetNodeScoped(), "the LinearCache serves every node the same resources")
	others.Fixture, srv.Fixture = srv.Fixture, others

	pairs, err := engine.Expand(Server(), engine.Selection{
		Run:      []string{"server/deletion/sotw-wildcard-omitted", "server/grouping/full-state-wildcard"},
		Variants: []wire.Variant{wire.SotWADS},
	})
	require.NoError(t, err)
	// One pair at a time: the other pairs are played by the fixture.
	rs, interrupted := engine.Run(ctx, pairs, engine.Config{Env: srv, Timeouts: testTimeouts, Parallel: 1})
	require.False(t, interrupted)
	require.Len(t, rs, 2)
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}
