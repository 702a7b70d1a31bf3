package scenarios

import (
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/wire"
)

// The federation scenarios' catches (client_xdstp.go): each reference
// client fault of peers/refclient/faults_xdstp.go fails the scenario written
// for its rule.
func init() {
	for id, catches := range map[string][]clientCatch{
		"client/xdstp/chain": {
			{fault: refclient.FaultUdpaScheme, rule: "XDSTP-1"},
			// Delta streams still carry xdstp names with this fault; on
			// SotW per-type streams it leaves no stream to open at all,
			// which is the start's error, not a step's.
			{fault: refclient.FaultXdstpDeltaOnly, rule: "XDSTP-18", variants: []wire.Variant{wire.SotWADS}},
		},
		"client/xdstp/context-parameter-order":         {{fault: refclient.FaultExactNameMatch, rule: "XDSTP-3"}},
		"client/xdstp/context-parameters-exact":        {{fault: refclient.FaultIgnoreContextParams, rule: "XDSTP-5"}},
		"client/xdstp/authority-to-server":             {{fault: refclient.FaultIgnoreAuthority, rule: "XDSTP-13"}},
		"client/xdstp/unknown-authority":               {{fault: refclient.FaultUnknownAuthorityToDefault, rule: "XDSTP-13"}},
		"client/xdstp/shared-channel":                  {{fault: refclient.FaultChannelPerAuthority, rule: "XDSTP-14"}},
		"client/xdstp/listener-template-encoding":      {{fault: refclient.FaultTemplateNotEncoded, rule: "XDSTP-15"}},
		"client/xdstp/cluster-needs-service-name":      {{fault: refclient.FaultXdstpClusterWithoutServiceName, rule: "XDSTP-16"}},
		"client/xdstp/directive-encoding":              {{fault: refclient.FaultDirectivesDecodedBeforeSplit, rule: "XDSTP-9"}},
		"client/xdstp/directive-twice-rejected":        {{fault: refclient.FaultDirectivesDecodedBeforeSplit, rule: "XDSTP-9"}},
		"client/reconnect/initial-versions-per-server": {{fault: refclient.FaultIrvOfEveryServer, rule: "DELTA-6"}},
		"client/collections/list-membership":           {{fault: refclient.FaultCollectionFrozen, rule: "COLL-2"}},
		"client/collections/glob-over-delta-only":      {{fault: refclient.FaultGlobOverSotW, rule: "COLL-6", variants: []wire.Variant{wire.SotWADS}}},
		"client/redirects/target-on-its-authority":     {{fault: refclient.FaultIgnoreAuthority, rule: "REDIR-3"}},
		"client/redirects/unknown-authority": {
			{fault: refclient.FaultUnknownAuthorityToDefault, rule: "REDIR-3"},
			{fault: refclient.FaultRedirectFailureSilent, rule: "REDIR-3", want: "in an error state"},
		},
		"client/xdstp/directives-stripped": {{fault: refclient.FaultSendDirectives, rule: "XDSTP-8"}},
		// The naming dimensions of issue 24 (docs/state-space.md).
		"client/xdstp/authorities-on-one-stream": {
			{fault: refclient.FaultOneWatchPerPath, rule: "XDSTP-3", want: "ask for exactly"},
			{fault: refclient.FaultAuthorityBlindMatch, rule: "XDSTP-3", want: "ACKED at version"},
			{fault: refclient.FaultRemovalAcrossAuthorities, rule: "XDSTP-3", want: "deleted with"},
		},
		// The parameter-order table (clientOrderScenarios).
		// A delta ACK carries no names: the delta pairs of this control
		// row check the ACK's shape and the status view, which
		// client/delta/ack-shape and the reordered row prove.
		"client/xdstp/parameters-as-asked-ack": {{fault: refclient.FaultAckEmptyNames, rule: "RES-1", variants: sotwOnly}},
		"client/xdstp/parameters-reordered-ack": {
			{fault: refclient.FaultExactNameMatch, rule: "XDSTP-3"},
			{fault: refclient.FaultStatusSplitsSpellings, rule: "XDSTP-3", want: "one resource"},
		},
		"client/xdstp/parameters-as-asked-removal": {
			{fault: refclient.FaultIgnoreRemoved, rule: "DEL-2", variants: deltaOnly},
			{fault: refclient.FaultIgnoreLdsCdsOmission, rule: "DEL-4", variants: sotwOnly},
		},
		"client/xdstp/parameters-reordered-removal": {
			{fault: refclient.FaultRemovalVerbatim, rule: "XDSTP-3", variants: deltaOnly},
			{fault: refclient.FaultOmissionVerbatim, rule: "XDSTP-3", variants: sotwOnly},
		},
		"client/xdstp/parameters-as-asked-nack": {
			{fault: refclient.FaultApplyRejected, rule: "OBS-1"},
			{fault: refclient.FaultNoErrorState, rule: "OBS-1"},
		},
		"client/xdstp/parameters-reordered-nack": {
			{fault: refclient.FaultExactNameMatch, rule: "XDSTP-3"},
			{fault: refclient.FaultStatusSplitsSpellings, rule: "XDSTP-3", want: "one resource"},
		},
		"client/collections/glob-direct-members-only":       {{fault: refclient.FaultGlobDeepMembers, rule: "DELTA-5"}},
		"client/collections/glob-resubscribed-on-reconnect": {{fault: refclient.FaultGlobMembersByNameOnReconnect, rule: "DELTA-7"}},
		"client/dynamic/locator-unsubscribed": {
			{fault: refclient.FaultLocatorUnsubscribeByName, rule: "LOC-1", variants: deltaOnly},
			{fault: refclient.FaultLocatorUnsubscribeWithoutParams, rule: "LOC-1", variants: deltaOnly},
			{fault: refclient.FaultLocatorsSticky, rule: "LOC-1", variants: sotwOnly},
		},
	} {
		mustCatchClient[id] = catches
	}
}
