package refserver

// The faults below each break one step of the scenarios on the naming
// dimensions of issue 24: several authorities on one stream, context
// parameters in another order on every path that carries a name, how deep
// a glob reaches and what re-subscribing it brings, and ending a
// subscription made through a locator (LOC-1). Each is a plausible
// implementer's mistake. They live in a file of their own and join
// AllFaults at init.
const (
	// FaultLocatorUnsubscribeIgnored never ends a subscription made
	// through a resource locator: delta resource_locators_unsubscribe is
	// not read, and a SotW locator left out of a request stays subscribed
	// (LOC-1).
	FaultLocatorUnsubscribeIgnored Fault = "locator-unsubscribe-ignored"
	// FaultAuthorityBlind matches xdstp subscriptions on type, id and
	// context parameters only, so a name of one authority is served the
	// resource of another (XDSTP-3).
	FaultAuthorityBlind Fault = "authority-blind"
	// FaultIDBlind matches xdstp subscriptions on authority, type and
	// context parameters alone: another id with the same ones is the
	// first stored match (XDSTP-3).
	FaultIDBlind Fault = "id-blind"
	// FaultRemovalAcrossAuthorities applies the deletion of an xdstp
	// resource to every subscribed name with its type, id and context
	// parameters, whatever their authority (XDSTP-3).
	FaultRemovalAcrossAuthorities Fault = "removal-across-authorities"
	// FaultUnsubscribeVerbatim matches a delta unsubscription against the
	// names subscribed string for string, so an xdstp name whose context
	// parameters come in another order unsubscribes nothing (XDSTP-3).
	FaultUnsubscribeVerbatim Fault = "unsubscribe-verbatim"
	// FaultReorderedIsNew compares SotW name sets string for string, so a
	// request that lists a subscribed xdstp name with its context
	// parameters in another order is a new subscription and is answered
	// with the resource again: after an ACK (UPD-1) and after a NACK, the
	// rejected version again (ACK-5).
	FaultReorderedIsNew Fault = "reordered-is-new"
	// FaultRemovalDropsParams names removed xdstp resources in
	// removed_resources without their context parameters (XDSTP-4).
	FaultRemovalDropsParams Fault = "removal-drops-params"
	// FaultStaleXdstpAlias remembers what a subscribed xdstp name written
	// otherwise than the stored one matched, and goes on serving it after
	// the stored resource is deleted: the two names are one resource, and
	// its deletion is not seen under the other (XDSTP-3).
	FaultStaleXdstpAlias Fault = "stale-xdstp-alias"
	// FaultGlobDeep takes every resource below a glob's path, at any
	// depth, for a member (COLL-4).
	FaultGlobDeep Fault = "glob-deep"
	// FaultGlobResubscribeSilent answers the subscription of a glob the
	// stream already subscribes to with nothing (DELTA-3).
	FaultGlobResubscribeSilent Fault = "glob-resubscribe-silent"
)

// namingFaults are the faults of this file with their descriptions, in
// the order they join AllFaults.
var namingFaults = []struct {
	f    Fault
	desc string
}{
	{FaultLocatorUnsubscribeIgnored, "LOC-1: a subscription made through a resource locator never ends"},
	{FaultIDBlind, "XDSTP-3: an xdstp name is served another resource of its authority, type and context parameters, whatever its id"},
	{FaultAuthorityBlind, "XDSTP-3: xdstp names of different authorities with the same type, id and context parameters match one resource"},
	{FaultRemovalAcrossAuthorities, "XDSTP-3: deleting an xdstp resource removes the names of every authority with its type, id and context parameters"},
	{FaultUnsubscribeVerbatim, "XDSTP-3: a delta unsubscription with context parameters in another order unsubscribes nothing"},
	{FaultReorderedIsNew, "UPD-1, ACK-5: a SotW ACK or NACK listing a subscribed xdstp name with its context parameters reordered is answered with the resource again"},
	{FaultRemovalDropsParams, "XDSTP-4: removed xdstp names lose their context parameters"},
	{FaultStaleXdstpAlias, "XDSTP-3: a deleted resource goes on being served under a subscribed name written with its context parameters in another order"},
	{FaultGlobDeep, "COLL-4: a glob's members include resources at any depth below its path"},
	{FaultGlobResubscribeSilent, "DELTA-3: subscribing again to a glob already subscribed brings nothing"},
}

func init() {
	for _, x := range namingFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}
