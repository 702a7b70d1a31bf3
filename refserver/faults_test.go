package refserver

import (
	"strings"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"

	"github.com/xdsconform/xdsconform/wire"
)

// describe renders a response as "CDS:c1,c2" for compact comparisons.
func describe(t *testing.T, r *discovery.DiscoveryResponse) string {
	typ, _ := wire.TypeByURL(r.GetTypeUrl())
	return typ.Short + ":" + strings.Join(names(t, r), ",")
}

func describeDelta(r *discovery.DeltaDiscoveryResponse) string {
	typ, _ := wire.TypeByURL(r.GetTypeUrl())
	return typ.Short + ":" + strings.Join(deltaNames(r), ",") + " -" + strings.Join(r.GetRemovedResources(), ",")
}

// ack re-sends the names of the request with the response's nonce.
func (c *sotwClient) ack(r *discovery.DiscoveryResponse, names ...string) {
	c.t.Helper()
	c.send(&discovery.DiscoveryRequest{TypeUrl: r.GetTypeUrl(), ResponseNonce: r.GetNonce(), VersionInfo: r.GetVersionInfo(), ResourceNames: names})
}

// Each scenario runs against the reference server and against the server
// with one fault, and returns what it observed. Barriers never sleep: a later
// request is handled after an earlier one, and store changes are pushed type
// by type in the order the stream first requested the types, so a change of
// a later type marks the end of the pushes caused by earlier changes.
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
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, ""))
			c.ack(c.recv())
			e.set(wire.Cluster, "c1", 2)
			return describe(t, c.recv())
		}, "CDS:c1,c2", "CDS:c1"},

		{FaultNeverReportDeletions, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, ""))
			c.ack(c.recv())
			e.set(wire.Endpoint, "e", 1)
			c.send(req(wire.Endpoint, false, "", "e"))
			c.ack(c.recv(), "e")
			e.del(wire.Cluster, "c2")
			e.set(wire.Endpoint, "e", 2) // barrier: EDS is pushed after CDS
			return describe(t, c.recv())
		}, "CDS:c1", "EDS:e"},

		{FaultStickyWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.sotw(wire.SotWPerType, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "*"))
			c.ack(c.recv(), "c2")
			return describe(t, c.recv())
		}, "CDS:c2", "CDS:c1,c2"},

		{FaultSharedAdsNonce, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			e.set(wire.Endpoint, "e", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "c1"))
			cds := c.recv()
			c.send(req(wire.Endpoint, false, "", "e"))
			c.recv()
			c.ack(cds, "c1", "c2")                // current for CDS, not for the stream
			c.send(req(wire.Listener, false, "")) // barrier
			return describe(t, c.recv())
		}, "CDS:c1,c2", "LDS:"},

		{FaultResendOnAck, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "e", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "e"))
			c.ack(c.recv(), "e")
			c.send(req(wire.Cluster, false, "")) // barrier
			return describe(t, c.recv())
		}, "CDS:", "EDS:e"},

		{FaultForgetMissingSubscriptions, func(t *testing.T, e *env) string {
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "late"))
			c.send(req(wire.Cluster, false, ""))
			c.ack(c.recv())
			e.set(wire.Endpoint, "late", 1)
			e.set(wire.Cluster, "c1", 1) // barrier
			return describe(t, c.recv())
		}, "EDS:late", "CDS:c1"},

		{FaultDeltaDropStaleRequests, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			e.set(wire.Endpoint, "c", 1)
			c := e.delta(wire.DeltaPerType, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, ResourceNamesSubscribe: []string{"a"}})
			r1 := c.recv()
			e.set(wire.Endpoint, "a", 2)
			c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{ResponseNonce: r1.GetNonce(), ResourceNamesSubscribe: []string{"b"}})
			c.send(&discovery.DeltaDiscoveryRequest{ResourceNamesSubscribe: []string{"c"}}) // barrier
			return describeDelta(c.recv())
		}, "EDS:b -", "EDS:c -"},

		{FaultNoResendOnResubscribe, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "foo", 1)
			e.set(wire.Endpoint, "bar", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "foo", "bar"))
			a := c.recv()
			c.ack(a, "foo")
			c.ack(a, "foo", "bar")
			c.send(req(wire.Cluster, false, "")) // barrier
			return describe(t, c.recv())
		}, "EDS:bar,foo", "CDS:"},

		{FaultEmptyMeansWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "a"))
			c.ack(c.recv())
			c.send(req(wire.Cluster, false, "")) // barrier
			return describe(t, c.recv())
		}, "CDS:", "EDS:a,b"},

		{FaultUpdatesAfterUnsubscribe, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "a", "b"))
			c.ack(c.recv(), "b")
			c.send(req(wire.Cluster, false, "")) // the unsubscription is handled
			c.ack(c.recv())
			e.set(wire.Endpoint, "a", 2)
			e.set(wire.Cluster, "c1", 1) // barrier
			return describe(t, c.recv())
		}, "CDS:c1", "EDS:a"},

		{FaultPushUnrequestedTypes, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "e", 1)
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "e"))
			c.recv()
			c.send(req(wire.Listener, false, "")) // barrier
			return describe(t, c.recv())
		}, "LDS:", "CDS:c1"},

		{FaultStarIsLiteral, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWPerType, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "*"))
			return describe(t, c.recv())
		}, "CDS:c1", "CDS:"},

		{FaultNoLegacyWildcard, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, ""))
			c.send(req(wire.Listener, false, "", "*")) // barrier
			return describe(t, c.recv())
		}, "CDS:c1", "LDS:"},

		{FaultUnsubscribeWildcardMember, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "*", "c1"))
			c.ack(c.recv(), "*")
			c.send(req(wire.Listener, false, "", "*")) // the ACK is handled
			c.ack(c.recv(), "*")
			e.set(wire.Cluster, "c1", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return describe(t, c.recv())
		}, "CDS:c1", "LDS:l1"},

		{FaultFirstRequestWins, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			c.send(req(wire.Endpoint, true, "", "a"))
			c.ack(c.recv(), "a", "b")
			c.send(req(wire.Cluster, false, "")) // barrier
			return describe(t, c.recv())
		}, "EDS:a,b", "CDS:"},

		{FaultNackResendLoop, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			c := e.delta(wire.DeltaADS, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"}})
			r := c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: r.GetNonce(), ErrorDetail: nack(&discovery.DiscoveryRequest{}).ErrorDetail})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL}) // barrier
			return describeDelta(c.recv())
		}, "CDS: -", "EDS:a -"},

		{FaultResendOnAck, func(t *testing.T, e *env) string { // delta flavour
			e.set(wire.Endpoint, "a", 1)
			c := e.delta(wire.DeltaADS, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"}})
			r := c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: r.GetNonce()})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL}) // barrier
			return describeDelta(c.recv())
		}, "CDS: -", "EDS:a -"},

		{FaultUnsubscribeWildcardMember, func(t *testing.T, e *env) string { // delta flavour, UNSUB-6
			e.set(wire.Cluster, "c1", 1)
			c := e.delta(wire.DeltaADS, wire.Cluster)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Cluster.URL, ResourceNamesSubscribe: []string{"*", "c1"}})
			c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNamesUnsubscribe: []string{"c1"}})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL}) // barrier
			return describeDelta(c.recv())
		}, "CDS:c1 -", "LDS: -"},

		{FaultStickyWildcard, func(t *testing.T, e *env) string { // delta flavour, WILD-4
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Cluster, "c2", 1)
			c := e.delta(wire.DeltaADS, wire.Cluster)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Cluster.URL, ResourceNamesSubscribe: []string{"*", "c1"}})
			c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNamesUnsubscribe: []string{"*"}})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL}) // the unsubscription is handled
			c.recv()
			e.set(wire.Cluster, "c2", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return describeDelta(c.recv())
		}, "LDS:l1 -", "CDS:c2 -"},

		{FaultBumpAllTypes, func(t *testing.T, e *env) string {
			e.set(wire.Cluster, "c1", 1)
			e.set(wire.Endpoint, "e", 1)
			c := e.sotw(wire.SotWADS, wire.Cluster)
			c.send(req(wire.Cluster, true, "", "c1"))
			c.ack(c.recv(), "c1")
			c.send(req(wire.Endpoint, false, "", "e"))
			c.ack(c.recv(), "e")
			e.set(wire.Endpoint, "e", 2)
			return describe(t, c.recv()) // CDS comes first in the push order
		}, "EDS:e", "CDS:c1"},

		{FaultBroadcastUpdates, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "foo", 1)
			c := e.delta(wire.DeltaADS, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"foo"}})
			c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL})
			c.recv()
			e.set(wire.Endpoint, "bar", 1)
			e.set(wire.Listener, "l1", 1) // barrier
			return describeDelta(c.recv())
		}, "LDS:l1 -", "EDS:bar -"},

		{FaultEmptyDeltaUnsubscribesAll, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			c := e.delta(wire.DeltaADS, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"}})
			r := c.recv()
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: r.GetNonce()})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL}) // the ACK is handled
			c.recv()
			e.set(wire.Endpoint, "a", 2)
			e.set(wire.Listener, "l1", 1) // barrier
			return describeDelta(c.recv())
		}, "EDS:a -", "LDS:l1 -"},

		{FaultInitialVersionsSkipAll, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 2)
			c := e.delta(wire.DeltaADS, wire.Endpoint)
			c.send(&discovery.DeltaDiscoveryRequest{Node: &core.Node{Id: node}, TypeUrl: wire.Endpoint.URL, ResourceNamesSubscribe: []string{"a"},
				InitialResourceVersions: map[string]string{"a": contentVersion(wire.BuildAny(wire.Endpoint, "a", 1))}})
			c.send(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Listener.URL}) // barrier
			return describeDelta(c.recv())
		}, "EDS:a -", "LDS: -"},

		{FaultSkipCurrentVersionOnReconnect, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.sotw(wire.SotWADS, wire.Endpoint)
			r := req(wire.Endpoint, true, "", "a", "b")
			r.VersionInfo = "v2" // the current version, as after a reconnect
			c.send(r)
			c.send(req(wire.Listener, false, "")) // barrier
			return describe(t, c.recv())
		}, "EDS:a,b", "LDS:"},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault), func(t *testing.T) {
			assert.Equal(t, tc.reference, tc.scenario(t, start(t)), "reference server")
			assert.Equal(t, tc.faulty, tc.scenario(t, start(t, tc.fault)), "with the fault")
		})
	}
}
