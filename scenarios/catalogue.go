package scenarios

import (
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
	} {
		all = append(all, area...)
	}
	return all
}

// Client returns the client-role catalogue, in report order.
func Client() []*engine.Scenario {
	var all []*engine.Scenario
	for _, area := range [][]*engine.Scenario{
		clientStreamScenarios, clientProfileScenarios, clientAckScenarios, clientNonceScenarios,
		clientResourceScenarios, clientWrapperScenarios, clientTTLScenarios, clientDeletionScenarios, clientMissingScenarios,
		clientReconnectScenarios, clientDeltaScenarios,
	} {
		all = append(all, area...)
	}
	return all
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

// fx says the scenario drives server state through the fixture and uses
// the given types.
func fx(types ...wire.Type) []engine.Need {
	needs := []engine.Need{targets.NeedFixture}
	for _, t := range types {
		needs = append(needs, targets.NeedType(t))
	}
	return needs
}

// with appends extra needs.
func with(needs []engine.Need, extra ...engine.Need) []engine.Need { return append(needs, extra...) }

// srv adapts a server-role body to the engine.
func srv(body func(s *S)) func(*engine.T) {
	return func(t *engine.T) { body(server(t)) }
}
