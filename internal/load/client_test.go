package load

import (
	"context"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// sentStream is a client stream that keeps what is sent on it.
type sentStream struct {
	grpc.ClientStream
	sent []any
}

func (s *sentStream) SendMsg(m any) error { s.sent = append(s.sent, m); return nil }

// oneClient is a runner with one client whose ADS stream is cs, at the
// end of its initial sync.
func oneClient(t *testing.T, o Options) (*runner, *client, *stream, *sentStream) {
	t.Helper()
	p, err := newPlan(o)
	require.NoError(t, err)
	r := &runner{p: p, srv: &targets.Server{}, col: newCollector(p), ctx: context.Background()}
	c := newClient(r, 0)
	cs := &sentStream{}
	s := &stream{c: c, key: "ads", cs: cs}
	c.streams = append(c.streams, s)
	c.begun = time.Now().Add(-time.Hour)
	for i := range c.last {
		c.last[i] = 0
	}
	c.synced = true
	for _, ch := range p.changes {
		r.col.changes[ch.id-1].origin.Store(time.Now().UnixNano())
	}
	return r, c, s, cs
}

func body(t *testing.T, p *plan, res int, id int64, bad bool) *anypb.Any {
	t.Helper()
	a, err := p.build(res, marker{res: res, change: id, origin: 1, bad: bad})
	require.NoError(t, err)
	return a
}

// A client the server skips ahead (SotW may coalesce changes) has reached
// the phase's last change when it gets one past it.
func TestSkippingPastTheLastChangeReachesIt(t *testing.T) {
	o := okOptions()
	o.Profile, o.Churn, o.Duration, o.NackBurst = "CDS=a", 2, 2*time.Second, 1
	r, _, s, _ := oneClient(t, o)
	// Changes 1-4 churn resource 0; 5 is bad, 6 sets it right (burst).
	r.col.arm(phaseChurn, 1)
	churnDone := r.col.phase(phaseChurn).done
	cds := "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	require.NoError(t, s.handle(cds, "n1", "v2", []*anypb.Any{body(t, r.p, 0, 2, false)}, &discovery.DiscoveryResponse{}))
	assert.False(t, closed(churnDone))
	require.NoError(t, s.handle(cds, "n2", "v6", []*anypb.Any{body(t, r.p, 0, 6, false)}, &discovery.DiscoveryResponse{}))
	assert.True(t, closed(churnDone), "change 6 is past the churn's last (4)")
}

// A NACK rejects the whole response: a good resource in it is not taken.
func TestNackedResponseTakesNothing(t *testing.T) {
	o := okOptions()
	o.Profile, o.Churn, o.Duration, o.NackBurst = "CDS=a,b", 1, time.Second, 1
	r, c, s, cs := oneClient(t, o)
	// Change 1 churns a; 2 is bad (a), 3 sets a right.
	cds := "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	require.NoError(t, s.handle(cds, "n1", "v1", []*anypb.Any{body(t, r.p, 0, 2, true), body(t, r.p, 1, 1, false)}, &discovery.DiscoveryResponse{}))
	require.Len(t, cs.sent, 1)
	nack := cs.sent[0].(*discovery.DiscoveryRequest)
	assert.NotNil(t, nack.GetErrorDetail())
	assert.Empty(t, nack.GetVersionInfo(), "the version ACKed before")
	assert.Equal(t, []int64{0, 0}, c.last, "neither the bad resource nor the good one beside it is taken")
	assert.Zero(t, r.col.phase(phaseBurst).latency.Count(), "a NACK is no push→ACK latency")
	assert.Equal(t, int64(1), r.col.changes[1].acked.Load(), "the bad change was answered")
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestNodeIDAndMetadata: load clients send --node-id's form of their node
// id and --node-metadata, as the suites' fake clients do.
func TestNodeIDAndMetadata(t *testing.T) {
	srv, err := targets.StartServer(context.Background(), targets.ServerOptions{Target: targets.BuiltinReference,
		NodeID: "sidecar~127.0.0.1~{{.NodeID}}~ns.svc.cluster.local", NodeMetadata: map[string]string{"NAMESPACE": "ns"}})
	require.NoError(t, err)
	defer srv.Close()
	p, err := newPlan(Options{Clients: 2, Nodes: 2, Profile: "CDS=a", Variant: wire.SotWADS, StreamsPerConn: 1, Shards: 1, RunID: "r"})
	require.NoError(t, err)
	r := &runner{p: p, srv: srv, col: newCollector(p), ctx: context.Background()}
	c := newClient(r, 1)
	require.Equal(t, "sidecar~127.0.0.1~"+p.node(1)+"~ns.svc.cluster.local", c.node.GetId())
	require.Equal(t, "ns", c.node.GetMetadata().GetFields()["NAMESPACE"].GetStringValue())
}
