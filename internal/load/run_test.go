package load

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	_ "github.com/xdsconform/xdsconform/peers/builtin" // builtin:… targets
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// countingFixture counts the resources set, per node.
type countingFixture struct {
	fixture.Fixture
	mu   sync.Mutex
	sets map[string]int
}

func (f *countingFixture) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	f.mu.Lock()
	f.sets[node]++
	f.mu.Unlock()
	return f.Fixture.Set(ctx, node, t, name, res)
}

// phaseOf is rep's phase name.
func phaseOf(t *testing.T, rep *loadreport.Report, name string) loadreport.Phase {
	t.Helper()
	for _, p := range rep.Phases {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("the report has no %s phase; notes: %q", name, rep.Notes)
	return loadreport.Phase{}
}

// A target whose resources are shared by every node (node_scoped false:
// go-control-plane's LinearCache) is set once a change, not once a node:
// N updates of one resource would each be pushed to the clients watching
// by then, and the run would measure the harness's amplification. A
// node-scoped one (the SnapshotCache) is set on every node.
func TestSharedResourcesAreSetOnceAChange(t *testing.T) {
	const clients = 6
	for _, tc := range []struct {
		target string
		nodes  int // the nodes the fixture is driven on
	}{
		{targets.BuiltinGoControlPlaneLin, 1},
		{targets.BuiltinGoControlPlane, clients},
	} {
		t.Run(tc.target, func(t *testing.T) {
			ctx := t.Context()
			srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: tc.target})
			require.NoError(t, err)
			defer srv.Close()
			fx := &countingFixture{Fixture: srv.Fixture, sets: map[string]int{}}
			srv.Fixture = fx

			rep, err := Run(ctx, Target{Name: tc.target, Server: srv, InProcess: true}, Options{
				Clients: clients, Variant: wire.SotWADS, StreamsPerConn: 1,
				Churn: 10, Duration: 300 * time.Millisecond, // 3 changes
				Shards: 1, RunID: "shared",
			}, "test")
			require.NoError(t, err)

			// The grpc profile's 4 resources, then the 3 changes.
			assert.Len(t, fx.sets, tc.nodes, "nodes set on")
			for node, n := range fx.sets {
				assert.Equal(t, 4+3, n, "resources set on %s", node)
			}
			churn := phaseOf(t, rep, phaseChurn)
			assert.Equal(t, int64(3), churn.Changes)
			assert.Zero(t, churn.Missed, "notes: %q", rep.Notes)
			assert.Equal(t, 1.0, churn.Amplification, "one push a change a client")
		})
	}
}
