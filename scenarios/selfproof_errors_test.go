package scenarios

import (
	"testing"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
)

// errorCatches are the self-proof entries of the per-resource error,
// dynamic parameter and Resource.metadata scenarios (client_errors.go,
// client_dynamic.go); init adds them to mustCatchClient.
var errorCatches = map[string][]clientCatch{
	"client/errors/remembered": {
		{fault: refclient.FaultForgetErrors, rule: "ERR-5"},
		{fault: refclient.FaultErrorsNotShown, rule: "ERR-12"},
		{fault: refclient.FaultUnwatchedErrorEndsErrors, rule: "ERR-12", regression: true},
	},
	"client/errors/cleared-by-resend-at-held-version": {{fault: refclient.FaultResendAtHeldVersionIsHeartbeat, rule: "ERR-5"}},
	"client/errors/timer-cancelled":                   {{fault: refclient.FaultErrorKeepsTimer, rule: "ERR-6"}},
	"client/errors/transient-keeps-cache":             {{fault: refclient.FaultTransientDropsCache, rule: "ERR-7"}},
	"client/errors/not-found-is-missing":              {{fault: refclient.FaultIgnoreDataErrors, rule: "ERR-8"}},
	"client/errors/permission-denied-drops":           {{fault: refclient.FaultIgnoreDataErrors, rule: "ERR-8"}},
	"client/errors/unknown-code-transient":            {{fault: refclient.FaultUnknownCodeDrops, rule: "ERR-9"}},
	"client/errors/delta-not-found-removes":           {{fault: refclient.FaultDeltaNotFoundKept, rule: "ERR-10"}},
	"client/errors/shown-in-status":                   {{fault: refclient.FaultErrorsNotShown, rule: "ERR-12"}},
	"client/dynamic/wrapped-variant-accepted":         {{fault: refclient.FaultWrapperNeedsName, rule: "DYN-1"}},
	"client/dynamic/constraint-matching":              {{fault: refclient.FaultStrictConstraints, rule: "DYN-7"}},
	"client/dynamic/mismatch-checked":                 {{fault: refclient.FaultNoVariantCheck, rule: "DYN-10"}},
	"client/dynamic/stable-parameters":                {{fault: refclient.FaultParametersDrift, rule: "DYN-11"}},
	"client/dynamic/variant-removed-by-resource-name": {{fault: refclient.FaultIgnoreRemoved, rule: "LOC-2"}},
	"client/wrapper/metadata-tolerated":               {{fault: refclient.FaultNackResourceMetadata, rule: "CACHE-2"}},
}

func init() {
	for id, cs := range errorCatches {
		mustCatchClient[id] = cs
	}
}

// The scenarios of errorCatches fail against their faults: the part of
// TestClientScenariosFailAgainstTheirFaults that can be run on its own.
func TestClientErrorScenariosFailAgainstTheirFaults(t *testing.T) {
	proveCatches(t, errorCatches, func(id string, c clientCatch) ([]results.Result, error) {
		return runClientWithFault(profileOf(id), c.fault, engine.Selection{Run: []string{id}, Variants: c.variants})
	})
}

// The scenarios of errorCatches pass against the conformant reference
// client: the part of TestClientSuitePassesAgainstReference that can be
// run on its own.
func TestClientErrorScenariosPassAgainstReference(t *testing.T) {
	var ids []string
	for id := range errorCatches {
		ids = append(ids, id)
	}
	for _, r := range runClientSuite(t, referenceIn(profileOf(ids[0])), engine.Config{Timeouts: clientTimeouts}, engine.Selection{Run: ids}) {
		if r.Outcome != results.Pass {
			t.Errorf("%s: %s %s", r.FullName(), r.Outcome, r.Message)
		}
	}
}
