package scenarios

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// ackGate holds a delta response of a type until the client has ACKed or
// NACKed the previous one of that type, as Consul does (agent/xds/delta.go,
// SendIfNew: "Wait for Envoy to catch up with this delta type before
// sending something new"). The protocol allows it: every client answers
// every response (ACK-1).
func ackGate(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	g := &gatedStream{ServerStream: ss, pending: map[string]bool{}}
	g.cond = sync.NewCond(&g.mu)
	go func() { <-ss.Context().Done(); g.mu.Lock(); g.cond.Broadcast(); g.mu.Unlock() }()
	return h(srv, g)
}

type gatedStream struct {
	grpc.ServerStream
	mu      sync.Mutex
	cond    *sync.Cond
	pending map[string]bool // type URL -> a response awaits its ACK
}

func (g *gatedStream) SendMsg(m any) error {
	if r, ok := m.(*discovery.DeltaDiscoveryResponse); ok {
		g.mu.Lock()
		for g.pending[r.GetTypeUrl()] && g.Context().Err() == nil {
			g.cond.Wait()
		}
		g.pending[r.GetTypeUrl()] = true
		g.mu.Unlock()
	}
	return g.ServerStream.SendMsg(m)
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
