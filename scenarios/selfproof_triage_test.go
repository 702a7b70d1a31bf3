package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/wire"
)

// The self-proof of the steps the triage of the mutation run's survivors
// in the reference server's delta state machine added (issue 24, item 2):
// each step fails against the fault that mirrors the mutant it kills.
// Entries of scenarios the tables had before are extended, not replaced.
// adsDelta is the variant whose barrier of another type makes the steps
// below see a server forget at a later request.
var adsDelta = []wire.Variant{wire.DeltaADS}

func init() {
	for id, catches := range map[string][]serverCatch{
		"server/unsubscribe/listed-after-another": {{fault: refserver.FaultUnsubscribeFirstOnly, rule: "UNSUB-2"}},
		"server/unsubscribe/listed-after-phantom": {{fault: refserver.FaultUnsubscribeFirstOnly, rule: "UNSUB-2"}},
		"server/unsubscribe/listed-after-star":    {{fault: refserver.FaultUnsubscribeFirstOnly, rule: "UNSUB-2"}},
		"server/unsubscribe/listed-after-glob": {
			{fault: refserver.FaultUnsubscribeFirstOnly, rule: "UNSUB-2", want: "after"},
			{fault: refserver.FaultGlobUnsubscribeKept, rule: "UNSUB-2", want: "were dropped by unsubscribing"},
		},
		// A barrier of another type orders the deletion after the
		// reconnect's first request on ADS only; on a per-type stream
		// either order passes a correct server, and the faults race.
		"server/reconnect/delta-named-held-tracked": {
			{fault: refserver.FaultReconnectHeldUntracked, rule: "DEL-1", variants: adsDelta},
			{fault: refserver.FaultIgnoreInitialResourceVersions, rule: "DELTA-8", variants: adsDelta},
		},
		"server/reconnect/delta-wildcard-held-tracked": {
			{fault: refserver.FaultReconnectHeldUntracked, rule: "DEL-1", variants: adsDelta},
			{fault: refserver.FaultIgnoreInitialResourceVersions, rule: "DELTA-8", variants: adsDelta},
		},
		"server/ack/legacy-no-resend-after-ack": {
			{fault: refserver.FaultWildcardAnswersEveryRequest, rule: "UPD-1"},
			{fault: refserver.FaultResendOnAck, rule: "UPD-1"},
		},
		"server/ack/star-no-resend-after-ack": {
			{fault: refserver.FaultWildcardAnswersEveryRequest, rule: "UPD-1"},
			{fault: refserver.FaultResendOnAck, rule: "UPD-1"},
		},
		"server/wildcard/drop-star-keeps-names":     {{fault: refserver.FaultDropStarForgetsHeld, rule: "WILD-4", want: "removing", variants: wire.DeltaOnly}},
		"server/wildcard/delta-unsubscribe-outside": {{fault: refserver.FaultOverlapOutsideSilent, rule: "UNSUB-6", want: "removing"}},
		"server/deletion/delta-wildcard-removed": {
			{fault: refserver.FaultRequestForgetsWildcardHeld, rule: "DEL-1", variants: adsDelta},
			{fault: refserver.FaultRemovalKeptHeld, rule: "UPD-1"},
		},
		"server/deletion/delta-named-removed": {{fault: refserver.FaultRemovalKeptHeld, rule: "UPD-1"}},
	} {
		mustCatch[id] = append(mustCatch[id], catches...)
	}
}
