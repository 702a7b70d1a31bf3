package load

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// small is a plan that runs in about a second against the reference:
// every phase, a burst of two bad resources.
func small(run string) Options {
	return Options{
		Clients: 20, Nodes: 4, StreamsPerConn: 5, Variant: wire.SotWADS, Shards: 1, RunID: run,
		Churn: 10, Duration: 500 * time.Millisecond, NackBurst: 2, BurstWindow: 300 * time.Millisecond,
		SampleEvery: 5, SyncTimeout: 5 * time.Second, Settle: 3 * time.Second,
	}
}

func reference(t *testing.T, faults ...string) Target {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: targets.BuiltinReference, Faults: faults, ConnectTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return Target{Name: targets.BuiltinReference, Server: srv, InProcess: true}
}

func phase(t *testing.T, rep *loadreport.Report, name string) loadreport.Phase {
	t.Helper()
	p, ok := rep.Phase(name)
	require.True(t, ok, "no %s phase in %+v", name, rep.Phases)
	return p
}

// Against the conformant reference, in every variant, every client syncs,
// every change reaches every client once, the bad ones are NACKed once
// each and never resent, and nothing is broken.
func TestReferenceIsClean(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			o := small("clean")
			o.Variant = v
			rep, err := Run(context.Background(), reference(t), o, "test")
			require.NoError(t, err)
			assert.Empty(t, rep.Violations)
			for _, n := range rep.Notes {
				// Notes about the harness (in-process, or saturated on a busy
				// machine) say nothing of the server.
				if !strings.Contains(n, "in the harness's process") && !strings.HasPrefix(n, "the harness was saturated") {
					t.Errorf("a note about the server: %s", n)
				}
			}
			sync := phase(t, rep, loadreport.PhaseInitialSync)
			assert.Equal(t, int64(20), sync.Latency.Count(), "every client synced")
			assert.Zero(t, sync.Missed)
			churn := phase(t, rep, loadreport.PhaseChurn)
			assert.Equal(t, int64(5), churn.Changes)
			assert.Equal(t, int64(5*20), churn.Expected)
			assert.Equal(t, churn.Expected, churn.Responses, "one response per change per client")
			assert.Equal(t, churn.Responses, churn.Acks)
			assert.Equal(t, 1.0, churn.Amplification)
			assert.Zero(t, churn.Missed)
			assert.Equal(t, int64(5), churn.Convergence.Count(), "every change converged")
			burst := phase(t, rep, loadreport.PhaseBurst)
			assert.Equal(t, int64(2*20), burst.Nacks, "each bad resource NACKed once by each client")
			assert.Zero(t, burst.Resends)
			assert.Zero(t, burst.Missed)
			for _, ch := range rep.Changes {
				assert.Equal(t, ch.Expected, ch.Acked, "change %d", ch.ID)
				assert.NotZero(t, ch.OriginUnixNS, "change %d", ch.ID)
			}
			for _, ph := range rep.Phases {
				assert.Zero(t, ph.Errors, ph.Name)
			}
			assert.Empty(t, rep.Unmeasured, "every phase measured something")
		})
	}
}

// Each measure can fail: a reference fault that breaks what it measures
// shows in it.
func TestFaultsShow(t *testing.T) {
	for _, tc := range []struct {
		fault string
		edit  func(*Options)
		check func(t *testing.T, rep *loadreport.Report)
	}{
		{"empty-nonce", nil, violation("NONCE-1", "MUST")},
		{"reuse-nonce", nil, violation("NONCE-2", "MUST")},
		{"wrong-type-url", nil, violation("STREAM-7", "MUST")},
		// Only a sampled client checks every invariant: one in one here.
		{"duplicate-names", func(o *Options) { o.Profile = "CDS=a,b"; o.SampleEvery = 1 }, violation("DUP-1", "MUST")},
		{"nack-resend-loop", nil, func(t *testing.T, rep *loadreport.Report) {
			assert.Positive(t, phase(t, rep, loadreport.PhaseBurst).Resends)
		}},
		{"resend-on-ack", nil, func(t *testing.T, rep *loadreport.Report) {
			assert.Greater(t, phase(t, rep, loadreport.PhaseChurn).Amplification, 1.0)
		}},
		{"bump-all-types", nil, func(t *testing.T, rep *loadreport.Report) {
			assert.Greater(t, phase(t, rep, loadreport.PhaseChurn).Amplification, 1.0)
		}},
		{"stall-after-nack", nil, func(t *testing.T, rep *loadreport.Report) {
			assert.Positive(t, phase(t, rep, loadreport.PhaseBurst).Missed)
			assert.NotEmpty(t, rep.Notes)
		}},
		{"close-on-nack", nil, func(t *testing.T, rep *loadreport.Report) {
			assert.Positive(t, phase(t, rep, loadreport.PhaseBurst).Errors)
		}},
		{"drop-one-type", func(o *Options) { o.Profile = "CDS=a;RTDS=r"; o.SyncTimeout = time.Second }, func(t *testing.T, rep *loadreport.Report) {
			assert.Positive(t, phase(t, rep, loadreport.PhaseInitialSync).Missed)
		}},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			o := small(tc.fault)
			o.Settle = time.Second
			if tc.edit != nil {
				tc.edit(&o)
			}
			rep, err := Run(context.Background(), reference(t, tc.fault), o, "test")
			require.NoError(t, err)
			tc.check(t, rep)
		})
	}
}

func violation(rule, level string) func(*testing.T, *loadreport.Report) {
	return func(t *testing.T, rep *loadreport.Report) {
		t.Helper()
		for _, v := range rep.Violations {
			if v.Rule == rule {
				assert.Equal(t, level, v.Level)
				assert.Positive(t, v.Count)
				assert.NotEmpty(t, v.Message)
				return
			}
		}
		t.Errorf("no %s violation in %+v", rule, rep.Violations)
	}
}

// Shards of one run, merged, count what one process running the whole
// plan counts.
func TestShardsMergeToOneRun(t *testing.T) {
	target := reference(t)
	single, err := Run(context.Background(), target, small("single"), "test")
	require.NoError(t, err)

	// Shard 0 sets the initial state; the others start once it has (or
	// their first requests would find nothing and be answered twice), and
	// the churn starts once every shard has synced (or a late shard would
	// hear of a resource first in the middle of it).
	const n = 3
	reps := make([]*loadreport.Report, n)
	errs := make([]error, n)
	set, synced, allSynced := make(chan struct{}), make(chan struct{}, n), make(chan struct{})
	var wg sync.WaitGroup
	shard := func(i int) {
		o := small("sharded")
		o.Shard, o.Shards = i, n
		o.OnPhase = func(phase string) {
			switch {
			case phase == loadreport.PhaseConnect && i == 0:
				close(set)
			case phase == loadreport.PhaseChurn:
				synced <- struct{}{}
			}
		}
		if i == 0 {
			o.ChurnAfter = allSynced
		}
		wg.Go(func() { reps[i], errs[i] = Run(context.Background(), target, o, "test") })
	}
	shard(0)
	await(t, set, "shard 0 to set the initial state")
	for i := 1; i < n; i++ {
		shard(i)
	}
	for range n {
		await(t, synced, "every shard to sync")
	}
	close(allSynced)
	wg.Wait() // each Run is bounded by its plan
	for _, err := range errs {
		require.NoError(t, err)
	}
	merged, err := loadreport.Merge(reps...)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1, 2}, merged.Shards)
	var want, got [3]int64
	for _, ph := range single.Phases {
		want[0] += ph.Responses
		want[1] += ph.Acks
		want[2] += ph.Violations
	}
	for _, ph := range merged.Phases {
		got[0] += ph.Responses
		got[1] += ph.Acks
		got[2] += ph.Violations
	}
	assert.Equal(t, want, got, "responses, ACKs and violations over the run")
	for _, want := range single.Phases {
		got := phase(t, merged, want.Name)
		assert.Equal(t, want.Clients, got.Clients, want.Name)
		assert.Equal(t, want.Expected, got.Expected, want.Name)
		assert.Equal(t, want.Responses, got.Responses, want.Name)
		assert.Equal(t, want.Acks, got.Acks, want.Name)
		assert.Equal(t, want.Nacks, got.Nacks, want.Name)
		assert.Equal(t, want.Missed, got.Missed, want.Name)
		assert.Equal(t, want.Latency.Count(), got.Latency.Count(), want.Name)
		assert.Equal(t, want.Convergence.Count(), got.Convergence.Count(), want.Name)
		assert.Equal(t, want.Changes, got.Changes, want.Name)
	}
	require.Len(t, merged.Changes, len(single.Changes))
	for i, ch := range merged.Changes {
		assert.Equal(t, single.Changes[i].Expected, ch.Expected, "change %d", ch.ID)
		assert.Equal(t, single.Changes[i].Acked, ch.Acked, "change %d", ch.ID)
	}
}

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
			churn := phase(t, rep, phaseChurn)
			assert.Equal(t, int64(3), churn.Changes)
			assert.Zero(t, churn.Missed, "notes: %q", rep.Notes)
			assert.Equal(t, 1.0, churn.Amplification, "one push a change a client")
		})
	}
}

// On a shared-resource target only node 0 is set, so the names it is
// served under (a fixture that generates names) are every node's.
func TestSharedNamesAreNodeZeros(t *testing.T) {
	p, err := newPlan(okOptions())
	require.NoError(t, err)
	shared := servedNames{shared: true}
	assert.False(t, shared.note(p, 0, 1, "generated-1"))
	assert.Equal(t, "generated-1", shared.name(p, 7, 1), "node 7 reads node 0's name")
	assert.Equal(t, p.resources[0].name, shared.name(p, 7, 0), "a resource served under its own name")

	scoped := servedNames{}
	assert.False(t, scoped.note(p, 0, 1, "generated-1"))
	assert.Equal(t, p.resources[1].name, scoped.name(p, 7, 1), "node 7 was never set: its own names")
}

// awaitBound bounds a test's wait for a shard: far more than a plan of
// small() takes, so that only a shard that failed reaches it.
const awaitBound = time.Minute

// await waits for ch, failing the test after awaitBound.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(awaitBound):
		t.Fatalf("waited %s for %s", awaitBound, what)
	}
}

// droppingFixture says it set what it is asked to once drop is set, and
// sets nothing: the changes then made reach no client.
type droppingFixture struct {
	fixture.Fixture
	drop *atomic.Bool
}

func (f droppingFixture) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	if f.drop.Load() {
		return fixture.Served{Name: name}, nil
	}
	return f.Fixture.Set(ctx, node, t, name, res)
}

// A run that measured nothing says why (Report.Unmeasured), so that its
// zero violations and zero missed never read as a pass: a fixture that
// set nothing, and a churn whose changes reached no client.
func TestNothingMeasuredIsSaid(t *testing.T) {
	t.Run("fixture set nothing", func(t *testing.T) {
		target := reference(t)
		target.Server.Fixture = refusingFixture{target.Server.Fixture}
		o := small("refused")
		o.NackBurst, o.SyncTimeout, o.Settle = 0, time.Second, time.Second
		rep, err := Run(context.Background(), target, o, "test")
		require.NoError(t, err)
		require.Len(t, rep.Unmeasured, 3, "%q", rep.Unmeasured)
		assert.Contains(t, rep.Unmeasured[0], "the fixture set nothing: none of its")
		assert.Contains(t, rep.Unmeasured[0], "PermissionDenied")
		assert.Equal(t, "no client finished the initial sync: none of the 20 had its whole profile", rep.Unmeasured[1])
		assert.Equal(t, "the churn phase made no change", rep.Unmeasured[2])
	})
	t.Run("churn reached no client", func(t *testing.T) {
		target := reference(t)
		var drop atomic.Bool
		target.Server.Fixture = droppingFixture{Fixture: target.Server.Fixture, drop: &drop}
		o := small("dropped")
		o.NackBurst, o.Settle = 0, time.Second
		o.OnPhase = func(phase string) {
			if phase == loadreport.PhaseChurn {
				drop.Store(true)
			}
		}
		rep, err := Run(context.Background(), target, o, "test")
		require.NoError(t, err)
		assert.Positive(t, phase(t, rep, loadreport.PhaseChurn).Changes, "the churn made its changes")
		assert.Equal(t, []string{"the churn phase measured no change: none of its changes reached any client"}, rep.Unmeasured)
	})
}

// A fixture that stops answering ends the run at the first deadline its
// calls miss (here the sync timeout's), not after it: the target is then
// unusable (Died), the report says the run stopped early, and it is not
// an interrupted run.
func TestFixtureHangsStopsTheRun(t *testing.T) {
	target := reference(t, "fixture-hangs")
	o := small("hangs")
	o.SyncTimeout = time.Second
	start := time.Now()
	rep, err := Run(context.Background(), target, o, "test")
	require.NoError(t, err)
	took := time.Since(start)
	var hung *targets.FixtureHungError
	require.ErrorAs(t, target.Server.Died(), &hung)
	assert.Equal(t, "SetResource", hung.Call)
	assert.False(t, rep.Interrupted)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "the run stopped early: "+hung.Error())
	assert.Contains(t, rep.Unmeasured, "no stream opened: none of the 20 clients had one")
	// The run's own bounds past the sync timeout (the settle, the reset's
	// resetBound) are what a run that did not stop would wait out.
	assert.Less(t, took, o.SyncTimeout+o.Settle, "stopped at the first deadline")
}
