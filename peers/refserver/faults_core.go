package refserver

// The faults below each break one step of the scenarios of issue 24's core
// dimensions: the event after an unsubscribe, requests that carry two
// meanings at once, a response that covers part of what was asked, the
// requests after a NACK, and a reconnect while names are still pending.
// Each is a mistake an implementer could plausibly make; they live in a
// file of their own, added to AllFaults at init, as the xdstp ones do.
const (
	// FaultRemovalAfterUnsubscribe keeps a name a delta client
	// unsubscribed among those the server thinks it holds, so the
	// resource's later deletion is still sent to it in removed_resources
	// (UNSUB-2).
	FaultRemovalAfterUnsubscribe Fault = "removal-after-unsubscribe"
	// FaultRecreationAfterUnsubscribe re-arms, when a resource is deleted,
	// the subscription of every stream it was ever sent to, as if the
	// subscription outlived the resource (DNE-3) even for a stream that
	// unsubscribed from it before: its re-creation is pushed (UNSUB-2).
	FaultRecreationAfterUnsubscribe Fault = "recreation-after-unsubscribe"
	// FaultAckDropsSubscriptionChange takes the first request that answers
	// the latest response without error_detail for its ACK alone: names it
	// adds or drops are ignored, while a later request restating them
	// (a hint update) is served (RES-4, DELTA-3, UNSUB-2).
	FaultAckDropsSubscriptionChange Fault = "ack-drops-subscription-change"
	// FaultNackDropsSubscriptionChange takes a NACK for the rejection
	// alone: names it adds or drops are ignored (RES-4, DELTA-3, UNSUB-2).
	FaultNackDropsSubscriptionChange Fault = "nack-drops-subscription-change"
	// FaultReplyKeepsDropped applies what a request that answers the
	// latest response (an ACK or a NACK) adds to the subscription, but not
	// what it drops: the names it leaves out stay subscribed (UNSUB-2).
	FaultReplyKeepsDropped Fault = "reply-keeps-dropped"
	// FaultNackAddResendsRejected answers a NACK that adds names with
	// every resource subscribed, the rejected ones included, as it answers
	// any request that adds names (ACK-5, UPD-1).
	FaultNackAddResendsRejected Fault = "nack-add-resends-rejected"
	// FaultNackByVersion detects a SotW NACK the older way ACK-5 warns of,
	// by a version other than the one its nonce's response carried, and
	// answers a NACK with nothing: a subscription change sent after a NACK,
	// at the version last accepted, is taken for another NACK and its new
	// names are not served (HINT-2, ACK-5).
	FaultNackByVersion Fault = "nack-by-version"
	// FaultPartialAnswerSettles takes the ACK of a response that carried
	// part of the names subscribed to settle the subscription: the names
	// it left out (missing then) are not pushed once created (DNE-3).
	FaultPartialAnswerSettles Fault = "partial-answer-settles"
	// FaultReconnectForgetsPending takes a reconnected stream's first
	// request (SotW: one carrying a version; delta: one carrying
	// initial_resource_versions) to restate what the client held: SotW
	// keeps none of the names that do not exist, delta none of those
	// initial_resource_versions leaves out, so what the client still
	// waited for is never sent (DNE-3, DELTA-3).
	FaultReconnectForgetsPending Fault = "reconnect-forgets-pending"
)

// coreFaults are the faults of this file with their descriptions, in the
// order they are added to AllFaults.
var coreFaults = []struct {
	f    Fault
	desc string
}{
	{FaultRemovalAfterUnsubscribe, "UNSUB-2: a delta name unsubscribed is still reported in removed_resources when its resource is deleted"},
	{FaultRecreationAfterUnsubscribe, "UNSUB-2: a deletion re-arms the subscriptions of the streams the resource was sent to, so its re-creation is pushed to streams that unsubscribed"},
	{FaultAckDropsSubscriptionChange, "RES-4, DELTA-3, UNSUB-2: the names an ACK adds or drops are ignored"},
	{FaultNackDropsSubscriptionChange, "RES-4, DELTA-3, UNSUB-2: the names a NACK adds or drops are ignored"},
	{FaultReplyKeepsDropped, "UNSUB-2: the names an ACK or NACK drops stay subscribed; those it adds are served"},
	{FaultNackAddResendsRejected, "ACK-5, UPD-1: a NACK that adds names is answered with every subscribed resource, the rejected ones too"},
	{FaultNackByVersion, "HINT-2, ACK-5: a SotW request at another version than its nonce's response is taken for a NACK, and a NACK is answered with nothing"},
	{FaultPartialAnswerSettles, "DNE-3: the ACK of a response that left subscribed names out drops them, so they are not pushed once created"},
	{FaultReconnectForgetsPending, "DNE-3, DELTA-3: a reconnected stream keeps only the names the client held; those it still waited for are never sent"},
}

func init() {
	for _, x := range coreFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}
