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
	"github.com/xdsconform/xdsconform/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// lateFixture applies the changes made before a type's first response only
// after that response went out, as a server that applies fixture changes
// asynchronously may (Envoy Gateway reloads its folder one change at a
// time): the first wildcard response predates them.
type lateFixture struct {
	fixture.Fixture
	mu   sync.Mutex
	sent map[string]bool     // type URLs a response was sent for
	held map[string][]func() // changes held back, per type URL
}

func (l *lateFixture) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sent[t.URL] {
		return l.Fixture.Set(ctx, node, t, name, res)
	}
	l.held[t.URL] = append(l.held[t.URL], func() { _, _ = l.Fixture.Set(context.WithoutCancel(ctx), node, t, name, res) })
	return fixture.Served{Name: name}, nil
}

// intercept applies a type's held changes once its first response is sent.
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
		if !l.sent[r.GetTypeUrl()] {
			l.sent[r.GetTypeUrl()] = true
			held := l.held[r.GetTypeUrl()]
			// Applied off the stream's goroutine: the pushes they cause
			// are sent on this very stream.
			go func() {
				for _, apply := range held {
					apply()
				}
			}()
		}
		l.mu.Unlock()
	}
	return err
}

// Regression (found on Envoy Gateway): the SotW wildcard scenarios took the
// first wildcard response for the full state of what they had set, and
// failed when the server applied their last changes a moment later.
func TestWildcardScenariosTolerateLateChanges(t *testing.T) {
	ctx := t.Context()
	late := &lateFixture{sent: map[string]bool{}, held: map[string][]func(){}}
	srv, err := targets.ServeInProcess(ctx, "reference server applying changes late", refserver.New(), grpc.StreamInterceptor(late.intercept))
	require.NoError(t, err)
	defer srv.Close()
	late.Fixture, srv.Fixture = srv.Fixture, late

	pairs, err := engine.Expand(Server(), engine.Selection{
		Run:      []string{"server/deletion/sotw-omission", "server/grouping/full-state-lds-cds", "server/wildcard/legacy-empty-first-request"},
		Variants: []wire.Variant{wire.SotWADS},
	})
	require.NoError(t, err)
	// One pair at a time: the fixture's "first response" is the server's.
	for _, p := range pairs {
		late.mu.Lock()
		late.sent, late.held = map[string]bool{}, map[string][]func(){}
		late.mu.Unlock()
		rs, interrupted := engine.Run(ctx, []engine.Pair{p}, engine.Config{Env: srv, Timeouts: testTimeouts, Parallel: 1})
		require.False(t, interrupted)
		require.Len(t, rs, 1)
		assert.Equal(t, results.Pass, rs[0].Outcome, "%s: %s\n%s", rs[0].FullName(), rs[0].Message, transcript.Format(rs[0].Transcript))
	}
}
