package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/wire"
)

// The self-proof of the core dimensions' families (issue 24: the event
// after an unsubscribe, requests with two meanings, partial responses, the
// requests after a NACK, a reconnect with names pending): each step fails
// against the reference-server fault written for it, naming its rule.
// Entries of scenarios the table had before are extended, not replaced.
func init() {
	for id, catches := range map[string][]serverCatch{
		"server/unsubscribe/no-removal-after": {{fault: refserver.FaultRemovalAfterUnsubscribe, rule: "UNSUB-2"}},
		"server/unsubscribe/no-recreation-after": {
			{fault: refserver.FaultRecreationAfterUnsubscribe, rule: "UNSUB-2"},
			{fault: refserver.FaultUpdatesAfterUnsubscribe, rule: "UNSUB-2"},
		},
		"server/combined/ack-adds": {
			{fault: refserver.FaultAckDropsSubscriptionChange, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultAckDropsSubscriptionChange, rule: "DELTA-3", variants: wire.DeltaOnly},
		},
		"server/combined/ack-drops": {{fault: refserver.FaultAckDropsSubscriptionChange, rule: "UNSUB-2"}},
		"server/combined/nack-adds": {
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "DELTA-3", variants: wire.DeltaOnly},
			{fault: refserver.FaultNackAddResendsRejected, rule: "ACK-5", variants: wire.SotWOnly},
			{fault: refserver.FaultNackAddResendsRejected, rule: "UPD-1", variants: wire.DeltaOnly},
			// A NACK answered with nothing leaves the name it adds unserved.
			{fault: refserver.FaultNackByVersion, rule: "RES-4", variants: wire.SotWOnly},
		},
		"server/combined/nack-drops": {
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "UNSUB-2"},
			{fault: refserver.FaultCloseOnNack, rule: "ACK-9"},
		},
		"server/nack/hint-after-nack": {
			{fault: refserver.FaultNackByVersion, rule: "HINT-2"},
			{fault: refserver.FaultNackAddResendsRejected, rule: "ACK-5", want: "was rejected by a NACK"},
		},
		"server/missing/rest-pushed-when-created": {
			{fault: refserver.FaultPartialAnswerSettles, rule: "DNE-3"},
			{fault: refserver.FaultForgetMissingSubscriptions, rule: "DNE-3"},
		},
		"server/reconnect/pending-pushed-when-created": {{fault: refserver.FaultReconnectForgetsPending, rule: "DNE-3"}},
		"server/reconnect/pending-created-while-away":  {{fault: refserver.FaultReconnectForgetsPending, rule: "DELTA-3"}},
	} {
		mustCatch[id] = append(mustCatch[id], catches...)
	}
}
