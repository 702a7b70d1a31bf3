package refclient

import (
	"fmt"
	"google.golang.org/protobuf/types/known/anypb"
	"slices"
	"strings"
	"testing"
	"time"

	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/wire"
)

func TestParseFault(t *testing.T) {
	seen := map[Fault]bool{}
	for _, f := range AllFaults {
		require.False(t, seen[f], "%s listed twice", f)
		seen[f] = true
		got, err := ParseFault(string(f))
		require.NoError(t, err)
		assert.Equal(t, f, got)
		got, err = ParseFault(strings.ToUpper(string(f)))
		require.NoError(t, err)
		assert.Equal(t, f, got)
		assert.NotEqual(t, "unknown fault", f.Description(), f)
	}
	assert.Len(t, faultDescriptions, len(AllFaults))
	_, err := ParseFault("no-such-fault")
	assert.Error(t, err)
	assert.Equal(t, "unknown fault", Fault("no-such-fault").Description())
}

// Scenario building blocks. Names: listener L → route R → cluster C.

// acceptListener subscribes, delivers L at version 1 (nonce l1) and
// returns its ACK.
func acceptListener(h *harness) treq {
	h.expectSubscribe(wire.Listener, "L")
	h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
	return h.next(wire.Listener)
}

// acceptRoute continues acceptListener up to the CDS subscription to C.
func acceptRoute(h *harness) {
	acceptListener(h)
	h.expectSubscribe(wire.Route, "R")
	h.send(wire.Route, "1", "r1", wire.ClientRoute("R", "C", 1))
	h.expectAck(wire.Route, "1", "r1", "R")
	h.expectSubscribe(wire.Cluster, "C")
}

// acceptRouteOfTwo is acceptRoute with a route naming two clusters, C and
// C2, up to the response that carries C alone.
func acceptRouteOfTwo(h *harness) {
	acceptListener(h)
	h.expectSubscribe(wire.Route, "R")
	h.send(wire.Route, "1", "r1", wire.ClientRoutes("R", 1, "C", "C2"))
	h.expectAck(wire.Route, "1", "r1", "R")
	h.expectSubscribe(wire.Cluster, "C", "C2")
	h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
}

func nacked(r treq) string { return fmt.Sprint(r.Err != nil) }

// omit sends a SotW response of typ carrying nothing, checks it is ACKed
// and returns the CSDS status of name.
func omit(h *harness, typ wire.Type, version, nonce, name string) string {
	h.send(typ, version, nonce)
	h.expectAck(typ, version, nonce, name)
	return csdsStatus(h, typ, name)
}

// moveRoute points L at R2 (l2), checks the ACK and returns the RDS
// request that follows: a subscription change.
func moveRoute(h *harness) treq {
	h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R2", 2))
	h.expectAck(wire.Listener, "2", "l2", "L")
	return h.next(wire.Route)
}

// onlyOther follows acceptListener with a listener response carrying only
// another listener, checks the ACK and returns the CSDS status of L.
func onlyOther(h *harness) string {
	acceptListener(h)
	h.send(wire.Listener, "2", "l2", wire.ClientListener("other", "R", 2))
	h.expectAck(wire.Listener, "2", "l2", "L")
	return csdsStatus(h, wire.Listener, "L")
}

// sendTTL sends L at version v with ttl (none when 0), in a SotW Resource
// wrapper or a delta Resource; without body it is a heartbeat of L at v.
func sendTTL(h *harness, v, nonce string, ttl time.Duration, body bool) {
	res := &discovery.Resource{Name: "L", Version: v}
	if body {
		res.Resource = mustAny(h.t, wire.ClientListener("L", "R", 1))
	}
	if ttl > 0 {
		res.Ttl = durationpb.New(ttl)
	}
	if h.v.IsDelta() {
		h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: nonce, SystemVersionInfo: v, Resources: []*discovery.Resource{res}})
		return
	}
	h.sendAnys(wire.Listener, v, nonce, mustAny(h.t, res))
}

// lapses reports whether L is reported DOES_NOT_EXIST within d.
func lapses(h *harness, d time.Duration) string {
	_, ok := h.waitCSDS(wire.Listener, "L", d, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
		return g.GetClientStatus().String() == "DOES_NOT_EXIST"
	})
	return fmt.Sprint(ok)
}

// Scenarios of the faults tried in two variants.
var (
	// echoLatestNonce: the request answering l2 echoes l2.
	echoLatestNonce = func(h *harness) string {
		acceptListener(h)
		h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
		return h.next(wire.Listener).Nonce
	}
	// routeNonce: the first route request echoes no listener nonce.
	routeNonce = func(h *harness) string {
		acceptListener(h)
		return h.next(wire.Route).Nonce
	}
)

var emptyRoute = &route.RouteConfiguration{Name: "R"}

// TestEveryFaultChangesBehaviour runs each scenario against the conformant
// client and against the client with one fault, and compares what the
// scripted server observed. Every fault has a case.
func TestEveryFaultChangesBehaviour(t *testing.T) {
	cases := []struct {
		fault     Fault
		variant   wire.Variant
		dne       time.Duration
		scenario  func(h *harness) string
		reference string
		faulty    string
	}{
		{FaultWaitsForServer, wire.SotWADS, 0, func(h *harness) string {
			_, spoke := h.tryNext(wire.Listener, wire.Listener.URL, 300*time.Millisecond)
			if !spoke {
				h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
				h.expectSubscribe(wire.Listener, "L") // released by the response
			}
			return fmt.Sprint(spoke)
		}, "true", "false"},

		{FaultNoNode, wire.SotWADS, 0, func(h *harness) string {
			return fmt.Sprint(h.next(wire.Listener).Node != nil)
		}, "true", "false"},

		{FaultNodeDrifts, wire.DeltaADS, 0, func(h *harness) string {
			return fmt.Sprint(acceptListener(h).Node != nil)
		}, "false", "true"},

		{FaultNoTypeURL, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			return h.nextAny(wire.Listener).TypeURL
		}, wire.Listener.URL, ""},

		{FaultAckWrongVersion, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
			return h.next(wire.Listener).Version
		}, "2", "1"},

		{FaultSkipAcks, wire.SotWPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
			h.send(wire.Listener, "3", "l3", wire.ClientListener("L", "R", 3))
			return h.next(wire.Listener).Nonce
		}, "l2", "l3"},

		{FaultNackWithoutErrorDetail, wire.DeltaPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			return nacked(h.next(wire.Listener))
		}, "true", "false"},

		{FaultNackRejectedVersion, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			return h.next(wire.Listener).Version
		}, "1", "2"},

		{FaultApplyRejected, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			h.expectNack(wire.Listener, "l2")
			return h.resource(wire.Listener, "L").GetVersionInfo()
		}, "1", "2"},

		{FaultAckDuplicates, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1), wire.ClientListener("L", "R2", 2))
			return nacked(h.next(wire.Listener))
		}, "true", "false"},

		{FaultCrashOnEmptyName, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("", "R", 1))
			if r, ok := h.nextOrDone(wire.Listener); ok {
				return "nack=" + nacked(r)
			}
			return fmt.Sprintf("stopped, err=%v", h.c.Err() != nil)
		}, "nack=true", "stopped, err=true"},

		{FaultCrashOnUnusableResponse, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.sendAnys(wire.Listener, "1", "l1", &anypb.Any{TypeUrl: wire.Listener.URL, Value: []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f}})
			if r, ok := h.nextOrDone(wire.Listener); ok {
				return "nack=" + nacked(r)
			}
			return fmt.Sprintf("stopped, err=%v", h.c.Err() != nil)
		}, "nack=true", "stopped, err=true"},

		{FaultIgnoreAnyType, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.sendAnys(wire.Listener, "1", "l1", mustAny(h.t, wire.ClientListener("L", "R", 1)), mustAny(h.t, wire.ClientCluster("C", 1)))
			return nacked(h.next(wire.Listener))
		}, "true", "false"},

		{FaultEchoOldNonce, wire.SotWADS, 0, echoLatestNonce, "l2", "l1"},
		{FaultStreamWideNonce, wire.SotWADS, 0, routeNonce, "", "l1"},
		{FaultStreamWideNonce, wire.DeltaADS, 0, routeNonce, "", "l1"},
		{FaultEchoOldNonce, wire.DeltaPerType, 0, echoLatestNonce, "l2", "l1"},

		{FaultOmissionDeletesAllTypes, wire.SotWPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.expectSubscribe(wire.Route, "R")
			return omit(h, wire.Route, "1", "r1", "R") // DNE-2: absence is no proof
		}, "REQUESTED", "DOES_NOT_EXIST"},

		{FaultAckEmptyNonce, wire.SotWADS, 0, func(h *harness) string {
			return acceptListener(h).Nonce
		}, "l1", ""},

		{FaultReuseNonceAfterReconnect, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			return h.next(wire.Listener).Nonce
		}, "", "l1"},

		{FaultForgetNonceOnUnsubscribe, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
			h.expectAck(wire.Cluster, "1", "c1", "C")
			h.send(wire.Route, "2", "r2", emptyRoute)
			h.expectAck(wire.Route, "2", "r2", "R")
			h.expectSubscribe(wire.Cluster) // the last cluster is dropped
			h.send(wire.Route, "3", "r3", wire.ClientRoute("R", "C", 3))
			h.expectAck(wire.Route, "3", "r3", "R")
			return h.expectSubscribe(wire.Cluster, "C").Nonce
		}, "c1", ""},

		{FaultIgnoreLdsCdsOmission, wire.SotWPerType, 0, func(h *harness) string {
			acceptListener(h)
			return omit(h, wire.Listener, "2", "l2", "L")
		}, "DOES_NOT_EXIST", "ACKED"},

		{FaultOmissionDeletesAllTypes, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			return omit(h, wire.Route, "2", "r2", "R")
		}, "ACKED", "DOES_NOT_EXIST"},

		{FaultIgnoreRemoved, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "l2", RemovedResources: []string{"L"}})
			h.expectAck(wire.Listener, "", "l2")
			return csdsStatus(h, wire.Listener, "L")
		}, "DOES_NOT_EXIST", "ACKED"},

		{FaultNackUnknownRemoval, wire.DeltaPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "l2", RemovedResources: []string{"ghost"}})
			return nacked(h.next(wire.Listener))
		}, "false", "true"},

		{FaultNoDneTimer, wire.SotWADS, 100 * time.Millisecond, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			_, ok := h.waitCSDS(wire.Listener, "L", time.Second, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus().String() == "DOES_NOT_EXIST"
			})
			return fmt.Sprint(ok)
		}, "true", "false"},

		{FaultIgnoreAfterDne, wire.DeltaADS, 100 * time.Millisecond, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			_, ok := h.waitCSDS(wire.Listener, "L", wait, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus().String() == "DOES_NOT_EXIST"
			})
			require.True(h.t, ok)
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			return csdsStatus(h, wire.Listener, "L")
		}, "ACKED", "DOES_NOT_EXIST"},

		{FaultForgetSubscriptionsOnReconnect, wire.SotWADS, 0, func(h *harness) string {
			h.chain()
			h.closeStreams(nil)
			var types []string
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "5", "l5", wire.ClientListener("L", "R", 5))
			for r := h.nextAny(wire.Listener); r.Nonce != "l5"; r = h.nextAny(wire.Listener) {
				typ, _ := wire.TypeByURL(r.TypeURL)
				types = append(types, typ.Short)
			}
			return strings.Join(types, ",")
		}, "RDS,CDS,EDS", ""},

		{FaultReconnectEmptyVersion, wire.SotWPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			return h.next(wire.Listener).Version
		}, "1", ""},

		{FaultEmptyLdsOnReconnect, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			return fmt.Sprint(h.next(wire.Listener).Names)
		}, "[L]", "[]"},

		{FaultForgetInitialResourceVersions, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			return fmt.Sprint(h.next(wire.Listener).IRV)
		}, "map[L:1]", "map[]"},

		{FaultIrvOnEveryRequest, wire.DeltaADS, 0, func(h *harness) string {
			return fmt.Sprint(acceptListener(h).IRV)
		}, "map[]", "map[L:1]"},

		{FaultDropCacheOnDisconnect, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			h.next(wire.Listener)
			return csdsStatus(h, wire.Listener, "L")
		}, "ACKED", "REQUESTED"},

		{FaultSilentLastUnsubscribe, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Route, "2", "r2", emptyRoute)
			h.expectAck(wire.Route, "2", "r2", "R")
			h.send(wire.Route, "3", "r3", wire.ClientRoute("R", "C", 3))
			h.expectAck(wire.Route, "3", "r3", "R")
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[]", "[C]"},

		{FaultNeverUnsubscribe, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Route, "2", "r2", wire.ClientRoute("R", "C2", 2))
			h.expectAck(wire.Route, "2", "r2", "R")
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[C2]", "[C C2]"},

		{FaultNackUnrequested, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1), wire.ClientListener("other", "R", 1))
			return nacked(h.next(wire.Listener))
		}, "false", "true"},

		{FaultIgnoreUpdates, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
			h.expectAck(wire.Listener, "2", "l2", "L")
			return h.resource(wire.Listener, "L").GetVersionInfo()
		}, "2", "1"},

		{FaultReconnectOnSilence, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			return fmt.Sprint(h.newStreamWithin(wire.Listener, silenceTimeout+time.Second))
		}, "false", "true"},

		{FaultNackDecreasingSystemVersion, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "2", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "", "l1")
			h.send(wire.Listener, "1", "l2", wire.ClientListener("L", "R", 2))
			return nacked(h.next(wire.Listener))
		}, "false", "true"},

		{FaultDeltaAckWithoutNonce, wire.DeltaPerType, 0, func(h *harness) string {
			return acceptListener(h).Nonce
		}, "l1", ""},

		{FaultNoErrorState, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			h.expectNack(wire.Listener, "l2")
			g := h.resource(wire.Listener, "L")
			return fmt.Sprintf("%s error_state=%v", g.GetClientStatus(), g.GetErrorState() != nil)
		}, "NACKED error_state=true", "ACKED error_state=false"},

		{FaultWrongListenerName, wire.SotWPerType, 0, func(h *harness) string {
			return fmt.Sprint(h.next(wire.Listener).Names)
		}, "[L]", "[L-wrong]"},

		{FaultOnlyNewNames, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Route, "2", "r2", wire.ClientRoutes("R", 2, "C", "C2"))
			h.expectAck(wire.Route, "2", "r2", "R")
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[C C2]", "[C2]"},

		{FaultNoUnwrap, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			w := mustAny(h.t, &discovery.Resource{Name: "L", Version: "2", Resource: mustAny(h.t, wire.ClientListener("L", "R", 2))})
			h.sendAnys(wire.Listener, "2", "l2", w)
			return nacked(h.next(wire.Listener))
		}, "false", "true"},

		{FaultHeartbeatDeletes, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.sendAnys(wire.Listener, "2", "l2", mustAny(h.t, &discovery.Resource{Name: "L", Version: "1"}))
			h.expectAck(wire.Listener, "2", "l2", "L")
			return csdsStatus(h, wire.Listener, "L")
		}, "ACKED", "DOES_NOT_EXIST"},

		{FaultAckEmptyNames, wire.SotWADS, 0, func(h *harness) string {
			return fmt.Sprint(acceptListener(h).Names)
		}, "[L]", "[]"},

		{FaultEmptyErrorState, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			h.expectNack(wire.Listener, "l2")
			return fmt.Sprint(h.resource(wire.Listener, "L").GetErrorState().GetDetails() != "")
		}, "true", "false"},

		{FaultApplyUnrequested, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1), wire.ClientListener("other", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			return fmt.Sprint(h.resource(wire.Listener, "other") != nil)
		}, "false", "true"},

		{FaultEarlyDNE, wire.SotWADS, 5 * time.Second, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			// Well before the 5 s timer: only the early one has fired.
			_, fired := h.waitCSDS(wire.Listener, "L", time.Second, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus().String() == "DOES_NOT_EXIST"
			})
			return fmt.Sprint(fired)
		}, "false", "true"},

		{FaultNodeWithoutCluster, wire.SotWADS, 0, func(h *harness) string {
			return h.next(wire.Listener).Node.GetCluster()
		}, "cluster-1", ""},

		{FaultWrongNodeID, wire.SotWADS, 0, func(h *harness) string {
			return h.next(wire.Listener).Node.GetId()
		}, "node-1", "node-1-not-mine"},

		{FaultLastUnsubscribeSaysNothing, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.send(wire.Route, "2", "r2", emptyRoute)
			h.expectAck(wire.Route, "2", "r2", "R")
			return fmt.Sprint(h.next(wire.Cluster).Names)
		}, "[]", "[C]"},
		{FaultLastUnsubscribeSaysNothing, wire.DeltaADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.sendDelta(wire.Route, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Route.URL, Nonce: "r2",
				Resources: []*discovery.Resource{{Name: "R", Version: "2", Resource: mustAny(h.t, emptyRoute)}}})
			h.expectAck(wire.Route, "", "r2")
			return fmt.Sprint(h.next(wire.Cluster).Unsub)
		}, "[C]", "[]"},

		{FaultStreamWideVersion, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "lds-1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "lds-1", "l1", "L")
			h.expectSubscribe(wire.Route, "R")
			h.send(wire.Route, "rds-1", "r1", wire.ClientRoute("R", "C", 1))
			h.expectAck(wire.Route, "rds-1", "r1", "R")
			return h.expectSubscribe(wire.Cluster, "C").Version // nothing of CDS accepted yet
		}, "", "rds-1"},

		{FaultStatusShowsFirstConfig, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
			h.expectAck(wire.Listener, "2", "l2", "L")
			m, err := h.resource(wire.Listener, "L").GetXdsConfig().UnmarshalNew()
			require.NoError(h.t, err)
			return fmt.Sprint(proto.Equal(m, wire.ClientListener("L", "R", 2)))
		}, "true", "false"},

		{FaultADSStreamPerType, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			// The route's watch opens a second aggregated stream instead
			// of asking on the first.
			return fmt.Sprint(h.newStreamFirst(wire.Route))
		}, "false", "true"},

		{FaultAnyConfigSource, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.NonADSListener("L", "R", 1))
			return nacked(h.next(wire.Listener))
		}, "true", "false"},

		{FaultStaleInitialVersions, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2))
			h.expectAck(wire.Listener, "", "l2")
			h.closeStreams(nil)
			return fmt.Sprint(h.next(wire.Listener).IRV)
		}, "map[L:2]", "map[L:1]"},

		{FaultNackEmptyMessage, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			return fmt.Sprint(h.next(wire.Listener).Err.GetMessage() == "")
		}, "false", "true"},

		{FaultAbsenceIsProof, wire.SotWADS, 0, func(h *harness) string {
			acceptRouteOfTwo(h)
			h.expectAck(wire.Cluster, "1", "c1", "C", "C2")
			return csdsStatus(h, wire.Cluster, "C2")
		}, "REQUESTED", "DOES_NOT_EXIST"},

		{FaultNackSticky, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			h.expectNack(wire.Listener, "l2")
			h.send(wire.Listener, "3", "l3", wire.ClientListener("L", "R", 3))
			return nacked(h.next(wire.Listener))
		}, "false", "true"},

		{FaultNackCodeOK, wire.DeltaADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			return fmt.Sprint(h.expectNack(wire.Listener, "l2").Err.GetCode())
		}, "3", "0"}, // INVALID_ARGUMENT, OK

		{FaultNackEmptyNames, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			return fmt.Sprint(h.expectNack(wire.Listener, "l2").Names)
		}, "[L]", "[]"},

		{FaultNonceOfLastAccepted, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			h.sendAnys(wire.Route, "2", "r2", mustAny(h.t, wire.ClientCluster("C", 2))) // mistyped
			h.expectNack(wire.Route, "r2")
			return moveRoute(h).Nonce // the RDS subscription change after the NACK
		}, "r2", "r1"},

		{FaultIrvSystemVersion, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "l1", SystemVersionInfo: "s1",
				Resources: []*discovery.Resource{{Name: "L", Version: "1", Resource: mustAny(h.t, wire.ClientListener("L", "R", 1))}}})
			h.expectAck(wire.Listener, "", "l1")
			h.closeStreams(nil)
			return fmt.Sprint(h.next(wire.Listener).IRV)
		}, "map[L:1]", "map[L:s1]"},

		{FaultApplyDuplicates, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2), wire.ClientListener("L", "R2", 3))
			h.expectNack(wire.Listener, "l2")
			return h.resource(wire.Listener, "L").GetVersionInfo()
		}, "1", "2"},

		// A SotW response with another listener deletes L (DEL-4); a delta
		// one leaves it (GRP-3).
		{FaultOmissionOnlyWhenEmpty, wire.SotWPerType, 0, onlyOther, "DOES_NOT_EXIST", "ACKED"},
		{FaultDeltaOmissionDeletes, wire.DeltaADS, 0, onlyOther, "ACKED", "DOES_NOT_EXIST"},

		{FaultIgnoreRemovedWithResources, wire.DeltaPerType, 0, func(h *harness) string {
			acceptListener(h)
			h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "l2", RemovedResources: []string{"L"},
				Resources: []*discovery.Resource{{Name: "other", Version: "2", Resource: mustAny(h.t, wire.ClientListener("other", "R", 2))}}})
			h.expectAck(wire.Listener, "", "l2")
			return csdsStatus(h, wire.Listener, "L")
		}, "DOES_NOT_EXIST", "ACKED"},

		{FaultResubscribeInAcks, wire.DeltaADS, 0, func(h *harness) string {
			return fmt.Sprint(acceptListener(h).Names)
		}, "[]", "[L]"},

		{FaultEmptyIsWildcard, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.expectSubscribe(wire.Route, "R")
			omit(h, wire.Listener, "2", "l2", "L") // L is gone, and with it the last route name
			h.expectSubscribe(wire.Route)
			h.send(wire.Route, "1", "r1", wire.ClientRoute("R", "C", 1))
			h.expectAck(wire.Route, "1", "r1")
			return fmt.Sprint(h.resource(wire.Route, "R") != nil)
		}, "false", "true"},

		{FaultSlowAcks, wire.SotWPerType, 0, func(h *harness) string {
			// The fault's timer starts once the client has the response,
			// after sent: its ACK comes slowAckDelay (2 s) after sent at
			// the earliest. The reference ACKs at once, so it fails only
			// if the ACK is 2 s late even under -race.
			h.expectSubscribe(wire.Listener, "L")
			sent := time.Now()
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			return fmt.Sprint(time.Since(sent) >= slowAckDelay)
		}, "false", "true"},

		{FaultLateAcks1s, wire.SotWPerType, 0, func(h *harness) string {
			// As slow-acks, one second late.
			h.expectSubscribe(wire.Listener, "L")
			sent := time.Now()
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			return fmt.Sprint(time.Since(sent) >= lateAckDelay)
		}, "false", "true"},

		{FaultRequestBeforeAck, wire.SotWADS, 0, func(h *harness) string {
			return acceptListener(h).Version // the ACK, or the restated subscription before it
		}, "1", ""},

		{FaultDNEAfterReconnect, wire.SotWADS, 100 * time.Millisecond, func(h *harness) string {
			acceptListener(h)
			h.closeStreams(nil)
			h.expectSubscribe(wire.Listener, "L") // never answered
			return lapses(h, time.Second)
		}, "false", "true"},

		{FaultDNEOutlivesStream, wire.SotWADS, 2 * time.Second, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L") // never answered
			time.Sleep(time.Second)               // half the timer runs on the first stream
			h.closeStreams(nil)
			h.expectSubscribe(wire.Listener, "L")
			// A timer started afresh fires 2 s after this request; one
			// that ran on, about 1 s after it.
			return lapses(h, 1500*time.Millisecond)
		}, "false", "true"},

		{FaultNoBackoff, wire.SotWADS, 0, func(h *harness) string {
			// Four streams end before any response. The reference waits
			// failBackoff, then twice as long each time: its third wait
			// is 4*failBackoff (1 s, below maxBackoff). The timer starts
			// only after the test closed the stream, so that is a lower
			// bound of the gap measured here whatever the load; the
			// faulty client waits failBackoff (250 ms) each time, so its
			// gap stays below unless a reopen is 750 ms late.
			third := min(4*failBackoff, maxBackoff)
			var opened []time.Time
			for range 4 {
				h.stream(wire.Listener)
				opened = append(opened, time.Now())
				h.closeStreams(nil)
			}
			return fmt.Sprint(opened[3].Sub(opened[2]) >= third)
		}, "true", "false"},

		{FaultBackoffNeverResets, wire.SotWADS, 0, func(h *harness) string {
			// Two streams end before any response, then one after a
			// response: the reference is back after minBackoff (10 ms),
			// the faulty client after a wait that kept growing (4 times
			// failBackoff, 1 s); half of that tells them apart whatever
			// the load.
			for range 2 {
				h.stream(wire.Listener)
				h.closeStreams(nil)
			}
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			h.closeStreams(nil)
			ended := time.Now()
			h.stream(wire.Listener)
			return fmt.Sprint(time.Since(ended) >= 2*failBackoff)
		}, "false", "true"},

		{FaultIgnoreTTL, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			sendTTL(h, "1", "l1", 200*time.Millisecond, true)
			h.expectAck(wire.Listener, "1", "l1", "L")
			return lapses(h, time.Second)
		}, "true", "false"},

		{FaultTTLLostOnReconnect, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			sendTTL(h, "1", "l1", 500*time.Millisecond, true)
			h.expectAck(wire.Listener, "1", "l1", "L")
			h.closeStreams(nil)
			h.expectSubscribe(wire.Listener, "L") // back, never answered
			return lapses(h, 2*time.Second)
		}, "true", "false"},

		{FaultTTLSticks, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			sendTTL(h, "1", "l1", 300*time.Millisecond, true)
			sendTTL(h, "2", "l2", 0, true) // at once, so the TTL cannot lapse before
			h.expectAck(wire.Listener, "1", "l1", "L")
			h.expectAck(wire.Listener, "2", "l2", "L")
			return lapses(h, time.Second)
		}, "false", "true"},

		{FaultHeartbeatNoRefresh, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			sendTTL(h, "1", "l1", wait, true) // outlasts the case
			h.expectAck(wire.Listener, "", "l1")
			sendTTL(h, "1", "l2", 200*time.Millisecond, false) // restarts it, short
			h.expectAck(wire.Listener, "", "l2")
			return lapses(h, time.Second)
		}, "true", "false"},

		{FaultAllOrNothing, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.send(wire.Listener, "2", "l2", wire.ClientListener("L", "R", 2), wire.InvalidListener("other", 2))
			h.expectNack(wire.Listener, "l2")
			return h.resource(wire.Listener, "L").GetVersionInfo() // L itself was valid
		}, "2", "1"},

		{FaultHintWithoutVersion, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			return moveRoute(h).Version
		}, "1", ""},

		// The faults of the Envoy profile run in it (Fault.Profile).

		{FaultWildcardLostOnReconnect, wire.DeltaADS, 0, func(h *harness) string {
			acceptCluster(h)
			h.closeStreams(nil)
			r := h.next(wire.Cluster)
			return fmt.Sprint(r.Names, r.IRV)
		}, "[] map[C:1]", "[C] map[C:1]"},

		{FaultNoWarming, wire.SotWADS, 0, func(h *harness) string {
			acceptCluster(h) // its endpoints never come
			return csdsStatus(h, wire.Cluster, "C")
		}, "REQUESTED", "ACKED"},

		{FaultWarmingEndsAtTimer, wire.SotWADS, 0, func(h *harness) string {
			acceptCluster(h)
			acceptEndpoints(h, "1", "e1")
			return csdsStatus(h, wire.Cluster, "C")
		}, "ACKED", "REQUESTED"},

		{FaultWarmingDropsInUseRefs, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyChain(h)
			h.send(wire.Listener, "2", "l2", wire.EnvoyListener("L", "R2", 2)) // R2 withheld
			h.expectAck(wire.Listener, "2", "l2")
			return fmt.Sprint(h.next(wire.Route).Names)
		}, "[R R2]", "[R2]"},

		{FaultUpdateAwaitsHeldRoutes, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyChain(h)
			h.send(wire.Listener, "2", "l2", wire.EnvoyListener("L", "R", 2)) // R held, not resent
			h.expectAck(wire.Listener, "2", "l2")
			return statusOf(h, wire.Listener, "L")
		}, "ACKED 2", "ACKED 1"},

		{FaultDefaultChainIgnored, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener)
			h.send(wire.Listener, "1", "l1", wire.EnvoyDefaultChainListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1")
			return statusOf(h, wire.Listener, "L")
		}, "REQUESTED 1", "ACKED 1"},

		{FaultWarmsForever, wire.DeltaADS, 200 * time.Millisecond, func(h *harness) string {
			acceptCluster(h) // its endpoints never come
			g, _ := h.waitCSDS(wire.Cluster, "C", 5*time.Second, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus().String() == "ACKED"
			})
			return g.GetClientStatus().String()
		}, "ACKED", "REQUESTED"},

		{FaultUpdateSkipsWarming, wire.DeltaPerType, 0, func(h *harness) string {
			acceptCluster(h)
			acceptEndpoints(h, "1", "e1")
			h.send(wire.Cluster, "2", "c2", wire.ClientCluster("C", 2))
			h.expectAck(wire.Cluster, "", "c2")
			return h.resource(wire.Cluster, "C").GetVersionInfo() // no fresh endpoints yet
		}, "1", "2"},

		{FaultVHDSOverSotW, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyListener(h)
			h.send(wire.Route, "1", "r1", wire.RouteWithVHDS("R", 1))
			if r := h.next(wire.Route); r.Err != nil {
				return "route NACKed"
			}
			return fmt.Sprint(h.next(wire.VirtualHost).Names)
		}, "route NACKed", "[R/L]"},
	}

	for _, tc := range extraFaultCases { // the faults of other files
		cases = append(cases, tc)
	}
	covered := map[Fault]bool{}
	for _, tc := range cases {
		covered[tc.fault] = true
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			run := func(t *testing.T, faults ...Fault) string {
				h := start(t, tc.variant, func(c *Config) {
					c.Faults = faults
					c.DNETimeout = tc.dne
					c.Profile = tc.fault.Profile()
				})
				return tc.scenario(h)
			}
			t.Run("reference", func(t *testing.T) {
				assert.Equal(t, tc.reference, run(t))
			})
			t.Run("faulty", func(t *testing.T) {
				assert.Equal(t, tc.faulty, run(t, tc.fault))
			})
		})
	}
	for _, f := range AllFaults {
		// The federation faults, and the naming faults of issue 24, are
		// proven by xdstp_test.go and the client self-proof table, where
		// several servers are at hand; restfs_test.go has the REST and
		// file faults'.
		assert.True(t, covered[f] || slices.Contains(xdstpFaults, f) || slices.Contains(namingFaults, f) || restFSCovered(f), "fault %s has no case", f)
	}
}
