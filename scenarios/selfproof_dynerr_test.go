package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/wire"
)

// The catches of the dynamic-parameter (xRFC TP2) and per-resource error
// (xRFC TP3) scenarios: one fault per step.
func init() {
	for id, catches := range map[string][]serverCatch{
		"server/dynamic/mixed-subscriptions": {{fault: refserver.FaultLocatorSubscriptionsIgnored, rule: "DYN-2"}},
		"server/dynamic/variant-carries-constraints": {
			{fault: refserver.FaultNamesNotResourceNames, rule: "DYN-3", want: "in resource_name"},
			{fault: refserver.FaultNameAndResourceName, rule: "DYN-4", want: "both name and resource_name"},
		},
		"server/dynamic/matching": {
			{fault: refserver.FaultIgnoreConstraints, rule: "DYN-7", want: "must be the variant"},
			{fault: refserver.FaultUnconstrainedKeysBlock, rule: "DYN-7"},
		},
		"server/dynamic/no-match-is-missing": {{fault: refserver.FaultNoMatchServesDefault, rule: "DYN-8", want: "neither env=prod nor env=test matches"}},
		"server/dynamic/variant-removal": {
			{fault: refserver.FaultVariantRemovalDropsAll, rule: "DYN-5", want: "only the env=test variant was deleted"},
			{fault: refserver.FaultPlainVariantRemoval, rule: "DYN-5", want: "instead of removed_resource_names"},
		},
		"server/dynamic/atomic-variant-change": {{fault: refserver.FaultTornVariantChange, rule: "DYN-6", want: "without its replacement"}},
		"server/errors/reported":               {{fault: refserver.FaultNoResourceErrors, rule: "ERR-1"}},
		"server/errors/disjoint":               {{fault: refserver.FaultErrorAndResource, rule: "ERR-2", want: "both in resources and in resource_errors"}},
		"server/errors/full-state-kept":        {{fault: refserver.FaultErrorsDropFullState, rule: "ERR-3", want: "which still exists"}},
		"server/errors/not-repeated": {
			{fault: refserver.FaultRepeatErrors, rule: "ERR-4", want: "repeats the error", variants: wire.SotWOnly},
			{fault: refserver.FaultDeltaErrorsNotHeld, rule: "ERR-4", want: "repeats the error", variants: wire.DeltaOnly},
		},
		"server/errors/glob-named":            {{fault: refserver.FaultGlobErrorsDropped, rule: "ERR-11"}},
		"server/errors/wildcard-member-named": {{fault: refserver.FaultWildcardErrorsUnnamed, rule: "ERR-11", want: "no name to report errors under"}},
	} {
		mustCatch[id] = catches
	}
}
