package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// mustCatch says, for every server scenario, which reference-server fault
// breaks the rule it checks. A check that cannot fail is a defect: each
// scenario must fail, in every variant it runs in, against its fault.
var mustCatch = map[string]refserver.Fault{
	"server/stream/node-only-on-first-request":        refserver.FaultRequireNodeEveryRequest,
	"server/stream/every-type-served":                 refserver.FaultWrongTypeUrl,
	"server/stream/no-unrequested-types":              refserver.FaultPushUnrequestedTypes,
	"server/version/changes-on-update":                refserver.FaultStaticVersion,
	"server/version/independent-per-type":             refserver.FaultBumpAllTypes,
	"server/version/delta-resource-versions":          refserver.FaultNoResourceVersions,
	"server/ack/no-resend-after-ack":                  refserver.FaultResendOnAck,
	"server/ack/repeated-request-no-resend":           refserver.FaultResendOnAck,
	"server/nack/no-resend-loop":                      refserver.FaultNackResendLoop,
	"server/nack/new-version-after-nack":              refserver.FaultCloseOnNack,
	"server/nack/any-error-code":                      refserver.FaultCloseOnNack,
	"server/nonce/non-empty":                          refserver.FaultEmptyNonce,
	"server/nonce/distinct":                           refserver.FaultReuseNonce,
	"server/nonce/stale-request-ignored":              refserver.FaultAnswerStaleNonce,
	"server/nonce/converges-after-stale":              refserver.FaultFirstRequestWins,
	"server/nonce/delta-stale-nonce-subscribe":        refserver.FaultDeltaDropStaleRequests,
	"server/nonce/delta-unknown-nonce-subscribe":      refserver.FaultDeltaDropStaleRequests,
	"server/update/latest-request-supersedes":         refserver.FaultUpdatesAfterUnsubscribe,
	"server/resources/requested-supplied":             refserver.FaultFirstNameOnly,
	"server/resources/new-names-sent":                 refserver.FaultFirstRequestWins,
	"server/resources/resubscribe-resends":            refserver.FaultNoResendOnResubscribe,
	"server/resources/empty-after-names-no-interest":  refserver.FaultEmptyMeansWildcard,
	"server/resources/exact-name":                     refserver.FaultListenerNameWithoutPort,
	"server/resources/separate-streams":               refserver.FaultBroadcastUpdates,
	"server/wildcard/legacy-empty-first-request":      refserver.FaultNoLegacyWildcard,
	"server/wildcard/explicit-star":                   refserver.FaultStarIsLiteral,
	"server/wildcard/star-plus-names":                 refserver.FaultStarIsLiteral,
	"server/wildcard/drop-star-keeps-names":           refserver.FaultStickyWildcard,
	"server/wildcard/empty-after-names-not-wildcard":  refserver.FaultEmptyMeansWildcard,
	"server/wildcard/delta-state-machine":             refserver.FaultStickyWildcard,
	"server/wildcard/named-subscription":              refserver.FaultNeverReportDeletions,
	"server/wildcard/member-stays-after-unsubscribe":  refserver.FaultUnsubscribeWildcardMember,
	"server/wildcard/delta-unsubscribe-overlap":       refserver.FaultUnsubscribeWildcardMember,
	"server/deletion/sotw-omission":                   refserver.FaultNeverReportDeletions,
	"server/deletion/delta-removed-every-type":        refserver.FaultNeverReportDeletions,
	"server/grouping/full-state-lds-cds":              refserver.FaultPartialFullState,
	"server/duplicates/no-duplicate-names":            refserver.FaultDuplicateNames,
	"server/missing/delta-reported-removed":           refserver.FaultNoMissingReport,
	"server/missing/pushed-when-created":              refserver.FaultForgetMissingSubscriptions,
	"server/unsubscribe/no-updates-after":             refserver.FaultUpdatesAfterUnsubscribe,
	"server/unsubscribe/phantom-harmless":             refserver.FaultPhantomUnsubscribeError,
	"server/delta/subscribe-always-resends":           refserver.FaultNoResendOnResubscribe,
	"server/delta/resubscribe-resends":                refserver.FaultNoResendOnResubscribe,
	"server/delta/empty-ack-keeps-subscriptions":      refserver.FaultEmptyDeltaUnsubscribesAll,
	"server/delta/reconnect-changed-resent":           refserver.FaultInitialVersionsSkipAll,
	"server/delta/reconnect-unchanged-not-resent":     refserver.FaultIgnoreInitialResourceVersions,
	"server/delta/reconnect-deleted-reported":         refserver.FaultIgnoreInitialResourceVersions,
	"server/reconnect/sotw-new-names-after-reconnect": refserver.FaultSkipCurrentVersionOnReconnect,
	"server/ads/per-type-nonces":                      refserver.FaultSharedAdsNonce,
	"server/ads/nack-one-type-others-continue":        refserver.FaultCloseOnNack,
}

// alsoCatch names faults that get past a scenario's first checks and are
// caught by a later one, with the words of the check that must fail: every
// check in a scenario has a fault it fails on.
var alsoCatch = []struct {
	id       string
	fault    refserver.Fault
	want     string
	variants []wire.Variant // all the scenario's when nil
}{
	{"server/version/delta-resource-versions", refserver.FaultFirstResourceVersion, "the resource changed, so must its version", nil},
	{"server/version/delta-resource-versions", refserver.FaultVersionOnFirstSendOnly, "after a change", nil},
	{"server/deletion/sotw-omission", refserver.FaultEmptyStateOnDelete, "which was not deleted", nil},
	// SotW requests restate every name, so only delta can forget them.
	{"server/wildcard/drop-star-keeps-names", refserver.FaultDropNamesWithStar, "at revision 2", wire.DeltaOnly},
}

func TestServerScenariosAlsoFailAgainstLaterChecksFaults(t *testing.T) {
	for _, c := range alsoCatch {
		t.Run(c.id+"/"+string(c.fault), func(t *testing.T) {
			t.Parallel()
			rs := runServerSuiteWith(t, faultTimeouts, c.fault, engine.Selection{Run: []string{c.id}, Variants: c.variants})
			require.NotEmpty(t, rs)
			for _, r := range rs {
				assert.Equal(t, results.Fail, r.Outcome, "%s must fail against fault %q; got %s %s\n%s",
					r.FullName(), c.fault, r.Outcome, r.Message, transcript.Format(r.Transcript))
				assert.Contains(t, r.Message, c.want, "%s must fail on the check that %q breaks", r.FullName(), c.fault)
			}
		})
	}
}

// faultTimeouts: against a faulty server the expected event often never
// comes, so the expect bound is short; the quiet window is long, because
// under -race on two busy cores a faulty reply can take hundreds of
// milliseconds and a short window would miss it.
var faultTimeouts = engine.Timeouts{Expect: time.Second, Quiet: time.Second, Scenario: 30 * time.Second}

func TestSelfProofTableCoversEveryServerScenario(t *testing.T) {
	ids := map[string]bool{}
	for _, s := range Server() {
		assert.Contains(t, mustCatch, s.ID, "scenario %s has no fault proving it can fail", s.ID)
		ids[s.ID] = true
	}
	for id := range mustCatch {
		assert.True(t, ids[id], "self-proof table names unknown scenario %s", id)
	}
}

// Every server scenario fails, in every variant, against the reference
// server with the fault that breaks its rule.
func TestServerScenariosFailAgainstTheirFault(t *testing.T) {
	for id, fault := range mustCatch {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			rs := runServerSuiteWith(t, faultTimeouts, fault, engine.Selection{Run: []string{id}})
			require.NotEmpty(t, rs)
			for _, r := range rs {
				assert.Equal(t, results.Fail, r.Outcome, "%s must fail against fault %q; got %s %s\n%s",
					r.FullName(), fault, r.Outcome, r.Message, transcript.Format(r.Transcript))
			}
		})
	}
}
