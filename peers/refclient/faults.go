package refclient

import (
	"fmt"
	"strings"
)

// Fault is a switch that makes the reference client break exactly one rule
// of the xDS protocol, so that the harness can prove each client-role check
// detects the violation it is written for. The string value is the stable
// name used on command lines and in reports.
type Fault string

// The fault switches. Each comment names the rule (from requirements.md)
// that the fault breaks; the code path it changes carries the same rule ID.
const (
	// FaultWaitsForServer opens streams but sends nothing until the server sends something (STREAM-1).
	FaultWaitsForServer Fault = "waits-for-server"
	// FaultNoNode never sends the node (STREAM-3).
	FaultNoNode Fault = "no-node"
	// FaultNodeDrifts sends the node on every request with a different user_agent_version each time (STREAM-5).
	FaultNodeDrifts Fault = "node-drifts"
	// FaultNoTypeURL sends ACKs and NACKs with an empty type_url (STREAM-6).
	FaultNoTypeURL Fault = "no-type-url"
	// FaultAckWrongVersion ACKs with the previously accepted version instead of the response's (ACK-2).
	FaultAckWrongVersion Fault = "ack-wrong-version"
	// FaultSkipAcks does not answer every second response of a type (ACK-1).
	FaultSkipAcks Fault = "skip-acks"
	// FaultNackWithoutErrorDetail NACKs without error_detail (ACK-3, ACK-4, DELTA-1).
	FaultNackWithoutErrorDetail Fault = "nack-without-error-detail"
	// FaultNackRejectedVersion NACKs with the rejected response's version_info (ACK-3).
	FaultNackRejectedVersion Fault = "nack-rejected-version"
	// FaultApplyRejected applies the resources of a NACKed response anyway (ACK-7).
	FaultApplyRejected Fault = "apply-rejected"
	// FaultAckDuplicates accepts responses naming a resource twice, last one wins (DUP-2).
	FaultAckDuplicates Fault = "ack-duplicates"
	// FaultCrashOnEmptyName stops the client when a resource has an empty name.
	FaultCrashOnEmptyName Fault = "crash-on-empty-name"
	// FaultIgnoreAnyType silently skips resources whose type mismatches the response (STREAM-8).
	FaultIgnoreAnyType Fault = "ignore-any-type"
	// FaultEchoOldNonce echoes the nonce of the previous response of the type (NONCE-3).
	FaultEchoOldNonce Fault = "echo-old-nonce"
	// FaultStreamWideNonce echoes the latest nonce of the stream whatever its type (NONCE-3).
	FaultStreamWideNonce Fault = "stream-wide-nonce"
	// FaultAckEmptyNonce ACKs with an empty response_nonce (NONCE-4).
	FaultAckEmptyNonce Fault = "ack-empty-nonce"
	// FaultReuseNonceAfterReconnect carries the old stream's nonces into the new stream (NONCE-5).
	FaultReuseNonceAfterReconnect Fault = "reuse-nonce-after-reconnect"
	// FaultForgetNonceOnUnsubscribe forgets a type's nonce when its last name is dropped (NONCE-6).
	FaultForgetNonceOnUnsubscribe Fault = "forget-nonce-on-unsubscribe"
	// FaultIgnoreLdsCdsOmission never deletes Listeners/Clusters missing from a SotW response (DEL-4).
	FaultIgnoreLdsCdsOmission Fault = "ignore-lds-cds-omission"
	// FaultOmissionDeletesAllTypes takes SotW RDS/EDS names missing from a response as deleted (DEL-5, DNE-2).
	FaultOmissionDeletesAllTypes Fault = "omission-deletes-all-types"
	// FaultIgnoreRemoved ignores delta removed_resources (DEL-2).
	FaultIgnoreRemoved Fault = "ignore-removed"
	// FaultNackUnknownRemoval NACKs delta removals of names the client neither watches nor holds (DEL-3).
	FaultNackUnknownRemoval Fault = "nack-unknown-removal"
	// FaultNoDneTimer never marks a resource DOES_NOT_EXIST by timer (DNE-1).
	FaultNoDneTimer Fault = "no-dne-timer"
	// FaultIgnoreAfterDne ignores (but ACKs) a resource arriving after its DOES_NOT_EXIST (DNE-4).
	FaultIgnoreAfterDne Fault = "ignore-after-dne"
	// FaultForgetSubscriptionsOnReconnect re-requests only LDS on a new stream (RECONN-3, DELTA-7).
	FaultForgetSubscriptionsOnReconnect Fault = "forget-subscriptions-on-reconnect"
	// FaultReconnectEmptyVersion sends empty version_info on a new SotW stream (VER-4).
	FaultReconnectEmptyVersion Fault = "reconnect-empty-version"
	// FaultEmptyLdsOnReconnect names nothing in the first LDS request of a new stream (RES-1).
	FaultEmptyLdsOnReconnect Fault = "empty-lds-on-reconnect"
	// FaultForgetInitialResourceVersions reconnects delta streams without initial_resource_versions (DELTA-6).
	FaultForgetInitialResourceVersions Fault = "forget-initial-resource-versions"
	// FaultIrvOnEveryRequest puts initial_resource_versions on every delta request (DELTA-6).
	FaultIrvOnEveryRequest Fault = "irv-on-every-request"
	// FaultDropCacheOnDisconnect forgets every resource when a stream ends (RECONN-4).
	FaultDropCacheOnDisconnect Fault = "drop-cache-on-disconnect"
	// FaultSilentLastUnsubscribe sends nothing when the last name of a type is dropped (UNSUB-1, UNSUB-3).
	FaultSilentLastUnsubscribe Fault = "silent-last-unsubscribe"
	// FaultNeverUnsubscribe never removes names from requests (UNSUB-1).
	FaultNeverUnsubscribe Fault = "never-unsubscribe"
	// FaultNackUnrequested NACKs responses holding a resource the client does not watch (RES-3).
	FaultNackUnrequested Fault = "nack-unrequested"
	// FaultIgnoreUpdates never replaces a resource already held, though the response is ACKed (UPD-6, GRP-4).
	FaultIgnoreUpdates Fault = "ignore-updates"
	// FaultReconnectOnSilence reopens the stream when no response follows a request within silenceTimeout, 1 s (UPD-5, NONCE-10).
	FaultReconnectOnSilence Fault = "reconnect-on-silence"
	// FaultNackDecreasingSystemVersion NACKs delta responses whose system_version_info is empty or decreasing (VER-6).
	FaultNackDecreasingSystemVersion Fault = "nack-decreasing-system-version"
	// FaultDeltaAckWithoutNonce sends delta ACKs with an empty response_nonce (DELTA-1).
	FaultDeltaAckWithoutNonce Fault = "delta-ack-without-nonce"
	// FaultNoErrorState reports NACKED resources as ACKED with no error_state in CSDS (ERR-12, OBS-1).
	FaultNoErrorState Fault = "no-error-state"

	// The faults below were not in the original brief; the client-role
	// self-proof table (scenarios/client_test.go) relies on them.

	// FaultWrongListenerName watches a listener other than the one the client was pointed at (RES-1).
	FaultWrongListenerName Fault = "wrong-listener-name"
	// FaultNackSticky keeps NACKing a type once one of its responses was NACKed (ACK-6).
	FaultNackSticky Fault = "nack-sticky"
	// FaultOnlyNewNames sends SotW subscription changes naming only the
	// names added, as if SotW were incremental (RES-1).
	FaultOnlyNewNames Fault = "only-new-names"
	// FaultNoUnwrap advertises resource-in-sotw but rejects Resource
	// wrappers in SotW responses (TTL-6).
	FaultNoUnwrap Fault = "no-unwrap"
	// FaultADSStreamPerType opens one ADS stream per type instead of one
	// for all (ADS-3).
	FaultADSStreamPerType Fault = "ads-stream-per-type"
	// FaultAnyConfigSource accepts RDS and EDS config sources that are not
	// ADS (STREAM-11).
	FaultAnyConfigSource Fault = "any-config-source"
	// FaultStaleInitialVersions lists, in initial_resource_versions, the
	// first version accepted of each resource instead of the current one
	// (DELTA-6).
	FaultStaleInitialVersions Fault = "stale-initial-resource-versions"
	// FaultNackEmptyMessage NACKs with an error_detail whose message is
	// empty (ACK-4).
	FaultNackEmptyMessage Fault = "nack-empty-message"
	// FaultAbsenceIsProof takes a watched listener or cluster missing from
	// one SotW response as not existing, though it never arrived (DNE-2).
	FaultAbsenceIsProof Fault = "absence-is-proof"
	// FaultHeartbeatDeletes takes a heartbeat (a Resource wrapper without a
	// body) as the resource's absence, so a SotW listener or cluster is
	// deleted by it (TTL-6).
	FaultHeartbeatDeletes Fault = "heartbeat-deletes"
	// FaultAckEmptyNames sends SotW ACKs without resource_names (ACK-2).
	FaultAckEmptyNames Fault = "ack-empty-names"
	// FaultEmptyErrorState reports a NACKED resource in CSDS with an
	// error_state that says nothing (ERR-12).
	FaultEmptyErrorState Fault = "empty-error-state"
	// FaultApplyUnrequested reports resources it never asked for as in use
	// (RES-3).
	FaultApplyUnrequested Fault = "apply-unrequested"
	// FaultEarlyDNE fires the does-not-exist timer at a hundredth of its
	// configured time (DNE-1).
	FaultEarlyDNE Fault = "early-dne"
	// FaultWrongNodeID sends a node.id other than the bootstrap's (STREAM-3).
	FaultWrongNodeID Fault = "wrong-node-id"
	// FaultLastUnsubscribeSaysNothing answers the loss of a type's last name
	// with a request that drops nothing: SotW still names it, delta
	// unsubscribes nothing (UNSUB-1, UNSUB-3).
	FaultLastUnsubscribeSaysNothing Fault = "last-unsubscribe-says-nothing"
	// FaultStreamWideVersion puts in SotW requests the newest version_info
	// received on the stream, whatever its type (VER-2, ADS-1).
	FaultStreamWideVersion Fault = "stream-wide-version"
	// FaultNodeWithoutCluster leaves node.cluster out of the node it sends
	// (STREAM-3).
	FaultNodeWithoutCluster Fault = "node-without-cluster"
	// FaultStatusShowsFirstConfig shows in CSDS the first content accepted
	// of each resource instead of the one in use (OBS-1).
	FaultStatusShowsFirstConfig Fault = "status-shows-first-config"

	// The faults below each break a step the scenarios of issue 10 added;
	// most of them passed every scenario before, which is why the steps
	// were added (scenarios/client_test.go, the regression table).

	// FaultNackCodeOK NACKs with an error_detail whose code is OK (ACK-3, DELTA-1).
	FaultNackCodeOK Fault = "nack-code-ok"
	// FaultNackEmptyNames sends SotW NACKs without resource_names (RES-1).
	FaultNackEmptyNames Fault = "nack-empty-names"
	// FaultNonceOfLastAccepted makes requests after a NACK carry the
	// nonce of the last accepted response of the type, not the NACKed one
	// (NONCE-3).
	FaultNonceOfLastAccepted Fault = "nonce-of-last-accepted"
	// FaultIrvSystemVersion lists, in initial_resource_versions, the
	// system_version_info of the responses instead of the resources' own
	// versions (DELTA-6).
	FaultIrvSystemVersion Fault = "irv-system-version"
	// FaultApplyDuplicates NACKs a response naming a resource twice but
	// uses its last copy all the same (DUP-2).
	FaultApplyDuplicates Fault = "apply-duplicates"
	// FaultOmissionOnlyWhenEmpty deletes the Listeners and Clusters a SotW
	// response leaves out only when it carries none at all (DEL-4).
	FaultOmissionOnlyWhenEmpty Fault = "omission-only-when-empty"
	// FaultIgnoreRemovedWithResources ignores removed_resources in a delta
	// response that also carries resources (DEL-2).
	FaultIgnoreRemovedWithResources Fault = "ignore-removed-with-resources"
	// FaultDeltaOmissionDeletes takes resources a delta response leaves out
	// as deleted (GRP-3).
	FaultDeltaOmissionDeletes Fault = "delta-omission-deletes"
	// FaultResubscribeInAcks lists every subscribed name in the subscribe
	// list of each delta ACK (DELTA-2).
	FaultResubscribeInAcks Fault = "resubscribe-in-acks"
	// FaultEmptyIsWildcard applies any resource of a SotW type whose names
	// the client dropped all of, as if an empty list were a wildcard (RES-6).
	FaultEmptyIsWildcard Fault = "empty-is-wildcard"
	// FaultSlowAcks sends every ACK and NACK two seconds late (UPD-2).
	FaultSlowAcks Fault = "slow-acks"
	// FaultLateAcks1s sends every ACK and NACK one second late (UPD-2): late
	// by more than the prompt threshold, less than the quiet window, so
	// only a promptness check of its own catches it.
	FaultLateAcks1s Fault = "late-acks-1s"
	// FaultRequestBeforeAck sends, on a SotW response, a request restating
	// the subscription at the previous version before the ACK (UPD-4).
	FaultRequestBeforeAck Fault = "request-before-ack"
	// FaultTTLLostOnReconnect drops the TTL timers of the types a stream
	// carried when it breaks, so what was sent with a TTL stays for good
	// (TTL-2).
	FaultTTLLostOnReconnect Fault = "ttl-lost-on-reconnect"
	// FaultDNEOutlivesStream keeps the does-not-exist timers of names
	// still unanswered running when their stream breaks, so the new
	// stream's request does not start them afresh (DNE-7).
	FaultDNEOutlivesStream Fault = "dne-outlives-stream"
	// FaultDNEAfterReconnect restarts the does-not-exist timer on a new
	// stream for resources already held, and marks them missing when it
	// fires (DNE-7).
	FaultDNEAfterReconnect Fault = "dne-after-reconnect"
	// FaultNoBackoff reopens failing streams at a constant short interval
	// (RECONN-1).
	FaultNoBackoff Fault = "no-backoff"
	// FaultBackoffNeverResets keeps growing the wait before a new stream
	// even after a stream that had a response (RECONN-1), as grpc-js does.
	FaultBackoffNeverResets Fault = "backoff-never-resets"
	// FaultIgnoreTTL never expires a resource whose TTL lapsed (TTL-2).
	FaultIgnoreTTL Fault = "ignore-ttl"
	// FaultTTLSticks keeps a resource's TTL when it is resent without one (TTL-3).
	FaultTTLSticks Fault = "ttl-sticks"
	// FaultHeartbeatNoRefresh does not restart a TTL on a heartbeat (TTL-4).
	FaultHeartbeatNoRefresh Fault = "heartbeat-no-refresh"
	// FaultAllOrNothing uses none of the resources of a NACKed response,
	// the valid ones included (ACK-8, MAY).
	FaultAllOrNothing Fault = "all-or-nothing"
	// FaultHintWithoutVersion sends SotW subscription changes with an empty
	// version_info (HINT-1, MAY).
	FaultHintWithoutVersion Fault = "hint-without-version"

	// The faults below break rules of the Envoy client profile and act in
	// that profile only (Config.Profile "envoy"; see Fault.Profile).

	// FaultWildcardLostOnReconnect re-subscribes, on a new delta stream, the
	// listeners and clusters held by name instead of re-declaring the
	// wildcard (WILD-7).
	FaultWildcardLostOnReconnect Fault = "wildcard-lost-on-reconnect"
	// FaultNoWarming puts new clusters and listeners in use at once,
	// before their endpoints or routes arrived (WARM-1); updates still warm.
	FaultNoWarming Fault = "no-warming"
	// FaultUpdateSkipsWarming puts an updated cluster or listener in use
	// at once, without waiting for fresh endpoints or its new routes
	// (WARM-2).
	FaultUpdateSkipsWarming Fault = "update-skips-warming"
	// FaultWarmingEndsAtTimer ends warming only when the initial fetch
	// timeout fires, not when the endpoints or routes a cluster or
	// listener waits for arrive (WARM-1).
	FaultWarmingEndsAtTimer Fault = "warming-ends-at-timer"
	// FaultWarmsForever sets no initial fetch timeout: a cluster or
	// listener whose endpoints or routes never come warms for ever
	// (WARM-2).
	FaultWarmsForever Fault = "warms-forever"
	// FaultWarmingDropsInUseRefs stops following the routes and
	// endpoints of the version in use while an update warms, so the
	// listener in use loses its route (WARM-2).
	FaultWarmingDropsInUseRefs Fault = "warming-drops-in-use-refs"
	// FaultUpdateAwaitsHeldRoutes makes an updated listener wait for its
	// routes to be sent again, even those it holds, which a server need
	// not resend (WARM-1, with WARM-5's note).
	FaultUpdateAwaitsHeldRoutes Fault = "update-awaits-held-routes"
	// FaultDefaultChainIgnored reads a socket listener's filter_chains
	// but not its default_filter_chain, so the routes named there are
	// neither asked for nor waited for (WARM-1).
	FaultDefaultChainIgnored Fault = "default-chain-ignored"
	// FaultVHDSOverSotW requests the VirtualHosts of a route with vhds over
	// SotW (STREAM-10).
	FaultVHDSOverSotW Fault = "vhds-over-sotw"
	// FaultCrashOnUnusableResponse stops the client at a response it
	// cannot use: a resource that does not decode, a type_url it does not
	// know, an empty nonce or one over 1 KiB (ROB-3).
	FaultCrashOnUnusableResponse Fault = "crash-on-unusable-response"
)

// wrongListenerSuffix is appended to the listener name by the
// wrong-listener-name fault.
const wrongListenerSuffix = "-wrong"

// AllFaults lists every fault in a stable order (the order of the design
// brief), so reports and loops over faults are reproducible.
var AllFaults = []Fault{
	FaultWaitsForServer,
	FaultNoNode,
	FaultNodeDrifts,
	FaultNoTypeURL,
	FaultAckWrongVersion,
	FaultSkipAcks,
	FaultNackWithoutErrorDetail,
	FaultNackRejectedVersion,
	FaultApplyRejected,
	FaultAckDuplicates,
	FaultCrashOnEmptyName,
	FaultIgnoreAnyType,
	FaultEchoOldNonce,
	FaultStreamWideNonce,
	FaultAckEmptyNonce,
	FaultReuseNonceAfterReconnect,
	FaultForgetNonceOnUnsubscribe,
	FaultIgnoreLdsCdsOmission,
	FaultOmissionDeletesAllTypes,
	FaultIgnoreRemoved,
	FaultNackUnknownRemoval,
	FaultNoDneTimer,
	FaultIgnoreAfterDne,
	FaultForgetSubscriptionsOnReconnect,
	FaultReconnectEmptyVersion,
	FaultEmptyLdsOnReconnect,
	FaultForgetInitialResourceVersions,
	FaultIrvOnEveryRequest,
	FaultDropCacheOnDisconnect,
	FaultSilentLastUnsubscribe,
	FaultNeverUnsubscribe,
	FaultNackUnrequested,
	FaultIgnoreUpdates,
	FaultReconnectOnSilence,
	FaultNackDecreasingSystemVersion,
	FaultDeltaAckWithoutNonce,
	FaultNoErrorState,
	FaultWrongListenerName,
	FaultNackSticky,
	FaultOnlyNewNames,
	FaultNoUnwrap,
	FaultADSStreamPerType,
	FaultAnyConfigSource,
	FaultStaleInitialVersions,
	FaultNackEmptyMessage,
	FaultAbsenceIsProof,
	FaultHeartbeatDeletes,
	FaultAckEmptyNames,
	FaultEmptyErrorState,
	FaultApplyUnrequested,
	FaultEarlyDNE,
	FaultNodeWithoutCluster,
	FaultWrongNodeID,
	FaultLastUnsubscribeSaysNothing,
	FaultStreamWideVersion,
	FaultStatusShowsFirstConfig,
	FaultNackCodeOK,
	FaultNackEmptyNames,
	FaultNonceOfLastAccepted,
	FaultIrvSystemVersion,
	FaultApplyDuplicates,
	FaultOmissionOnlyWhenEmpty,
	FaultIgnoreRemovedWithResources,
	FaultDeltaOmissionDeletes,
	FaultResubscribeInAcks,
	FaultEmptyIsWildcard,
	FaultSlowAcks,
	FaultLateAcks1s,
	FaultRequestBeforeAck,
	FaultDNEAfterReconnect,
	FaultDNEOutlivesStream,
	FaultTTLLostOnReconnect,
	FaultNoBackoff,
	FaultBackoffNeverResets,
	FaultIgnoreTTL,
	FaultTTLSticks,
	FaultHeartbeatNoRefresh,
	FaultAllOrNothing,
	FaultHintWithoutVersion,
	FaultWildcardLostOnReconnect,
	FaultNoWarming,
	FaultUpdateSkipsWarming,
	FaultWarmingEndsAtTimer,
	FaultWarmsForever,
	FaultWarmingDropsInUseRefs,
	FaultUpdateAwaitsHeldRoutes,
	FaultDefaultChainIgnored,
	FaultVHDSOverSotW,
	FaultCrashOnUnusableResponse,
}

var faultDescriptions = map[Fault]string{
	FaultWaitsForServer:                 "STREAM-1: opens streams but sends nothing until the server sends something",
	FaultNoNode:                         "STREAM-3: never sends the node",
	FaultNodeDrifts:                     "STREAM-5: sends the node on every request, with a different user_agent_version each time",
	FaultNoTypeURL:                      "STREAM-6: ACKs and NACKs carry an empty type_url",
	FaultAckWrongVersion:                "ACK-2: SotW ACKs carry the previously accepted version instead of the response's",
	FaultSkipAcks:                       "ACK-1: every second response of a type is neither ACKed nor NACKed",
	FaultNackWithoutErrorDetail:         "ACK-3, ACK-4, DELTA-1: NACKs carry no error_detail",
	FaultNackRejectedVersion:            "ACK-3: SotW NACKs carry the rejected response's version_info",
	FaultApplyRejected:                  "ACK-7: the resources of a NACKed response are applied anyway",
	FaultAckDuplicates:                  "DUP-2: responses naming a resource twice are accepted, the last one wins",
	FaultCrashOnEmptyName:               "a resource with an empty name makes the client stop",
	FaultIgnoreAnyType:                  "STREAM-8: resources whose type mismatches the response are skipped and the response ACKed",
	FaultEchoOldNonce:                   "NONCE-3: requests (delta: ACKs and NACKs) carry the nonce of the previous response of the type, not the latest",
	FaultStreamWideNonce:                "NONCE-3: requests carry the latest nonce of the stream whatever its type (delta: subscription changes too)",
	FaultAckEmptyNonce:                  "NONCE-4: SotW ACKs carry an empty response_nonce",
	FaultReuseNonceAfterReconnect:       "NONCE-5: the first requests on a new stream carry the old stream's last nonce of the type",
	FaultForgetNonceOnUnsubscribe:       "NONCE-6: a type's nonce is forgotten when its last name is dropped",
	FaultIgnoreLdsCdsOmission:           "DEL-4: Listeners/Clusters missing from a SotW response are kept",
	FaultOmissionDeletesAllTypes:        "DEL-5, DNE-2: SotW RouteConfigurations/ClusterLoadAssignments missing from a response are deleted or taken as not existing",
	FaultIgnoreRemoved:                  "DEL-2: delta removed_resources are ignored",
	FaultNackUnknownRemoval:             "DEL-3: delta removals of unknown names are NACKed",
	FaultNoDneTimer:                     "DNE-1: resources are never marked DOES_NOT_EXIST by timer",
	FaultIgnoreAfterDne:                 "DNE-4: a resource arriving after its DOES_NOT_EXIST is ignored, though ACKed",
	FaultForgetSubscriptionsOnReconnect: "RECONN-3, DELTA-7: a new stream re-requests only LDS",
	FaultReconnectEmptyVersion:          "VER-4: the first SotW requests on a new stream carry an empty version_info",
	FaultEmptyLdsOnReconnect:            "RES-1: the first LDS request on a new stream names nothing (an accidental wildcard)",
	FaultForgetInitialResourceVersions:  "DELTA-6: delta reconnects without initial_resource_versions",
	FaultIrvOnEveryRequest:              "DELTA-6: every delta request carries initial_resource_versions",
	FaultDropCacheOnDisconnect:          "RECONN-4: a stream end forgets every resource",
	FaultSilentLastUnsubscribe:          "UNSUB-1, UNSUB-3: dropping the last name of a type sends no request",
	FaultNeverUnsubscribe:               "UNSUB-1, UNSUB-3: names are never removed from requests",
	FaultNackUnrequested:                "RES-3, DELTA-5: a response holding a resource the client does not watch is NACKed",
	FaultIgnoreUpdates:                  "UPD-6, GRP-4: a resource already held is never replaced, though the response is ACKed",
	FaultReconnectOnSilence:             "UPD-5, NONCE-10: the stream is reopened when no response follows a request within " + silenceTimeout.String(),
	FaultNackDecreasingSystemVersion:    "VER-6: delta responses with an empty or decreasing system_version_info are NACKed",
	FaultDeltaAckWithoutNonce:           "DELTA-1: delta ACKs carry an empty response_nonce",
	FaultNoErrorState:                   "ERR-12, OBS-1: CSDS reports NACKED resources as ACKED with no error_state",
	FaultWrongListenerName:              "RES-1: the client watches \"<listener>-wrong\" instead of the listener it was pointed at",
	FaultNackSticky:                     "ACK-6: once a response of a type was NACKed, every later response of the type is NACKed too",
	FaultOnlyNewNames:                   "RES-1: a SotW subscription change names only the added resources, not the full set",
	FaultNoUnwrap:                       "TTL-6: advertises resource-in-sotw but NACKs SotW responses with Resource wrappers",
	FaultADSStreamPerType:               "ADS-3: opens one aggregated stream per type instead of one for all",
	FaultAnyConfigSource:                "STREAM-11: accepts a listener or cluster whose RDS/EDS config source is not ADS",
	FaultStaleInitialVersions:           "DELTA-6: initial_resource_versions lists the first version accepted of each resource, not the current one",
	FaultNackEmptyMessage:               "ACK-4: a NACK's error_detail has an empty message",
	FaultAbsenceIsProof:                 "DNE-2: a watched listener or cluster never received is taken as not existing when one SotW response lacks it",
	FaultHeartbeatDeletes:               "TTL-6: a heartbeat is taken as the resource's absence, so a SotW listener or cluster is deleted by it",
	FaultAckEmptyNames:                  "ACK-2: SotW ACKs carry no resource_names",
	FaultEmptyErrorState:                "ERR-12: CSDS shows a NACKED resource with an empty error_state",
	FaultApplyUnrequested:               "RES-3: resources the client never asked for are reported as in use",
	FaultEarlyDNE:                       "DNE-1: the does-not-exist timer fires at a hundredth of its time",
	FaultNodeWithoutCluster:             "STREAM-3: the node is sent without its cluster",
	FaultWrongNodeID:                    "STREAM-3: the node.id sent is not the bootstrap's",
	FaultLastUnsubscribeSaysNothing:     "UNSUB-1, UNSUB-3: dropping the last name of a type sends a request that drops nothing",
	FaultStreamWideVersion:              "VER-2, ADS-1: SotW requests carry the newest version of the stream, whatever its type",
	FaultStatusShowsFirstConfig:         "OBS-1: CSDS shows the first content accepted of a resource, not the one in use",
	FaultNackCodeOK:                     "ACK-3, DELTA-1: NACKs carry an error_detail whose code is OK",
	FaultNackEmptyNames:                 "RES-1: SotW NACKs carry no resource_names",
	FaultNonceOfLastAccepted:            "NONCE-3: after a NACK, requests carry the nonce of the last accepted response, not the NACKed one",
	FaultIrvSystemVersion:               "DELTA-6: initial_resource_versions holds the responses' system_version_info, not the resources' versions",
	FaultApplyDuplicates:                "DUP-2: a response naming a resource twice is NACKed, but its last copy is used",
	FaultOmissionOnlyWhenEmpty:          "DEL-4: Listeners/Clusters a SotW response leaves out are deleted only when it carries none",
	FaultIgnoreRemovedWithResources:     "DEL-2: removed_resources is ignored in a delta response that also carries resources",
	FaultDeltaOmissionDeletes:           "GRP-3: resources a delta response leaves out are taken as deleted",
	FaultResubscribeInAcks:              "DELTA-2: every delta ACK subscribes again to every name",
	FaultEmptyIsWildcard:                "RES-6: once all names of a SotW type are dropped, any resource of the type is used",
	FaultSlowAcks:                       "UPD-2: ACKs and NACKs go out two seconds late",
	FaultLateAcks1s:                     "UPD-2: ACKs and NACKs go out one second late",
	FaultRequestBeforeAck:               "UPD-4: a SotW response is followed by a request restating the subscription before its ACK",
	FaultTTLLostOnReconnect:             "TTL-2: a broken stream takes the TTL timers of its types with it, so what was sent with a TTL stays",
	FaultDNEOutlivesStream:              "DNE-7: the does-not-exist timers of names unanswered run on through a broken stream, not restarted by the new stream's request",
	FaultDNEAfterReconnect:              "DNE-7: resources held are marked not existing when the timer restarted on a new stream fires",
	FaultNoBackoff:                      "RECONN-1: failing streams are reopened at a constant short interval",
	FaultBackoffNeverResets:             "RECONN-1: a stream that had a response does not reset the backoff",
	FaultIgnoreTTL:                      "TTL-2: a resource whose TTL lapsed is kept",
	FaultTTLSticks:                      "TTL-3: a resource resent without a TTL keeps its old one",
	FaultHeartbeatNoRefresh:             "TTL-4: a heartbeat does not restart the TTL",
	FaultAllOrNothing:                   "ACK-8 (MAY): none of the resources of a NACKed response is used, the valid ones included",
	FaultHintWithoutVersion:             "HINT-1 (MAY): SotW subscription changes carry an empty version_info",
	FaultWildcardLostOnReconnect:        "WILD-7 (envoy profile): a new delta stream subscribes the listeners and clusters held by name, not by wildcard",
	FaultNoWarming:                      "WARM-1 (envoy profile): new clusters and listeners are in use at once, before their endpoints or routes",
	FaultUpdateSkipsWarming:             "WARM-2 (envoy profile): an updated cluster or listener is in use at once, without waiting for fresh endpoints or its new routes",
	FaultWarmingEndsAtTimer:             "WARM-1 (envoy profile): warming ends only at the initial fetch timeout, not when the endpoints or routes arrive",
	FaultDefaultChainIgnored:            "WARM-1 (envoy profile): a socket listener's default_filter_chain is not read: the routes it names are not waited for",
	FaultUpdateAwaitsHeldRoutes:         "WARM-1 (envoy profile): an updated listener warms until its routes are sent again, those it holds too",
	FaultWarmingDropsInUseRefs:          "WARM-2 (envoy profile): while an update warms, the routes and endpoints of the version in use are no longer asked for",
	FaultWarmsForever:                   "WARM-2 (envoy profile): no initial fetch timeout: what waits for endpoints or routes that never come warms for ever",
	FaultVHDSOverSotW:                   "STREAM-10 (envoy profile): the VirtualHosts of a route with vhds are requested over SotW",
	FaultCrashOnUnusableResponse:        "ROB-3: a resource that does not decode, an unknown type_url or an empty or over-long nonce stops the client",
}

// envoyFaults are the faults that act in the Envoy profile only.
var envoyFaults = map[Fault]bool{
	FaultWildcardLostOnReconnect: true,
	FaultNoWarming:               true,
	FaultUpdateSkipsWarming:      true,
	FaultWarmingEndsAtTimer:      true,
	FaultWarmsForever:            true,
	FaultWarmingDropsInUseRefs:   true,
	FaultUpdateAwaitsHeldRoutes:  true,
	FaultDefaultChainIgnored:     true,
	FaultVHDSOverSotW:            true,
	FaultDumpOmitsRoutes:         true,
	FaultDumpOmitsWarming:        true,
	FaultDumpOmitsErrorDetails:   true,
}

// Profile is the client profile the fault acts in: ProfileEnvoy for the
// faults of Envoy-profile rules, "" for those that act in any profile.
func (f Fault) Profile() string {
	if envoyFaults[f] {
		return ProfileEnvoy
	}
	return ""
}

// Description returns one line naming the rule the fault breaks.
func (f Fault) Description() string {
	if d, ok := faultDescriptions[f]; ok {
		return d
	}
	return "unknown fault"
}

// ParseFault reads a fault by its string value (case-insensitive).
func ParseFault(s string) (Fault, error) {
	for _, f := range AllFaults {
		if strings.EqualFold(s, string(f)) {
			return f, nil
		}
	}
	names := make([]string, len(AllFaults))
	for i, f := range AllFaults {
		names[i] = string(f)
	}
	return "", fmt.Errorf("unknown fault %q (the faults are %s)", s, strings.Join(names, ", "))
}
