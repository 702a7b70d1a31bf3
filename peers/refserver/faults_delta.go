package refserver

// The faults below mirror mutants of the delta state machine that the
// mutation run (tools/mutation) found surviving the suite: each is a
// mistake an implementer could plausibly make, and the scenario step added
// to kill the mutant fails against it, naming the rule. They live in a
// file of their own, added to AllFaults at init, as the core ones do.
const (
	// FaultUnsubscribeFirstOnly applies only the first name of a delta
	// request's resource_names_unsubscribe: the names listed after it
	// stay subscribed (UNSUB-2).
	FaultUnsubscribeFirstOnly Fault = "unsubscribe-first-only"
	// FaultGlobUnsubscribeKept ignores the unsubscription of a glob
	// collection: its members keep being pushed (UNSUB-2).
	FaultGlobUnsubscribeKept Fault = "glob-unsubscribe-kept"
	// FaultReconnectHeldUntracked takes initial_resource_versions only to
	// skip what the reconnecting client holds at the current version, and
	// forgets it then: a later deletion of such a resource is not
	// reported (DEL-1).
	FaultReconnectHeldUntracked Fault = "reconnect-held-untracked"
	// FaultWildcardAnswersEveryRequest answers every request of a delta
	// wildcard stream, with an empty response when nothing changed: the
	// ACK of the answer gets another answer, which the client ACKs in
	// turn (UPD-1).
	FaultWildcardAnswersEveryRequest Fault = "wildcard-answers-every-request"
	// FaultDropStarForgetsHeld forgets, when a delta client unsubscribes
	// "*", everything the client holds, the explicit names kept included:
	// a later deletion of one of them is not reported, as if the names
	// had gone with the wildcard (WILD-4).
	FaultDropStarForgetsHeld Fault = "drop-star-forgets-held"
	// FaultOverlapOutsideSilent answers the unsubscription of a name
	// beside "*" only when the wildcard covers it: one outside the
	// wildcard's set is not reported in removed_resources (UNSUB-6).
	FaultOverlapOutsideSilent Fault = "overlap-outside-silent"
	// FaultRequestForgetsWildcardHeld forgets, at every request of a delta
	// wildcard stream after the first, the resources delivered through
	// the wildcard alone: a later deletion of one is not reported (DEL-1).
	FaultRequestForgetsWildcardHeld Fault = "request-forgets-wildcard-held"
	// FaultRemovalKeptHeld keeps a resource reported in removed_resources
	// among those the client holds, so every later push of its type
	// reports it removed again (UPD-1).
	FaultRemovalKeptHeld Fault = "removal-kept-held"
)

// deltaFaults are the faults of this file with their descriptions, in the
// order they are added to AllFaults.
var deltaFaults = []struct {
	f    Fault
	desc string
}{
	{FaultUnsubscribeFirstOnly, "UNSUB-2: only the first name of a delta unsubscribe is dropped; the names after it stay subscribed"},
	{FaultGlobUnsubscribeKept, "UNSUB-2: unsubscribing a glob collection is ignored; its members keep being pushed"},
	{FaultReconnectHeldUntracked, "DEL-1: what initial_resource_versions lists at the current version is not sent again, and forgotten: its deletion is not reported"},
	{FaultWildcardAnswersEveryRequest, "UPD-1: every request of a delta wildcard stream is answered, with an empty response when nothing changed"},
	{FaultDropStarForgetsHeld, "WILD-4: unsubscribing \"*\" forgets everything the client holds, the names kept too: their deletion is not reported"},
	{FaultOverlapOutsideSilent, "UNSUB-6: unsubscribing a name beside \"*\" that the wildcard does not cover gets no removed_resources"},
	{FaultRequestForgetsWildcardHeld, "DEL-1: a delta wildcard stream forgets, at each later request, what the wildcard delivered: its deletion is not reported"},
	{FaultRemovalKeptHeld, "UPD-1: a resource reported removed is reported removed again with every later push of its type"},
}

func init() {
	for _, x := range deltaFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}
