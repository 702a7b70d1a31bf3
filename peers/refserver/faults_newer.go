package refserver

// The faults below mirror survivors of mutation testing (make mutation)
// in the reference server's newer families: xdstp names, collections and
// globs, dynamic parameters, resource errors and REST. Each is a
// plausible implementer's mistake that a mutant showed no scenario
// caught, and each breaks the step written to catch it. They live in a
// file of their own and join AllFaults at init.
const (
	// FaultGlobUnsubscribeIgnored never ends a glob subscription: a glob
	// in resource_names_unsubscribe stays subscribed, so its members keep
	// coming (UNSUB-2).
	FaultGlobUnsubscribeIgnored Fault = "glob-unsubscribe-ignored"
	// FaultGlobMembersStillHeld ends a glob subscription but goes on
	// tracking the members the client held through it as held, so their
	// deletions are still reported (UNSUB-2).
	FaultGlobMembersStillHeld Fault = "glob-members-still-held"
)

// newerFaults are the faults of this file with their descriptions, in the
// order they are added to AllFaults.
var newerFaults = []struct {
	f    Fault
	desc string
}{
	{FaultGlobUnsubscribeIgnored, "UNSUB-2 (SHOULD): an unsubscribed glob collection stays subscribed, its members keep coming"},
	{FaultGlobMembersStillHeld, "UNSUB-2 (SHOULD): after a glob collection is unsubscribed, the deletions of the members the client held are still reported"},
}

func init() {
	for _, x := range newerFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}
