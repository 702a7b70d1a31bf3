package load

import (
	"context"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

func TestDueAtPutsEveryChangeSettingTheBurstRightAtTheWindowsEnd(t *testing.T) {
	start := time.Unix(1000, 0)
	end := start.Add(3 * time.Second)
	p, err := newPlan(Options{Clients: 1, Profile: "CDS=a,b,c", Variant: wire.DeltaADS, StreamsPerConn: 1, Churn: 2, Duration: 2 * time.Second, NackBurst: 3, Shards: 1, RunID: "r"})
	require.NoError(t, err)
	churn, burst := p.phaseChanges(phaseChurn), p.phaseChanges(phaseBurst)
	require.Len(t, churn, 4)
	for k, ch := range churn {
		assert.Equal(t, start.Add(time.Duration(k)*500*time.Millisecond), dueAt(phaseChurn, ch, k, start, 500*time.Millisecond, time.Time{}), "churn change %d", k)
	}
	require.Len(t, burst, 6)
	for k, ch := range burst {
		want := start
		if !ch.bad {
			want = end
		}
		assert.Equal(t, want, dueAt(phaseBurst, ch, k, start, 0, end), "burst change %d (bad: %t)", k, ch.bad)
	}
}

func TestNewContent(t *testing.T) {
	builds := &fixturepb.Capabilities{BuildsContent: true}
	plan := func(o Options) *plan {
		t.Helper()
		base := Options{Clients: 4, Profile: "CDS=a;EDS=a", Variant: wire.DeltaADS, StreamsPerConn: 1, Churn: 2, Duration: time.Second, Shards: 1, RunID: "r"}
		if o.Profile != "" {
			base.Profile = o.Profile
		}
		if o.Shards > 0 {
			base.Shard, base.Shards = o.Shard, o.Shards
		}
		if o.Churn > 0 {
			base.Churn, base.Duration = o.Churn, o.Duration
		}
		base.NackBurst = o.NackBurst
		p, err := newPlan(base)
		require.NoError(t, err)
		return p
	}

	c, err := newContent(plan(Options{}), &fixturepb.Capabilities{})
	require.NoError(t, err)
	assert.Nil(t, c, "a fixture that serves what it is given needs no content mode")
	c, err = newContent(plan(Options{}), nil)
	require.NoError(t, err)
	assert.Nil(t, c)

	p := plan(Options{})
	c, err = newContent(p, builds)
	require.NoError(t, err)
	require.NotNil(t, c)
	// The initial state and each change of each resource, by the value
	// build gives the field a fixture copies.
	assert.Equal(t, map[string]int64{"1s": 0, "1.001s": 1}, c.revs[0])
	assert.Equal(t, map[string]int64{"20000": 0, "20002": 2}, c.revs[1])
	require.NoError(t, c.check(p, 1, 2, []*fixturepb.RevisionField{{Path: fixture.EndpointPortPath, Value: "20002"}}))
	assert.ErrorContains(t, c.check(p, 1, 2, []*fixturepb.RevisionField{{Path: fixture.EndpointPortPath, Value: "20000"}}), "not endpoints.0")
	assert.ErrorContains(t, c.check(p, 0, 1, nil), "connect_timeout = 1.001s")

	for name, o := range map[string]Options{
		"listeners":      {Profile: "LDS=l;CDS=a"},
		"shards":         {Shard: 0, Shards: 2},
		"a burst":        {NackBurst: 1},
		"port wraps":     {Profile: "EDS=a", Churn: 10_000, Duration: 5 * time.Second},
		"runtime layers": {Profile: "RTDS=a"},
	} {
		_, err := newContent(plan(o), builds)
		assert.Error(t, err, name)
	}
}

// buildsContent is the reference server behind a fixture that builds the
// content it serves, as Consul's and Envoy Gateway's adapters do: it
// serves every resource under a name of its own, without the metadata the
// load's markers live in, and answers with the revision field it copied.
type buildsContent struct {
	*refserver.Server
}

func (b buildsContent) FixtureServer() fixturepb.FixtureServer {
	return contentFixture{FixtureServer: b.Server.FixtureServer()}
}

type contentFixture struct {
	fixturepb.FixtureServer
}

func (f contentFixture) GetCapabilities(ctx context.Context, r *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	c, err := f.FixtureServer.GetCapabilities(ctx, r)
	if err != nil {
		return nil, err
	}
	c = proto.CloneOf(c)
	c.BuildsContent, c.GeneratesNames = true, true
	return c, nil
}

func (f contentFixture) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	m, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, err
	}
	name := "served-" + r.GetName()
	var path string
	switch m := m.(type) {
	case *cluster.Cluster:
		m.Name, m.Metadata, path = name, nil, fixture.ConnectTimeoutPath
	case *endpoint.ClusterLoadAssignment:
		m.ClusterName, path = name, fixture.EndpointPortPath
		for _, l := range m.GetEndpoints() {
			for _, e := range l.GetLbEndpoints() {
				e.Metadata = nil
			}
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "cannot serve %T", m)
	}
	field, err := fixture.Field(m, path)
	if err != nil {
		return nil, err
	}
	a, err := anypb.New(m)
	if err != nil {
		return nil, err
	}
	req := proto.CloneOf(r)
	req.Name, req.Resource = name, a
	if _, err := f.FixtureServer.SetResource(ctx, req); err != nil {
		return nil, err
	}
	return &fixturepb.SetResourceResponse{Name: name, Revision: []*fixturepb.RevisionField{field}}, nil
}

func TestRunAgainstAFixtureThatBuildsContent(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		t.Run(v.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			srv, err := targets.ServeInProcess(ctx, "reference (builds content)", buildsContent{refserver.New()}, grpc.MaxConcurrentStreams(1000))
			require.NoError(t, err)
			defer srv.Close()
			require.True(t, srv.Caps.GetBuildsContent())
			rep, err := Run(ctx, Target{Name: srv.Name, Server: srv}, Options{
				Clients: 6, Nodes: 3, Profile: "CDS=c;EDS=e", Variant: v, StreamsPerConn: 1,
				Churn: 20, Duration: 300 * time.Millisecond, Shards: 1, RunID: "content", SampleEvery: 2,
				SyncTimeout: 20 * time.Second, Settle: 20 * time.Second,
			}, "test")
			require.NoError(t, err)
			for _, n := range rep.Notes {
				// A harness starved under the race detector says so;
				// anything else (a fixture call refused, a phase that did
				// not converge) is a failure.
				assert.Contains(t, n, "the harness was saturated")
			}
			phases := map[string]loadreport.Phase{}
			for _, ph := range rep.Phases {
				phases[ph.Name] = ph
				assert.Zero(t, ph.Missed, ph.Name)
				assert.Zero(t, ph.Violations, ph.Name)
				assert.Zero(t, ph.Errors, ph.Name)
				assert.Zero(t, ph.Nacks, ph.Name)
			}
			require.Contains(t, phases, phaseChurn)
			churn := phases[phaseChurn]
			assert.EqualValues(t, 6, churn.Changes)
			assert.EqualValues(t, 6*6, churn.Expected)
			// Every change reached every client, each told by the field
			// the fixture copied (their markers never arrived).
			assert.EqualValues(t, churn.Changes, churn.Convergence.Count())
			for _, ch := range rep.Changes {
				assert.Equal(t, ch.Expected, ch.Acked, "change %d (%s)", ch.ID, ch.Resource)
			}
		})
	}
}
