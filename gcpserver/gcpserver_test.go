package gcpserver

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

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

// stream opens a raw bidi stream on the method of variant v for type ty;
// the stream ends with the test's bounded context.
func (h *harness) stream(t *testing.T, v wire.Variant, ty wire.Type) grpc.ClientStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	s, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, wire.MethodFor(v, ty))
	require.NoError(t, err)
	return s
}

func (h *harness) set(t *testing.T, node string, ty wire.Type, name string, rev int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	got, err := h.fx.Set(ctx, node, ty, name, wire.BuildAny(ty, name, rev))
	require.NoError(t, err)
	require.Equal(t, name, got)
}

func (h *harness) del(t *testing.T, node string, ty wire.Type, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, h.fx.Delete(ctx, node, ty, name))
}

// sotwReq builds a SotW request; node "" leaves the node out, as clients
// do after the first request of a stream.
func sotwReq(node string, ty wire.Type, version, nonce string, names ...string) *discovery.DiscoveryRequest {
	r := &discovery.DiscoveryRequest{TypeUrl: ty.URL, VersionInfo: version, ResponseNonce: nonce, ResourceNames: names}
	if node != "" {
		r.Node = &core.Node{Id: node}
	}
	return r
}

func recvSotW(t *testing.T, s grpc.ClientStream) *discovery.DiscoveryResponse {
	t.Helper()
	var r discovery.DiscoveryResponse
	require.NoError(t, s.RecvMsg(&r))
	return &r
}

func recvDelta(t *testing.T, s grpc.ClientStream) *discovery.DeltaDiscoveryResponse {
	t.Helper()
	var r discovery.DeltaDiscoveryResponse
	require.NoError(t, s.RecvMsg(&r))
	return &r
}

// assertProto fails the test unless got equals want as a proto message
// (testify's Equal would compare the messages' internal state).
func assertProto(t *testing.T, want, got proto.Message) bool {
	t.Helper()
	return assert.Truef(t, proto.Equal(want, got), "messages differ:\nwant %s\ngot  %s",
		prototext.Format(want), prototext.Format(got))
}

// sotwByName decodes a SotW response into name -> message.
func sotwByName(t *testing.T, r *discovery.DiscoveryResponse) map[string]proto.Message {
	t.Helper()
	out := map[string]proto.Message{}
	for _, a := range r.GetResources() {
		m, err := wire.Unpack(a)
		require.NoError(t, err)
		out[wire.NameOf(m)] = m
	}
	return out
}

// deltaByName decodes a delta response's resources into name -> message.
func deltaByName(t *testing.T, r *discovery.DeltaDiscoveryResponse) map[string]proto.Message {
	t.Helper()
	out := map[string]proto.Message{}
	for _, res := range r.GetResources() {
		m, err := wire.Unpack(res.GetResource())
		require.NoError(t, err)
		out[res.GetName()] = m
	}
	return out
}

func TestSotWADSClusterSetAndDelete(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "c1", 1)
			h.set(t, "n1", wire.Cluster, "c2", 1)

			s := h.stream(t, wire.SotWADS, wire.Cluster)
			require.NoError(t, s.SendMsg(sotwReq("n1", wire.Cluster, "", "", "c1", "c2")))
			r := recvSotW(t, s)
			assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl())
			assert.NotEmpty(t, r.GetNonce())
			got := sotwByName(t, r)
			require.Contains(t, got, "c1")
			assertProto(t, wire.Build(wire.Cluster, "c1", 1), got["c1"])

			require.NoError(t, s.SendMsg(sotwReq("", wire.Cluster, r.GetVersionInfo(), r.GetNonce(), "c1", "c2")))
			h.del(t, "n1", wire.Cluster, "c1")
			r = recvSotW(t, s)
			got = sotwByName(t, r)
			assert.NotContains(t, got, "c1", "CDS is full state: the deletion is the cluster's absence")
			assert.Contains(t, got, "c2")
		})
	}
}

func TestDeltaPerTypeEDSSetAndDelete(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Endpoint, "e1", 1)

			s := h.stream(t, wire.DeltaPerType, wire.Endpoint)
			require.NoError(t, s.SendMsg(&discovery.DeltaDiscoveryRequest{
				Node: &core.Node{Id: "n1"}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"e1"},
			}))
			r := recvDelta(t, s)
			got := deltaByName(t, r)
			require.Contains(t, got, "e1")
			assertProto(t, wire.Build(wire.Endpoint, "e1", 1), got["e1"])

			require.NoError(t, s.SendMsg(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: r.GetNonce()}))
			h.del(t, "n1", wire.Endpoint, "e1")
			r = recvDelta(t, s)
			assert.Equal(t, []string{"e1"}, r.GetRemovedResources())
			assert.Empty(t, r.GetResources())
		})
	}
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
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "c1", 1)
			h.set(t, "n1", wire.Endpoint, "e1", 1)
			h.set(t, "n1", wire.Endpoint, "e2", 1)

			s := h.stream(t, wire.SotWADS, wire.Cluster)
			require.NoError(t, s.SendMsg(sotwReq("n1", wire.Cluster, "", "", "c1")))
			cds := recvSotW(t, s)
			require.Equal(t, wire.Cluster.URL, cds.GetTypeUrl())
			require.NoError(t, s.SendMsg(sotwReq("", wire.Cluster, cds.GetVersionInfo(), cds.GetNonce(), "c1")))
			require.NoError(t, s.SendMsg(sotwReq("", wire.Endpoint, "", "", "e1")))
			eds := recvSotW(t, s)
			require.Equal(t, wire.Endpoint.URL, eds.GetTypeUrl(), "the CDS ACK is not answered")
			require.NoError(t, s.SendMsg(sotwReq("", wire.Endpoint, eds.GetVersionInfo(), eds.GetNonce(), "e1")))

			h.set(t, "n1", wire.Cluster, "c1", 2)
			require.NoError(t, s.SendMsg(sotwReq("", wire.Endpoint, eds.GetVersionInfo(), eds.GetNonce(), "e1", "e2")))

			// The CDS update and the EDS answer may come in either order.
			var gotCDS, gotEDS bool
			for !gotCDS || !gotEDS {
				r := recvSotW(t, s)
				switch r.GetTypeUrl() {
				case wire.Cluster.URL:
					require.False(t, gotCDS, "a second CDS response")
					gotCDS = true
					assert.NotEqual(t, cds.GetVersionInfo(), r.GetVersionInfo(), "CDS changed")
					assertProto(t, wire.Build(wire.Cluster, "c1", 2), sotwByName(t, r)["c1"])
				case wire.Endpoint.URL:
					require.False(t, gotEDS, "a second EDS response")
					gotEDS = true
					require.Equal(t, eds.GetVersionInfo(), r.GetVersionInfo(),
						"first EDS response after a cluster change has a new version: EDS was resent")
					// e1 too from the SnapshotCache; EDS is not full
					// state, so the LinearCache sends only the new name.
					assert.Contains(t, sotwByName(t, r), "e2")
				default:
					require.Failf(t, "unexpected response", "type %s", r.GetTypeUrl())
				}
			}
		})
	}
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
}

// TestEveryTypeServed backs the type_urls capability: each type, on its own
// per-type delta stream and (where it has one) its per-type SotW stream,
// delivers a resource set through the fixture.
func TestEveryTypeServed(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			for _, ty := range wire.AllTypes {
				h.set(t, "n1", ty, "r-"+ty.Short, 3)
				d := h.stream(t, wire.DeltaPerType, ty)
				require.NoError(t, d.SendMsg(&discovery.DeltaDiscoveryRequest{
					Node: &core.Node{Id: "n1"}, ResourceNamesSubscribe: []string{"r-" + ty.Short},
				}))
				assert.Contains(t, deltaByName(t, recvDelta(t, d)), "r-"+ty.Short, "%s delta", ty)
				if !ty.Speaks(wire.SotW) {
					continue
				}
				s := h.stream(t, wire.SotWPerType, ty)
				require.NoError(t, s.SendMsg(&discovery.DiscoveryRequest{Node: &core.Node{Id: "n1"}, ResourceNames: []string{"r-" + ty.Short}}))
				assert.Contains(t, sotwByName(t, recvSotW(t, s)), "r-"+ty.Short, "%s sotw", ty)
			}
		})
	}
}

// TestNodeScope backs node_scoped: a legacy-wildcard CDS stream of n2 sees
// n1's cluster only when resources are global (Linear).
func TestNodeScope(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "only-n1", 1)
			h.set(t, "n2", wire.Cluster, "only-n2", 1)
			s := h.stream(t, wire.SotWPerType, wire.Cluster)
			require.NoError(t, s.SendMsg(sotwReq("n2", wire.Cluster, "", "")))
			got := sotwByName(t, recvSotW(t, s))
			assert.Contains(t, got, "only-n2")
			if fl == Snapshot {
				assert.NotContains(t, got, "only-n1")
			} else {
				assert.Contains(t, got, "only-n1")
			}
		})
	}
}

// TestResetDeletesForOpenStreams checks that Reset reaches open streams.
func TestResetDeletesForOpenStreams(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "a", 1)
			h.set(t, "n1", wire.Cluster, "b", 1)
			s := h.stream(t, wire.DeltaADS, wire.Cluster)
			require.NoError(t, s.SendMsg(&discovery.DeltaDiscoveryRequest{
				Node: &core.Node{Id: "n1"}, TypeUrl: wire.Cluster.URL, ResourceNamesSubscribe: []string{"a", "b"},
			}))
			r := recvDelta(t, s)
			require.Len(t, r.GetResources(), 2)
			require.NoError(t, s.SendMsg(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL, ResponseNonce: r.GetNonce()}))

			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			require.NoError(t, h.fx.Reset(ctx, "n1"))
			r = recvDelta(t, s)
			removed := slices.Clone(r.GetRemovedResources())
			slices.Sort(removed)
			assert.Equal(t, []string{"a", "b"}, removed)
		})
	}
}

func TestCapabilities(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			c, err := h.fx.Capabilities(context.Background())
			require.NoError(t, err)
			assert.Equal(t, "v1", c.GetApiVersion())
			assert.Equal(t, "go-control-plane v0.14.0 ("+string(fl)+" cache)", c.GetServer())
			assert.Len(t, c.GetTypeUrls(), len(wire.AllTypes))
			for _, v := range wire.AllVariants {
				assert.True(t, fixture.Supports(c, v), v.String())
			}
			assert.True(t, c.GetLegacyWildcard())
			assert.True(t, c.GetExplicitWildcard())
			assert.False(t, c.GetGeneratesNames())
			assert.Equal(t, fl == Snapshot, c.GetNodeScoped())
		})
	}
}

func TestFixtureRejectsBadRequests(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			ctx := context.Background()
			_, err := h.fx.Set(ctx, "n1", wire.Cluster, "x", wire.BuildAny(wire.Cluster, "y", 1))
			assert.Equal(t, codes.InvalidArgument, status.Code(unwrapStatus(err)), "name mismatch")
			_, err = h.fx.Set(ctx, "n1", wire.Cluster, "x", wire.BuildAny(wire.Listener, "x", 1))
			assert.Equal(t, codes.InvalidArgument, status.Code(unwrapStatus(err)), "type mismatch")
			assert.NoError(t, h.fx.Delete(ctx, "n1", wire.Cluster, "never-set"), "deleting an unknown name is not an error")
		})
	}
	_, err := New(context.Background(), "bogus")
	assert.Error(t, err)
}

// unwrapStatus digs the gRPC status out of the fixture adapter's wrapping.
func unwrapStatus(err error) error {
	for e := err; e != nil; {
		if _, ok := status.FromError(e); ok {
			return e
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return err
}
