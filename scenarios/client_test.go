package scenarios

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/grpcgoclient"
	"github.com/xdsconform/xdsconform/knownfailing"
	"github.com/xdsconform/xdsconform/refclient"
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

func runClientSuite(t testing.TB, opts targets.ClientOptions, to engine.Timeouts, sel engine.Selection) []results.Result {
	t.Helper()
	clients, err := targets.NewClients(opts)
	require.NoError(t, err)
	pairs, err := engine.Expand(Client(), sel)
	require.NoError(t, err)
	rs, interrupted := engine.Run(context.Background(), pairs, engine.Config{Env: clients, Timeouts: to})
	require.False(t, interrupted)
	return rs
}

func reference(faults ...refclient.Fault) targets.ClientOptions {
	o := targets.ClientOptions{Target: targets.BuiltinReference, DNETimer: testDNETimer}
	for _, f := range faults {
		o.Faults = append(o.Faults, string(f))
	}
	return o
}

func TestClientCatalogueIsValid(t *testing.T) {
	require.NoError(t, engine.Validate(Client()))
	assert.GreaterOrEqual(t, len(Client()), 30)
}

// Every client scenario passes against the conformant reference client in
// every variant it applies to.
func TestClientSuitePassesAgainstReference(t *testing.T) {
	for _, r := range runClientSuite(t, reference(), clientTimeouts, engine.Selection{}) {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}

// mustCatchClient says, for every client scenario, which reference-client
// fault breaks the rule it checks.
var mustCatchClient = map[string]refclient.Fault{
	"client/stream/client-speaks-first":             refclient.FaultWaitsForServer,
	"client/stream/node-on-first-request":           refclient.FaultNoNode,
	"client/stream/node-identical":                  refclient.FaultNodeDrifts,
	"client/stream/type-url-on-requests":            refclient.FaultNoTypeURL,
	"client/stream/initial-request-shape":           refclient.FaultWrongListenerName,
	"client/stream/one-ads-stream":                  refclient.FaultADSStreamPerType,
	"client/nack/non-ads-config-source":             refclient.FaultAnyConfigSource,
	"client/ack/version-and-nonce":                  refclient.FaultAckWrongVersion,
	"client/ack/every-response":                     refclient.FaultSkipAcks,
	"client/ack/versions-per-type":                  refclient.FaultAckWrongVersion,
	"client/nack/error-detail":                      refclient.FaultNackWithoutErrorDetail,
	"client/nack/error-message":                     refclient.FaultNackEmptyMessage,
	"client/nack/last-accepted-version":             refclient.FaultNackRejectedVersion,
	"client/nack/keeps-previous":                    refclient.FaultApplyRejected,
	"client/nack/reported-in-status":                refclient.FaultNoErrorState,
	"client/nack/recovery":                          refclient.FaultNackSticky,
	"client/nack/duplicate-names":                   refclient.FaultAckDuplicates,
	"client/nack/empty-name":                        refclient.FaultCrashOnEmptyName,
	"client/nack/type-mismatch":                     refclient.FaultIgnoreAnyType,
	"client/nonce/latest-echoed":                    refclient.FaultEchoOldNonce,
	"client/nonce/per-type-on-ads":                  refclient.FaultStreamWideNonce,
	"client/nonce/empty-only-before-first-response": refclient.FaultAckEmptyNonce,
	"client/nonce/fresh-after-reconnect":            refclient.FaultReuseNonceAfterReconnect,
	"client/nonce/kept-after-unsubscribe-all":       refclient.FaultForgetNonceOnUnsubscribe,
	"client/unsubscribe/last-resource":              refclient.FaultSilentLastUnsubscribe,
	"client/resources/wrapped-in-sotw":              refclient.FaultNoUnwrap,
	"client/resources/heartbeat-keeps-resource":     refclient.FaultNoUnwrap,
	"client/resources/full-name-set":                refclient.FaultOnlyNewNames,
	"client/resources/unrequested-ignored":          refclient.FaultNackUnrequested,
	"client/resources/unsolicited-push":             refclient.FaultIgnoreUpdates,
	"client/resources/silence-tolerated":            refclient.FaultReconnectOnSilence,
	"client/deletion/sotw-listener-absence":         refclient.FaultIgnoreLdsCdsOmission,
	"client/deletion/sotw-cluster-absence":          refclient.FaultIgnoreLdsCdsOmission,
	"client/deletion/sotw-route-absence-kept":       refclient.FaultOmissionDeletesAllTypes,
	"client/deletion/sotw-endpoints-absence-kept":   refclient.FaultOmissionDeletesAllTypes,
	"client/deletion/delta-removed":                 refclient.FaultIgnoreRemoved,
	"client/deletion/delta-unknown-removal":         refclient.FaultNackUnknownRemoval,
	"client/dne/timer":                              refclient.FaultNoDneTimer,
	"client/dne/absence-not-proof":                  refclient.FaultAbsenceIsProof,
	"client/dne/late-resource-accepted":             refclient.FaultIgnoreAfterDne,
	"client/reconnect/resubscribes-everything":      refclient.FaultForgetSubscriptionsOnReconnect,
	"client/reconnect/last-accepted-versions":       refclient.FaultReconnectEmptyVersion,
	"client/reconnect/no-accidental-wildcard":       refclient.FaultEmptyLdsOnReconnect,
	"client/reconnect/initial-resource-versions":    refclient.FaultStaleInitialVersions,
	"client/reconnect/initial-versions-only-first":  refclient.FaultIrvOnEveryRequest,
	"client/reconnect/keeps-config":                 refclient.FaultDropCacheOnDisconnect,
	"client/delta/ack-shape":                        refclient.FaultDeltaAckWithoutNonce,
	"client/delta/system-version-informational":     refclient.FaultNackDecreasingSystemVersion,
}

// alsoCatchClient names, for scenarios with more than one check, faults
// that get past the first check and are caught by a later one, so that no
// check in a scenario is one that cannot fail. want is in the words of
// the check that must fail (required: a later check must be the one that
// fails, not the first); variants, when set, limits the fault
// to the variants it can break.
var alsoCatchClient = map[string][]clientCatch{
	"client/stream/node-on-first-request": {
		{fault: refclient.FaultNodeWithoutCluster, want: "node.cluster"},
		{fault: refclient.FaultWrongNodeID, want: "node.id of its bootstrap"},
	},
	"client/ack/version-and-nonce":              {{fault: refclient.FaultAckEmptyNames, want: "should keep asking for"}},
	"client/nack/error-detail":                  {{fault: refclient.FaultNackRejectedVersion, want: "the NACK's version must be empty", variants: wire.SotWOnly}},
	"client/nack/reported-in-status":            {{fault: refclient.FaultEmptyErrorState, want: "come with the error the client found"}},
	"client/resources/unrequested-ignored":      {{fault: refclient.FaultApplyUnrequested, want: "as in use"}},
	"client/resources/unsolicited-push":         {{fault: refclient.FaultStatusShowsFirstConfig, want: "exactly the resource last accepted"}},
	"client/resources/wrapped-in-sotw":          {{fault: refclient.FaultStatusShowsFirstConfig, want: "exactly the resource last accepted"}},
	"client/resources/heartbeat-keeps-resource": {{fault: refclient.FaultHeartbeatDeletes, want: "deleted by a heartbeat"}, {fault: refclient.FaultStatusShowsFirstConfig, want: "exactly the resource last accepted"}},
	"client/dne/timer":                          {{fault: refclient.FaultEarlyDNE, want: "long before the timer"}},
	"client/unsubscribe/last-resource":          {{fault: refclient.FaultLastUnsubscribeSaysNothing, want: "endpoints"}},
	"client/nonce/kept-after-unsubscribe-all":   {{fault: refclient.FaultLastUnsubscribeSaysNothing, want: "should drop the endpoints"}},
	// Per-type streams carry one type each: a stream-wide version is the
	// type's own there.
	"client/ack/versions-per-type": {{fault: refclient.FaultStreamWideVersion, want: "it should carry the CDS version", variants: []wire.Variant{wire.SotWADS}}},
}

// clientCatch is one entry of alsoCatchClient.
type clientCatch struct {
	fault    refclient.Fault
	want     string
	variants []wire.Variant
}

func TestSelfProofTableCoversEveryClientScenario(t *testing.T) {
	ids := map[string]bool{}
	for _, s := range Client() {
		ids[s.ID] = true
		assert.Contains(t, mustCatchClient, s.ID, "scenario %s has no fault proving it can fail", s.ID)
	}
	for id := range mustCatchClient {
		assert.True(t, ids[id], "self-proof table names unknown scenario %s", id)
	}
	for id, catches := range alsoCatchClient {
		assert.True(t, ids[id], "second self-proof table names unknown scenario %s", id)
		for _, c := range catches {
			assert.NotEmpty(t, c.want, "%s / %s: say which check the fault must fail", id, c.fault)
		}
	}
}

// Every client scenario fails, in every variant, against the reference
// client with the fault that breaks its rule.
func TestClientScenariosFailAgainstTheirFault(t *testing.T) {
	to := clientTimeouts
	to.Expect = time.Second
	cases := map[string][]clientCatch{}
	for id, fault := range mustCatchClient {
		cases[id] = append([]clientCatch{{fault: fault}}, alsoCatchClient[id]...)
	}
	for id, catches := range cases {
		for _, c := range catches {
			t.Run(id+"/"+string(c.fault), func(t *testing.T) {
				t.Parallel()
				rs := runClientSuite(t, reference(c.fault), to, engine.Selection{Run: []string{id}, Variants: c.variants})
				require.NotEmpty(t, rs)
				for _, r := range rs {
					assert.Equal(t, results.Fail, r.Outcome, "%s must fail against fault %q; got %s %s\n%s",
						r.FullName(), c.fault, r.Outcome, r.Message, transcript.Format(r.Transcript))
					assert.Contains(t, r.Message, c.want, "%s must fail on the check that %q breaks", r.FullName(), c.fault)
				}
			})
		}
	}
}

// grpc-go's xDS client fails exactly what its shipped known-failing list
// says.
func TestClientSuiteAgainstGRPCGo(t *testing.T) {
	known, err := knownfailing.ForClient(targets.BuiltinGRPCGo)
	require.NoError(t, err)
	require.NotNil(t, known)
	rs := runClientSuite(t, targets.ClientOptions{Target: targets.BuiltinGRPCGo}, clientTimeouts, engine.Selection{})
	var pairs []engine.Pair
	for _, s := range Client() {
		for _, v := range s.Variants {
			pairs = append(pairs, engine.Pair{Scenario: s, Variant: v})
		}
	}
	assert.Empty(t, known.Unmatched(pairs), "known-failing entries that match no scenario")
	for _, r := range rs {
		if reason := known.ReasonFor(r.ID, r.Variant); reason != "" {
			assert.Equal(t, results.Fail, r.Outcome, "%s is listed as known-failing (%s) but %s", r.FullName(), reason, r.Outcome)
			continue
		}
		if r.Outcome == results.Skip {
			assert.Contains(t, r.Message, "does not speak", "%s: grpc-go should only skip variants it does not speak", r.FullName())
			continue
		}
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}
