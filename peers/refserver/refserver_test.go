package refserver

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// streamTimeout bounds every wait for a response, so a missing response
// fails the test instead of hanging it.
const streamTimeout = 5 * time.Second

const node = "node-1"

type env struct {
	t    *testing.T
	conn *grpc.ClientConn
	fx   fixture.Fixture
}

// start runs a reference server with faults on a loopback listener; the
// zero Fault switches nothing on, so tables can use it for the reference.
func start(t *testing.T, faults ...Fault) *env {
	t.Helper()
	return serveOn(t, New(slices.DeleteFunc(slices.Clone(faults), func(f Fault) bool { return f == "" })...))
}

// serveOn runs s on a loopback listener.
func serveOn(t *testing.T, s *Server) *env {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
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

// client returns a fake client of variant v for node; each call is a
// separate client with its own streams.
func (e *env) client(v wire.Variant) *fakeclient.Client {
	ctx, cancel := context.WithCancel(context.Background())
	c := fakeclient.New(ctx, e.conn, v, fakeclient.Options{NodeID: node, Timeout: streamTimeout})
	e.t.Cleanup(func() {
		c.Close()
		cancel()
	})
	return c
}

// withAndWithout runs test twice: as subtest "reference" against the
// reference server, and as subtest f against the server with fault f on.
func withAndWithout(t *testing.T, f Fault, test func(t *testing.T, e *env, faulty bool)) {
	for _, faulty := range []bool{false, true} {
		name, on := "reference", Fault("")
		if faulty {
			name, on = string(f), f
		}
		t.Run(name, func(t *testing.T) { test(t, start(t, on), faulty) })
	}
}

// request builds the SotW request c sends next for typ (node only on the
// stream's first request, no version) answering nonce.
func request(c *fakeclient.Client, typ wire.Type, nonce string, names ...string) *discovery.DiscoveryRequest {
	r := c.SotWRequest(typ, names)
	r.ResponseNonce = nonce
	return r
}

// send sends the SotW request r exactly as given.
func send(t *testing.T, c *fakeclient.Client, r *discovery.DiscoveryRequest) {
	t.Helper()
	typ, ok := wire.TypeByURL(r.GetTypeUrl())
	require.True(t, ok, "unknown type %q", r.GetTypeUrl())
	require.NoError(t, c.SendSotW(typ, r))
}

// expect returns the next response of typ.
func expect(t *testing.T, c *fakeclient.Client, typ wire.Type) *fakeclient.Response {
	t.Helper()
	r, err := c.Expect(typ)
	require.NoError(t, err)
	return r
}

// first returns the first response an ADS client received, where a
// response of barrier is due: requests and pushes are handled in order and
// the client queues responses in arrival order, so whatever came before
// the barrier response is queued once it has arrived.
func first(t *testing.T, c *fakeclient.Client, barrier wire.Type) *fakeclient.Response {
	t.Helper()
	b := expect(t, c, barrier)
	for _, typ := range wire.AllTypes {
		if typ.URL == barrier.URL {
			continue
		}
		r, err := c.ExpectWithin(typ, 0)
		if err == nil {
			return r
		}
		require.ErrorIs(t, err, fakeclient.ErrTimeout)
	}
	return b
}

// closedWith waits for the target to end the stream carrying typ and
// returns its status code; OK if a response arrived instead.
func closedWith(t *testing.T, c *fakeclient.Client, typ wire.Type) codes.Code {
	t.Helper()
	if _, err := c.Expect(typ); err == nil {
		return codes.OK
	} else if errors.Is(err, fakeclient.ErrTimeout) {
		t.Fatalf("stream neither answered nor closed: %v", err)
	}
	closed := c.StreamClosed(typ)
	var ce *fakeclient.ClosedError
	require.ErrorAs(t, closed, &ce)
	return status.Code(closed)
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
	assert.Equal(t, []string{"sotw-ads", "sotw-pertype", "delta-ads", "delta-pertype", "rest"}, c.GetVariants())
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
			c := e.client(v)
			send(t, c, request(c, wire.Cluster, ""))
			r := expect(t, c, wire.Cluster)
			assert.Equal(t, wire.Cluster.URL, r.TypeURL)
			assert.Equal(t, "v2", r.Version)
			assert.NotEmpty(t, r.Nonce)
			assert.ElementsMatch(t, []string{"c1", "c2"}, r.Names())
			for _, a := range r.SotW.GetResources() {
				assert.Equal(t, wire.Cluster.URL, a.GetTypeUrl())
			}
			send(t, c, request(c, wire.Cluster, r.Nonce))

			e.del(wire.Cluster, "c2")
			r2 := expect(t, c, wire.Cluster)
			assert.Equal(t, []string{"c1"}, r2.Names())
			assert.Equal(t, "v3", r2.Version)
			assert.NotEqual(t, r.Nonce, r2.Nonce)
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
			c := e.client(v)
			send(t, c, request(c, wire.Endpoint, "", "a", "b"))
			r := expect(t, c, wire.Endpoint)
			assert.Equal(t, []string{"a"}, r.Names())
			send(t, c, request(c, wire.Endpoint, r.Nonce, "a", "b"))

			e.set(wire.Endpoint, "c", 2) // not subscribed: no push
			e.set(wire.Endpoint, "b", 1) // subscribed while missing: pushed
			r = expect(t, c, wire.Endpoint)
			assert.Equal(t, []string{"b"}, r.Names(), "only the created resource, never the unsubscribed one")
			send(t, c, request(c, wire.Endpoint, r.Nonce, "a", "b"))

			e.del(wire.Endpoint, "a") // EDS deletion: nothing to send in SotW
			e.set(wire.Endpoint, "b", 2)
			r = expect(t, c, wire.Endpoint)
			assert.Equal(t, []string{"b"}, r.Names())
		})
	}
}

// Several per-type streams of one node each get the changes they subscribe
// to (MULTI-2), and other nodes get nothing.
func TestSotWMultipleStreams(t *testing.T) {
	e := start(t)
	s1 := e.client(wire.SotWPerType)
	s2 := e.client(wire.SotWPerType)
	send(t, s1, request(s1, wire.Endpoint, "", "foo"))
	send(t, s2, request(s2, wire.Endpoint, "", "foo", "bar"))
	e.set(wire.Endpoint, "foo", 1)
	assert.Equal(t, []string{"foo"}, expect(t, s1, wire.Endpoint).Names())
	assert.Equal(t, []string{"foo"}, expect(t, s2, wire.Endpoint).Names())
	e.set(wire.Endpoint, "bar", 1)
	e.set(wire.Endpoint, "foo", 2)
	assert.Equal(t, []string{"foo"}, expect(t, s1, wire.Endpoint).Names(), "bar is not subscribed on stream 1")
}

// NONCE-7 and NONCE-8: a stale request is ignored; ACKing the newest nonce
// with the same names applies them.
func TestSotWStaleNonce(t *testing.T) {
	withAndWithout(t, FaultAnswerStaleNonce, func(t *testing.T, e *env, answer bool) {
		e.set(wire.Endpoint, "foo", 1)
		e.set(wire.Endpoint, "bar", 1)
		c := e.client(wire.SotWADS)
		send(t, c, request(c, wire.Endpoint, "", "foo"))
		a := expect(t, c, wire.Endpoint)
		send(t, c, request(c, wire.Endpoint, a.Nonce, "foo"))
		e.set(wire.Endpoint, "foo", 2)
		b := expect(t, c, wire.Endpoint)

		send(t, c, request(c, wire.Endpoint, a.Nonce, "foo", "bar")) // stale
		// Barrier: requests are handled in order, so a first CDS request
		// is answered after anything the stale request caused.
		send(t, c, request(c, wire.Cluster, "", "x"))
		next := first(t, c, wire.Cluster)
		if answer {
			assert.Equal(t, wire.Endpoint.URL, next.TypeURL, "the fault answers the stale request")
			return
		}
		assert.Equal(t, wire.Cluster.URL, next.TypeURL, "stale request must not be answered")

		send(t, c, request(c, wire.Endpoint, b.Nonce, "foo", "bar"))
		r := expect(t, c, wire.Endpoint)
		assert.Equal(t, wire.Endpoint.URL, r.TypeURL)
		assert.Contains(t, r.Names(), "bar")
	})
}

// ACK-5, UPD-1: a NACK does not bring back the rejected content.
func TestSotWNack(t *testing.T) {
	withAndWithout(t, FaultNackResendLoop, func(t *testing.T, e *env, loop bool) {
		e.set(wire.Endpoint, "foo", 1)
		c := e.client(wire.SotWADS)
		send(t, c, request(c, wire.Endpoint, "", "foo"))
		a := expect(t, c, wire.Endpoint)
		require.NoError(t, c.Nack(wire.Endpoint, a, "rejected"))
		send(t, c, request(c, wire.Cluster, "", "x")) // barrier, see TestSotWStaleNonce
		next := first(t, c, wire.Cluster)
		if loop {
			assert.Equal(t, wire.Endpoint.URL, next.TypeURL)
			return
		}
		assert.Equal(t, wire.Cluster.URL, next.TypeURL)
		// ACK-9: the stream keeps working after a NACK.
		e.set(wire.Endpoint, "foo", 2)
		assert.Equal(t, []string{"foo"}, expect(t, c, wire.Endpoint).Names())
	})
}

// RES-5: a dropped and re-added name is sent again even though unchanged.
func TestSotWResubscribe(t *testing.T) {
	e := start(t)
	e.set(wire.Endpoint, "foo", 1)
	e.set(wire.Endpoint, "bar", 1)
	c := e.client(wire.SotWPerType)
	send(t, c, request(c, wire.Endpoint, "", "foo", "bar"))
	a := expect(t, c, wire.Endpoint)
	assert.ElementsMatch(t, []string{"foo", "bar"}, a.Names())
	send(t, c, request(c, wire.Endpoint, a.Nonce, "foo")) // only removes: no response
	send(t, c, request(c, wire.Endpoint, a.Nonce, "foo", "bar"))
	assert.Contains(t, expect(t, c, wire.Endpoint).Names(), "bar")
}

// DNE-5, DNE-3, DEL-1: a missing subscribed name is reported removed, pushed
// when created and reported removed again when deleted.
func TestDeltaSubscribeMissing(t *testing.T) {
	for _, v := range wire.DeltaOnly {
		t.Run(v.String(), func(t *testing.T) {
			e := start(t)
			c := e.client(v)
			require.NoError(t, c.Subscribe(wire.Endpoint, "x"))
			r := expect(t, c, wire.Endpoint)
			assert.Empty(t, r.Resources)
			assert.Equal(t, []string{"x"}, r.Removed)
			assert.NotEmpty(t, r.Nonce)
			require.NoError(t, c.Ack(wire.Endpoint, r))

			e.set(wire.Endpoint, "x", 1)
			r = expect(t, c, wire.Endpoint)
			require.Len(t, r.Resources, 1)
			assert.Equal(t, "x", r.Resources[0].Name)
			assert.Equal(t, contentVersion(wire.BuildAny(wire.Endpoint, "x", 1)), r.Resources[0].Version)

			e.del(wire.Endpoint, "x")
			r = expect(t, c, wire.Endpoint)
			assert.Empty(t, r.Resources)
			assert.Equal(t, []string{"x"}, r.Removed)
		})
	}
}

// DELTA-8: unchanged resources listed in initial_resource_versions may be
// skipped, changed ones are sent and vanished ones reported removed.
func TestDeltaInitialResourceVersions(t *testing.T) {
	withAndWithout(t, FaultIgnoreInitialResourceVersions, func(t *testing.T, e *env, ignore bool) {
		e.set(wire.Cluster, "a", 1)
		e.set(wire.Cluster, "b", 2)
		c := e.client(wire.DeltaADS)
		req := c.DeltaRequest(wire.Cluster)
		req.ResourceNamesSubscribe = []string{"a", "b", "c"}
		req.InitialResourceVersions = map[string]string{
			"a": contentVersion(wire.BuildAny(wire.Cluster, "a", 1)),
			"b": contentVersion(wire.BuildAny(wire.Cluster, "b", 1)),
			"c": "old",
		}
		require.NoError(t, c.SendDelta(wire.Cluster, req))
		r := expect(t, c, wire.Cluster)
		if ignore {
			assert.Equal(t, []string{"a", "b"}, r.Names())
		} else {
			assert.Equal(t, []string{"b"}, r.Names())
		}
		assert.Equal(t, []string{"c"}, r.Removed)
	})
}

// DELTA-3: subscribing again resends; UNSUB-4: phantom unsubscribe is a
// no-op; NONCE-12: an old nonce does not drop a subscription change.
func TestDeltaSubscriptionChanges(t *testing.T) {
	e := start(t)
	e.set(wire.Endpoint, "a", 1)
	e.set(wire.Endpoint, "b", 1)
	c := e.client(wire.DeltaPerType)
	require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
	r1 := expect(t, c, wire.Endpoint)
	assert.Equal(t, []string{"a"}, r1.Names())
	// Follow-up requests leave type_url empty, as a per-type stream allows.
	require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{ResponseNonce: r1.Nonce, ResourceNamesUnsubscribe: []string{"never"}}))
	require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{ResourceNamesSubscribe: []string{"a"}}))
	r2 := expect(t, c, wire.Endpoint)
	assert.Equal(t, []string{"a"}, r2.Names(), "subscribe always resends")
	require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{ResponseNonce: r1.Nonce, ResourceNamesSubscribe: []string{"b"}}))
	assert.Equal(t, []string{"b"}, expect(t, c, wire.Endpoint).Names(), "old nonce must not drop the subscription")
}

// Delta wildcard: legacy first request, "*" removal keeps explicit names
// (WILD-4), and the UNSUB-6 overlap answer.
func TestDeltaWildcard(t *testing.T) {
	e := start(t)
	e.set(wire.Listener, "l1", 1)
	e.set(wire.Listener, "l2", 1)
	c := e.client(wire.DeltaADS)
	require.NoError(t, c.RequestWildcardLegacy(wire.Listener))
	assert.Equal(t, []string{"l1", "l2"}, expect(t, c, wire.Listener).Names())

	require.NoError(t, c.Subscribe(wire.Listener, "l1"))
	assert.Equal(t, []string{"l1"}, expect(t, c, wire.Listener).Names())
	require.NoError(t, c.Unsubscribe(wire.Listener, "l1"))
	assert.Equal(t, []string{"l1"}, expect(t, c, wire.Listener).Names(), "UNSUB-6: still covered by the wildcard")

	req := c.DeltaRequest(wire.Listener)
	req.ResourceNamesSubscribe, req.ResourceNamesUnsubscribe = []string{"l1"}, []string{"*"}
	require.NoError(t, c.SendDelta(wire.Listener, req))
	assert.Equal(t, []string{"l1"}, expect(t, c, wire.Listener).Names())
	e.set(wire.Listener, "l2", 2) // wildcard-only now: not pushed
	e.set(wire.Listener, "l1", 2)
	assert.Equal(t, []string{"l1"}, expect(t, c, wire.Listener).Names())
}

// Faults that change the shape of every response.
func TestResponseShapeFaults(t *testing.T) {
	cases := []struct {
		fault Fault
		check func(t *testing.T, r *fakeclient.Response)
	}{
		{"", func(t *testing.T, r *fakeclient.Response) {
			assert.Equal(t, []string{"c1"}, r.Names())
			assert.Equal(t, "1", r.Nonce)
			assert.Equal(t, wire.Cluster.URL, r.SotW.GetResources()[0].GetTypeUrl())
		}},
		{FaultDuplicateNames, func(t *testing.T, r *fakeclient.Response) {
			assert.Equal(t, []string{"c1", "c1"}, r.Names())
		}},
		{FaultEmptyNonce, func(t *testing.T, r *fakeclient.Response) { assert.Empty(t, r.Nonce) }},
		{FaultWrongTypeUrl, func(t *testing.T, r *fakeclient.Response) {
			assert.Equal(t, wire.Cluster.URL, r.TypeURL)
			assert.Equal(t, wire.Endpoint.URL, r.SotW.GetResources()[0].GetTypeUrl())
		}},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault)+"/", func(t *testing.T) {
			e := start(t, tc.fault)
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, "", "*"))
			tc.check(t, expect(t, c, wire.Cluster))
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
			e := start(t, tc.fault)
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWPerType)
			send(t, c, request(c, wire.Cluster, ""))
			a := expect(t, c, wire.Cluster)
			send(t, c, request(c, wire.Cluster, a.Nonce))
			e.set(wire.Cluster, "c1", 2)
			b := expect(t, c, wire.Cluster)
			assert.Equal(t, tc.sameVersion, a.Version == b.Version, "versions %q %q", a.Version, b.Version)
			assert.Equal(t, tc.sameNonce, a.Nonce == b.Nonce, "nonces %q %q", a.Nonce, b.Nonce)
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
			c := e.client(wire.SotWPerType)
			send(t, c, request(c, wire.Endpoint, "", "foo"))
			a := expect(t, c, wire.Endpoint)
			if tc.nack {
				require.NoError(t, c.Nack(wire.Endpoint, a, "rejected"))
			} else {
				send(t, c, request(c, wire.Endpoint, a.Nonce, "foo"))
			}
			assert.Equal(t, tc.code, closedWith(t, c, wire.Endpoint))
		})
	}
}

// Delta faults on removed_resources and versions.
func TestDeltaFaults(t *testing.T) {
	t.Run(string(FaultNoMissingReport), func(t *testing.T) {
		e := start(t, FaultNoMissingReport)
		e.set(wire.Endpoint, "a", 1)
		c := e.client(wire.DeltaADS)
		require.NoError(t, c.Subscribe(wire.Endpoint, "x", "a"))
		r := expect(t, c, wire.Endpoint)
		assert.Equal(t, []string{"a"}, r.Names())
		assert.Empty(t, r.Removed)
	})
	t.Run(string(FaultNoResourceVersions), func(t *testing.T) {
		e := start(t, FaultNoResourceVersions)
		e.set(wire.Endpoint, "a", 1)
		c := e.client(wire.DeltaADS)
		require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
		r := expect(t, c, wire.Endpoint)
		require.Len(t, r.Resources, 1)
		assert.Empty(t, r.Resources[0].Version)
	})
	t.Run(string(FaultPhantomUnsubscribeError), func(t *testing.T) {
		e := start(t, FaultPhantomUnsubscribeError)
		c := e.client(wire.DeltaPerType)
		// No type_url: the per-type stream names the type.
		require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{Node: c.Node(), ResourceNamesUnsubscribe: []string{"never"}}))
		assert.Equal(t, codes.InvalidArgument, closedWith(t, c, wire.Endpoint))
	})
	for _, f := range []Fault{FaultFirstResourceVersion, FaultVersionOnFirstSendOnly} {
		t.Run(string(f), func(t *testing.T) {
			versions := func(fs ...Fault) []string {
				e := start(t, fs...)
				e.set(wire.Endpoint, "a", 1)
				c := e.client(wire.DeltaADS)
				require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
				first := expect(t, c, wire.Endpoint)
				require.NoError(t, c.Ack(wire.Endpoint, first))
				e.set(wire.Endpoint, "a", 2)
				second := expect(t, c, wire.Endpoint)
				return []string{first.ResourceVersion("a"), second.ResourceVersion("a")}
			}
			ref, faulty := versions(), versions(f)
			require.NotEqual(t, ref[0], ref[1], "the reference server's version follows the content")
			assert.Equal(t, ref[0], faulty[0], "the first send is as the reference's")
			want := map[Fault]string{FaultFirstResourceVersion: ref[0], FaultVersionOnFirstSendOnly: ""}[f]
			assert.Equal(t, want, faulty[1])
		})
	}
	t.Run(string(FaultNeverReportDeletions), func(t *testing.T) {
		e := start(t, FaultNeverReportDeletions)
		e.set(wire.Endpoint, "a", 1)
		e.set(wire.Endpoint, "b", 1)
		c := e.client(wire.DeltaADS)
		require.NoError(t, c.Subscribe(wire.Endpoint, "a", "b"))
		assert.Equal(t, []string{"a", "b"}, expect(t, c, wire.Endpoint).Names())
		e.del(wire.Endpoint, "a")
		e.set(wire.Endpoint, "b", 2)
		r := expect(t, c, wire.Endpoint)
		assert.Equal(t, []string{"b"}, r.Names())
		assert.Empty(t, r.Removed)
	})
}

// In the name-generating mode every resource is served under a name of the
// server's own, carried inside the resource too, and the fixture says so.
func TestGeneratedNames(t *testing.T) {
	ctx := context.Background()
	fs := fixture.FromServer(New().GenerateNames().FixtureServer())
	c, err := fs.Capabilities(ctx)
	require.NoError(t, err)
	assert.True(t, c.GetGeneratesNames())
	served, err := fs.Set(ctx, "n", wire.Cluster, "c1", wire.BuildAny(wire.Cluster, "c1", 1))
	require.NoError(t, err)
	assert.Equal(t, GeneratedPrefix+"c1", served.Name)
}

// SotW faults on full states and wildcards.
func TestSotWFaults(t *testing.T) {
	t.Run(string(FaultEmptyStateOnDelete), func(t *testing.T) {
		e := start(t, FaultEmptyStateOnDelete)
		e.set(wire.Cluster, "a", 1)
		e.set(wire.Cluster, "b", 1)
		c := e.client(wire.SotWADS)
		require.NoError(t, c.RequestWildcardLegacy(wire.Cluster))
		r := expect(t, c, wire.Cluster)
		assert.Equal(t, []string{"a", "b"}, r.Names())
		require.NoError(t, c.Ack(wire.Cluster, r))
		e.del(wire.Cluster, "b")
		assert.Empty(t, expect(t, c, wire.Cluster).Names(), "a, which remains, is dropped too")
	})
	for _, v := range []wire.Variant{wire.DeltaADS} {
		t.Run(string(FaultDropNamesWithStar)+"/"+v.String(), func(t *testing.T) {
			// keepsA reports whether a change of a is pushed after "*",
			// subscribed together with a, is dropped.
			keepsA := func(fs ...Fault) bool {
				e := start(t, fs...)
				e.set(wire.Cluster, "a", 1)
				e.set(wire.Endpoint, "barrier1", 1)
				e.set(wire.Endpoint, "barrier2", 1)
				c := e.client(v)
				require.NoError(t, c.Subscribe(wire.Cluster, "*", "a"))
				require.NoError(t, c.Ack(wire.Cluster, expect(t, c, wire.Cluster)))
				require.NoError(t, c.Unsubscribe(wire.Cluster, "*"))
				// Barriers: a later request is handled after every earlier one.
				require.NoError(t, c.Subscribe(wire.Endpoint, "barrier1"))
				require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
				e.set(wire.Cluster, "a", 2)
				require.NoError(t, c.Subscribe(wire.Endpoint, "barrier2"))
				expect(t, c, wire.Endpoint)
				r, _ := c.ExpectNoneWithin(0, wire.Cluster)
				return r != nil && r.Has("a")
			}
			assert.True(t, keepsA(), "the reference server keeps a")
			assert.False(t, keepsA(FaultDropNamesWithStar), "a went with the star")
		})
	}
}
