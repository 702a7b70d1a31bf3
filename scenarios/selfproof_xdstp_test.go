package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/wire"
)

// The self-proof of the xdstp, collection and redirect scenarios (issue
// 12): each step fails against the reference-server fault that breaks
// it, naming its rule.
func init() {
	for id, catches := range map[string][]serverCatch{
		"server/xdstp/singleton-served": {
			{fault: refserver.FaultUdpaScheme, rule: "XDSTP-1"},
			{fault: refserver.FaultDropContextParams, rule: "XDSTP-4"},
			{fault: refserver.FaultXdsParamAdded, rule: "XDSTP-6"},
			{fault: refserver.FaultDirectiveInName, rule: "XDSTP-10"},
			{fault: refserver.FaultXdstpDeltaOnly, rule: "XDSTP-18", variants: wire.SotWOnly},
		},
		"server/xdstp/type-segment-matches":    {{fault: refserver.FaultWrongTypeSegment, rule: "XDSTP-2"}},
		"server/xdstp/context-parameter-order": {{fault: refserver.FaultXdstpVerbatim, rule: "XDSTP-3"}},
		"server/xdstp/context-parameters-exact": {
			{fault: refserver.FaultLooseContextParams, rule: "XDSTP-5"},
			{fault: refserver.FaultIDBlind, rule: "XDSTP-3"},
		},
		"server/xdstp/no-reserved-values":          {{fault: refserver.FaultReservedParamValue, rule: "XDSTP-7"}},
		"server/xdstp/opaque-names-beside":         {{fault: refserver.FaultOpaqueBesideXdstpIgnored, rule: "XDSTP-19"}},
		"server/xdstp/same-content-for-every-node": {{fault: refserver.FaultNodeTailoredContent, rule: "XDSTP-17"}},
		"server/redirect/locator":                  {{fault: refserver.FaultRedirectLosesAuthority, rule: "REDIR-1"}},
		"server/redirect/directives":               {{fault: refserver.FaultDirectiveTwice, rule: "XDSTP-9"}},
		"server/collections/list": {
			{fault: refserver.FaultCollectionOfAllPaths, rule: "COLL-1"},
			{fault: refserver.FaultDropContextParams, rule: "XDSTP-4"},
			// Its last member deleted, the collection is not removed.
			{fault: refserver.FaultNeverReportDeletions, rule: "COLL-1"},
		},
		"server/collections/list-inline-entries": {
			{fault: refserver.FaultInlineBadNames, rule: "XDSTP-11"},
			{fault: refserver.FaultInlineNoVersion, rule: "COLL-3"},
		},
		"server/collections/glob-members": {
			{fault: refserver.FaultGlobNoRemovals, rule: "COLL-4"},
			{fault: refserver.FaultDropContextParams, rule: "XDSTP-4"},
		},
		"server/collections/empty-glob-removed":      {{fault: refserver.FaultEmptyGlobSilent, rule: "COLL-5"}},
		"server/collections/several-globs-any-depth": {{fault: refserver.FaultShallowGlobs, rule: "COLL-7"}},
		"server/collections/no-glob-over-sotw":       {{fault: refserver.FaultGlobInSotW, rule: "COLL-6"}},
		"server/redirect/glob-not-redirected":        {{fault: refserver.FaultRedirectGlob, rule: "REDIR-2"}},
		// The naming dimensions of issue 24 (docs/state-space.md).
		"server/dynamic/locator-unsubscribed":         {{fault: refserver.FaultLocatorUnsubscribeIgnored, rule: "LOC-1"}},
		"server/collections/glob-direct-members-only": {{fault: refserver.FaultGlobDeep, rule: "COLL-4"}},
		// The parameter-order table (orderScenarios): the path written as
		// subscribed, then reordered.
		"server/xdstp/parameters-sorted-unsubscribe": {{fault: refserver.FaultUpdatesAfterUnsubscribe, rule: "UNSUB-2"}},
		"server/xdstp/parameters-reordered-unsubscribe": {
			{fault: refserver.FaultUnsubscribeVerbatim, rule: "XDSTP-3"},
			{fault: refserver.FaultXdstpVerbatim, rule: "XDSTP-3", variants: wire.DeltaOnly},
		},
		"server/xdstp/parameters-sorted-removal": {
			{fault: refserver.FaultRemovalDropsParams, rule: "XDSTP-4", variants: wire.DeltaOnly},
			{fault: refserver.FaultNeverReportDeletions, rule: "DEL-1", variants: wire.DeltaOnly},
			{fault: refserver.FaultNeverReportDeletions, rule: "GRP-1", variants: wire.SotWOnly},
		},
		"server/xdstp/parameters-reordered-removal": {
			{fault: refserver.FaultStaleXdstpAlias, rule: "XDSTP-3"},
			{fault: refserver.FaultRemovalDropsParams, rule: "XDSTP-4", variants: wire.DeltaOnly},
		},
		"server/xdstp/parameters-sorted-ack":     {{fault: refserver.FaultResendOnAck, rule: "UPD-1"}},
		"server/xdstp/parameters-reordered-ack":  {{fault: refserver.FaultReorderedIsNew, rule: "UPD-1"}, {fault: refserver.FaultXdstpVerbatim, rule: "XDSTP-3", want: "carrying"}},
		"server/xdstp/parameters-sorted-nack":    {{fault: refserver.FaultNackResendLoop, rule: "ACK-5"}, {fault: refserver.FaultStallAfterNack, rule: "ACK-9"}},
		"server/xdstp/parameters-reordered-nack": {{fault: refserver.FaultReorderedIsNew, rule: "ACK-5"}, {fault: refserver.FaultXdstpVerbatim, rule: "XDSTP-3", want: "carrying"}},
		"server/xdstp/authorities-on-one-stream": {
			{fault: refserver.FaultAuthorityBlind, rule: "XDSTP-3", want: "revision"},
			{fault: refserver.FaultRemovalAcrossAuthorities, rule: "XDSTP-3", want: "differ in their authority"},
		},
		"server/collections/glob-resubscribed": {{fault: refserver.FaultGlobResubscribeSilent, rule: "DELTA-3"}},
	} {
		mustCatch[id] = catches
	}
}
