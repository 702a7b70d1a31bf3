package scenarios

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/peers/grpcgoclient"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// TestMain lets the built-in grpc-go client target re-execute this test
// binary as its child client process.
func TestMain(m *testing.M) {
	grpcgoclient.RunChildIfRequested()
	os.Exit(m.Run())
}

// testDNETimer is the reference client's does-not-exist timer in tests:
// longer than the quiet window, so "not yet reported as missing" checks are
// not overtaken by the timer itself, and short enough to keep tests quick.
const testDNETimer = 3 * time.Second

// clientTimeouts: the quiet window must outlast a faulty client's reaction
// under -race on two busy cores.
var clientTimeouts = engine.Timeouts{Expect: 2 * time.Second, Quiet: time.Second, Scenario: 60 * time.Second}

// runClientSuite runs the selected client scenarios against the client
// opts describes, with cfg (its Env set here).
func runClientSuite(t testing.TB, opts targets.ClientOptions, cfg engine.Config, sel engine.Selection) []results.Result {
	t.Helper()
	clients, err := targets.NewClients(opts)
	require.NoError(t, err)
	pairs, err := engine.Expand(Client(), sel)
	require.NoError(t, err)
	cfg.Env = clients
	rs, interrupted := engine.Run(context.Background(), pairs, cfg)
	require.False(t, interrupted)
	return rs
}

// referenceIn is reference with the reference client in profile.
func referenceIn(profile string, faults ...refclient.Fault) targets.ClientOptions {
	o := targets.ClientOptions{Target: targets.BuiltinReference, DNETimer: testDNETimer, Profile: profile}
	for _, f := range faults {
		o.Faults = append(o.Faults, string(f))
	}
	return o
}

// profileOf is the client profile scenario id is written for.
func profileOf(id string) string {
	for _, s := range Client() {
		if s.ID == id && slices.Contains(s.Needs, targets.NeedEnvoyProfile) {
			return targets.ProfileEnvoy
		}
	}
	return targets.ProfileGRPC
}

// profileSkips are the reasons a pair is skipped for the profile.
const profileSkips = "written for the gRPC client profile|needs an Envoy-profile client"

func TestClientCatalogueIsValid(t *testing.T) {
	require.NoError(t, engine.Validate(Client()))
	assert.GreaterOrEqual(t, len(Client()), 30)
}

// Every client scenario passes against the conformant reference client in
// every variant it applies to: in the gRPC profile those written for it,
// in the Envoy profile the others.
func TestClientSuitePassesAgainstReference(t *testing.T) {
	ran := map[string]int{}
	// One after the other: the timing scenarios (backoff) are measured on
	// a machine no busier than the gRPC profile's run makes it.
	for _, profile := range []string{targets.ProfileGRPC, targets.ProfileEnvoy} {
		t.Run(profile, func(t *testing.T) {
			for _, r := range runClientSuite(t, referenceIn(profile), engine.Config{Timeouts: clientTimeouts}, engine.Selection{}) {
				if r.Outcome == results.Skip {
					assert.Regexp(t, profileSkips, r.Message, r.FullName())
					continue
				}
				ran[r.FullName()]++
				assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			}
		})
	}
	pairs, err := engine.Expand(Client(), engine.Selection{})
	require.NoError(t, err)
	for _, p := range pairs {
		assert.Equal(t, 1, ran[p.FullName()], "%s runs in exactly one profile", p.FullName())
	}
}

var (
	sotwOnly  = wire.SotWOnly
	deltaOnly = wire.DeltaOnly
)

// mustCatchClient says, for every client scenario, which reference-client
// faults break the rules its steps check, at the CLI's default timeouts.
var mustCatchClient = map[string][]clientCatch{
	"client/stream/client-speaks-first": {{fault: refclient.FaultWaitsForServer, rule: "STREAM-1"}},
	"client/stream/node-on-first-request": {
		{fault: refclient.FaultNoNode, rule: "STREAM-3"},
		{fault: refclient.FaultNodeWithoutCluster, rule: "STREAM-3", want: "node.cluster"},
		{fault: refclient.FaultWrongNodeID, rule: "STREAM-3", want: "node.id of its bootstrap"},
	},
	"client/stream/node-identical":        {{fault: refclient.FaultNodeDrifts, rule: "STREAM-5"}},
	"client/stream/type-url-on-requests":  {{fault: refclient.FaultNoTypeURL, rule: "STREAM-6"}},
	"client/stream/initial-request-shape": {{fault: refclient.FaultWrongListenerName, rule: "RES-1"}},
	"client/stream/one-ads-stream":        {{fault: refclient.FaultADSStreamPerType, rule: "ADS-3"}},
	"client/nack/non-ads-config-source":   {{fault: refclient.FaultAnyConfigSource, rule: "STREAM-11"}},
	"client/ack/version-and-nonce": {
		{fault: refclient.FaultAckWrongVersion, rule: "ACK-2"},
		{fault: refclient.FaultAckEmptyNames, rule: "ACK-2", want: "should keep asking for"},
	},
	"client/ack/every-response":      {{fault: refclient.FaultSkipAcks, rule: "ACK-1"}},
	"client/ack/versions-per-server": {{fault: refclient.FaultSharedVersionAcrossServers, rule: "VER-3", want: "last accepted from another management server"}},
	"client/ack/versions-per-type": {
		{fault: refclient.FaultAckWrongVersion, rule: "ACK-2"},
		// Per-type streams carry one type each: a stream-wide version is
		// the type's own there.
		{fault: refclient.FaultStreamWideVersion, rule: "VER-2", want: "it should carry the CDS version", variants: []wire.Variant{wire.SotWADS}},
	},
	"client/nack/error-detail": {
		{fault: refclient.FaultNackWithoutErrorDetail, rule: "ACK-3", variants: sotwOnly},
		{fault: refclient.FaultNackWithoutErrorDetail, rule: "DELTA-1", variants: deltaOnly},
		{fault: refclient.FaultNackRejectedVersion, rule: "ACK-3", want: "the NACK's version must be empty", variants: sotwOnly},
		{fault: refclient.FaultNackCodeOK, rule: "ACK-3", variants: sotwOnly, regression: true},
		{fault: refclient.FaultNackCodeOK, rule: "DELTA-1", variants: deltaOnly, regression: true},
		{fault: refclient.FaultNackEmptyNames, rule: "RES-1", variants: sotwOnly, regression: true},
	},
	"client/nack/error-message":         {{fault: refclient.FaultNackEmptyMessage, rule: "ACK-4"}},
	"client/nack/last-accepted-version": {{fault: refclient.FaultNackRejectedVersion, rule: "ACK-3"}},
	"client/nack/keeps-previous":        {{fault: refclient.FaultNackWithoutErrorDetail, rule: "ACK-7", variants: sotwOnly}},
	"client/nack/partial-use":           {{fault: refclient.FaultAllOrNothing, rule: "ACK-8"}},
	"client/nack/reported-in-status": {
		{fault: refclient.FaultNoErrorState, rule: "OBS-1"},
		{fault: refclient.FaultEmptyErrorState, rule: "OBS-1", want: "come with the error the client found"},
	},
	"client/nack/recovery": {{fault: refclient.FaultNackSticky, rule: "ACK-6"}},
	"client/nack/duplicate-names": {
		{fault: refclient.FaultAckDuplicates, rule: "DUP-2"},
		{fault: refclient.FaultApplyDuplicates, rule: "DUP-2", want: "using a copy of the duplicated cluster", regression: true},
	},
	"client/nack/empty-name":    {{fault: refclient.FaultCrashOnEmptyName, rule: "ACK-7"}},
	"client/nack/type-mismatch": {{fault: refclient.FaultIgnoreAnyType, rule: "STREAM-8"}},
	"client/ack/prompt": {
		{fault: refclient.FaultSlowAcks, rule: "UPD-2", regression: true},
		// One second late passed when the quiet window was the threshold.
		{fault: refclient.FaultLateAcks1s, rule: "UPD-2", regression: true},
	},
	"client/ack/reply-first": {{fault: refclient.FaultRequestBeforeAck, rule: "UPD-4", regression: true}},
	"client/ack/hint-update": {{fault: refclient.FaultHintWithoutVersion, rule: "HINT-1"}},
	"client/nonce/latest-echoed": {
		{fault: refclient.FaultEchoOldNonce, rule: "NONCE-3", variants: sotwOnly},
		{fault: refclient.FaultEchoOldNonce, rule: "DELTA-1", variants: deltaOnly},
	},
	"client/nonce/per-type-on-ads":                  {{fault: refclient.FaultStreamWideNonce, rule: "NONCE-3"}},
	"client/nonce/empty-only-before-first-response": {{fault: refclient.FaultAckEmptyNonce, rule: "NONCE-4"}},
	"client/nonce/fresh-after-reconnect":            {{fault: refclient.FaultReuseNonceAfterReconnect, rule: "NONCE-5"}},
	"client/nonce/kept-after-unsubscribe-all": {
		{fault: refclient.FaultForgetNonceOnUnsubscribe, rule: "NONCE-6"},
		{fault: refclient.FaultLastUnsubscribeSaysNothing, rule: "UNSUB-1", want: "should drop the endpoints"},
	},
	"client/nonce/latest-after-nack": {{fault: refclient.FaultNonceOfLastAccepted, rule: "NONCE-3", regression: true}},
	"client/unsubscribe/last-resource": {
		{fault: refclient.FaultSilentLastUnsubscribe, rule: "UNSUB-1"},
		{fault: refclient.FaultLastUnsubscribeSaysNothing, rule: "UNSUB-1", want: "endpoints"},
	},
	"client/resources/full-name-set":           {{fault: refclient.FaultOnlyNewNames, rule: "RES-1"}},
	"client/resources/weighted-clusters-asked": {{fault: refclient.FaultWeightedClustersIgnored, rule: "RES-1"}},
	"client/resources/unrequested-ignored": {
		{fault: refclient.FaultNackUnrequested, rule: "RES-3"},
		{fault: refclient.FaultApplyUnrequested, rule: "RES-3", want: "as in use"},
	},
	"client/delta/unrequested-ignored": {
		{fault: refclient.FaultNackUnrequested, rule: "DELTA-5"},
		{fault: refclient.FaultApplyUnrequested, rule: "DELTA-5", want: "as in use"},
	},
	"client/resources/empty-list-is-no-interest": {{fault: refclient.FaultEmptyIsWildcard, rule: "RES-6", regression: true}},
	"client/resources/unsolicited-push": {
		{fault: refclient.FaultIgnoreUpdates, rule: "UPD-6"},
		{fault: refclient.FaultStatusShowsFirstConfig, rule: "UPD-6", want: "exactly the resource last accepted"},
	},
	"client/resources/late-first-answer": {{fault: refclient.FaultReconnectOnSilence, rule: "UPD-5"}},
	"client/resources/silence-tolerated": {{fault: refclient.FaultReconnectOnSilence, rule: "UPD-5"}},
	"client/resources/wrapped-in-sotw": {
		{fault: refclient.FaultNoUnwrap, rule: "TTL-6"},
		{fault: refclient.FaultStatusShowsFirstConfig, rule: "TTL-6", want: "exactly the resource last accepted"},
	},
	"client/resources/heartbeat-keeps-resource": {
		{fault: refclient.FaultNoUnwrap, rule: "TTL-6"},
		{fault: refclient.FaultHeartbeatDeletes, rule: "TTL-6", want: "deleted by a heartbeat"},
		{fault: refclient.FaultStatusShowsFirstConfig, rule: "TTL-6", want: "exactly the resource last accepted"},
	},
	"client/ttl/expires":                    {{fault: refclient.FaultIgnoreTTL, rule: "TTL-2"}},
	"client/ttl/removed-by-resend":          {{fault: refclient.FaultTTLSticks, rule: "TTL-3"}},
	"client/ttl/heartbeat-refreshes":        {{fault: refclient.FaultHeartbeatNoRefresh, rule: "TTL-4"}},
	"client/deletion/sotw-listener-absence": {{fault: refclient.FaultIgnoreLdsCdsOmission, rule: "DEL-4"}},
	"client/deletion/sotw-listener-absence-among-others": {
		{fault: refclient.FaultIgnoreLdsCdsOmission, rule: "DEL-4"},
		{fault: refclient.FaultOmissionOnlyWhenEmpty, rule: "DEL-4", regression: true},
	},
	"client/deletion/sotw-cluster-absence": {{fault: refclient.FaultIgnoreLdsCdsOmission, rule: "DEL-4"}},
	"client/deletion/sotw-cluster-absence-among-others": {
		{fault: refclient.FaultIgnoreLdsCdsOmission, rule: "DEL-4"},
		{fault: refclient.FaultOmissionOnlyWhenEmpty, rule: "DEL-4", regression: true},
	},
	"client/deletion/sotw-route-absence-kept":                  {{fault: refclient.FaultOmissionDeletesAllTypes, rule: "DEL-5"}},
	"client/deletion/sotw-route-absence-kept-among-others":     {{fault: refclient.FaultOmissionDeletesAllTypes, rule: "DEL-5"}},
	"client/deletion/sotw-endpoints-absence-kept":              {{fault: refclient.FaultOmissionDeletesAllTypes, rule: "DEL-5"}},
	"client/deletion/sotw-endpoints-absence-kept-among-others": {{fault: refclient.FaultOmissionDeletesAllTypes, rule: "DEL-5"}},
	"client/deletion/delta-removed":                            {{fault: refclient.FaultIgnoreRemoved, rule: "DEL-2"}},
	"client/deletion/delta-removed-together":                   {{fault: refclient.FaultIgnoreRemoved, rule: "DEL-2"}},
	"client/deletion/delta-removed-among-updates": {
		{fault: refclient.FaultIgnoreRemoved, rule: "DEL-2"},
		{fault: refclient.FaultIgnoreRemovedWithResources, rule: "DEL-2", regression: true},
	},
	"client/deletion/delta-omission-kept":        {{fault: refclient.FaultDeltaOmissionDeletes, rule: "GRP-3", regression: true}},
	"client/deletion/unreferenced-route-dropped": {{fault: refclient.FaultNeverUnsubscribe, rule: "DEL-6"}},
	"client/deletion/delta-unknown-removal":      {{fault: refclient.FaultNackUnknownRemoval, rule: "DEL-3"}},
	"client/dne/timer": {
		{fault: refclient.FaultNoDneTimer, rule: "DNE-1", variants: sotwOnly},
		{fault: refclient.FaultNoDneTimer, rule: "DNE-6", variants: deltaOnly},
		{fault: refclient.FaultEarlyDNE, rule: "DNE-1", want: "long before the timer", variants: sotwOnly},
		{fault: refclient.FaultEarlyDNE, rule: "DNE-6", want: "long before the timer", variants: deltaOnly},
	},
	"client/dne/absence-not-proof":             {{fault: refclient.FaultAbsenceIsProof, rule: "DNE-2"}},
	"client/dne/late-resource-accepted":        {{fault: refclient.FaultIgnoreAfterDne, rule: "DNE-4"}},
	"client/dne/held-survive-reconnect":        {{fault: refclient.FaultDNEAfterReconnect, rule: "DNE-7", regression: true}},
	"client/reconnect/resubscribes-everything": {{fault: refclient.FaultForgetSubscriptionsOnReconnect, rule: "RECONN-3", variants: sotwOnly}, {fault: refclient.FaultForgetSubscriptionsOnReconnect, rule: "DELTA-7", variants: deltaOnly}},
	"client/reconnect/last-accepted-versions":  {{fault: refclient.FaultReconnectEmptyVersion, rule: "VER-4"}},
	"client/reconnect/no-accidental-wildcard":  {{fault: refclient.FaultEmptyLdsOnReconnect, rule: "RES-1"}},
	"client/reconnect/initial-resource-versions": {
		{fault: refclient.FaultStaleInitialVersions, rule: "DELTA-6"},
		{fault: refclient.FaultIrvSystemVersion, rule: "DELTA-6", regression: true},
	},
	"client/reconnect/initial-versions-only-first": {{fault: refclient.FaultIrvOnEveryRequest, rule: "DELTA-6"}},
	"client/reconnect/keeps-config":                {{fault: refclient.FaultDropCacheOnDisconnect, rule: "RECONN-2"}},
	"client/reconnect/after-outage":                {{fault: refclient.FaultGiveUpAfterFailedOpen, rule: "RECONN-2"}},
	"client/reconnect/backoff": {
		{fault: refclient.FaultNoBackoff, rule: "RECONN-1"},
		{fault: refclient.FaultBackoffNeverResets, rule: "RECONN-1", want: "after a stream that had a response"},
	},
	"client/delta/ack-shape": {
		{fault: refclient.FaultDeltaAckWithoutNonce, rule: "DELTA-1"},
		// On a per-type stream the stream's latest nonce is its type's.
		{fault: refclient.FaultStreamWideNonce, rule: "NONCE-11", variants: []wire.Variant{wire.DeltaADS}, regression: true},
	},
	"client/delta/acks-keep-lists-empty":        {{fault: refclient.FaultResubscribeInAcks, rule: "DELTA-2"}},
	"client/delta/system-version-informational": {{fault: refclient.FaultNackDecreasingSystemVersion, rule: "VER-6"}},
	// The Envoy profile's: run against the reference client in it.
	"client/wildcard/redeclared-on-delta-reconnect": {{fault: refclient.FaultWildcardLostOnReconnect, rule: "WILD-7"}},
	"client/ttl/expires-across-reconnect":           {{fault: refclient.FaultTTLLostOnReconnect, rule: "TTL-2", regression: true}},
	"client/dne/timer-restarts-on-reconnect":        {{fault: refclient.FaultDNEOutlivesStream, rule: "DNE-7", regression: true}},
	"client/nack/first-version-in-status": {
		{fault: refclient.FaultNackWithoutErrorDetail, rule: "ACK-7"},
		{fault: refclient.FaultNoErrorState, rule: "OBS-1", want: "where it should show it NACKED"},
		{fault: refclient.FaultEmptyErrorState, rule: "OBS-1", want: "come with the error the client found"},
		{fault: refclient.FaultStatusShowsRejectedVersion, rule: "OBS-1", want: "no version of it is in use", regression: true},
	},
	"client/warming/listener-update-keeps-route": {
		{fault: refclient.FaultUpdateSkipsWarming, rule: "WARM-2", want: "other than version 1 in use"},
		{fault: refclient.FaultWarmingDropsInUseRefs, rule: "WARM-2", regression: true},
		{fault: refclient.FaultUpdateAwaitsHeldRoutes, rule: "WARM-1", regression: true},
	},
	"client/warming/each-cluster-its-own-endpoints": {{fault: refclient.FaultNoWarming, rule: "WARM-1"}, {fault: refclient.FaultWarmingEndsAtTimer, rule: "WARM-1", regression: true}},
	"client/warming/default-chain-waits-for-route":  {{fault: refclient.FaultDefaultChainIgnored, rule: "WARM-1", regression: true}},
	"client/warming/ends-at-initial-fetch-timeout":  {{fault: refclient.FaultWarmsForever, rule: "WARM-2", regression: true}},
	"client/warming/cluster-waits-for-endpoints":    {{fault: refclient.FaultNoWarming, rule: "WARM-1"}, {fault: refclient.FaultDumpOmitsWarming, rule: "WARM-1"}, {fault: refclient.FaultWarmingEndsAtTimer, rule: "WARM-1", regression: true}},
	"client/warming/update-waits-for-endpoints":     {{fault: refclient.FaultUpdateSkipsWarming, rule: "WARM-2"}},
	"client/status/envoy-chain-shown":               {{fault: refclient.FaultDumpOmitsRoutes, rule: "OBS-1"}, {fault: refclient.FaultDumpOmitsErrorDetails, rule: "OBS-1"}, {fault: refclient.FaultNackWithoutErrorDetail, rule: "ACK-7", variants: sotwOnly}},
	"client/vhds/never-over-sotw":                   {{fault: refclient.FaultVHDSOverSotW, rule: "STREAM-10", want: "over SotW"}},
	// Robustness (scenarios/client_robustness.go).
	"client/robustness/undecodable-resource":            {{fault: refclient.FaultCrashOnUnusableResponse, rule: "ROB-3"}, {fault: refclient.FaultNackSticky, rule: "ACK-6"}},
	"client/robustness/unknown-type":                    {{fault: refclient.FaultCrashOnUnusableResponse, rule: "ROB-3", want: "the client stopped"}},
	"client/robustness/foreign-type-on-per-type-stream": {{fault: refclient.FaultForeignTypeApplied, rule: "ROB-3", variants: sotwOnly}},
	"client/robustness/empty-nonce":                     {{fault: refclient.FaultCrashOnUnusableResponse, rule: "ROB-3", want: "the client stopped"}},
	"client/robustness/long-nonce":                      {{fault: refclient.FaultCrashOnUnusableResponse, rule: "ROB-3", want: "the client stopped"}},
}

func TestSelfProofTableCoversEveryClientScenario(t *testing.T) {
	requireTableCovers(t, Client(), mustCatchClient)
}

// Every client scenario fails, in every variant, against the reference
// client with each fault that breaks one of its steps, at the CLI's
// default timeouts, and names the rule that step checks. The runs mostly
// wait, so they all go at once and are judged after.
func TestClientScenariosFailAgainstTheirFaults(t *testing.T) {
	proveCatches(t, mustCatchClient, func(id string, c clientCatch) ([]results.Result, error) {
		return runClientWithFault(profileOf(id), c.fault, engine.Selection{Run: []string{id}, Variants: c.variants})
	})
}

// runClientWithFault runs the selection against the reference client in
// profile with fault on, at the CLI's default timeouts; errors are
// returned, not reported, since it runs on goroutines of its own.
func runClientWithFault(profile string, fault refclient.Fault, sel engine.Selection) ([]results.Result, error) {
	clients, err := targets.NewClients(referenceIn(profile, fault))
	if err != nil {
		return nil, err
	}
	pairs, err := engine.Expand(Client(), sel)
	if err != nil {
		return nil, err
	}
	rs, _ := engine.Run(context.Background(), pairs, engine.Config{Env: clients, Timeouts: engine.DefaultTimeouts})
	return rs, nil
}

// grpc-go's xDS client fails exactly what its shipped known-failing list
// says.
func TestClientSuiteAgainstGRPCGo(t *testing.T) {
	known, err := knownfailing.ForClient(targets.BuiltinGRPCGo)
	require.NoError(t, err)
	require.NotNil(t, known)
	// The CLI's timeouts: grpc-go's reconnect backoff (1 s, then 1.6
	// times longer) outlasts a shorter expect timeout.
	rs := runClientSuite(t, targets.ClientOptions{Target: targets.BuiltinGRPCGo}, engine.Config{Timeouts: engine.DefaultTimeouts, KnownFailing: known}, engine.Selection{})
	var pairs []engine.Pair
	for _, s := range Client() {
		for _, v := range s.Variants {
			pairs = append(pairs, engine.Pair{Scenario: s, Variant: v})
		}
	}
	assert.Empty(t, known.Unmatched(pairs), "known-failing entries that match no scenario")
	for _, r := range rs {
		if reason := known.ReasonFor(r.ID, r.Variant); reason != "" {
			// A pair blocked by the listed rule is its failure too.
			assert.True(t, r.Failed(), "%s is listed as known-failing (%s) but %s", r.FullName(), reason, r.Outcome)
			// The engine excuses only a failure of a rule the entry names.
			assert.NotEmpty(t, r.KnownFailing, "%s: %s", r.FullName(), r.Message)
			continue
		}
		if r.Outcome == results.Skip {
			// Variants it does not speak, optional features it does not
			// advertise (TTLs), and the Envoy profile's scenarios.
			assert.Regexp(t, "does not speak|does not advertise|does not claim feature|needs an Envoy-profile client", r.Message, "%s: grpc-go should only skip variants and features it lacks", r.FullName())
			continue
		}
		if r.Outcome == results.Unsupported {
			continue // a MAY behaviour it does not implement: no failure
		}
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}
