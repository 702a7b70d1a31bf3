package refclient

import (
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/wire"
)

// dropSecond drives the chain to a route using C and C2, both clusters
// accepted at version 1 (nonce c1), then points the route back at C alone
// (r2) and reads the CDS request that drops C2.
func dropSecond(h *harness) {
	h.t.Helper()
	acceptListener(h)
	h.expectSubscribe(wire.Route, "R")
	h.send(wire.Route, "1", "r1", wire.ClientRoutes("R", 1, "C", "C2"))
	h.expectAck(wire.Route, "1", "r1", "R")
	h.expectSubscribe(wire.Cluster, "C", "C2")
	h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1), wire.ClientCluster("C2", 1))
	h.expectAck(wire.Cluster, "1", "c1", "C", "C2")
	h.send(wire.Route, "2", "r2", wire.ClientRoute("R", "C", 2))
	h.expectAck(wire.Route, "2", "r2", "R")
	h.next(wire.Cluster) // C2 dropped
}

// addThird points the route at C and C3 (r3) and returns the names of the
// next CDS request: a request the client sends in any case, which shows
// what it asked for before it.
func addThird(h *harness) string {
	h.t.Helper()
	h.send(wire.Route, "3", "r3", wire.ClientRoutes("R", 3, "C", "C3"))
	h.expectAck(wire.Route, "3", "r3", "R")
	return fmt.Sprint(h.next(wire.Cluster).Names)
}

func init() {
	extraFaultCases = append(extraFaultCases, []faultCase{
		{FaultApplyDropped, wire.SotWADS, 0, func(h *harness) string {
			dropSecond(h)
			h.send(wire.Cluster, "2", "c2", wire.ClientCluster("C", 1), wire.ClientCluster("C2", 2))
			h.expectAck(wire.Cluster, "2", "c2", "C")
			return csdsStatus(h, wire.Cluster, "C2")
		}, "absent", "ACKED"},

		{FaultRemovalRewatchesDropped, wire.DeltaADS, 0, func(h *harness) string {
			dropSecond(h)
			h.sendDelta(wire.Cluster, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "c2", RemovedResources: []string{"C2"}})
			h.expectAck(wire.Cluster, "", "c2")
			return addThird(h)
		}, "[C3]", "[C2]"},

		{FaultRecreationRewatchesDropped, wire.SotWADS, 0, func(h *harness) string {
			dropSecond(h)
			h.send(wire.Cluster, "2", "c2", wire.ClientCluster("C", 1))
			h.expectAck(wire.Cluster, "2", "c2", "C")
			h.send(wire.Cluster, "3", "c3", wire.ClientCluster("C", 1), wire.ClientCluster("C2", 3))
			h.expectAck(wire.Cluster, "3", "c3", "C")
			return addThird(h)
		}, "[C C3]", "[C C2]"},

		{FaultNackRestatesRepliedNames, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
			h.expectAck(wire.Cluster, "1", "c1", "C")
			h.send(wire.Route, "2", "r2", wire.ClientRoutes("R", 2, "C", "C2"))
			h.expectAck(wire.Route, "2", "r2", "R")
			h.expectSubscribe(wire.Cluster, "C", "C2")
			h.send(wire.Cluster, "2", "c2", wire.InvalidCluster("C", 2))
			return fmt.Sprint(h.expectNack(wire.Cluster, "c2").Names)
		}, "[C C2]", "[C]"},

		{FaultVersionAfterNackIsRejected, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
			h.expectAck(wire.Cluster, "1", "c1", "C")
			h.send(wire.Cluster, "2", "c2", wire.InvalidCluster("C", 2))
			nack := h.expectNack(wire.Cluster, "c2")
			h.send(wire.Route, "2", "r2", wire.ClientRoutes("R", 2, "C", "C2"))
			h.expectAck(wire.Route, "2", "r2", "R")
			return nack.Version + " then " + h.next(wire.Cluster).Version
		}, "1 then 1", "1 then 2"},

		{FaultNextRequestNamesAnsweredOnly, wire.SotWADS, 0, func(h *harness) string {
			acceptRouteOfTwo(h)
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[C C2]", "[C]"},

		{FaultReconnectForgetsPending, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h) // C asked for, never sent
			h.closeStreams(nil)
			h.expectSubscribe(wire.Listener, "L")
			h.expectSubscribe(wire.Route, "R")
			h.send(wire.Route, "2", "r2", wire.ClientRoutes("R", 2, "C", "C2"))
			h.expectAck(wire.Route, "2", "r2", "R")
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[C]", "[C C2]"},

		{FaultIrvListsPending, wire.DeltaADS, 0, func(h *harness) string {
			acceptRoute(h) // C asked for, never sent
			h.closeStreams(nil)
			return fmt.Sprint(h.next(wire.Cluster).IRV)
		}, "map[]", "map[C:]"},
	}...)
}
