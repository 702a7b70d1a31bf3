package gcpserver

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// waitTimeout bounds every receive; responses here are local and immediate.
const waitTimeout = 10 * time.Second

var flavours = []Flavour{Snapshot, Linear}

// harness is one running target: the xDS server on a real listener and a
// client connection to it.
type harness struct {
	fx   fixture.Fixture
	conn *grpc.ClientConn
}

func start(t *testing.T, flavour Flavour) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, flavour)
	require.NoError(t, err)
	g := grpc.NewServer()
	s.Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = conn.Close()
		cancel()
		g.Stop()
	})
	return &harness{fx: fixture.FromServer(s.FixtureServer()), conn: conn}
}

// eachFlavour runs test as one subtest per flavour, each against a server
// of its own.
func eachFlavour(t *testing.T, test func(t *testing.T, fl Flavour, h *harness)) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) { test(t, fl, start(t, fl)) })
	}
}

// client returns a fake xDS client of node node speaking variant v; its
// streams open on first use and end with the test, and each wait for a
// response is bounded by waitTimeout. Global-invariant violations fail the
// test.
func (h *harness) client(t *testing.T, v wire.Variant, node string) *fakeclient.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := fakeclient.New(ctx, h.conn, v, fakeclient.Options{NodeID: node, Timeout: waitTimeout})
	t.Cleanup(func() {
		c.Close()
		cancel()
		assert.Empty(t, c.Violations(), "global invariants")
	})
	return c
}

func (h *harness) set(t *testing.T, node string, ty wire.Type, name string, rev int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	got, err := h.fx.Set(ctx, node, ty, name, wire.BuildAny(ty, name, rev))
	require.NoError(t, err)
	require.Equal(t, name, got.Name)
}

func (h *harness) del(t *testing.T, node string, ty wire.Type, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, h.fx.Delete(ctx, node, ty, name))
}

// sendSotW sends a SotW request with exactly this version_info,
// response_nonce and names; the client puts the node on the stream's first
// request only, as clients do (a later Node{} would switch the node id).
func sendSotW(t *testing.T, c *fakeclient.Client, ty wire.Type, version, nonce string, names ...string) {
	t.Helper()
	req := c.SotWRequest(ty, names)
	req.VersionInfo, req.ResponseNonce = version, nonce
	require.NoError(t, c.SendSotW(ty, req))
}

// expect receives the next response of type ty.
func expect(t *testing.T, c *fakeclient.Client, ty wire.Type) *fakeclient.Response {
	t.Helper()
	r, err := c.Expect(ty)
	require.NoError(t, err)
	return r
}

// noneQueued fails if a response of any of types has arrived and not been
// consumed: called right after an expect, it shows that none came before
// the response expected, as the receive loop queues in stream order.
func noneQueued(t *testing.T, c *fakeclient.Client, msg string, types ...wire.Type) {
	t.Helper()
	_, err := c.ExpectNoneWithin(0, types...)
	require.NoError(t, err, msg)
}

// assertProto fails the test unless got equals want as a proto message
// (testify's Equal would compare the messages' internal state).
func assertProto(t *testing.T, want, got proto.Message) bool {
	t.Helper()
	return assert.Truef(t, proto.Equal(want, got), "messages differ:\nwant %s\ngot  %s",
		prototext.Format(want), prototext.Format(got))
}

func TestSotWADSClusterSetAndDelete(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "c1", 1)
		h.set(t, "n1", wire.Cluster, "c2", 1)

		c := h.client(t, wire.SotWADS, "n1")
		sendSotW(t, c, wire.Cluster, "", "", "c1", "c2")
		r := expect(t, c, wire.Cluster)
		assert.Equal(t, wire.Cluster.URL, r.TypeURL)
		assert.NotEmpty(t, r.Nonce)
		require.True(t, r.Has("c1"))
		assertProto(t, wire.Build(wire.Cluster, "c1", 1), r.Get("c1"))

		sendSotW(t, c, wire.Cluster, r.Version, r.Nonce, "c1", "c2")
		h.del(t, "n1", wire.Cluster, "c1")
		r = expect(t, c, wire.Cluster)
		assert.False(t, r.Has("c1"), "CDS is full state: the deletion is the cluster's absence")
		assert.True(t, r.Has("c2"))
	})
}

func TestDeltaPerTypeEDSSetAndDelete(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Endpoint, "e1", 1)

		c := h.client(t, wire.DeltaPerType, "n1")
		sendDelta(t, c, wire.Endpoint, "", []string{"e1"}, nil)
		r := expect(t, c, wire.Endpoint)
		require.True(t, r.Has("e1"))
		assertProto(t, wire.Build(wire.Endpoint, "e1", 1), r.Get("e1"))

		sendDelta(t, c, wire.Endpoint, r.Nonce, nil, nil)
		h.del(t, "n1", wire.Endpoint, "e1")
		r = expect(t, c, wire.Endpoint)
		assert.Equal(t, []string{"e1"}, r.Removed)
		assert.Empty(t, r.Resources)
	})
}

// TestSotWOtherTypeNotResent: a change to a cluster gives only CDS a new
// version, so an open, ACKed EDS watch on the same ADS stream is not
// answered (VER-2, UPD-1). To bound the wait, the EDS request after the
// change subscribes one more endpoint, which is answered for certain: with
// the EDS version unchanged, that answer carries the ACKed version. Had
// the change also bumped EDS, the first EDS response would carry a new
// version: either the resend itself, queued by the change, or the answer
// to the request, which then finds the watch's version out of date.
func TestSotWOtherTypeNotResent(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "c1", 1)
		h.set(t, "n1", wire.Endpoint, "e1", 1)
		h.set(t, "n1", wire.Endpoint, "e2", 1)

		c := h.client(t, wire.SotWADS, "n1")
		sendSotW(t, c, wire.Cluster, "", "", "c1")
		cds := expect(t, c, wire.Cluster)
		require.Equal(t, wire.Cluster.URL, cds.TypeURL)
		sendSotW(t, c, wire.Cluster, cds.Version, cds.Nonce, "c1")
		sendSotW(t, c, wire.Endpoint, "", "", "e1")
		eds := expect(t, c, wire.Endpoint)
		noneQueued(t, c, "the CDS ACK is not answered", wire.Cluster)
		sendSotW(t, c, wire.Endpoint, eds.Version, eds.Nonce, "e1")

		h.set(t, "n1", wire.Cluster, "c1", 2)
		sendSotW(t, c, wire.Endpoint, eds.Version, eds.Nonce, "e1", "e2")

		// The CDS update and the EDS answer may come in either order;
		// each type has its own queue, in arrival order.
		r := expect(t, c, wire.Cluster)
		assert.NotEqual(t, cds.Version, r.Version, "CDS changed")
		assertProto(t, wire.Build(wire.Cluster, "c1", 2), r.Get("c1"))
		r = expect(t, c, wire.Endpoint)
		require.Equal(t, eds.Version, r.Version,
			"first EDS response after a cluster change has a new version: EDS was resent")
		// e1 too from the SnapshotCache; EDS is not full
		// state, so the LinearCache sends only the new name.
		assert.True(t, r.Has("e2"))
		// Whichever came second, nothing else (a second CDS or EDS
		// response, or another type) arrived before it.
		noneQueued(t, c, "unexpected response", wire.AllTypes...)
	})
}

// TestSnapshotVersionsPerType pins the Snapshot flavour's versioning: each
// type has its own counter that moves only when its resources change
// (identical content and unknown deletions leave it), and Reset moves only
// the types that had resources. No version repeats for a type of a node.
func TestSnapshotVersionsPerType(t *testing.T) {
	ctx := context.Background()
	c := cache.NewSnapshotCache(false, cache.IDHash{}, nopLogger{})
	f := newSnapshotFixture(c)
	versions := func() map[string]string {
		t.Helper()
		snap, err := c.GetSnapshot("n1")
		require.NoError(t, err)
		out := map[string]string{}
		for _, ty := range wire.AllTypes {
			out[ty.URL] = snap.GetVersion(ty.URL)
			require.NotEmpty(t, out[ty.URL], ty.URL)
		}
		return out
	}
	seen := map[string]map[string]bool{}
	// step runs a fixture call and checks that exactly the types in
	// changed got a version not used before.
	step := func(name string, call func() error, changed ...wire.Type) {
		t.Helper()
		before, _ := c.GetSnapshot("n1")
		require.NoError(t, call(), name)
		after := versions()
		for _, ty := range wire.AllTypes {
			if seen[ty.URL] == nil {
				seen[ty.URL] = map[string]bool{}
			}
			v := after[ty.URL]
			if before != nil && !slices.ContainsFunc(changed, func(c wire.Type) bool { return c.URL == ty.URL }) {
				assert.Equal(t, before.GetVersion(ty.URL), v, "%s: %s", name, ty)
				continue
			}
			assert.False(t, seen[ty.URL][v], "%s: %s version %s reused", name, ty, v)
			seen[ty.URL][v] = true
		}
	}
	set := func(ty wire.Type, name string, rev int) func() error {
		return func() error {
			_, err := f.SetResource(ctx, &fixturepb.SetResourceRequest{NodeId: "n1", TypeUrl: ty.URL, Name: name, Resource: wire.BuildAny(ty, name, rev)})
			return err
		}
	}
	del := func(ty wire.Type, name string) func() error {
		return func() error {
			_, err := f.DeleteResource(ctx, &fixturepb.DeleteResourceRequest{NodeId: "n1", TypeUrl: ty.URL, Name: name})
			return err
		}
	}
	reset := func() error {
		_, err := f.Reset(ctx, &fixturepb.ResetRequest{NodeId: "n1"})
		return err
	}

	step("first set", set(wire.Cluster, "c", 1), wire.AllTypes...)
	step("endpoint", set(wire.Endpoint, "e", 1), wire.Endpoint)
	step("same content", set(wire.Cluster, "c", 1))
	step("new content", set(wire.Cluster, "c", 2), wire.Cluster)
	step("unknown delete", del(wire.Listener, "nope"))
	step("delete", del(wire.Endpoint, "e"), wire.Endpoint)
	step("reset", reset, wire.Cluster)
	step("empty reset", reset)
	step("set after reset", set(wire.Cluster, "c", 2), wire.Cluster)
	step("endpoint again", set(wire.Endpoint, "e", 1), wire.Endpoint)
	withTTL := func(ttl time.Duration) func() error {
		return func() error {
			_, err := f.SetResource(ctx, &fixturepb.SetResourceRequest{NodeId: "n1", TypeUrl: wire.Cluster.URL, Name: "c",
				Resource: wire.BuildAny(wire.Cluster, "c", 2), Ttl: durationpb.New(ttl)})
			return err
		}
	}
	step("ttl set", withTTL(time.Minute), wire.Cluster)
	step("same ttl", withTTL(time.Minute))
	step("ttl changed", withTTL(time.Hour), wire.Cluster)
	step("ttl removed", set(wire.Cluster, "c", 2), wire.Cluster)
	apply := func(changes ...*fixturepb.Change) func() error {
		return func() error {
			_, err := f.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: "n1", Changes: changes})
			return err
		}
	}
	setC := func(ty wire.Type, name string, rev int) *fixturepb.Change {
		return &fixturepb.Change{Change: &fixturepb.Change_Set{Set: &fixturepb.SetResourceRequest{TypeUrl: ty.URL, Name: name, Resource: wire.BuildAny(ty, name, rev)}}}
	}
	delC := func(ty wire.Type, name string) *fixturepb.Change {
		return &fixturepb.Change{Change: &fixturepb.Change_Delete{Delete: &fixturepb.DeleteResourceRequest{TypeUrl: ty.URL, Name: name}}}
	}
	step("batch", apply(setC(wire.Cluster, "c", 3), setC(wire.Cluster, "d", 1), delC(wire.Endpoint, "e"), setC(wire.Listener, "l", 1)),
		wire.Cluster, wire.Endpoint, wire.Listener)
	step("batch changing nothing in the end", apply(setC(wire.Route, "r", 1), delC(wire.Route, "r"), setC(wire.Cluster, "d", 1)))
	step("empty batch", apply())
}

// TestEveryTypeServed backs the type_urls capability: each type, on its own
// per-type delta stream and (where it has one) its per-type SotW stream,
// delivers a resource set through the fixture.
func TestEveryTypeServed(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		// One stream per type and protocol. The requests leave
		// type_url empty: the per-type method alone names the type.
		d := h.client(t, wire.DeltaPerType, "n1")
		s := h.client(t, wire.SotWPerType, "n1")
		for _, ty := range wire.AllTypes {
			h.set(t, "n1", ty, "r-"+ty.Short, 3)
			dreq := d.DeltaRequest(ty)
			dreq.TypeUrl = ""
			dreq.ResourceNamesSubscribe = []string{"r-" + ty.Short}
			require.NoError(t, d.SendDelta(ty, dreq))
			assert.True(t, expect(t, d, ty).Has("r-"+ty.Short), "%s delta", ty)
			if !ty.Speaks(wire.SotW) {
				continue
			}
			sreq := s.SotWRequest(ty, []string{"r-" + ty.Short})
			sreq.TypeUrl = ""
			require.NoError(t, s.SendSotW(ty, sreq))
			assert.True(t, expect(t, s, ty).Has("r-"+ty.Short), "%s sotw", ty)
		}
	})
}

// TestNodeScope backs node_scoped: a legacy-wildcard CDS stream of n2 sees
// n1's cluster only when resources are global (Linear).
func TestNodeScope(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "only-n1", 1)
		h.set(t, "n2", wire.Cluster, "only-n2", 1)
		c := h.client(t, wire.SotWPerType, "n2")
		sendSotW(t, c, wire.Cluster, "", "")
		r := expect(t, c, wire.Cluster)
		assert.True(t, r.Has("only-n2"))
		if fl == Snapshot {
			assert.False(t, r.Has("only-n1"))
		} else {
			assert.True(t, r.Has("only-n1"))
		}
	})
}

// TestResetDeletesForOpenStreams checks that Reset reaches open streams.
func TestResetDeletesForOpenStreams(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "a", 1)
		h.set(t, "n1", wire.Cluster, "b", 1)
		c := h.client(t, wire.DeltaADS, "n1")
		sendDelta(t, c, wire.Cluster, "", []string{"a", "b"}, nil)
		r := expect(t, c, wire.Cluster)
		require.Len(t, r.Resources, 2)
		sendDelta(t, c, wire.Cluster, r.Nonce, nil, nil)

		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		require.NoError(t, h.fx.Reset(ctx, "n1"))
		r = expect(t, c, wire.Cluster)
		removed := slices.Clone(r.Removed)
		slices.Sort(removed)
		assert.Equal(t, []string{"a", "b"}, removed)
	})
}

func TestCapabilities(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		c, err := h.fx.Capabilities(context.Background())
		require.NoError(t, err)
		require.NoError(t, fixture.Check(c))
		assert.Equal(t, "v1", c.GetApiVersion())
		assert.Equal(t, "go-control-plane v0.14.0 ("+string(fl)+" cache)", c.GetServer())
		assert.Len(t, c.GetTypeUrls(), len(wire.AllTypes))
		assert.True(t, c.GetLegacyWildcard())
		// The global claim is what a harness without per-variant
		// capabilities reads: "*" only where every variant honours it.
		assert.Equal(t, fl == Linear, c.GetExplicitWildcard())
		assert.False(t, c.GetGeneratesNames())
		assert.Equal(t, fl == Snapshot, c.GetNodeScoped())
		for _, v := range wire.AllVariants {
			claims := fixture.Effective(c, v)
			assert.True(t, claims.Served(), v.String())
			assert.Len(t, claims.Types(), len(wire.AllTypes), v.String())
			assert.True(t, claims.LegacyWildcard(), v.String())
			var features []string
			switch fl {
			case Snapshot:
				// TestSotWExplicitWildcard, TestDeltaExplicitWildcard
				assert.Equal(t, v.IsDelta(), claims.ExplicitWildcard(), v.String())
				features = []string{fixture.FeatureBatch}
				if !v.IsDelta() {
					features = append(features, fixture.FeatureTTL) // TestSnapshotTTL
				}
			case Linear:
				assert.True(t, claims.ExplicitWildcard(), v.String())
			}
			assert.ElementsMatch(t, features, claims.Features(), v.String())
		}
	})
}

func TestFixtureRejectsBadRequests(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		ctx := context.Background()
		_, err := h.fx.Set(ctx, "n1", wire.Cluster, "x", wire.BuildAny(wire.Cluster, "y", 1))
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "name mismatch")
		_, err = h.fx.Set(ctx, "n1", wire.Cluster, "x", wire.BuildAny(wire.Listener, "x", 1))
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "type mismatch")
		assert.NoError(t, h.fx.Delete(ctx, "n1", wire.Cluster, "never-set"), "deleting an unknown name is not an error")
	})
	_, err := New(context.Background(), "bogus")
	assert.Error(t, err)
}
