package refserver

import (
	"context"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

// describe renders a response as "CDS:c1,c2" (delta: "CDS:c1,c2 -removed")
// for compact comparisons.
func describe(r *fakeclient.Response) string {
	typ, _ := wire.TypeByURL(r.TypeURL)
	s := typ.Short + ":" + strings.Join(r.Names(), ",")
	if r.Delta != nil {
		s += " -" + strings.Join(r.Removed, ",")
	}
	return s
}

// ack sends a SotW ACK of r with names and r's version and nonce.
func ack(t *testing.T, c *fakeclient.Client, r *fakeclient.Response, names ...string) {
	t.Helper()
	typ, ok := wire.TypeByURL(r.TypeURL)
	require.True(t, ok, "unknown type %q", r.TypeURL)
	req := request(c, typ, r.Nonce, names...)
	req.VersionInfo = r.Version
	send(t, c, req)
}

// barrier sends the legacy wildcard request for typ, a type the stream has
// not requested yet, and describes the first response received where the
// answer to it is due (see first): a later request is handled after every
// earlier one.
func barrier(t *testing.T, c *fakeclient.Client, typ wire.Type) string {
	t.Helper()
	require.NoError(t, c.RequestWildcardLegacy(typ))
	return describe(first(t, c, typ))
}

// pushWindow is how long pushedAround watches for a push that may come
// after its barrier.
const pushWindow = time.Second

// pushedAround describes the response of watched that a store change
// pushed, if one came before the barrier push of typ or within pushWindow
// after it, else the barrier's. Types are pushed independently, so a
// change of a later type does not mark the end of the pushes an earlier
// change caused (seen in clean-clone CI runs): the earlier push is watched
// for after the barrier too.
func pushedAround(t *testing.T, c *fakeclient.Client, barrier, watched wire.Type) string {
	t.Helper()
	b := expect(t, c, barrier)
	if r, err := c.ExpectWithin(watched, pushWindow); err == nil {
		return describe(r)
	}
	return describe(b)
}

// Each scenario runs against the reference server and against the server
// with one fault, and returns what it observed. Barriers never sleep: a later
// request is handled after an earlier one (barrier); a push caused by a
// store change is watched for around a later change's push (pushedAround).
func TestEveryFaultChangesBehaviour(t *testing.T) {
	cases := []struct {
		fault     Fault
		scenario  func(t *testing.T, e *env) string
		reference string
		faulty    string
	}{
		{FaultPartialFullState, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, ""))
			ack(t, c, expect(t, c, wire.Cluster))
			e.set(wire.Cluster, "c1", 2)
			return describe(expect(t, c, wire.Cluster))
		}, "CDS:c1,c2", "CDS:c1"},

		{FaultNeverReportDeletions, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, ""))
			ack(t, c, expect(t, c, wire.Cluster))
			e.set(wire.Endpoint, "e", 1)
			send(t, c, request(c, wire.Endpoint, "", "e"))
			ack(t, c, expect(t, c, wire.Endpoint), "e")
			e.del(wire.Cluster, "c2")
			e.set(wire.Endpoint, "e", 2) // barrier
			return pushedAround(t, c, wire.Endpoint, wire.Cluster)
		}, "CDS:c1", "EDS:e"},

		{FaultStickyWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.client(wire.SotWPerType)
			send(t, c, request(c, wire.Cluster, "", "*"))
			ack(t, c, expect(t, c, wire.Cluster), "c2")
			return describe(expect(t, c, wire.Cluster))
		}, "CDS:c2", "CDS:c1,c2"},

		{FaultSharedAdsNonce, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			e.set(wire.Endpoint, "e", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, "", "c1"))
			cds := expect(t, c, wire.Cluster)
			send(t, c, request(c, wire.Endpoint, "", "e"))
			expect(t, c, wire.Endpoint)
			ack(t, c, cds, "c1", "c2") // current for CDS, not for the stream
			return barrier(t, c, wire.Listener)
		}, "CDS:c1,c2", "LDS:"},

		{FaultResendOnAck, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "e", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "e"))
			ack(t, c, expect(t, c, wire.Endpoint), "e")
			return barrier(t, c, wire.Cluster)
		}, "CDS:", "EDS:e"},

		{FaultForgetMissingSubscriptions, func(t *testing.T, e *env) string {
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "late"))
			send(t, c, request(c, wire.Listener, ""))
			ack(t, c, expect(t, c, wire.Listener))
			e.set(wire.Endpoint, "late", 1)
			e.set(wire.Listener, "l1", 1) // barrier
			return pushedAround(t, c, wire.Listener, wire.Endpoint)
		}, "EDS:late", "LDS:l1"},

		{FaultDeltaDropStaleRequests, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			e.set(wire.Endpoint, "c", 1)
			c := e.client(wire.DeltaPerType)
			// No type_url: the per-type stream names the type.
			require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{Node: c.Node(), ResourceNamesSubscribe: []string{"a"}}))
			r1 := expect(t, c, wire.Endpoint)
			e.set(wire.Endpoint, "a", 2)
			expect(t, c, wire.Endpoint)
			require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{ResponseNonce: r1.Nonce, ResourceNamesSubscribe: []string{"b"}}))
			require.NoError(t, c.SendDelta(wire.Endpoint, &discovery.DeltaDiscoveryRequest{ResourceNamesSubscribe: []string{"c"}})) // barrier
			return describe(expect(t, c, wire.Endpoint))
		}, "EDS:b -", "EDS:c -"},

		{FaultNoResendOnResubscribe, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "foo", 1)
			e.set(wire.Endpoint, "bar", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "foo", "bar"))
			a := expect(t, c, wire.Endpoint)
			ack(t, c, a, "foo")
			ack(t, c, a, "foo", "bar")
			return barrier(t, c, wire.Cluster)
		}, "EDS:bar,foo", "CDS:"},

		{FaultEmptyMeansWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "a"))
			ack(t, c, expect(t, c, wire.Endpoint))
			return barrier(t, c, wire.Cluster)
		}, "CDS:", "EDS:a,b"},

		{FaultUpdatesAfterUnsubscribe, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "a", "b"))
			ack(t, c, expect(t, c, wire.Endpoint), "b")
			send(t, c, request(c, wire.Cluster, "")) // the unsubscription is handled
			ack(t, c, expect(t, c, wire.Cluster))
			e.set(wire.Endpoint, "a", 2)
			e.set(wire.Cluster, "c1", 1) // barrier
			return pushedAround(t, c, wire.Cluster, wire.Endpoint)
		}, "CDS:c1", "EDS:a"},

		{FaultPushUnrequestedTypes, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "e", 1)
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "e"))
			expect(t, c, wire.Endpoint)
			return barrier(t, c, wire.Listener)
		}, "LDS:", "CDS:c1"},

		{FaultStarIsLiteral, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWPerType)
			send(t, c, request(c, wire.Cluster, "", "*"))
			return describe(expect(t, c, wire.Cluster))
		}, "CDS:c1", "CDS:"},

		{FaultNoLegacyWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, ""))
			send(t, c, request(c, wire.Listener, "", "*")) // barrier
			return describe(first(t, c, wire.Listener))
		}, "CDS:c1", "LDS:"},

		{FaultUnsubscribeWildcardMember, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, "", "*", "c1"))
			ack(t, c, expect(t, c, wire.Cluster), "*")
			send(t, c, request(c, wire.Listener, "", "*")) // the ACK is handled
			ack(t, c, expect(t, c, wire.Listener), "*")
			e.set(wire.Cluster, "c1", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return pushedAround(t, c, wire.Listener, wire.Cluster)
		}, "CDS:c1", "LDS:l1"},

		{FaultFirstRequestWins, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Endpoint, "", "a"))
			ack(t, c, expect(t, c, wire.Endpoint), "a", "b")
			return barrier(t, c, wire.Cluster)
		}, "EDS:a,b", "CDS:"},

		{FaultNackResendLoop, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
			require.NoError(t, c.Nack(wire.Endpoint, expect(t, c, wire.Endpoint), "rejected"))
			return barrier(t, c, wire.Cluster)
		}, "CDS: -", "EDS:a -"},

		{FaultResendOnAck, func(t *testing.T, e *env) string { // delta flavour
			e.set(wire.Endpoint, "a", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
			require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
			return barrier(t, c, wire.Cluster)
		}, "CDS: -", "EDS:a -"},

		{FaultUnsubscribeWildcardMember, func(t *testing.T, e *env) string { // delta flavour, UNSUB-6
			e.set(wire.Cluster, "c1", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Cluster, "*", "c1"))
			expect(t, c, wire.Cluster)
			require.NoError(t, c.Unsubscribe(wire.Cluster, "c1"))
			return barrier(t, c, wire.Listener)
		}, "CDS:c1 -", "LDS: -"},

		{FaultStickyWildcard, func(t *testing.T, e *env) string { // delta flavour, WILD-4
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Cluster, "*", "c1"))
			expect(t, c, wire.Cluster)
			require.NoError(t, c.Unsubscribe(wire.Cluster, "*"))
			require.NoError(t, c.RequestWildcardLegacy(wire.Listener)) // the unsubscription is handled
			expect(t, c, wire.Listener)
			e.set(wire.Cluster, "c2", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return pushedAround(t, c, wire.Listener, wire.Cluster)
		}, "LDS:l1 -", "CDS:c2 -"},

		{FaultBumpAllTypes, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Endpoint, "e", 1)
			c := e.client(wire.SotWADS)
			send(t, c, request(c, wire.Cluster, "", "c1"))
			ack(t, c, expect(t, c, wire.Cluster), "c1")
			send(t, c, request(c, wire.Endpoint, "", "e"))
			ack(t, c, expect(t, c, wire.Endpoint), "e")
			e.set(wire.Endpoint, "e", 2)
			return describe(first(t, c, wire.Endpoint)) // CDS comes first in the push order
		}, "EDS:e", "CDS:c1"},

		{FaultBroadcastUpdates, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "foo", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "foo"))
			expect(t, c, wire.Endpoint)
			require.NoError(t, c.RequestWildcardLegacy(wire.Listener))
			expect(t, c, wire.Listener)
			e.set(wire.Endpoint, "bar", 1)
			e.set(wire.Listener, "l1", 1) // barrier
			return pushedAround(t, c, wire.Listener, wire.Endpoint)
		}, "LDS:l1 -", "EDS:bar -"},

		{FaultEmptyDeltaUnsubscribesAll, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			c := e.client(wire.DeltaADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
			require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
			require.NoError(t, c.RequestWildcardLegacy(wire.Listener)) // the ACK is handled
			expect(t, c, wire.Listener)
			e.set(wire.Endpoint, "a", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return pushedAround(t, c, wire.Listener, wire.Endpoint)
		}, "EDS:a -", "LDS:l1 -"},

		{FaultInitialVersionsSkipAll, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 2)
			c := e.client(wire.DeltaADS)
			req := c.DeltaRequest(wire.Endpoint)
			req.ResourceNamesSubscribe = []string{"a"}
			req.InitialResourceVersions = map[string]string{"a": contentVersion(wire.BuildAny(wire.Endpoint, "a", 1))}
			require.NoError(t, c.SendDelta(wire.Endpoint, req))
			return barrier(t, c, wire.Listener)
		}, "EDS:a -", "LDS: -"},

		{FaultSkipCurrentVersionOnReconnect, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.client(wire.SotWADS)
			r := request(c, wire.Endpoint, "", "a", "b")
			r.VersionInfo = "v2" // the current version, as after a reconnect
			send(t, c, r)
			return barrier(t, c, wire.Listener)
		}, "EDS:a,b", "LDS:"},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault), func(t *testing.T) {
			assert.Equal(t, tc.reference, tc.scenario(t, start(t)), "reference server")
			assert.Equal(t, tc.faulty, tc.scenario(t, start(t, tc.fault)), "with the fault")
		})
	}
}

// FaultFixtureHangs breaks the fixture, not xDS: GetCapabilities answers,
// and every call that changes state answers nothing, returning only when
// its caller's context ends, with the error of a call that ran out of
// time; the reference answers each of them whatever the context. How the
// harness stops on such a fixture is proven by the CLI's tests
// (cmd/xdsconform: TestServerFixtureHangs, TestLoadFixtureHangs) and
// targets' TestFixtureHangLimit.
func TestFaultFixtureHangs(t *testing.T) {
	withAndWithout(t, FaultFixtureHangs, func(t *testing.T, e *env, faulty bool) {
		caps, err := e.fx.Capabilities(t.Context())
		require.NoError(t, err, "GetCapabilities answers either way")
		assert.Equal(t, "v1", caps.GetApiVersion())

		// A deadline already past: the reference answers anyway, a hung
		// fixture returns the deadline's error, since it answers nothing
		// before its caller gives up.
		past, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
		defer cancel()
		res := wire.BuildAny(wire.Cluster, "c1", 1)
		calls := []struct {
			name string
			call func() error
		}{
			{"SetResource", func() error { _, err := e.fx.Set(past, node, wire.Cluster, "c1", res); return err }},
			{"DeleteResource", func() error { return e.fx.Delete(past, node, wire.Cluster, "c1") }},
			{"ApplyChanges", func() error {
				_, err := e.fx.Apply(past, node, []fixture.Change{fixture.SetChange(fixture.SetRequest{Type: wire.Cluster, Name: "c1", Resource: res})})
				return err
			}},
			{"Reset", func() error { return e.fx.Reset(past, node) }},
		}
		for _, c := range calls {
			err := c.call()
			if faulty {
				assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%s: %v", c.name, err)
			} else {
				assert.NoError(t, err, c.name)
			}
		}
	})
}
