package refclient

import (
	"fmt"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsconform/xdsconform/wire"
)

// faultCase is a case of TestEveryFaultChangesBehaviour kept outside its
// table (see extraFaultCases).
type faultCase struct {
	fault     Fault
	variant   wire.Variant
	dne       time.Duration
	scenario  func(h *harness) string
	reference string
	faulty    string
}

// extraFaultCases are the cases of the faults declared outside faults.go;
// TestEveryFaultChangesBehaviour runs them with its own.
var extraFaultCases []faultCase

// locatorStrings renders resource locators for treq.
func locatorStrings(ls []*discovery.ResourceLocator) []string {
	var out []string
	for _, l := range ls {
		out = append(out, fmt.Sprint(l.GetName(), " ", l.GetDynamicParameters()))
	}
	return out
}

// testParams are the dynamic parameters of the locating clients.
var testParams = map[string]string{"env": "prod", "region": "eu"}

// heldCluster drives the chain up to cluster C accepted at version 1
// (nonce c1) and its endpoints asked for.
func heldCluster(h *harness) {
	h.t.Helper()
	acceptRoute(h)
	h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
	h.expectAck(wire.Cluster, "1", "c1", "C")
	h.expectSubscribe(wire.Endpoint, "C")
}

// sendErrors sends a response of typ carrying no resources and a
// resource error with code for name, then for each of more, in order.
func sendErrors(h *harness, typ wire.Type, version, nonce, name string, code codes.Code, more ...string) {
	h.t.Helper()
	var errs []*discovery.ResourceError
	for _, n := range append([]string{name}, more...) {
		errs = append(errs, &discovery.ResourceError{
			ResourceName: &discovery.ResourceName{Name: n},
			ErrorDetail:  &rpcstatus.Status{Code: int32(code), Message: "xdsconform: " + code.String()},
		})
	}
	s := h.stream(typ)
	if s.delta {
		require.NoError(h.t, s.dlt.Send(&discovery.DeltaDiscoveryResponse{TypeUrl: typ.URL, Nonce: nonce, SystemVersionInfo: version, ResourceErrors: errs}))
		return
	}
	require.NoError(h.t, s.sotw.Send(&discovery.DiscoveryResponse{TypeUrl: typ.URL, VersionInfo: version, Nonce: nonce, ResourceErrors: errs}))
}

// erroredCluster is heldCluster, then an error with code for C, ACKed.
func erroredCluster(h *harness, code codes.Code) {
	h.t.Helper()
	heldCluster(h)
	sendErrors(h, wire.Cluster, "2", "c2", "C", code)
	h.expectAck(wire.Cluster, "2", "c2", "C")
}

// erroredSubscription is acceptRoute, then an error with code for C,
// which the client never received, ACKed.
func erroredSubscription(h *harness, code codes.Code) {
	h.t.Helper()
	acceptRoute(h)
	sendErrors(h, wire.Cluster, "1", "c1", "C", code)
	h.expectAck(wire.Cluster, "1", "c1", "C")
}

// locating starts a second client, with h's faults, that subscribes
// through resource_locators with testParams, and returns its harness
// after its listener subscription.
func locating(h *harness) *harness {
	h.t.Helper()
	l := start(h.t, h.v, func(c *Config) {
		c.Faults = h.c.cfg.Faults
		c.DNETimeout = h.c.cfg.DNETimeout
		c.DynamicParameters = testParams
	})
	r := l.next(wire.Listener)
	require.Equal(h.t, []string{"L map[env:prod region:eu]"}, r.Locators)
	return l
}

// variant wraps listener L (→ R) in a Resource named by resource_name
// with constraints dc.
func variant(h *harness, dc *discovery.DynamicParameterConstraints) *discovery.Resource {
	return &discovery.Resource{
		ResourceName: &discovery.ResourceName{Name: "L", DynamicParameterConstraints: dc},
		Version:      "1",
		Resource:     mustAny(h.t, wire.ClientListener("L", "R", 1)),
	}
}

// exact is the constraint key=value.
func exact(key, value string) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
		Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
			ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Value{Value: value}}}}
}

// sendVariant sends the listener variant with constraints dc (SotW,
// wrapped) and reports whether the client NACKed it.
func sendVariant(h *harness, dc *discovery.DynamicParameterConstraints) string {
	h.t.Helper()
	h.sendAnys(wire.Listener, "1", "l1", mustAny(h.t, variant(h, dc)))
	return nacked(h.next(wire.Listener))
}

func init() {
	extraFaultCases = append(extraFaultCases, []faultCase{
		{FaultForgetErrors, wire.SotWADS, 0, func(h *harness) string {
			erroredSubscription(h, codes.Unavailable)
			h.send(wire.Cluster, "2", "c2") // says nothing of C
			h.expectAck(wire.Cluster, "2", "c2", "C")
			return csdsStatus(h, wire.Cluster, "C")
		}, "RECEIVED_ERROR", "REQUESTED"},

		// The cluster in error comes again, unchanged, at the version
		// held: received, so the error is gone; with the fault it is
		// taken for a heartbeat and the error stays.
		{FaultResendAtHeldVersionIsHeartbeat, wire.DeltaADS, 0, func(h *harness) string {
			erroredCluster(h, codes.Unavailable)
			h.sendDelta(wire.Cluster, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "c3", SystemVersionInfo: "3",
				Resources: []*discovery.Resource{{Name: "C", Version: "1", Resource: mustAny(h.t, wire.ClientCluster("C", 1))}}})
			h.expectAck(wire.Cluster, "3", "c3", "C")
			return statusOf(h, wire.Cluster, "C")
		}, "ACKED 1", "RECEIVED_ERROR 1"},

		// An empty response of another type on the per-type CDS stream
		// is NACKed (under CDS: r.Err set), and the cluster stays; with the fault it
		// reads as a CDS full state without the cluster.
		{FaultForeignTypeApplied, wire.SotWPerType, 0, func(h *harness) string {
			heldCluster(h)
			require.NoError(h.t, h.stream(wire.Cluster).sotw.Send(&discovery.DiscoveryResponse{TypeUrl: wire.Listener.URL, VersionInfo: "2", Nonce: "c2"}))
			r := h.next(wire.Cluster)
			return fmt.Sprintf("%s %s", nacked(r), csdsStatus(h, wire.Cluster, "C"))
		}, "true ACKED", "false DOES_NOT_EXIST"},

		// The server is unreachable until the client failed to connect
		// twice: the client comes back; with the fault it gave up at the
		// first stream it could not open.
		{FaultGiveUpAfterFailedOpen, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.srv.outage(h.t, 2)
			h.streams = map[string]*tstream{}
			select {
			case <-h.srv.streams:
				return "reconnected"
			case <-time.After(wait):
				return "gave up"
			}
		}, "reconnected", "gave up"},

		// A route splitting traffic between C and C2: both are asked for;
		// with the fault neither weighted cluster is.
		{FaultWeightedClustersIgnored, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			h.expectSubscribe(wire.Route, "R")
			h.send(wire.Route, "1", "r1", wire.WeightedRoute("R", 1, "C", "C2"))
			h.expectAck(wire.Route, "1", "r1", "R")
			r, ok := h.tryNext(wire.Cluster, wire.Cluster.URL, time.Second)
			if !ok {
				return "no cluster asked for"
			}
			return fmt.Sprint(r.Names)
		}, "[C C2]", "no cluster asked for"},

		{FaultErrorKeepsTimer, wire.SotWADS, 300 * time.Millisecond, func(h *harness) string {
			erroredSubscription(h, codes.Unavailable)
			g, _ := h.waitCSDS(wire.Cluster, "C", time.Second, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus() == statusDoesNotExist
			})
			return g.GetClientStatus().String()
		}, "RECEIVED_ERROR", "DOES_NOT_EXIST"},

		{FaultTransientDropsCache, wire.DeltaADS, 0, func(h *harness) string {
			erroredCluster(h, codes.Internal)
			return statusOf(h, wire.Cluster, "C")
		}, "RECEIVED_ERROR 1", "RECEIVED_ERROR "},

		{FaultIgnoreDataErrors, wire.SotWADS, 0, func(h *harness) string {
			erroredSubscription(h, codes.NotFound)
			return csdsStatus(h, wire.Cluster, "C")
		}, "DOES_NOT_EXIST", "RECEIVED_ERROR"},

		{FaultUnknownCodeDrops, wire.SotWPerType, 0, func(h *harness) string {
			erroredCluster(h, codes.FailedPrecondition)
			return statusOf(h, wire.Cluster, "C")
		}, "RECEIVED_ERROR 1", "RECEIVED_ERROR "},

		{FaultDeltaNotFoundKept, wire.DeltaPerType, 0, func(h *harness) string {
			erroredCluster(h, codes.NotFound)
			return statusOf(h, wire.Cluster, "C")
		}, "DOES_NOT_EXIST ", "RECEIVED_ERROR 1"},

		{FaultUnwatchedErrorEndsErrors, wire.SotWADS, 0, func(h *harness) string {
			acceptRoute(h)
			sendErrors(h, wire.Cluster, "1", "c1", "unasked", codes.Unavailable, "C")
			h.expectAck(wire.Cluster, "1", "c1", "C")
			return h.resource(wire.Cluster, "C").GetClientStatus().String()
		}, "RECEIVED_ERROR", "REQUESTED"},

		{FaultErrorsNotShown, wire.SotWADS, 0, func(h *harness) string {
			erroredCluster(h, codes.Unavailable)
			g := h.resource(wire.Cluster, "C")
			return fmt.Sprint(g.GetClientStatus(), " ", g.GetErrorState().GetDetails())
		}, "RECEIVED_ERROR Unavailable: xdsconform: Unavailable", "ACKED "},

		{FaultWrapperNeedsName, wire.SotWADS, 0, func(h *harness) string {
			return sendVariant(locating(h), exact("env", "prod"))
		}, "false", "true"},

		{FaultStrictConstraints, wire.SotWADS, 0, func(h *harness) string {
			return sendVariant(locating(h), exact("env", "prod")) // region is not mentioned
		}, "false", "true"},

		{FaultNoVariantCheck, wire.SotWADS, 0, func(h *harness) string {
			return sendVariant(locating(h), exact("env", "test"))
		}, "true", "false"},

		{FaultParametersDrift, wire.DeltaADS, 0, func(h *harness) string {
			l := locating(h)
			l.sendAnys(wire.Listener, "1", "l1", mustAny(h.t, wire.ClientListener("L", "R", 1)))
			l.next(wire.Listener)
			route := l.next(wire.Route)
			l.sendAnys(wire.Route, "1", "r1", mustAny(h.t, wire.ClientRoute("R", "C", 1)))
			l.next(wire.Route)
			return fmt.Sprint(route.Locators, l.next(wire.Cluster).Locators)
		}, "[R map[env:prod region:eu]] [C map[env:prod region:eu]]", "[R map[env:prod region:eu]] [C map[env:prod region:eu xdsconform.drift:1]]"},

		{FaultNackResourceMetadata, wire.DeltaADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			md := &core.Metadata{FilterMetadata: map[string]*structpb.Struct{"xdsconform.trace": {Fields: map[string]*structpb.Value{"id": structpb.NewStringValue("t-1")}}}}
			h.sendDelta(wire.Listener, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Listener.URL, Nonce: "l1", Resources: []*discovery.Resource{
				{Name: "L", Version: "1", Resource: mustAny(h.t, wire.ClientListener("L", "R", 1)), Metadata: md},
			}})
			return nacked(h.next(wire.Listener))
		}, "false", "true"},
	}...)
}

// The constraint semantics of DYN-7, case by case, against the
// parameters {env: prod, region: eu}.
func TestConstraintMatching(t *testing.T) {
	exists := func(key string) *discovery.DynamicParameterConstraints {
		return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
			Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
				ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Exists_{Exists: &discovery.DynamicParameterConstraints_SingleConstraint_Exists{}}}}}
	}
	not := func(x *discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
		return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_NotConstraints{NotConstraints: x}}
	}
	and := func(xs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
		return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_AndConstraints{
			AndConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: xs}}}
	}
	or := func(xs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
		return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_OrConstraints{
			OrConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: xs}}}
	}
	c := &Client{}
	for _, tc := range []struct {
		name string
		dc   *discovery.DynamicParameterConstraints
		want bool
	}{
		{"none", nil, true},
		{"exact", exact("env", "prod"), true},
		{"exact other value", exact("env", "test"), false},
		{"exact absent key", exact("zone", "a"), false},
		{"exists", exists("region"), true},
		{"exists absent", exists("zone"), false},
		{"not exists absent", not(exists("zone")), true},
		{"and", and(exact("env", "prod"), exists("region")), true},
		{"and one fails", and(exact("env", "prod"), exists("zone")), false},
		{"or", or(exact("env", "test"), exact("region", "eu")), true},
		{"or none", or(exact("env", "test"), exact("region", "us")), false},
	} {
		assert.Equal(t, tc.want, c.matches(tc.dc, testParams), tc.name)
	}
}
