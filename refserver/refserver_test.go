package refserver

import (
	"context"
	"net"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// streamTimeout bounds every test stream, so a missing response fails the
// test instead of hanging it.
const streamTimeout = 5 * time.Second

const node = "node-1"

type env struct {
	t    *testing.T
	conn *grpc.ClientConn
	fx   fixture.Fixture
}

// start runs a reference server with faults on a loopback listener.
func start(t *testing.T, faults ...Fault) *env {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := New(faults...)
	g := grpc.NewServer()
	s.Register(g)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &env{t: t, conn: conn, fx: fixture.FromServer(s.FixtureServer())}
}

func (e *env) set(t wire.Type, name string, rev int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	_, err := e.fx.Set(ctx, node, t, name, wire.BuildAny(t, name, rev))
	require.NoError(e.t, err)
}

func (e *env) del(t wire.Type, name string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	defer cancel()
	require.NoError(e.t, e.fx.Delete(ctx, node, t, name))
}

func (e *env) open(v wire.Variant, t wire.Type) grpc.ClientStream {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), streamTimeout)
	e.t.Cleanup(cancel)
	cs, err := e.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, wire.MethodFor(v, t))
	require.NoError(e.t, err)
	return cs
}

// sotwClient is a raw SotW client stream.
type sotwClient struct {
	t  *testing.T
	cs grpc.ClientStream
}

func (e *env) sotw(v wire.Variant, t wire.Type) *sotwClient {
	return &sotwClient{t: e.t, cs: e.open(v, t)}
}

func (c *sotwClient) send(r *discovery.DiscoveryRequest) {
	c.t.Helper()
	require.NoError(c.t, c.cs.SendMsg(r))
}

func (c *sotwClient) recv() *discovery.DiscoveryResponse {
	c.t.Helper()
	r := &discovery.DiscoveryResponse{}
	require.NoError(c.t, c.cs.RecvMsg(r))
	return r
}

func (c *sotwClient) recvErr() error {
	return c.cs.RecvMsg(&discovery.DiscoveryResponse{})
}

// req builds a SotW request; the node is set only when first is true, as a
// client may omit it after the first request (STREAM-4).
func req(t wire.Type, first bool, nonce string, names ...string) *discovery.DiscoveryRequest {
	r := &discovery.DiscoveryRequest{TypeUrl: t.URL, ResponseNonce: nonce, ResourceNames: names}
	if first {
		r.Node = &core.Node{Id: node}
	}
	return r
}

func nack(r *discovery.DiscoveryRequest) *discovery.DiscoveryRequest {
	r.ErrorDetail = &rpcstatus.Status{Code: int32(codes.InvalidArgument), Message: "rejected"}
	return r
}

func names(t *testing.T, r *discovery.DiscoveryResponse) []string {
	t.Helper()
	var out []string
	for _, a := range r.GetResources() {
		n, err := wire.AnyName(a)
		require.NoError(t, err)
		out = append(out, n)
	}
	return out
}

// deltaClient is a raw Delta client stream.
type deltaClient struct {
	t  *testing.T
	cs grpc.ClientStream
}

func (e *env) delta(v wire.Variant, t wire.Type) *deltaClient {
	return &deltaClient{t: e.t, cs: e.open(v, t)}
}

func (c *deltaClient) send(r *discovery.DeltaDiscoveryRequest) {
	c.t.Helper()
	require.NoError(c.t, c.cs.SendMsg(r))
}

func (c *deltaClient) recv() *discovery.DeltaDiscoveryResponse {
	c.t.Helper()
	r := &discovery.DeltaDiscoveryResponse{}
	require.NoError(c.t, c.cs.RecvMsg(r))
	return r
}

func (c *deltaClient) recvErr() error {
	return c.cs.RecvMsg(&discovery.DeltaDiscoveryResponse{})
}

func deltaNames(r *discovery.DeltaDiscoveryResponse) []string {
	var out []string
	for _, x := range r.GetResources() {
		out = append(out, x.GetName())
	}
	return out
}

func TestFaultCatalogue(t *testing.T) {
	seen := map[Fault]bool{}
	for _, f := range AllFaults {
		assert.False(t, seen[f], "duplicate %s", f)
		seen[f] = true
		assert.NotEqual(t, "unknown fault", f.Description(), f)
		p, err := ParseFault(string(f))
		require.NoError(t, err)
		assert.Equal(t, f, p)
	}
	assert.Len(t, AllFaults, len(faultDescriptions), "every fault is listed once and described")
	_, err := ParseFault("resend-on-reconnect")
	assert.Error(t, err)
}

func TestCapabilities(t *testing.T) {
	e := start(t)
	c, err := e.fx.Capabilities(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "v1", c.GetApiVersion())
	assert.Equal(t, "xdsconform reference server", c.GetServer())
	assert.Len(t, c.GetTypeUrls(), len(wire.AllTypes))
	assert.Equal(t, []string{"sotw-ads", "sotw-pertype", "delta-ads", "delta-pertype"}, c.GetVariants())
	assert.True(t, c.GetLegacyWildcard())
	assert.True(t, c.GetExplicitWildcard())
	assert.False(t, c.GetGeneratesNames())
	assert.True(t, c.GetNodeScoped())
}

// WILD-2, GRP-1, DEL-7: a legacy wildcard gets the full state, and a
// deletion is pushed as a full state without the deleted resource.
func TestSotWLegacyWildcard(t *testing.T) {
	for _, v := range wire.SotWOnly {
		t.Run(v.String(), func(t *testing.T) {
			e := start(t)
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.sotw(v, wire.Cluster)
			c.send(req(wire.Cluster, true, ""))
			r := c.recv()
			assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl())
			assert.Equal(t, "v2", r.GetVersionInfo())
			assert.NotEmpty(t, r.GetNonce())
			assert.ElementsMatch(t, []string{"c1", "c2"}, names(t, r))
			for _, a := range r.GetResources() {
				assert.Equal(t, wire.Cluster.URL, a.GetTypeUrl())
			}
			c.send(req(wire.Cluster, false, r.GetNonce()))

			e.del(wire.Cluster, "c2")
			r2 := c.recv()
			assert.Equal(t, []string{"c1"}, names(t, r2))
			assert.Equal(t, "v3", r2.GetVersionInfo())
			assert.NotEqual(t, r.GetNonce(), r2.GetNonce())
		})
	}
}

// RES-2, DNE-3, UNSUB-2, GRP-2: named EDS subscriptions get what exists,
// later creations are pushed, unsubscribed names are not.
func TestSotWNamedEndpoints(t *testing.T) {
	for _, v := range wire.SotWOnly {
		t.Run(v.String(), func(t *testing.T) {
			e := start(t)
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "c", 1)
			c := e.sotw(v, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "a", "b"))
			r := c.recv()
			assert.Equal(t, []string{"a"}, names(t, r))
			c.send(req(wire.Endpoint, false, r.GetNonce(), "a", "b"))

			e.set(wire.Endpoint, "c", 2) // not subscribed: no push
			e.set(wire.Endpoint, "b", 1) // subscribed while missing: pushed
			r = c.recv()
			assert.Equal(t, []string{"b"}, names(t, r), "only the created resource, never the unsubscribed one")
			c.send(req(wire.Endpoint, false, r.GetNonce(), "a", "b"))

			e.del(wire.Endpoint, "a") // EDS deletion: nothing to send in SotW
			e.set(wire.Endpoint, "b", 2)
			r = c.recv()
			assert.Equal(t, []string{"b"}, names(t, r))
		})
	}
}

// Several per-type streams of one node each get the changes they subscribe
// to (MULTI-2), and other nodes get nothing.
func TestSotWMultipleStreams(t *testing.T) {
	e := start(t)
	s1 := e.sotw(wire.SotWPerType, wire.Endpoint)
	s2 := e.sotw(wire.SotWPerType, wire.Endpoint)
	s1.send(req(wire.Endpoint, true, "", "foo"))
	s2.send(req(wire.Endpoint, true, "", "foo", "bar"))
	e.set(wire.Endpoint, "foo", 1)
	assert.Equal(t, []string{"foo"}, names(t, s1.recv()))
	assert.Equal(t, []string{"foo"}, names(t, s2.recv()))
	e.set(wire.Endpoint, "bar", 1)
	e.set(wire.Endpoint, "foo", 2)
	assert.Equal(t, []string{"foo"}, names(t, s1.recv()), "bar is not subscribed on stream 1")
}

// NONCE-7 and NONCE-8: a stale request is ignored; ACKing the newest nonce
// with the same names applies them.
func TestSotWStaleNonce(t *testing.T) {
	for _, answer := range []bool{false, true} {
		name := "reference"
		var faults []Fault
		if answer {
			name, faults = string(FaultAnswerStaleNonce), []Fault{FaultAnswerStaleNonce}
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, faults...)
			e.set(wire.Endpoint, "foo", 1)
			e.set(wire.Endpoint, "bar", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "foo"))
			a := c.recv()
			c.send(req(wire.Endpoint, false, a.GetNonce(), "foo"))
			e.set(wire.Endpoint, "foo", 2)
			b := c.recv()

			c.send(req(wire.Endpoint, false, a.GetNonce(), "foo", "bar")) // stale
			// Barrier: requests are handled in order, so a first CDS request
			// is answered after anything the stale request caused.
			c.send(req(wire.Cluster, false, "", "x"))
			next := c.recv()
			if answer {
				assert.Equal(t, wire.Endpoint.URL, next.GetTypeUrl(), "the fault answers the stale request")
				return
			}
			assert.Equal(t, wire.Cluster.URL, next.GetTypeUrl(), "stale request must not be answered")

			c.send(req(wire.Endpoint, false, b.GetNonce(), "foo", "bar"))
			r := c.recv()
			assert.Equal(t, wire.Endpoint.URL, r.GetTypeUrl())
			assert.Contains(t, names(t, r), "bar")
		})
	}
}

// ACK-5, UPD-1: a NACK does not bring back the rejected content.
func TestSotWNack(t *testing.T) {
	for _, loop := range []bool{false, true} {
		name := "reference"
		var faults []Fault
		if loop {
			name, faults = string(FaultNackResendLoop), []Fault{FaultNackResendLoop}
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, faults...)
			e.set(wire.Endpoint, "foo", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "foo"))
			a := c.recv()
			c.send(nack(req(wire.Endpoint, false, a.GetNonce(), "foo")))
			c.send(req(wire.Cluster, false, "", "x")) // barrier, see TestSotWStaleNonce
			next := c.recv()
			if loop {
				assert.Equal(t, wire.Endpoint.URL, next.GetTypeUrl())
				return
			}
			assert.Equal(t, wire.Cluster.URL, next.GetTypeUrl())
			// ACK-9: the stream keeps working after a NACK.
			e.set(wire.Endpoint, "foo", 2)
			assert.Equal(t, []string{"foo"}, names(t, c.recv()))
		})
	}
}

// RES-5: a dropped and re-added name is sent again even though unchanged.
func TestSotWResubscribe(t *testing.T) {
	e := start(t)
	e.set(wire.Endpoint, "foo", 1)
	e.set(wire.Endpoint, "bar", 1)
	c := e.sotw(wire.SotWPerType, wire.Endpoint)
	c.send(req(wire.Endpoint, true, "", "foo", "bar"))
	a := c.recv()
	assert.ElementsMatch(t, []string{"foo", "bar"}, names(t, a))
	c.send(req(wire.Endpoint, false, a.GetNonce(), "foo")) // only removes: no response
	c.send(req(wire.Endpoint, false, a.GetNonce(), "foo", "bar"))
	assert.Contains(t, names(t, c.recv()), "bar")
}

// DNE-5, DNE-3, DEL-1: a missing subscribed name is reported removed, pushed
// when created and reported removed again when deleted.
func TestDeltaSubscribeMissing(t *testing.T) {
	for _, v := range wire.DeltaOnly {
		t.Run(v.String(), func(t *testing.T) {
			e := start(t)
			c := e.delta(v, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"x"}})
			r := c.recv()
			assert.Empty(t, r.GetResources())
			assert.Equal(t, []string{"x"}, r.GetRemovedResources())
			assert.NotEmpty(t, r.GetNonce())
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: r.GetNonce()})

			e.set(wire.Endpoint, "x", 1)
			r = c.recv()
			require.Len(t, r.GetResources(), 1)
			assert.Equal(t, "x", r.GetResources()[0].GetName())
			assert.Equal(t, contentVersion(wire.BuildAny(wire.Endpoint, "x", 1)), r.GetResources()[0].GetVersion())

			e.del(wire.Endpoint, "x")
			r = c.recv()
			assert.Empty(t, r.GetResources())
			assert.Equal(t, []string{"x"}, r.GetRemovedResources())
		})
	}
}

// DELTA-8: unchanged resources listed in initial_resource_versions may be
// skipped, changed ones are sent and vanished ones reported removed.
func TestDeltaInitialResourceVersions(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		name := "reference"
		var faults []Fault
		if ignore {
			name, faults = string(FaultIgnoreInitialResourceVersions), []Fault{FaultIgnoreInitialResourceVersions}
		}
		t.Run(name, func(t *testing.T) {
			e := start(t, faults...)
			e.set(wire.Cluster, "a", 1)
			e.set(wire.Cluster, "b", 2)
			c := e.delta(wire.DeltaADS, wire.Cluster)
			c.send(&discovery.DeltaDiscoveryRequest{
				Node:                   &core.Node{Id: node},
				TypeUrl:                wire.Cluster.URL,
				ResourceNamesSubscribe: []string{"a", "b", "c"},
				InitialResourceVersions: map[string]string{
					"a": contentVersion(wire.BuildAny(wire.Cluster, "a", 1)),
					"b": contentVersion(wire.BuildAny(wire.Cluster, "b", 1)),
					"c": "old",
				},
			})
			r := c.recv()
			if ignore {
				assert.Equal(t, []string{"a", "b"}, deltaNames(r))
			} else {
				assert.Equal(t, []string{"b"}, deltaNames(r))
			}
			assert.Equal(t, []string{"c"}, r.GetRemovedResources())
		})
	}
}

// DELTA-3: subscribing again resends; UNSUB-4: phantom unsubscribe is a
// no-op; NONCE-12: an old nonce does not drop a subscription change.
func TestDeltaSubscriptionChanges(t *testing.T) {
	e := start(t)
	e.set(wire.Endpoint, "a", 1)
	e.set(wire.Endpoint, "b", 1)
	c := e.delta(wire.DeltaPerType, wire.Endpoint)
	c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"}})
	r1 := c.recv()
	assert.Equal(t, []string{"a"}, deltaNames(r1))
	c.send(&discovery.DeltaDiscoveryRequest{ResponseNonce: r1.GetNonce(), ResourceNamesUnsubscribe: []string{"never"}})
	c.send(&discovery.DeltaDiscoveryRequest{ResourceNamesSubscribe: []string{"a"}})
	r2 := c.recv()
	assert.Equal(t, []string{"a"}, deltaNames(r2), "subscribe always resends")
	c.send(&discovery.DeltaDiscoveryRequest{ResponseNonce: r1.GetNonce(), ResourceNamesSubscribe: []string{"b"}})
	assert.Equal(t, []string{"b"}, deltaNames(c.recv()), "old nonce must not drop the subscription")
}

// Delta wildcard: legacy first request, "*" removal keeps explicit names
// (WILD-4), and the UNSUB-6 overlap answer.
func TestDeltaWildcard(t *testing.T) {
	e := start(t)
	e.set(wire.Listener, "l1", 1)
	e.set(wire.Listener, "l2", 1)
	c := e.delta(wire.DeltaADS, wire.Listener)
	c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Listener.URL})
	assert.Equal(t, []string{"l1", "l2"}, deltaNames(c.recv()))

	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL, ResourceNamesSubscribe: []string{"l1"}})
	assert.Equal(t, []string{"l1"}, deltaNames(c.recv()))
	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL, ResourceNamesUnsubscribe: []string{"l1"}})
	assert.Equal(t, []string{"l1"}, deltaNames(c.recv()), "UNSUB-6: still covered by the wildcard")

	c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL, ResourceNamesSubscribe: []string{"l1"}, ResourceNamesUnsubscribe: []string{"*"}})
	assert.Equal(t, []string{"l1"}, deltaNames(c.recv()))
	e.set(wire.Listener, "l2", 2) // wildcard-only now: not pushed
	e.set(wire.Listener, "l1", 2)
	assert.Equal(t, []string{"l1"}, deltaNames(c.recv()))
}

// Faults that change the shape of every response.
func TestResponseShapeFaults(t *testing.T) {
	cases := []struct {
		fault Fault
		check func(t *testing.T, r *discovery.DiscoveryResponse)
	}{
		{"", func(t *testing.T, r *discovery.DiscoveryResponse) {
			assert.Equal(t, []string{"c1"}, names(t, r))
			assert.Equal(t, "1", r.GetNonce())
			assert.Equal(t, wire.Cluster.URL, r.GetResources()[0].GetTypeUrl())
		}},
		{FaultDuplicateNames, func(t *testing.T, r *discovery.DiscoveryResponse) {
			assert.Equal(t, []string{"c1", "c1"}, names(t, r))
		}},
		{FaultEmptyNonce, func(t *testing.T, r *discovery.DiscoveryResponse) { assert.Empty(t, r.GetNonce()) }},
		{FaultWrongTypeUrl, func(t *testing.T, r *discovery.DiscoveryResponse) {
			assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl())
			assert.Equal(t, wire.Endpoint.URL, r.GetResources()[0].GetTypeUrl())
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault)+"/", func(t *testing.T) {
			var faults []Fault
			if tc.fault != "" {
				faults = append(faults, tc.fault)
			}
			e := start(t, faults...)
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "*"))
			tc.check(t, c.recv())
		})
	}
}

// VER-1 with FaultStaticVersion, NONCE-2 with FaultReuseNonce.
func TestVersionAndNonceFaults(t *testing.T) {
	cases := []struct {
		fault       Fault
		sameVersion bool
		sameNonce   bool
	}{
		{"", false, false},
		{FaultStaticVersion, true, false},
		{FaultReuseNonce, false, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault)+"/", func(t *testing.T) {
			var faults []Fault
			if tc.fault != "" {
				faults = append(faults, tc.fault)
			}
			e := start(t, faults...)
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWPerType, wire.Cluster)
			c.send(req(wire.Cluster, true, ""))
			a := c.recv()
			c.send(req(wire.Cluster, false, a.GetNonce()))
			e.set(wire.Cluster, "c1", 2)
			b := c.recv()
			assert.Equal(t, tc.sameVersion, a.GetVersionInfo() == b.GetVersionInfo(), "versions %q %q", a.GetVersionInfo(), b.GetVersionInfo())
			assert.Equal(t, tc.sameNonce, a.GetNonce() == b.GetNonce(), "nonces %q %q", a.GetNonce(), b.GetNonce())
		})
	}
}

// STREAM-4 and ACK-9 faults close the stream; the reference keeps it.
func TestStreamClosingFaults(t *testing.T) {
	cases := []struct {
		fault Fault
		code  codes.Code
		nack  bool
	}{
		{FaultRequireNodeEveryRequest, codes.InvalidArgument, false},
		{FaultCloseOnNack, codes.Internal, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault), func(t *testing.T) {
			e := start(t, tc.fault)
			e.set(wire.Endpoint, "foo", 1)
			c := e.sotw(wire.SotWPerType, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "foo"))
			a := c.recv()
			r := req(wire.Endpoint, false, a.GetNonce(), "foo")
			if tc.nack {
				r = nack(r)
			}
			c.send(r)
			assert.Equal(t, tc.code, status.Code(c.recvErr()))
		})
	}
}

// Delta faults on removed_resources and versions.
func TestDeltaFaults(t *testing.T) {
	t.Run(string(FaultNoMissingReport), func(t *testing.T) {
		e := start(t, FaultNoMissingReport)
		e.set(wire.Endpoint, "a", 1)
		c := e.delta(wire.DeltaADS, wire.Endpoint)
		c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"x", "a"}})
		r := c.recv()
		assert.Equal(t, []string{"a"}, deltaNames(r))
		assert.Empty(t, r.GetRemovedResources())
	})
	t.Run(string(FaultNoResourceVersions), func(t *testing.T) {
		e := start(t, FaultNoResourceVersions)
		e.set(wire.Endpoint, "a", 1)
		c := e.delta(wire.DeltaADS, wire.Endpoint)
		c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"}})
		r := c.recv()
		require.Len(t, r.GetResources(), 1)
		assert.Empty(t, r.GetResources()[0].GetVersion())
	})
	t.Run(string(FaultPhantomUnsubscribeError), func(t *testing.T) {
		e := start(t, FaultPhantomUnsubscribeError)
		c := e.delta(wire.DeltaPerType, wire.Endpoint)
		c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, ResourceNamesUnsubscribe: []string{"never"}})
		assert.Equal(t, codes.InvalidArgument, status.Code(c.recvErr()))
	})
	t.Run(string(FaultNeverReportDeletions), func(t *testing.T) {
		e := start(t, FaultNeverReportDeletions)
		e.set(wire.Endpoint, "a", 1)
		e.set(wire.Endpoint, "b", 1)
		c := e.delta(wire.DeltaADS, wire.Endpoint)
		c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a", "b"}})
		assert.Equal(t, []string{"a", "b"}, deltaNames(c.recv()))
		e.del(wire.Endpoint, "a")
		e.set(wire.Endpoint, "b", 2)
		r := c.recv()
		assert.Equal(t, []string{"b"}, deltaNames(r))
		assert.Empty(t, r.GetRemovedResources())
	})
}
