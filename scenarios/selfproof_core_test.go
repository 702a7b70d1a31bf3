package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refclient"
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
		"server/combined/ack-swaps": {
			{fault: refserver.FaultReplyKeepsDropped, rule: "UNSUB-2"},
			{fault: refserver.FaultAckDropsSubscriptionChange, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultAckDropsSubscriptionChange, rule: "DELTA-3", variants: wire.DeltaOnly},
		},
		"server/combined/nack-adds": {
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "DELTA-3", variants: wire.DeltaOnly},
			{fault: refserver.FaultNackAddResendsRejected, rule: "ACK-5", variants: wire.SotWOnly},
			{fault: refserver.FaultNackAddResendsRejected, rule: "UPD-1", variants: wire.DeltaOnly},
			// A NACK answered with nothing leaves the name it adds unserved.
			{fault: refserver.FaultNackByVersion, rule: "RES-4", variants: wire.SotWOnly},
		},
		"server/combined/nack-swaps": {
			{fault: refserver.FaultReplyKeepsDropped, rule: "UNSUB-2"},
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "RES-4", variants: wire.SotWOnly},
			{fault: refserver.FaultNackDropsSubscriptionChange, rule: "DELTA-3", variants: wire.DeltaOnly},
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

// The client side of the same families: each step fails against the
// reference-client fault written for it.
func init() {
	for id, catches := range map[string][]clientCatch{
		"client/unsubscribe/update-after-drop": {
			{fault: refclient.FaultApplyDropped, rule: "RES-3", want: "in use after the client dropped it", variants: sotwOnly},
			{fault: refclient.FaultApplyDropped, rule: "DELTA-5", want: "in use after the client dropped it", variants: deltaOnly},
			{fault: refclient.FaultNackUnrequested, rule: "RES-3", variants: sotwOnly},
			{fault: refclient.FaultNackUnrequested, rule: "DELTA-5", variants: deltaOnly},
		},
		"client/unsubscribe/removal-after-drop": {
			{fault: refclient.FaultRemovalRewatchesDropped, rule: "DEL-3", want: "no reason to ask for it again"},
			{fault: refclient.FaultNackUnknownRemoval, rule: "DEL-3"},
		},
		"client/unsubscribe/recreation-after-drop": {
			{fault: refclient.FaultRecreationRewatchesDropped, rule: "RES-3", want: "no reason to ask for it again", variants: sotwOnly},
			{fault: refclient.FaultRecreationRewatchesDropped, rule: "DELTA-5", want: "no reason to ask for it again", variants: deltaOnly},
			{fault: refclient.FaultApplyDropped, rule: "RES-3", want: "in use after the client dropped it", variants: sotwOnly},
			{fault: refclient.FaultApplyDropped, rule: "DELTA-5", want: "in use after the client dropped it", variants: deltaOnly},
		},
		"client/resources/partial-answer-clusters": {
			{fault: refclient.FaultNextRequestNamesAnsweredOnly, rule: "RES-1", variants: sotwOnly},
			{fault: refclient.FaultNextRequestNamesAnsweredOnly, rule: "DELTA-2", variants: deltaOnly},
		},
		"client/resources/partial-answer-endpoints": {
			{fault: refclient.FaultNextRequestNamesAnsweredOnly, rule: "RES-1", variants: sotwOnly},
			{fault: refclient.FaultNextRequestNamesAnsweredOnly, rule: "DELTA-2", variants: deltaOnly},
		},
		"client/nack/after-subscription-change": {
			{fault: refclient.FaultNackRestatesRepliedNames, rule: "RES-1"},
			{fault: refclient.FaultNackRejectedVersion, rule: "ACK-3", want: "the last accepted"},
		},
		"client/nonce/latest-after-nack": {{fault: refclient.FaultVersionAfterNackIsRejected, rule: "SEQ-1"}},
		"client/reconnect/resubscribes-pending": {
			{fault: refclient.FaultReconnectForgetsPending, rule: "RECONN-3", variants: sotwOnly},
			{fault: refclient.FaultReconnectForgetsPending, rule: "DELTA-7", variants: deltaOnly},
			{fault: refclient.FaultIrvListsPending, rule: "DELTA-6", want: "nothing it never received", variants: deltaOnly},
		},
	} {
		mustCatchClient[id] = append(mustCatchClient[id], catches...)
	}
}
