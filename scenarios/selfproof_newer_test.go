package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/wire"
)

// The self-proof of the steps added to the newer families (xdstp names,
// collections and globs, dynamic parameters, resource errors, REST) after
// mutation testing showed them missing: each fails against the
// reference-server fault mirroring the mutant, naming its rule.
func init() {
	for id, catches := range map[string][]serverCatch{
		"server/collections/glob-unsubscribed-update": {{fault: refserver.FaultGlobUnsubscribeIgnored, rule: "UNSUB-2"}},
		"server/collections/glob-unsubscribed-deletion": {
			{fault: refserver.FaultGlobUnsubscribeIgnored, rule: "UNSUB-2"},
			{fault: refserver.FaultGlobMembersStillHeld, rule: "UNSUB-2"},
		},
		"server/collections/glob-unsubscribed-creation": {{fault: refserver.FaultGlobUnsubscribeIgnored, rule: "UNSUB-2"}},
		"server/collections/glob-unsubscribed-error-cleared": {
			{fault: refserver.FaultGlobUnsubscribeIgnored, rule: "UNSUB-2"},
			{fault: refserver.FaultGlobMembersStillHeld, rule: "UNSUB-2"},
		},
		"server/errors/resubscribed-named":   {{fault: refserver.FaultErrorsOncePerStream, rule: "RES-4", variants: wire.SotWOnly}},
		"server/errors/resubscribed-located": {{fault: refserver.FaultErrorsOncePerStream, rule: "RES-4", variants: wire.SotWOnly}},
		"server/nack/resubscribed-after-nack": {
			{fault: refserver.FaultNackRejectsEverySent, rule: "RES-5"},
			{fault: refserver.FaultAckKeepsRejected, rule: "RES-5"},
			{fault: refserver.FaultRejectedForever, rule: "RES-5"},
		},
		"server/errors/others-supplied":            {{fault: refserver.FaultErrorEndsResponse, rule: "RES-2"}},
		"server/ack/identical-set-no-resend":       {{fault: refserver.FaultVersionOfBytes, rule: "UPD-1"}},
		"server/errors/unchanged-error-not-pushed": {{fault: refserver.FaultBumpAllTypes, rule: "UPD-1"}},
		"server/ttl/variant-passed-on":             {{fault: refserver.FaultVariantTTLDropped, rule: "TTL-3", variants: wire.SotWOnly}},
		"server/ttl/variant-only-for-capable":      {{fault: refserver.FaultTTLForEveryone, rule: "TTL-1"}},
		"server/errors/resubscribed-named-alone": {
			{fault: refserver.FaultErrorsOncePerStream, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultEmptyRequestKeepsErrors, rule: "RES-4", variants: wire.SotWOnly},
		},
		"server/errors/resubscribed-located-alone": {
			{fault: refserver.FaultErrorsOncePerStream, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultEmptyRequestKeepsErrors, rule: "RES-4", variants: wire.SotWOnly},
		},
		"server/rest/legacy-wildcard-poll": {{fault: refserver.FaultRESTWildcardIgnored, rule: "WILD-2"}},
		"server/rest/star-wildcard-poll":   {{fault: refserver.FaultRESTWildcardIgnored, rule: "WILD-1"}},
		"server/rest/named-poll":           {{fault: refserver.FaultNamedIsWildcard, rule: "WILD-8"}},
		"server/rest/unreadable-polls":     {{fault: refserver.FaultRESTBadPollEmptyOK, rule: "REST-3"}},
		"server/dynamic/parameters-changed": {
			{fault: refserver.FaultParamChangeNotPushed, rule: "DYN-7", variants: wire.SotWOnly},
			{fault: refserver.FaultNameKeepsParams, rule: "DYN-7"},
		},
	} {
		mustCatch[id] = catches
	}
}
