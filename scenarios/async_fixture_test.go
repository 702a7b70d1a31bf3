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
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// lateFixture applies the changes made before a type's first response
// only after it, one change per response sent for the type, as a server
// that applies fixture changes one at a time, asynchronously, may (Envoy
// Gateway reloads its folder once per change): the first wildcard response
// predates them, and each later one holds one change more.
type lateFixture struct {
	fixture.Fixture
	mu   sync.Mutex
	sent map[string]bool     // type URLs a response was sent for
	held map[string][]func() // changes not applied yet, in order, per type URL
}

func (l *lateFixture) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent[t.URL] && len(l.held[t.URL]) == 0 {
		return l.Fixture.Set(ctx, node, t, name, res)
	}
	l.held[t.URL] = append(l.held[t.URL], func() { _, _ = l.Fixture.Set(context.WithoutCancel(ctx), node, t, name, res) })
	return fixture.Served{Name: name}, nil
}

// intercept applies a type's next held change each time a response of the
// type is sent.
func (l *lateFixture) intercept(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &lateStream{ServerStream: ss, l: l})
}

type lateStream struct {
	grpc.ServerStream
	l *lateFixture
}

func (s *lateStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if r, ok := m.(*discovery.DiscoveryResponse); ok && err == nil {
		l := s.l
		l.mu.Lock()
		l.sent[r.GetTypeUrl()] = true
		if held := l.held[r.GetTypeUrl()]; len(held) > 0 {
			l.held[r.GetTypeUrl()] = held[1:]
			// Applied off the stream's goroutine: the push it causes is
			// sent on this very stream.
			go held[0]()
		}
		l.mu.Unlock()
	}
	return err
}

// Regression (found on Envoy Gateway): the SotW wildcard scenarios took the
// first wildcard response for the full state of what they had set, and
// failed when the server applied their last changes a moment later.
func TestWildcardScenariosTolerateLateChanges(t *testing.T) {
	for _, r := range runLate(t, refserver.New()) {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}

// The tolerance keeps the full-state rule: a server that applies changes
// late and then pushes only what changed drops, from its second wildcard
// response, what its first delivered.
func TestWildcardScenariosLateChangesStillNeedFullState(t *testing.T) {
	for _, r := range runLate(t, refserver.New(refserver.FaultPartialFullState)) {
		assert.Equal(t, results.Fail, r.Outcome, r.FullName())
		assert.Contains(t, r.RulesBroken, "GRP-1", "%s: %s", r.FullName(), r.Message)
	}
}

// runLate runs the SotW wildcard scenarios, one pair at a time (the
// fixture's "first response" is the server's), against ref behind a
// lateFixture.
func runLate(t *testing.T, ref *refserver.Server) []results.Result {
	ctx := t.Context()
	late := &lateFixture{}
	srv, err := targets.ServeInProcess(ctx, "reference server applying changes late", ref, grpc.StreamInterceptor(late.intercept))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	late.Fixture, srv.Fixture = srv.Fixture, late

	pairs, err := engine.Expand(Server(), engine.Selection{
		Run:      []string{"server/deletion/sotw-wildcard-omitted", "server/grouping/full-state-wildcard", "server/wildcard/legacy-sends-all"},
		Variants: []wire.Variant{wire.SotWADS},
	})
	require.NoError(t, err)
	var out []results.Result
	for _, p := range pairs {
		late.mu.Lock()
		late.sent, late.held = map[string]bool{}, map[string][]func(){}
		late.mu.Unlock()
		rs, interrupted := engine.Run(ctx, []engine.Pair{p}, engine.Config{Env: srv, Timeouts: testTimeouts, Parallel: 1})
		require.False(t, interrupted)
		require.Len(t, rs, 1)
		out = append(out, rs...)
	}
	require.Len(t, out, 3)
	return out
}
