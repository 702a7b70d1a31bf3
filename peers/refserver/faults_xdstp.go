package refserver

// The faults below each break one step of the xdstp, collection and
// redirect scenarios (issue 12: the XDSTP, COLL and REDIR rules). They
// live in a file of their own, added to AllFaults at init, so that the
// areas of that issue do not all edit one list.
const (
	// FaultUdpaScheme delivers xdstp names under the retired udpa://
	// scheme (XDSTP-1).
	FaultUdpaScheme Fault = "udpa-scheme"
	// FaultWrongTypeSegment matches xdstp subscriptions without looking
	// at the type segment, so a name of another type is served on a
	// stream of this one (XDSTP-2).
	FaultWrongTypeSegment Fault = "wrong-type-segment"
	// FaultXdstpVerbatim matches xdstp names as strings, so a name whose
	// context parameters come in another order is not found, whether it
	// is subscribed, unsubscribed or listed again in an ACK or NACK
	// (XDSTP-3).
	FaultXdstpVerbatim Fault = "xdstp-verbatim"
	// FaultDropContextParams delivers xdstp names without their context
	// parameters (XDSTP-4).
	FaultDropContextParams Fault = "drop-context-params"
	// FaultLooseContextParams matches xdstp names on authority, type and
	// id only, whatever their context parameters (XDSTP-5).
	FaultLooseContextParams Fault = "loose-context-params"
	// FaultXdsParamAdded adds a context parameter in the reserved xds.*
	// namespace to every xdstp name it delivers (XDSTP-6).
	FaultXdsParamAdded Fault = "xds-param-added"
	// FaultReservedParamValue adds a context parameter whose value starts
	// with a non-alphanumeric character to every xdstp name it delivers
	// (XDSTP-7, SHOULD).
	FaultReservedParamValue Fault = "reserved-param-value"
	// FaultDirectiveTwice repeats the first directive of a redirect's
	// locator (XDSTP-9).
	FaultDirectiveTwice Fault = "directive-twice"
	// FaultDirectiveInName delivers xdstp names with an alt directive
	// appended, a locator where a name belongs (XDSTP-10).
	FaultDirectiveInName Fault = "directive-in-name"
	// FaultInlineBadNames names the inline entries of a list collection
	// after their whole path, '/' included, and all alike (XDSTP-11).
	FaultInlineBadNames Fault = "inline-bad-names"
	// FaultNodeTailoredContent tailors the content of xdstp resources to
	// the client's node, at an unchanged version (XDSTP-17).
	FaultNodeTailoredContent Fault = "node-tailored-content"
	// FaultXdstpDeltaOnly serves xdstp names on delta streams only
	// (XDSTP-18).
	FaultXdstpDeltaOnly Fault = "xdstp-delta-only"
	// FaultOpaqueBesideXdstpIgnored stops serving opaque names on a
	// stream that also subscribes to xdstp names (XDSTP-19).
	FaultOpaqueBesideXdstpIgnored Fault = "opaque-beside-xdstp-ignored"
	// FaultCollectionOfAllPaths lists in a list collection every
	// listener of its authority, whatever its path (COLL-1).
	FaultCollectionOfAllPaths Fault = "collection-of-all-paths"
	// FaultInlineNoVersion sends the inline entries of a list collection
	// without a version (COLL-3, MAY).
	FaultInlineNoVersion Fault = "inline-no-version"
	// FaultGlobNoRemovals never reports a deleted member of a glob
	// collection in removed_resources (COLL-4).
	FaultGlobNoRemovals Fault = "glob-no-removals"
	// FaultEmptyGlobSilent says nothing about a glob collection with no
	// members (COLL-5, SHOULD).
	FaultEmptyGlobSilent Fault = "empty-glob-silent"
	// FaultGlobInSotW serves the members of a glob collection subscribed
	// over SotW (COLL-6).
	FaultGlobInSotW Fault = "glob-in-sotw"
	// FaultShallowGlobs serves only globs one path segment deep (COLL-7).
	FaultShallowGlobs Fault = "shallow-globs"
	// FaultRedirectLosesAuthority drops the authority of a redirect's
	// locator (REDIR-1, MAY).
	FaultRedirectLosesAuthority Fault = "redirect-loses-authority"
	// FaultRedirectGlob answers a glob subscription with a redirect of the
	// glob as a whole to its first member (REDIR-2).
	FaultRedirectGlob Fault = "redirect-glob"
)

// xdstpFaults are the faults of this file with their descriptions, in
// the order they are added to AllFaults.
var xdstpFaults = []struct {
	f    Fault
	desc string
}{
	{FaultUdpaScheme, "XDSTP-1: xdstp names are delivered under the udpa:// scheme"},
	{FaultWrongTypeSegment, "XDSTP-2: xdstp subscriptions match names of another type"},
	{FaultXdstpVerbatim, "XDSTP-3: xdstp names match only when written alike, context parameters in the same order"},
	{FaultDropContextParams, "XDSTP-4: delivered xdstp names lose their context parameters"},
	{FaultLooseContextParams, "XDSTP-5: xdstp names match whatever their context parameters"},
	{FaultXdsParamAdded, "XDSTP-6: delivered xdstp names carry an xds.* context parameter"},
	{FaultReservedParamValue, "XDSTP-7 (SHOULD): delivered xdstp names carry a context parameter value starting with '*'"},
	{FaultDirectiveTwice, "XDSTP-9: a redirect's locator repeats its first directive"},
	{FaultDirectiveInName, "XDSTP-10: delivered xdstp names carry an alt directive"},
	{FaultInlineBadNames, "XDSTP-11: inline entries of a list collection are all named alike, with a '/'"},
	{FaultNodeTailoredContent, "XDSTP-17: xdstp resources are tailored to the client's node at an unchanged version"},
	{FaultXdstpDeltaOnly, "XDSTP-18: xdstp names are served on delta streams only"},
	{FaultOpaqueBesideXdstpIgnored, "XDSTP-19: opaque names are not served on a stream that subscribes to xdstp names"},
	{FaultCollectionOfAllPaths, "COLL-1: a list collection lists every listener of its authority, whatever its path"},
	{FaultInlineNoVersion, "COLL-3 (MAY): inline entries of a list collection have no version"},
	{FaultGlobNoRemovals, "COLL-4: deleted members of a glob collection are not reported removed"},
	{FaultEmptyGlobSilent, "COLL-5 (SHOULD): a glob collection with no members gets no answer"},
	{FaultGlobInSotW, "COLL-6: a glob subscribed over SotW is served as a collection"},
	{FaultShallowGlobs, "COLL-7: globs deeper than one path segment have no members"},
	{FaultRedirectLosesAuthority, "REDIR-1 (MAY): a redirect's locator loses its authority"},
	{FaultRedirectGlob, "REDIR-2: a glob subscription is answered with a redirect of the glob as a whole"},
}

func init() {
	for _, x := range xdstpFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}
