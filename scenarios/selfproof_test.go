package scenarios

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// catch is one fault a scenario must catch: against the role's reference
// peer with the fault on, every variant of the scenario (or of variants)
// fails, and the failure names rule among its rules broken (a MAY rule
// makes the outcome "unsupported" instead). want, when set, is in the
// words of the check that must fail, for a scenario whose later check the
// fault is there to prove, or whose step a global invariant would
// otherwise stand in for.
type catch[F ~string] struct {
	fault    F
	rule     string
	want     string
	variants []wire.Variant
	// regression marks a fault the suite before issue 10 passed: the
	// state or step that catches it was missing (see the regression table
	// in docs/state-space.md).
	regression bool
}

// serverCatch and clientCatch are the catches of each role's peer.
type (
	serverCatch = catch[refserver.Fault]
	clientCatch = catch[refclient.Fault]
)

// mustCatch says, for every server scenario, which reference-server
// faults break the rules its steps check. A check that cannot fail is a
// defect: each scenario must fail, in every variant it runs in, on its
// own step and not only through a global invariant, at the CLI's default
// timeouts.
var mustCatch = map[string][]serverCatch{
	"server/stream/node-only-on-first-request": {{fault: refserver.FaultRequireNodeEveryRequest, rule: "STREAM-4"}},
	"server/stream/type-implicit-on-per-type":  {{fault: refserver.FaultTypeURLRequired, rule: "ROB-4"}},
	"server/stream/every-type-served": {
		{fault: refserver.FaultDropOneType, rule: "STREAM-9"},
		{fault: refserver.FaultWrongTypeUrl, rule: "STREAM-9"},
	},
	"server/stream/vhds-over-delta":      {{fault: refserver.FaultNoDeltaVHDS, rule: "STREAM-10"}},
	"server/stream/no-unrequested-types": {{fault: refserver.FaultPushUnrequestedTypes, rule: "STREAM-2"}},
	"server/version/changes-on-update":   {{fault: refserver.FaultStaticVersion, rule: "VER-1"}},
	"server/version/independent-per-type": {
		{fault: refserver.FaultBumpAllTypes, rule: "UPD-1"},
	},
	"server/version/delta-resource-versions": {
		{fault: refserver.FaultNoResourceVersions, rule: "VER-7"},
		{fault: refserver.FaultFirstResourceVersion, rule: "VER-7", want: "the resource changed, so must its version"},
		{fault: refserver.FaultVersionOnFirstSendOnly, rule: "VER-7", want: "after a change"},
		{fault: refserver.FaultVersionPerPush, rule: "VER-7", want: "did not change, so its version must not", regression: true},
	},
	"server/ack/no-resend-after-ack":        {{fault: refserver.FaultResendOnAck, rule: "UPD-1"}},
	"server/ack/repeated-request-no-resend": {{fault: refserver.FaultResendOnAck, rule: "UPD-1"}},
	"server/nack/no-resend-loop": {
		{fault: refserver.FaultNackResendLoop, rule: "ACK-5"},
		{fault: refserver.FaultLateNackResend, rule: "ACK-5", regression: true},
	},
	"server/nack/new-version-after-nack": {
		{fault: refserver.FaultCloseOnNack, rule: "ACK-9"},
		{fault: refserver.FaultStallAfterNack, rule: "ACK-9", regression: true},
	},
	"server/nack/any-error-code": {
		{fault: refserver.FaultCloseOnNack, rule: "ACK-4"},
		{fault: refserver.FaultStallAfterNack, rule: "ACK-4"},
	},
	"server/nonce/non-empty":                     {{fault: refserver.FaultEmptyNonce, rule: "NONCE-1", want: "response nonce"}},
	"server/nonce/distinct":                      {{fault: refserver.FaultReuseNonce, rule: "NONCE-2", want: "was already used"}},
	"server/nonce/stale-request-ignored":         {{fault: refserver.FaultAnswerStaleNonce, rule: "NONCE-7"}},
	"server/nonce/converges-after-stale":         {{fault: refserver.FaultStaleNamesKept, rule: "NONCE-8"}},
	"server/nonce/delta-stale-nonce-subscribe":   {{fault: refserver.FaultDeltaDropStaleRequests, rule: "NONCE-12"}},
	"server/nonce/delta-unknown-nonce-subscribe": {{fault: refserver.FaultDeltaDropStaleRequests, rule: "NONCE-12"}},
	"server/update/latest-request-supersedes":    {{fault: refserver.FaultUpdatesAfterUnsubscribe, rule: "UPD-3"}},
	"server/resources/requested-supplied": {
		{fault: refserver.FaultFirstNameOnly, rule: "RES-2"},
		{fault: refserver.FaultRoutesFirstNameOnly, rule: "RES-2", regression: true},
		{fault: refserver.FaultIgnoreFirstRequest, rule: "RES-2"},
	},
	"server/resources/new-names-sent":                {{fault: refserver.FaultFirstRequestWins, rule: "RES-4"}},
	"server/resources/resubscribe-resends":           {{fault: refserver.FaultNoResendOnResubscribe, rule: "RES-5"}},
	"server/resources/empty-after-names-no-interest": {{fault: refserver.FaultEmptyMeansWildcard, rule: "RES-6"}},
	"server/resources/exact-name":                    {{fault: refserver.FaultListenerNameWithoutPort, rule: "RES-7"}},
	"server/resources/separate-streams":              {{fault: refserver.FaultBroadcastUpdates, rule: "MULTI-2"}},
	"server/wildcard/legacy-sends-all":               {{fault: refserver.FaultNoLegacyWildcard, rule: "WILD-2"}},
	"server/wildcard/star-sends-all":                 {{fault: refserver.FaultStarIsLiteral, rule: "WILD-1"}},
	"server/wildcard/legacy-pushes-created":          {{fault: refserver.FaultWildcardFrozen, rule: "WILD-2", regression: true}},
	"server/wildcard/star-pushes-created":            {{fault: refserver.FaultWildcardFrozen, rule: "WILD-1", regression: true}},
	"server/wildcard/star-plus-names":                {{fault: refserver.FaultStarIsLiteral, rule: "WILD-3"}},
	"server/wildcard/drop-star-keeps-names": {
		{fault: refserver.FaultStickyWildcard, rule: "WILD-4"},
		// SotW requests restate every name, so only delta can forget them.
		{fault: refserver.FaultDropNamesWithStar, rule: "WILD-4", want: "removing", variants: wire.DeltaOnly},
	},
	"server/wildcard/empty-after-names-not-wildcard": {{fault: refserver.FaultEmptyMeansWildcard, rule: "WILD-5"}},
	"server/wildcard/delta-state-machine":            {{fault: refserver.FaultStickyWildcard, rule: "WILD-6"}},
	"server/wildcard/named-subscription": {
		{fault: refserver.FaultWildcardOnlyLdsCds, rule: "WILD-8"},
		{fault: refserver.FaultNamedIsWildcard, rule: "WILD-8", want: "the resources of this scenario", variants: wire.SotWOnly},
	},
	"server/wildcard/member-stays-after-unsubscribe": {{fault: refserver.FaultUnsubscribeWildcardMember, rule: "WILD-9"}},
	"server/wildcard/delta-unsubscribe-overlap":      {{fault: refserver.FaultUnsubscribeWildcardMember, rule: "UNSUB-6"}},
	"server/deletion/sotw-named-omitted": {
		{fault: refserver.FaultNeverReportDeletions, rule: "DEL-7"},
		{fault: refserver.FaultStaticVersion, rule: "VER-1", want: "leaves out the deleted"},
		{fault: refserver.FaultForgetDeleted, rule: "DNE-3", regression: true},
	},
	"server/deletion/sotw-wildcard-omitted": {
		{fault: refserver.FaultNeverReportDeletions, rule: "DEL-7"},
		{fault: refserver.FaultStaticVersion, rule: "VER-1", want: "leaves out the deleted"},
		{fault: refserver.FaultEmptyStateOnDelete, rule: "GRP-1", want: "which was not deleted"},
		{fault: refserver.FaultForgetDeleted, rule: "WILD-2", regression: true},
	},
	"server/deletion/delta-named-removed": {
		{fault: refserver.FaultNeverReportDeletions, rule: "DEL-1"},
		{fault: refserver.FaultForgetDeleted, rule: "DNE-3", regression: true},
	},
	"server/deletion/delta-wildcard-removed": {
		{fault: refserver.FaultNoRemovalUnderWildcard, rule: "DEL-1", regression: true},
		{fault: refserver.FaultForgetDeleted, rule: "WILD-2", regression: true},
	},
	"server/grouping/full-state-named":      {{fault: refserver.FaultPartialStateForNamed, rule: "GRP-1", regression: true}},
	"server/grouping/full-state-wildcard":   {{fault: refserver.FaultPartialFullState, rule: "GRP-1"}},
	"server/grouping/replaced-whole":        {{fault: refserver.FaultMergeUpdates, rule: "GRP-4", regression: true}},
	"server/duplicates/no-duplicate-names":  {{fault: refserver.FaultDuplicateNames, rule: "DUP-1", want: "names a resource twice"}},
	"server/missing/delta-reported-removed": {{fault: refserver.FaultNoMissingReport, rule: "DNE-5"}},
	"server/missing/pushed-when-created":    {{fault: refserver.FaultForgetMissingSubscriptions, rule: "DNE-3"}},
	"server/unsubscribe/no-updates-after":   {{fault: refserver.FaultUpdatesAfterUnsubscribe, rule: "UNSUB-2"}},
	"server/unsubscribe/phantom-harmless":   {{fault: refserver.FaultPhantomUnsubscribeError, rule: "UNSUB-4"}},
	"server/delta/subscribe-always-resends": {{fault: refserver.FaultNoResendOnResubscribe, rule: "DELTA-3"}},
	"server/delta/resubscribe-resends":      {{fault: refserver.FaultNoResendOnResubscribe, rule: "DELTA-3"}},
	"server/delta/empty-ack-keeps-subscriptions": {
		{fault: refserver.FaultEmptyDeltaUnsubscribesAll, rule: "DELTA-2"},
	},
	"server/delta/push-only-changed":                  {{fault: refserver.FaultDeltaPushEverything, rule: "UPD-1", regression: true}},
	"server/delta/reconnect-changed-resent":           {{fault: refserver.FaultInitialVersionsSkipAll, rule: "DELTA-3"}},
	"server/delta/reconnect-unchanged-not-resent":     {{fault: refserver.FaultIgnoreInitialResourceVersions, rule: "DELTA-8"}},
	"server/delta/reconnect-deleted-reported":         {{fault: refserver.FaultIgnoreInitialResourceVersions, rule: "DELTA-8"}},
	"server/reconnect/sotw-new-names-after-reconnect": {{fault: refserver.FaultSkipCurrentVersionOnReconnect, rule: "RES-4"}},
	"server/ads/per-type-nonces":                      {{fault: refserver.FaultSharedAdsNonce, rule: "ADS-1"}},
	"server/ads/nack-one-type-others-continue": {
		// Closing the stream over a NACK breaks ACK-9 before anything else.
		{fault: refserver.FaultCloseOnNack, rule: "ACK-9"},
		{fault: refserver.FaultStallAfterNack, rule: "ADS-1"},
	},
	"server/ads/no-head-of-line":                 {{fault: refserver.FaultADSHeadOfLine, rule: "ADS-2", regression: true}},
	"server/ttl/only-for-capable-clients":        {{fault: refserver.FaultTTLForEveryone, rule: "TTL-1"}},
	"server/ttl/removed-by-resend":               {{fault: refserver.FaultTTLChangeNotPushed, rule: "TTL-3"}},
	"server/ttl/wrapped-only-for-capable":        {{fault: refserver.FaultWrapForEveryone, rule: "TTL-5", want: "comes wrapped in a Resource"}},
	"server/dynamic/sotw-by-name-bare":           {{fault: refserver.FaultWrapForEveryone, rule: "TTL-5", want: "comes wrapped in a Resource"}},
	"server/warming/endpoints-after-cluster":     {{fault: refserver.FaultSlowWarming, rule: "WARM-3"}},
	"server/warming/unchanged-routes-not-resent": {{fault: refserver.FaultResendRoutesOnListenerUpdate, rule: "WARM-5"}},
	"server/warming/endpoints-resent-after-cluster-update": {
		{fault: refserver.FaultNoCLAAfterClusterUpdate, rule: "WARM-4"},
		{fault: refserver.FaultResendOnAck, rule: "UPD-1"},
		{fault: refserver.FaultReloadUnsubscribed, rule: "UNSUB-2"},
	},
	"server/consistency/cluster-swap": {
		{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-1"},
		{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-2"},
		{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-4"},
		{fault: refserver.FaultRemovalsFirst, rule: "CONS-6"},
		{fault: refserver.FaultStaticVersion, rule: "VER-1", variants: wire.SotWOnly},
	},
	"server/consistency/new-listener": {
		{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-3"},
		{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-4"},
	},
	"server/consistency/virtual-hosts-after-routes": {{fault: refserver.FaultOrderAsSubscribed, rule: "CONS-5"}},
	"server/grouping/partial-other-types":           {{fault: refserver.FaultFullStateEveryType, rule: "GRP-2"}},
	"server/delta/subscribe-by-alias":               {{fault: refserver.FaultAliasesIgnored, rule: "DELTA-10"}},
	// Robustness: a crash shows on a new stream, a wedge on the same one.
	// A crashed server stays down, so each variant gets a server of its own.
	"server/robustness/unknown-type": {
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.SotWADS}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.DeltaADS}},
	},
	"server/robustness/empty-type-on-ads": {
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.SotWADS}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.DeltaADS}},
	},
	"server/robustness/foreign-type-on-per-type-stream": {
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.SotWPerType}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.DeltaPerType}},
	},
	"server/robustness/no-node": {
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.SotWADS}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.SotWPerType}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.DeltaADS}},
		{fault: refserver.FaultCrashOnUnservable, rule: "ROB-1", want: "a new stream was not served", variants: []wire.Variant{wire.DeltaPerType}},
	},
	"server/robustness/many-names":                {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/long-name":                 {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/odd-characters":            {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/duplicate-names":           {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/subscribe-and-unsubscribe": {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/unknown-version":           {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/unknown-nonce":             {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
	"server/robustness/huge-nack":                 {{fault: refserver.FaultWedgeOnUnusualRequest, rule: "ROB-2", want: "neither served"}},
}

func TestSelfProofTableCoversEveryServerScenario(t *testing.T) {
	requireTableCovers(t, Server(), mustCatch)
}

// Every server scenario fails, in every variant, against the reference
// server with each fault that breaks one of its steps, at the CLI's
// default timeouts, and the failure names the rule that step checks. The
// runs mostly wait (for what a faulty server never sends), so they all go
// at once, each against its own reference server, and are judged after.
func TestServerScenariosFailAgainstTheirFaults(t *testing.T) {
	proveCatches(t, mustCatch, func(id string, c serverCatch) ([]results.Result, error) {
		return runWithFault(c.fault, engine.DefaultTimeouts, engine.Selection{Run: []string{id}, Variants: c.variants})
	})
}

// requireTableCovers checks that table proves every scenario of catalogue
// and names no other, each catch with its rule.
func requireTableCovers[F ~string](t *testing.T, catalogue []*engine.Scenario, table map[string][]catch[F]) {
	ids := map[string]bool{}
	for _, s := range catalogue {
		ids[s.ID] = true
		assert.Contains(t, table, s.ID, "scenario %s has no fault proving it can fail", s.ID)
	}
	for id, catches := range table {
		assert.True(t, ids[id], "self-proof table names unknown scenario %s", id)
		for _, c := range catches {
			assert.NotEmpty(t, c.rule, "%s / %s: say which rule the fault breaks", id, c.fault)
		}
	}
}

// selfProofParallel caps the self-proof runs going at once.
const selfProofParallel = 48

// selfProofOnly is the regular expression of $XDSCONFORM_SELFPROOF, nil
// when unset: it restricts the self-proof runs to the scenarios whose IDs
// it matches, since a -run pattern selects among the subtests only after
// every run went (they all go at once).
func selfProofOnly(t *testing.T) *regexp.Regexp {
	expr := os.Getenv("XDSCONFORM_SELFPROOF")
	if expr == "" {
		return nil
	}
	re, err := regexp.Compile(expr)
	require.NoError(t, err, "$XDSCONFORM_SELFPROOF")
	return re
}

// proveCatches runs every catch of table at once, with run, and judges
// each: all its results fail (or are unsupported, for a MAY rule), name
// its rule among the rules broken, and carry its words.
func proveCatches[F ~string](t *testing.T, table map[string][]catch[F], run func(id string, c catch[F]) ([]results.Result, error)) {
	type job struct {
		id  string
		c   catch[F]
		rs  []results.Result
		err error
	}
	var jobs []*job
	only := selfProofOnly(t)
	for id, catches := range table {
		if only != nil && !only.MatchString(id) {
			continue
		}
		for _, c := range catches {
			jobs = append(jobs, &job{id: id, c: c})
		}
	}
	// At most selfProofParallel runs at once: each starts reference peers
	// of its own, and hundreds at once under the race detector on two
	// cores starved status reads and timers past the CLI's default
	// timeouts, which the runs are held to.
	var wg sync.WaitGroup
	sem := make(chan struct{}, selfProofParallel)
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			j.rs, j.err = run(j.id, j.c)
		})
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.id+"/"+string(j.c.fault), func(t *testing.T) {
			require.NoError(t, j.err)
			require.NotEmpty(t, j.rs)
			want := results.Fail
			if engine.LevelOf(j.c.rule, "") == results.May {
				want = results.Unsupported
			}
			for _, r := range j.rs {
				assert.Equal(t, want, r.Outcome, "%s must be %s against fault %q; got %s %s\n%s",
					r.FullName(), want, j.c.fault, r.Outcome, r.Message, transcript.Format(r.Transcript))
				assert.True(t, slices.Contains(r.RulesBroken, j.c.rule), "%s against fault %q must name %s among the rules broken; it names %v: %s",
					r.FullName(), j.c.fault, j.c.rule, r.RulesBroken, r.Message)
				assert.Contains(t, r.Message, j.c.want, "%s must fail on the check that %q breaks", r.FullName(), j.c.fault)
			}
		})
	}
}

// runWithFault runs the selection against a reference server of its own
// with fault on; it returns errors instead of failing a test, since it
// runs on goroutines of its own.
func runWithFault(fault refserver.Fault, to engine.Timeouts, sel engine.Selection) ([]results.Result, error) {
	srv, err := targets.StartServer(context.Background(), targets.ServerOptions{Target: targets.BuiltinReference, Faults: faultNames(fault)})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	pairs, err := engine.Expand(Server(), sel)
	if err != nil {
		return nil, err
	}
	rs, _ := engine.Run(context.Background(), pairs, engine.Config{Env: srv, Timeouts: to})
	return rs, nil
}
