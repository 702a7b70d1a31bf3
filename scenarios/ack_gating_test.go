package scenarios

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// ackGate holds a delta response of a type until the client has ACKed or
// NACKed the previous one of that type, as Consul does (agent/xds/delta.go,
// SendIfNew: "Wait for Envoy to catch up with this delta type before
// sending something new"). The protocol allows it: every client answers
// every response (ACK-1). Like Consul, it holds them off the handler's
// goroutine: the handler's sends are queued, and one sender goroutine
// sends each when its type is free, so the handler keeps reading the
// requests (the ACKs among them).
func ackGate(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	g := &gatedStream{ServerStream: ss, pending: map[string]bool{}}
	g.cond = sync.NewCond(&g.mu)
	sent := make(chan struct{})
	go g.sender(sent)
	err := h(srv, g)
	g.mu.Lock()
	g.done = true // no SendMsg may follow the handler's return
	g.cond.Broadcast()
	g.mu.Unlock()
	<-sent
	return err
}

type gatedStream struct {
	grpc.ServerStream
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool // type URL -> a response awaits its ACK
	queue   []any
	done    bool
}

// SendMsg queues m for the sender.
func (g *gatedStream) SendMsg(m any) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = append(g.queue, m)
	g.cond.Broadcast()
	return nil
}

// sender sends the queued responses in order, each once its type's
// previous response was answered. A held response holds back the ones
// queued after it, of any type: sending those first would reorder the
// server's pushes across types and break its make-before-break order
// (CONS-1..6), which is the server's to keep, not the gate's to change.
func (g *gatedStream) sender(sent chan struct{}) {
	defer close(sent)
	ctx := g.Context()
	go func() { <-ctx.Done(); g.mu.Lock(); g.cond.Broadcast(); g.mu.Unlock() }()
	for {
		g.mu.Lock()
		for !g.done && ctx.Err() == nil && (len(g.queue) == 0 || g.held(g.queue[0])) {
			g.cond.Wait()
		}
		if g.done || ctx.Err() != nil {
			g.mu.Unlock()
			return
		}
		m := g.queue[0]
		g.queue = g.queue[1:]
		if r, ok := m.(*discovery.DeltaDiscoveryResponse); ok {
			g.pending[r.GetTypeUrl()] = true
		}
		g.mu.Unlock()
		if g.ServerStream.SendMsg(m) != nil {
			return
		}
	}
}

// held reports whether m waits for its type's previous response to be
// answered; g.mu held.
func (g *gatedStream) held(m any) bool {
	r, ok := m.(*discovery.DeltaDiscoveryResponse)
	return ok && g.pending[r.GetTypeUrl()]
}

func (g *gatedStream) RecvMsg(m any) error {
	err := g.ServerStream.RecvMsg(m)
	if r, ok := m.(*discovery.DeltaDiscoveryRequest); ok && err == nil && r.GetResponseNonce() != "" {
		g.mu.Lock()
		g.pending[r.GetTypeUrl()] = false
		g.cond.Broadcast()
		g.mu.Unlock()
	}
	return err
}

// Regression: against Consul, two delta scenarios waited for a response
// while the one before it was still un-ACKed; a server that holds
// responses until the ACK (allowed, and what Consul does) never sent it.
// Two more did the same (star-plus-names, empty-after-names-not-wildcard,
// the second then passing without testing anything), so every delta
// scenario runs behind the gate.
func TestDeltaScenariosAckBeforeAwaitingMore(t *testing.T) {
	srv, err := targets.ServeInProcess(t.Context(), "reference server holding responses until ACKed", refserver.New(), grpc.StreamInterceptor(ackGate))
	require.NoError(t, err)
	defer srv.Close()
	pairs, err := engine.Expand(Server(), engine.Selection{Variants: []wire.Variant{wire.DeltaADS, wire.DeltaPerType}})
	require.NoError(t, err)
	rs, interrupted := engine.Run(t.Context(), pairs, engine.Config{Env: srv, Timeouts: testTimeouts})
	require.False(t, interrupted)
	require.Len(t, rs, len(pairs))
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}
