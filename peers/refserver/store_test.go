package refserver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// storeState is what a node's store holds, per type URL: its version and
// each resource's entry version.
type storeState map[string]struct {
	version   string
	resources map[string]string
}

func stateOf(s *Server, node string) storeState {
	out := storeState{}
	for _, t := range wire.AllTypes {
		snap := s.snapshot(node, t.URL)
		st := out[t.URL]
		st.version, st.resources = snap.version, map[string]string{}
		for n, e := range snap.resources {
			st.resources[n] = e.version
		}
		out[t.URL] = st
	}
	return out
}

func setReq(t wire.Type, name string, rev int) *fixturepb.SetResourceRequest {
	return &fixturepb.SetResourceRequest{NodeId: node, TypeUrl: t.URL, Name: name, Resource: wire.BuildAny(t, name, rev)}
}

func setChange(r *fixturepb.SetResourceRequest) *fixturepb.Change {
	return &fixturepb.Change{Change: &fixturepb.Change_Set{Set: r}}
}

func deleteChange(t wire.Type, name string) *fixturepb.Change {
	return &fixturepb.Change{Change: &fixturepb.Change_Delete{Delete: &fixturepb.DeleteResourceRequest{TypeUrl: t.URL, Name: name}}}
}

// watched registers a wake channel for node and returns it; its buffer
// counts the notifications, as notifyLocked never blocks.
func watched(t *testing.T, s *Server) chan struct{} {
	w := make(chan struct{}, 16)
	s.watch(node, w)
	t.Cleanup(func() { s.unwatch(node, w) })
	return w
}

func TestStoreCapabilities(t *testing.T) {
	caps, err := New().FixtureServer().GetCapabilities(context.Background(), &fixturepb.GetCapabilitiesRequest{})
	require.NoError(t, err)
	require.NoError(t, fixture.Check(caps))
	for _, v := range wire.AllVariants {
		c := fixture.Effective(caps, v)
		assert.True(t, c.Served(), v.String())
		assert.True(t, c.LegacyWildcard() && c.ExplicitWildcard(), v.String())
		assert.Len(t, c.Types(), len(wire.AllTypes), v.String())
		for _, f := range features {
			assert.True(t, c.Feature(f), "%s: %s", v, f)
		}
	}
}

// A batch is one change: the types it touches get one new version each,
// the others none, and the node's streams are woken once.
func TestStoreBatchOneNotification(t *testing.T) {
	s := New()
	fx := s.FixtureServer()
	ctx := context.Background()
	_, err := fx.SetResource(ctx, setReq(wire.Cluster, "c1", 1))
	require.NoError(t, err)
	w := watched(t, s)
	before := stateOf(s, node)

	resp, err := fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: []*fixturepb.Change{
		setChange(setReq(wire.Cluster, "c1", 2)),
		setChange(setReq(wire.Cluster, "c2", 1)),
		setChange(setReq(wire.Endpoint, "c1", 1)),
		deleteChange(wire.Endpoint, "never-set"),
	}})
	require.NoError(t, err)
	assert.Len(t, w, 1, "one notification for the batch")
	require.Len(t, resp.GetSet(), 3, "one response per set")
	assert.Equal(t, []string{"c1", "c2", "c1"}, []string{resp.GetSet()[0].GetName(), resp.GetSet()[1].GetName(), resp.GetSet()[2].GetName()})

	after := stateOf(s, node)
	for _, ty := range wire.AllTypes {
		switch ty.URL {
		case wire.Cluster.URL, wire.Endpoint.URL:
			assert.NotEqual(t, before[ty.URL].version, after[ty.URL].version, ty.Short)
		default:
			assert.Equal(t, before[ty.URL].version, after[ty.URL].version, ty.Short)
		}
	}
	assert.Equal(t, "v2", after[wire.Cluster.URL].version, "one bump for three cluster changes")
	assert.Equal(t, "v1", after[wire.Endpoint.URL].version)
	assert.Equal(t, map[string]string{
		"c1": contentVersion(wire.BuildAny(wire.Cluster, "c1", 2)),
		"c2": contentVersion(wire.BuildAny(wire.Cluster, "c2", 1)),
	}, after[wire.Cluster.URL].resources)

	// Changes apply in order: a later change to the same name wins.
	_, err = fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: []*fixturepb.Change{
		deleteChange(wire.Cluster, "c2"),
		setChange(setReq(wire.Cluster, "c2", 3)),
		setChange(setReq(wire.Cluster, "c1", 3)),
		deleteChange(wire.Cluster, "c1"),
	}})
	require.NoError(t, err)
	assert.Len(t, w, 2)
	assert.Equal(t, map[string]string{"c2": contentVersion(wire.BuildAny(wire.Cluster, "c2", 3))}, stateOf(s, node)[wire.Cluster.URL].resources)

	// An empty batch changes nothing and wakes no stream.
	before = stateOf(s, node)
	resp, err = fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node})
	require.NoError(t, err)
	assert.Empty(t, resp.GetSet())
	assert.Len(t, w, 2)
	assert.Equal(t, before, stateOf(s, node))
}

// A batch with one bad change applies nothing: not the changes before it,
// whatever made it bad.
func TestStoreBatchAllOrNothing(t *testing.T) {
	s := New()
	fx := s.FixtureServer()
	ctx := context.Background()
	_, err := fx.SetResource(ctx, setReq(wire.Cluster, "c1", 1))
	require.NoError(t, err)
	_, err = fx.SetResource(ctx, &fixturepb.SetResourceRequest{NodeId: node, TypeUrl: wire.Endpoint.URL, Name: "e1",
		Resource: wire.BuildAny(wire.Endpoint, "e1", 1), Aliases: []string{"e1-alias"}})
	require.NoError(t, err)
	w := watched(t, s)
	before := stateOf(s, node)

	good := []*fixturepb.Change{
		setChange(setReq(wire.Cluster, "c1", 2)),
		deleteChange(wire.Endpoint, "e1"),
		setChange(setReq(wire.Listener, "l1", 1)),
	}
	withAliases := func(r *fixturepb.SetResourceRequest, aliases ...string) *fixturepb.SetResourceRequest {
		r.Aliases = aliases
		return r
	}
	for _, tc := range []struct {
		name string
		bad  *fixturepb.Change
		want string
	}{
		{"unknown type", &fixturepb.Change{Change: &fixturepb.Change_Delete{Delete: &fixturepb.DeleteResourceRequest{TypeUrl: "type.googleapis.com/nope"}}}, "unknown type_url"},
		{"type mismatch", setChange(&fixturepb.SetResourceRequest{TypeUrl: wire.Cluster.URL, Name: "c9", Resource: wire.BuildAny(wire.Listener, "c9", 1)}), "does not match"},
		{"empty name", setChange(&fixturepb.SetResourceRequest{TypeUrl: wire.Cluster.URL, Resource: wire.BuildAny(wire.Cluster, "", 1)}), "name is empty"},
		{"empty change", &fixturepb.Change{}, "neither sets nor deletes"},
		{"bad ttl", setChange(&fixturepb.SetResourceRequest{TypeUrl: wire.Cluster.URL, Name: "c9", Resource: wire.BuildAny(wire.Cluster, "c9", 1), Ttl: durationpb.New(-time.Second)}), "not positive"},
		// Judged against the batch so far: l1 is set by the batch.
		{"alias is a name set earlier in the batch", setChange(withAliases(setReq(wire.Listener, "l2", 1), "l1")), `alias "l1"`},
		{"alias is a stored name", setChange(withAliases(setReq(wire.Cluster, "c9", 1), "c1")), `alias "c1"`},
		{"duplicate alias", setChange(withAliases(setReq(wire.Endpoint, "e2", 1), "e2", "e2")), "listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changes := append(append([]*fixturepb.Change{}, good...), tc.bad)
			_, err := fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: changes})
			require.Error(t, err)
			assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
			assert.ErrorContains(t, err, "change #3")
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, before, stateOf(s, node), "nothing applied")
			assert.Empty(t, w, "no notification")
		})
	}
	// The alias of a resource the batch deletes is free for a later change.
	_, err = fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: append(good,
		setChange(withAliases(setReq(wire.Endpoint, "e2", 1), "e1-alias")))})
	require.NoError(t, err)
	assert.Len(t, w, 1)
}

func TestStoreTTLAndAliases(t *testing.T) {
	s := New()
	fx := s.FixtureServer()
	ctx := context.Background()
	ttl := durationpb.New(3 * time.Second)
	r := setReq(wire.VirtualHost, "rc/foo.com", 1)
	r.Ttl, r.Aliases = ttl, []string{"rc/www.foo.com", "rc/foo.com:80"}
	_, err := fx.SetResource(ctx, r)
	require.NoError(t, err)
	r.Ttl.Seconds = 99 // the store keeps its own copy
	e := s.snapshot(node, wire.VirtualHost.URL).resources["rc/foo.com"]
	require.NotNil(t, e)
	assert.True(t, proto.Equal(durationpb.New(3*time.Second), e.ttl), "ttl %v", e.ttl)
	assert.Equal(t, []string{"rc/www.foo.com", "rc/foo.com:80"}, e.aliases)
	plain := contentVersion(wire.BuildAny(wire.VirtualHost, "rc/foo.com", 1))
	assert.NotEqual(t, plain, e.version, "TTL and aliases are part of what is served")

	// Setting the same content without them removes them, and the version
	// is the content's again: the streams resend it (TTL-3).
	_, err = fx.SetResource(ctx, setReq(wire.VirtualHost, "rc/foo.com", 1))
	require.NoError(t, err)
	e = s.snapshot(node, wire.VirtualHost.URL).resources["rc/foo.com"]
	assert.Nil(t, e.ttl)
	assert.Nil(t, e.aliases)
	assert.Equal(t, plain, e.version)

	// Through a batch too.
	r = setReq(wire.Cluster, "c", 1)
	r.Ttl, r.Aliases = durationpb.New(time.Minute), []string{"c-alias"}
	_, err = fx.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: []*fixturepb.Change{setChange(r)}})
	require.NoError(t, err)
	e = s.snapshot(node, wire.Cluster.URL).resources["c"]
	assert.Equal(t, time.Minute, e.ttl.AsDuration())
	assert.Equal(t, []string{"c-alias"}, e.aliases)
	// Versions are deterministic.
	assert.Equal(t, entryVersion(wire.BuildAny(wire.Cluster, "c", 1), durationpb.New(time.Minute), []string{"c-alias"}), e.version)
	assert.NotEqual(t, entryVersion(wire.BuildAny(wire.Cluster, "c", 1), durationpb.New(2*time.Minute), []string{"c-alias"}), e.version)
}

func TestStoreRejectsBadTTLAndAliases(t *testing.T) {
	s := New()
	fx := s.FixtureServer()
	ctx := context.Background()
	base := setReq(wire.Cluster, "a", 1)
	base.Aliases = []string{"a-alias"}
	_, err := fx.SetResource(ctx, base)
	require.NoError(t, err)
	w := watched(t, s)
	before := stateOf(s, node)
	for _, tc := range []struct {
		name    string
		set     string
		ttl     *durationpb.Duration
		aliases []string
		want    string
	}{
		{"zero ttl", "b", durationpb.New(0), nil, "not positive"},
		{"negative ttl", "b", durationpb.New(-time.Second), nil, "not positive"},
		{"invalid ttl", "b", &durationpb.Duration{Seconds: 1, Nanos: -1}, nil, "ttl"},
		{"empty alias", "b", nil, []string{"x", ""}, "alias #1 is empty"},
		{"duplicate alias", "b", nil, []string{"x", "x"}, `alias "x" is listed twice`},
		{"alias is another resource's name", "b", nil, []string{"a"}, `alias "a" of CDS "b" is the name of another resource`},
		{"alias is another resource's alias", "b", nil, []string{"a-alias"}, `also an alias of "a"`},
		{"name is another resource's alias", "a-alias", nil, nil, `name "a-alias" is an alias of "a"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := setReq(wire.Cluster, tc.set, 1)
			r.Ttl, r.Aliases = tc.ttl, tc.aliases
			_, err := fx.SetResource(ctx, r)
			require.Error(t, err)
			assert.Equal(t, codes.InvalidArgument, status.Code(err), err)
			assert.ErrorContains(t, err, tc.want)
			assert.Equal(t, before, stateOf(s, node), "nothing stored, no version bumped")
			assert.Empty(t, w, "no notification")
		})
	}
	// A resource may keep its own aliases when replaced, and use its own
	// name among them; aliases are per type.
	_, err = fx.SetResource(ctx, base)
	require.NoError(t, err)
	r := setReq(wire.Endpoint, "a-alias", 1)
	r.Aliases = []string{"a"}
	_, err = fx.SetResource(ctx, r)
	require.NoError(t, err)
}

// Through the harness's side of the API (fixture.FromServer), as scenarios
// use it.
func TestStoreFixtureSetWithAndApply(t *testing.T) {
	s := New().GenerateNames()
	fx := fixture.FromServer(s.FixtureServer())
	ctx := context.Background()
	got, err := fx.SetWith(ctx, node, fixture.SetRequest{Type: wire.Cluster, Name: "c", Resource: wire.BuildAny(wire.Cluster, "c", 1),
		TTL: 2 * time.Second, Aliases: []string{"c-alias"}})
	require.NoError(t, err)
	assert.Equal(t, GeneratedPrefix+"c", got.Name)
	e := s.snapshot(node, wire.Cluster.URL).resources[GeneratedPrefix+"c"]
	require.NotNil(t, e)
	assert.Equal(t, 2*time.Second, e.ttl.AsDuration())
	assert.Equal(t, []string{"c-alias"}, e.aliases)

	served, err := fx.Apply(ctx, node, []fixture.Change{
		fixture.DeleteChange(wire.Cluster, GeneratedPrefix+"c"),
		fixture.SetChange(fixture.SetRequest{Type: wire.Endpoint, Name: "e", Resource: wire.BuildAny(wire.Endpoint, "e", 1)}),
		fixture.SetChange(fixture.SetRequest{Type: wire.Cluster, Name: "d", Resource: wire.BuildAny(wire.Cluster, "d", 1)}),
	})
	require.NoError(t, err)
	assert.Equal(t, []fixture.Served{{Name: GeneratedPrefix + "e"}, {Name: GeneratedPrefix + "d"}}, served)
	assert.Equal(t, []string{GeneratedPrefix + "d"}, s.snapshot(node, wire.Cluster.URL).filter(func(string) bool { return true }))
}
