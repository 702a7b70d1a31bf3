package refclient

// Faults of the naming dimensions of issue 24: several authorities on one
// stream, context parameters in another order on every path that carries
// a name, glob collections, redirects, and ending a subscription made
// through a locator (LOC-1). Each is a plausible implementer's mistake
// that breaks one step of its scenario. They join AllFaults at init.
const (
	// FaultLocatorUnsubscribeByName ends a delta subscription made through
	// a locator by its bare name in resource_names_unsubscribe (LOC-1).
	FaultLocatorUnsubscribeByName Fault = "locator-unsubscribe-by-name"
	// FaultLocatorUnsubscribeWithoutParams ends a delta subscription made
	// through a locator with a locator that carries no dynamic parameters
	// (LOC-1).
	FaultLocatorUnsubscribeWithoutParams Fault = "locator-unsubscribe-without-params"
	// FaultLocatorsSticky keeps, in SotW, every locator ever sent in
	// resource_locators, so a subscription the client dropped never ends
	// (LOC-1).
	FaultLocatorsSticky Fault = "locators-sticky"
	// FaultOneWatchPerPath keys its watches by type, id and context
	// parameters, without the authority: of two names that differ only in
	// their authority it asks for the first alone (RES-1, XDSTP-3).
	FaultOneWatchPerPath Fault = "one-watch-per-path"
	// FaultAuthorityBlindMatch takes a delivered xdstp name for the first
	// watched one with its type, id and context parameters, whatever its
	// authority (XDSTP-3).
	FaultAuthorityBlindMatch Fault = "authority-blind-match"
	// FaultRemovalAcrossAuthorities deletes, with a removed or omitted
	// xdstp resource, every held one with its type, id and context
	// parameters, whatever its authority (XDSTP-3).
	FaultRemovalAcrossAuthorities Fault = "removal-across-authorities"
	// FaultRemovalVerbatim matches the names of delta removed_resources
	// string for string, so a removal whose context parameters come in
	// another order deletes nothing (XDSTP-3, DEL-2).
	FaultRemovalVerbatim Fault = "removal-verbatim"
	// FaultOmissionVerbatim judges a SotW Listener or Cluster absent unless
	// a response names it as the client asked for it, string for string, so
	// one delivered with its context parameters reordered is deleted
	// (XDSTP-3, DEL-4).
	FaultOmissionVerbatim Fault = "omission-verbatim"
	// FaultStatusSplitsSpellings shows, in the status view, a resource
	// delivered under another spelling of its context parameters as an
	// entry of its own, the subscribed name staying REQUESTED (XDSTP-3,
	// OBS-1).
	FaultStatusSplitsSpellings Fault = "status-splits-spellings"
	// FaultGlobDeepMembers takes a resource at any depth below a watched
	// glob's path for one of its members (DELTA-5).
	FaultGlobDeepMembers Fault = "glob-deep-members"
	// FaultGlobMembersByNameOnReconnect subscribes, on a new delta stream,
	// to the members of a glob it holds by name instead of to the glob
	// (DELTA-7).
	FaultGlobMembersByNameOnReconnect Fault = "glob-members-by-name-on-reconnect"
	// FaultRedirectFailureSilent ACKs a redirect to an authority missing
	// from the bootstrap and drops it without an error: it asks no server,
	// but shows the redirected resource as if nothing failed (REDIR-3).
	FaultRedirectFailureSilent Fault = "redirect-failure-silent"
)

// namingFaults are the faults of this file, in the order AllFaults lists
// them.
var namingFaults = []Fault{
	FaultLocatorUnsubscribeByName, FaultLocatorUnsubscribeWithoutParams, FaultLocatorsSticky,
	FaultOneWatchPerPath, FaultAuthorityBlindMatch, FaultRemovalAcrossAuthorities,
	FaultRemovalVerbatim, FaultOmissionVerbatim, FaultStatusSplitsSpellings,
	FaultGlobDeepMembers, FaultGlobMembersByNameOnReconnect, FaultRedirectFailureSilent,
}

var namingFaultDescriptions = map[Fault]string{
	FaultLocatorUnsubscribeByName:        "ends a delta locator subscription by its bare name in resource_names_unsubscribe (breaks LOC-1)",
	FaultLocatorUnsubscribeWithoutParams: "ends a delta locator subscription with a locator without dynamic parameters (breaks LOC-1)",
	FaultLocatorsSticky:                  "keeps every locator ever sent in SotW resource_locators (breaks LOC-1)",
	FaultOneWatchPerPath:                 "asks once for names that differ only in their authority (breaks RES-1, XDSTP-3)",
	FaultAuthorityBlindMatch:             "takes a delivered xdstp name for a watched one of another authority (breaks XDSTP-3)",
	FaultRemovalAcrossAuthorities:        "deletes, with a removed xdstp resource, those of other authorities with its path (breaks XDSTP-3)",
	FaultRemovalVerbatim:                 "matches delta removed_resources string for string, context-parameter order included (breaks XDSTP-3, DEL-2)",
	FaultOmissionVerbatim:                "takes a SotW Listener or Cluster delivered with its context parameters reordered as absent (breaks XDSTP-3, DEL-4)",
	FaultStatusSplitsSpellings:           "shows a resource delivered under another parameter order as an entry of its own (breaks XDSTP-3, OBS-1)",
	FaultGlobDeepMembers:                 "takes resources at any depth below a glob's path for its members (breaks DELTA-5)",
	FaultGlobMembersByNameOnReconnect:    "subscribes to a held glob's members by name on a new delta stream, not to the glob (breaks DELTA-7)",
	FaultRedirectFailureSilent:           "ACKs a redirect to an unknown authority and shows no error (breaks REDIR-3)",
}

func init() {
	AllFaults = append(AllFaults, namingFaults...)
	for f, d := range namingFaultDescriptions {
		faultDescriptions[f] = d
	}
}
