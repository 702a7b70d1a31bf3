package scenarios

import (
	"slices"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Server returns the server-role catalogue: every scenario in which the
// harness plays the xDS client against a management server.
func Server() []*engine.Scenario {
	var all []*engine.Scenario
	for _, area := range [][]*engine.Scenario{
		streamScenarios, versionScenarios, ackScenarios, nonceScenarios,
		resourceScenarios, wildcardScenarios, deletionScenarios,
		missingScenarios, unsubscribeScenarios, deltaScenarios, adsScenarios,
		warmingScenarios, consistencyScenarios, ttlScenarios,
		dynamicScenarios, errorScenarios, errorWildcardScenarios,
		robustnessScenarios, xdstpScenarios, orderScenarios(), collectionScenarios, restScenarios,
	} {
		all = append(all, area...)
	}
	return all
}

// Client returns the client-role catalogue, in report order.
func Client() []*engine.Scenario {
	var all []*engine.Scenario
	for _, area := range [][]*engine.Scenario{
		// The calibrations first: they run before the rest (see
		// client_calibration.go), and a report lists them as they ran.
		clientCalibrationScenarios,
		clientStreamScenarios, clientProfileScenarios, clientAckScenarios, clientNonceScenarios,
		clientResourceScenarios, clientWrapperScenarios, clientTTLScenarios, clientDeletionScenarios, clientMissingScenarios,
		clientReconnectScenarios, clientDeltaScenarios, clientRobustnessScenarios,
		clientErrorScenarios, clientDynamicScenarios, clientXdstpScenarios, clientOrderScenarios(), clientCollectionScenarios,
	} {
		all = append(all, gRPCProfile(area)...)
	}
	return slices.Concat(all, clientEnvoyScenarios, clientRESTScenarios, clientFSScenarios)
}

// gRPCProfile marks the scenarios of area as written for the gRPC client
// profile: they serve, and expect to be asked for, the chain a gRPC client
// follows from the one listener it was pointed at (Chain), so a client of
// the Envoy profile skips them. It returns copies; area is left as it is.
func gRPCProfile(area []*engine.Scenario) []*engine.Scenario {
	out := make([]*engine.Scenario, len(area))
	for i, s := range area {
		cp := *s
		cp.Needs = append(slices.Clip(s.Needs), targets.NeedGRPCProfile)
		out[i] = &cp
	}
	return out
}

// Shorthands that keep scenario bodies close to the spec's own notation.
var (
	LDS  = wire.Listener
	RDS  = wire.Route
	CDS  = wire.Cluster
	EDS  = wire.Endpoint
	VHDS = wire.VirtualHost
)

var (
	allVariants = wire.AllVariants
	sotw        = wire.SotWOnly
	delta       = wire.DeltaOnly
	ads         = wire.ADSOnly
	perType     = []wire.Variant{wire.SotWPerType, wire.DeltaPerType}
)

// Fixture is the needs of a scenario that drives server state through the
// fixture API and uses the given types: a pair against a target without a
// fixture, or that does not serve one of the types, is skipped.
func Fixture(types ...wire.Type) []engine.Need {
	needs := []engine.Need{targets.NeedFixture}
	for _, t := range types {
		needs = append(needs, targets.NeedType(t))
	}
	return needs
}

// with appends extra needs.
func with(needs []engine.Need, extra ...engine.Need) []engine.Need {
	return append(slices.Clip(needs), extra...) // never into a shared slice's spare capacity
}

// ServerScript adapts a server-role body to the engine: it is a Scenario's
// Run. The body gets an S connected to the target in the pair's variant,
// with the pair's own node id and a clean fixture state; the global
// invariants are checked after it returns.
func ServerScript(body func(s *S)) func(*engine.T) {
	return func(t *engine.T) { body(NewS(t)) }
}
