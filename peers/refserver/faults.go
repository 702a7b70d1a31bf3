package refserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Fault is a switch that makes the reference server break exactly one rule
// of the xDS protocol, so that the harness can prove each of its checks
// actually detects the violation it is written for. The string value is the
// stable name used on command lines and in reports.
type Fault string

// The fault switches. Each comment names the rule (from requirements.md)
// that the fault breaks; the code path it changes carries the same rule ID.
const (
	// FaultAnswerStaleNonce answers and applies stale-nonce SotW requests (NONCE-7).
	FaultAnswerStaleNonce Fault = "answer-stale-nonce"
	// FaultStaleNamesKept takes in the names of a stale-nonce SotW request
	// without answering it, so the next request naming them changes
	// nothing (NONCE-8).
	FaultStaleNamesKept Fault = "stale-names-kept"
	// FaultNackResendLoop resends the rejected content on every NACK (ACK-5, UPD-1).
	FaultNackResendLoop Fault = "nack-resend-loop"
	// FaultDuplicateNames puts the first resource of every response in it twice (DUP-1).
	FaultDuplicateNames Fault = "duplicate-names"
	// FaultIgnoreInitialResourceVersions ignores delta initial_resource_versions (DELTA-8).
	FaultIgnoreInitialResourceVersions Fault = "ignore-initial-resource-versions"
	// FaultNeverReportDeletions never tells clients about deleted resources (DEL-1, DEL-7).
	FaultNeverReportDeletions Fault = "never-report-deletions"
	// FaultStickyWildcard never turns a wildcard subscription off (WILD-4, WILD-5).
	FaultStickyWildcard Fault = "sticky-wildcard"
	// FaultSharedAdsNonce judges ADS staleness and versions stream-wide, not per type (ADS-1, VER-2).
	FaultSharedAdsNonce Fault = "shared-ads-nonce"
	// FaultRequireNodeEveryRequest closes streams whose follow-up requests omit the node (STREAM-4).
	FaultRequireNodeEveryRequest Fault = "require-node-every-request"
	// FaultResendOnAck answers every ACK with a resend of the subscribed set (UPD-1).
	FaultResendOnAck Fault = "resend-on-ack"
	// FaultEmptyNonce sends responses without a nonce (NONCE-1).
	FaultEmptyNonce Fault = "empty-nonce"
	// FaultReuseNonce sends the same nonce on every response (NONCE-2).
	FaultReuseNonce Fault = "reuse-nonce"
	// FaultWrongTypeUrl packs resources under another type's URL (STREAM-7).
	FaultWrongTypeUrl Fault = "wrong-type-url"
	// FaultForgetMissingSubscriptions drops subscriptions to names that do not exist yet (DNE-3).
	FaultForgetMissingSubscriptions Fault = "forget-missing-subscriptions"
	// FaultDeltaDropStaleRequests ignores delta requests that carry an old nonce (NONCE-12).
	FaultDeltaDropStaleRequests Fault = "delta-drop-stale-requests"
	// FaultNoResendOnResubscribe never resends an unchanged resource already sent on the stream (RES-4, RES-5, DELTA-3).
	FaultNoResendOnResubscribe Fault = "no-resend-on-resubscribe"
	// FaultEmptyMeansWildcard reads an emptied subscription as "everything" (WILD-5, RES-6).
	FaultEmptyMeansWildcard Fault = "empty-means-wildcard"
	// FaultPhantomUnsubscribeError fails the stream when a delta client unsubscribes an unknown name (UNSUB-4).
	FaultPhantomUnsubscribeError Fault = "phantom-unsubscribe-error"
	// FaultNoMissingReport does not report subscribed names that do not exist (DNE-5).
	FaultNoMissingReport Fault = "no-missing-report"
	// FaultPartialFullState sends only changed Listeners/Clusters in SotW pushes (GRP-1).
	FaultPartialFullState Fault = "partial-full-state"
	// FaultUpdatesAfterUnsubscribe keeps pushing resources after they were unsubscribed (UNSUB-2).
	FaultUpdatesAfterUnsubscribe Fault = "updates-after-unsubscribe"
	// FaultStaticVersion never changes the SotW version_info (VER-1).
	FaultStaticVersion Fault = "static-version"
	// FaultCloseOnNack closes the stream when the client NACKs (ACK-9).
	FaultCloseOnNack Fault = "close-on-nack"
	// FaultNoResourceVersions leaves delta Resource.version empty (VER-7).
	FaultNoResourceVersions Fault = "no-resource-versions"
	// FaultPushUnrequestedTypes sends an ADS client a type it did not ask for (STREAM-2).
	FaultPushUnrequestedTypes Fault = "push-unrequested-types"
	// FaultStarIsLiteral treats "*" as an ordinary resource name (WILD-1, WILD-3).
	FaultStarIsLiteral Fault = "star-is-literal"
	// FaultNoLegacyWildcard treats an empty first request as a subscription to nothing (WILD-2).
	FaultNoLegacyWildcard Fault = "no-legacy-wildcard"
	// FaultUnsubscribeWildcardMember lets a client drop one member of a wildcard subscription (WILD-9, UNSUB-6).
	FaultUnsubscribeWildcardMember Fault = "unsubscribe-wildcard-member"
	// FaultFirstRequestWins ignores name changes carried by SotW ACKs (UPD-3, RES-4, HINT-2).
	FaultFirstRequestWins Fault = "first-request-wins"

	// The faults below were not in the original brief; the scenario
	// self-proof table (scenarios/selfproof_test.go) relies on them.

	// FaultBumpAllTypes bumps every type's version on any change and pushes every type (VER-2).
	FaultBumpAllTypes Fault = "bump-all-types"
	// FaultBroadcastUpdates pushes a change to every stream of the type, subscribed or not (MULTI-2).
	FaultBroadcastUpdates Fault = "broadcast-updates"
	// FaultEmptyDeltaUnsubscribesAll reads a delta request with empty lists as "unsubscribe everything" (DELTA-2).
	FaultEmptyDeltaUnsubscribesAll Fault = "empty-delta-unsubscribes-all"
	// FaultInitialVersionsSkipAll skips every name listed in initial_resource_versions, changed or not (DELTA-8).
	FaultInitialVersionsSkipAll Fault = "initial-versions-skip-all"
	// FaultSkipCurrentVersionOnReconnect sends nothing to a new SotW stream whose first request carries the current version (RES-4).
	FaultSkipCurrentVersionOnReconnect Fault = "skip-current-version-on-reconnect"
	// FaultFirstNameOnly serves only the first name of a request that names several (RES-2, MULTI-1).
	FaultFirstNameOnly Fault = "first-name-only"
	// FaultListenerNameWithoutPort serves a Listener named "host:port" as "host" (RES-7).
	FaultListenerNameWithoutPort Fault = "listener-name-without-port"
	// FaultFirstResourceVersion keeps the version a delta resource was first
	// sent with, whatever its content becomes (VER-7).
	FaultFirstResourceVersion Fault = "first-resource-version"
	// FaultVersionOnFirstSendOnly sends a delta resource's version the first
	// time only, and an empty one with every update (VER-7).
	FaultVersionOnFirstSendOnly Fault = "version-on-first-send-only"
	// FaultEmptyStateOnDelete answers a Listener or Cluster deletion with an
	// empty full state, dropping the resources that remain (GRP-1, DEL-7).
	FaultEmptyStateOnDelete Fault = "empty-state-on-delete"
	// FaultDropNamesWithStar forgets the explicit names subscribed together
	// with "*" when a delta client drops "*" (WILD-4). SotW requests restate
	// every name, so there it has nothing to forget.
	FaultDropNamesWithStar Fault = "drop-names-with-star"

	// The faults below each break a step the scenarios of issue 10 added;
	// most of them passed every scenario before, which is why the steps
	// were added (scenarios/selfproof_test.go, the regression table).

	// FaultDropOneType never answers a request for Runtime resources (STREAM-9).
	FaultDropOneType Fault = "drop-one-type"
	// FaultNoDeltaVHDS never answers VirtualHost subscriptions on delta streams (STREAM-10).
	FaultNoDeltaVHDS Fault = "no-delta-vhds"
	// FaultWildcardFrozen lets a wildcard subscription cover only the
	// resources that existed when it began (WILD-1, WILD-2).
	FaultWildcardFrozen Fault = "wildcard-frozen"
	// FaultNoRemovalUnderWildcard lists in removed_resources only the
	// deleted names subscribed explicitly, never those the wildcard covers (DEL-1).
	FaultNoRemovalUnderWildcard Fault = "no-removal-under-wildcard"
	// FaultPartialStateForNamed sends a SotW Listener or Cluster stream
	// that subscribes by name only the changed resources (GRP-1).
	FaultPartialStateForNamed Fault = "partial-state-for-named"
	// FaultStallAfterNack pushes nothing of a type after a NACK of it
	// until the client sends another request of the type (ACK-9).
	FaultStallAfterNack Fault = "stall-after-nack"
	// FaultLateNackResend resends the rejected resources one second after
	// a NACK (ACK-5, UPD-1), late enough to pass a short quiet window.
	FaultLateNackResend Fault = "late-nack-resend"
	// FaultMergeUpdates sends an updated resource merged into the version
	// the stream sent before, repeated fields appended (GRP-4).
	FaultMergeUpdates Fault = "merge-updates"
	// FaultDeltaPushEverything sends, with every delta push, every
	// subscribed resource, changed or not (UPD-1).
	FaultDeltaPushEverything Fault = "delta-push-everything"
	// FaultADSHeadOfLine answers nothing on an ADS stream while a
	// subscribed EDS name does not exist (ADS-2).
	FaultADSHeadOfLine Fault = "ads-head-of-line"
	// FaultRoutesFirstNameOnly serves only the first name of a request for
	// RouteConfigurations (RES-2): the scenarios used to name routes in no
	// request at all.
	FaultRoutesFirstNameOnly Fault = "routes-first-name-only"
	// FaultForgetDeleted stops serving a name once its resource is deleted,
	// by name or under the wildcard (DNE-3, WILD-2): a re-created resource
	// is never pushed. The scenarios used to delete and never re-create.
	FaultForgetDeleted Fault = "forget-deleted"
	// FaultVersionPerPush sends, with every delta push, every subscribed
	// resource, each at the push's own version, changed or not (VER-7).
	FaultVersionPerPush Fault = "version-per-push"
	// FaultWildcardOnlyLdsCds ignores Listener and Cluster subscriptions by
	// name, serving those types by wildcard only (WILD-8).
	FaultWildcardOnlyLdsCds Fault = "wildcard-only-lds-cds"
	// FaultNamedIsWildcard answers a SotW Listener or Cluster subscription
	// by name with every resource of the type (WILD-8).
	FaultNamedIsWildcard Fault = "named-is-wildcard"

	// The faults below came with the scenarios for TTL, aliases,
	// make-before-break and warming, each failing the scenario that checks
	// the rule it breaks.

	// FaultTTLForEveryone sends TTLs to clients that did not advertise
	// xds.config.supports-resource-ttl (TTL-1).
	FaultTTLForEveryone Fault = "ttl-for-everyone"
	// FaultWrapForEveryone wraps SotW resources that have a TTL in discovery
	// Resources for clients that did not advertise resource-in-sotw, as
	// go-control-plane does (TTL-5).
	FaultWrapForEveryone Fault = "wrap-for-everyone"
	// FaultTTLChangeNotPushed does not push a resource whose TTL alone
	// changed, so a TTL removed is never sent (TTL-3).
	FaultTTLChangeNotPushed Fault = "ttl-change-not-pushed"
	// FaultAliasesIgnored takes a delta subscription to an alias for one
	// to a resource of that name (DELTA-10).
	FaultAliasesIgnored Fault = "aliases-ignored"
	// FaultOrderAsSubscribed pushes the types of one change in the order
	// the stream subscribed to them, not make-before-break (CONS-1..5).
	FaultOrderAsSubscribed Fault = "order-as-subscribed"
	// FaultRemovalsFirst sends the removals of a change before its
	// additions (CONS-6).
	FaultRemovalsFirst Fault = "removals-first"
	// FaultSlowWarming answers EDS requests for clusters just pushed only
	// at the next change (WARM-3).
	FaultSlowWarming Fault = "slow-warming"
	// FaultNoCLAAfterClusterUpdate does not resend a ClusterLoadAssignment
	// requested again after its Cluster changed, although the server
	// claims envoy-warming (WARM-4).
	FaultNoCLAAfterClusterUpdate Fault = "no-cla-after-cluster-update"
	// FaultResendRoutesOnListenerUpdate resends a listener's unchanged
	// RouteConfiguration with every update of the listener (WARM-5, MAY).
	FaultResendRoutesOnListenerUpdate Fault = "resend-routes-on-listener-update"
	// FaultFullStateEveryType sends every subscribed resource with every
	// SotW push, whatever the type (GRP-2, MAY).
	FaultFullStateEveryType Fault = "full-state-every-type"

	// The faults below each break a robustness rule (ROB, the appendix of
	// rules the repository adds to the catalogue); the robustness
	// scenarios run alone because a real server may do what they mimic.

	// FaultCrashOnUnservable behaves as a crashed server from the first
	// request it cannot serve (a type_url it does not know, none on ADS,
	// another type's on a per-type stream, or a first request without a
	// node): every stream ends with UNAVAILABLE, every new one fails (ROB-1).
	FaultCrashOnUnservable Fault = "crash-on-unservable-request"
	// FaultWedgeOnUnusualRequest stops a stream answering anything at a
	// request at the edges of the message shapes: over 1000 names, a name
	// over 1 KiB or with control or format characters, a name twice or
	// both subscribed and unsubscribed, a SotW nonce or ACKed version the
	// stream never sent, an error_detail over 64 KiB (ROB-2).
	FaultWedgeOnUnusualRequest Fault = "wedge-on-unusual-request"

	// The fault below breaks the precondition nearly every server scenario
	// rests on, the answer to a type's first request, so that the suite's
	// attribution can be checked: against it the pairs are blocked by
	// the rule the ignored request's answer rests on, not failed under
	// each scenario's own rule (scenarios/precondition_test.go).

	// FaultIgnoreFirstRequest ignores the first request of each type on a
	// stream: it is never answered (RES-2; WILD-1, WILD-2 for a wildcard)
	// and its names never apply, so what it named is not pushed later
	// either (DELTA-4, VER-1); later requests are served as usual.
	FaultIgnoreFirstRequest Fault = "ignore-first-request"
)

// AllFaults lists every fault in a stable order, the order in which they
// were added (the original brief's first), so reports and loops over
// faults are reproducible.
var AllFaults = []Fault{
	FaultAnswerStaleNonce,
	FaultStaleNamesKept,
	FaultNackResendLoop,
	FaultDuplicateNames,
	FaultIgnoreInitialResourceVersions,
	FaultNeverReportDeletions,
	FaultStickyWildcard,
	FaultSharedAdsNonce,
	FaultRequireNodeEveryRequest,
	FaultResendOnAck,
	FaultEmptyNonce,
	FaultReuseNonce,
	FaultWrongTypeUrl,
	FaultForgetMissingSubscriptions,
	FaultDeltaDropStaleRequests,
	FaultNoResendOnResubscribe,
	FaultEmptyMeansWildcard,
	FaultPhantomUnsubscribeError,
	FaultNoMissingReport,
	FaultPartialFullState,
	FaultUpdatesAfterUnsubscribe,
	FaultStaticVersion,
	FaultCloseOnNack,
	FaultNoResourceVersions,
	FaultPushUnrequestedTypes,
	FaultStarIsLiteral,
	FaultNoLegacyWildcard,
	FaultUnsubscribeWildcardMember,
	FaultFirstRequestWins,
	FaultBumpAllTypes,
	FaultBroadcastUpdates,
	FaultEmptyDeltaUnsubscribesAll,
	FaultInitialVersionsSkipAll,
	FaultSkipCurrentVersionOnReconnect,
	FaultFirstNameOnly,
	FaultListenerNameWithoutPort,
	FaultFirstResourceVersion,
	FaultVersionOnFirstSendOnly,
	FaultEmptyStateOnDelete,
	FaultDropNamesWithStar,
	FaultDropOneType,
	FaultNoDeltaVHDS,
	FaultWildcardFrozen,
	FaultNoRemovalUnderWildcard,
	FaultPartialStateForNamed,
	FaultStallAfterNack,
	FaultLateNackResend,
	FaultMergeUpdates,
	FaultDeltaPushEverything,
	FaultADSHeadOfLine,
	FaultRoutesFirstNameOnly,
	FaultForgetDeleted,
	FaultVersionPerPush,
	FaultWildcardOnlyLdsCds,
	FaultNamedIsWildcard,
	FaultTTLForEveryone,
	FaultWrapForEveryone,
	FaultTTLChangeNotPushed,
	FaultAliasesIgnored,
	FaultOrderAsSubscribed,
	FaultRemovalsFirst,
	FaultSlowWarming,
	FaultNoCLAAfterClusterUpdate,
	FaultResendRoutesOnListenerUpdate,
	FaultFullStateEveryType,
	FaultCrashOnUnservable,
	FaultWedgeOnUnusualRequest,
	FaultIgnoreFirstRequest,
}

var faultDescriptions = map[Fault]string{
	FaultAnswerStaleNonce:              "NONCE-7: answers and applies SotW requests carrying a stale nonce",
	FaultStaleNamesKept:                "NONCE-8: takes in a stale SotW request's names without answering, so the ACK that repeats them changes nothing",
	FaultNackResendLoop:                "ACK-5, UPD-1: resends the rejected resources on every NACK",
	FaultDuplicateNames:                "DUP-1: repeats the first resource of every non-empty response",
	FaultIgnoreInitialResourceVersions: "DELTA-8: ignores delta initial_resource_versions",
	FaultNeverReportDeletions:          "DEL-1, DEL-7: never tells clients that a resource was deleted",
	FaultStickyWildcard:                "WILD-4, WILD-5: a wildcard subscription never turns off",
	FaultSharedAdsNonce:                "ADS-1, VER-2: ADS staleness and version_info are stream-wide instead of per type",
	FaultRequireNodeEveryRequest:       "STREAM-4: closes the stream when a follow-up request omits the node",
	FaultResendOnAck:                   "UPD-1: answers every ACK with a resend of the subscribed resources",
	FaultEmptyNonce:                    "NONCE-1: responses carry an empty nonce",
	FaultReuseNonce:                    "NONCE-2: every response carries the same nonce",
	FaultWrongTypeUrl:                  "STREAM-7: resources are packed under another type's URL",
	FaultForgetMissingSubscriptions:    "DNE-3: forgets subscriptions to names that do not exist yet",
	FaultDeltaDropStaleRequests:        "NONCE-12: ignores delta requests whose nonce is not the latest",
	FaultNoResendOnResubscribe:         "RES-4, RES-5, DELTA-3: never resends an unchanged resource already sent on the stream",
	FaultEmptyMeansWildcard:            "WILD-5, RES-6: an emptied subscription is read as a wildcard",
	FaultPhantomUnsubscribeError:       "UNSUB-4: fails the delta stream when an unsubscribed name was never subscribed",
	FaultNoMissingReport:               "DNE-5: delta does not list missing subscribed names in removed_resources",
	FaultPartialFullState:              "GRP-1: SotW Listener/Cluster pushes carry only the changed resources",
	FaultUpdatesAfterUnsubscribe:       "UNSUB-2: keeps pushing resources after they were unsubscribed",
	FaultStaticVersion:                 "VER-1: SotW version_info never changes",
	FaultCloseOnNack:                   "ACK-9: closes the stream when the client NACKs",
	FaultNoResourceVersions:            "VER-7: delta resources carry no version",
	FaultPushUnrequestedTypes:          "STREAM-2: ADS sends a resource type the client did not request",
	FaultStarIsLiteral:                 "WILD-1, WILD-3: \"*\" is treated as an ordinary resource name",
	FaultNoLegacyWildcard:              "WILD-2: an empty first request subscribes to nothing",
	FaultUnsubscribeWildcardMember:     "WILD-9, UNSUB-6: dropping an explicit name under \"*\" stops its updates",
	FaultFirstRequestWins:              "UPD-3, RES-4, HINT-2: ignores resource name changes carried by SotW ACKs",
	FaultBumpAllTypes:                  "VER-2: a change to one type bumps the version of every type and pushes them all",
	FaultBroadcastUpdates:              "MULTI-2: a change is pushed to every stream of the type, subscribed or not",
	FaultEmptyDeltaUnsubscribesAll:     "DELTA-2: a delta request with empty lists unsubscribes everything",
	FaultInitialVersionsSkipAll:        "DELTA-8: names in initial_resource_versions are never sent on reconnect, even when changed",
	FaultSkipCurrentVersionOnReconnect: "RES-4, VER-5: a new SotW stream at the current version gets no response, even for new names",
	FaultFirstNameOnly:                 "RES-2, MULTI-1: of a request naming several resources only the first is served",
	FaultListenerNameWithoutPort:       "RES-7: a listener named \"host:port\" is served as \"host\"",
	FaultFirstResourceVersion:          "VER-7: a delta resource keeps the version it was first sent with when it changes",
	FaultVersionOnFirstSendOnly:        "VER-7: a delta resource's updates carry an empty version",
	FaultEmptyStateOnDelete:            "GRP-1, DEL-7: a deletion is answered with an empty full state, dropping what remains",
	FaultDropNamesWithStar:             "WILD-4: dropping \"*\" (delta) also drops the explicit names subscribed with it",
	FaultDropOneType:                   "STREAM-9: requests for Runtime resources are never answered",
	FaultNoDeltaVHDS:                   "STREAM-10: VirtualHost subscriptions on delta streams are never answered",
	FaultWildcardFrozen:                "WILD-1, WILD-2: a wildcard covers only the resources that existed when it began",
	FaultNoRemovalUnderWildcard:        "DEL-1: a deleted resource the wildcard covered is never listed in removed_resources",
	FaultPartialStateForNamed:          "GRP-1: SotW Listener/Cluster pushes to a stream subscribing by name carry only the changed resources",
	FaultStallAfterNack:                "ACK-9: after a NACK nothing of the type is pushed until the client sends another request",
	FaultLateNackResend:                "ACK-5, UPD-1: the rejected resources are resent one second after a NACK",
	FaultMergeUpdates:                  "GRP-4: an update is sent merged into the previous version, repeated fields appended",
	FaultDeltaPushEverything:           "UPD-1: every delta push carries every subscribed resource, changed or not",
	FaultADSHeadOfLine:                 "ADS-2: nothing is answered on ADS while a subscribed EDS name does not exist",
	FaultRoutesFirstNameOnly:           "RES-2: of a request naming several RouteConfigurations only the first is served",
	FaultForgetDeleted:                 "DNE-3, WILD-2: a deleted resource re-created later is not pushed to the streams that held it",
	FaultVersionPerPush:                "VER-7: every delta push resends every subscribed resource at a new version, changed or not",
	FaultWildcardOnlyLdsCds:            "WILD-8: Listener and Cluster subscriptions by name are ignored; only wildcards are served",
	FaultNamedIsWildcard:               "WILD-8: a SotW Listener/Cluster subscription by name gets every resource of the type",
	FaultTTLForEveryone:                "TTL-1: TTLs go to clients that did not advertise xds.config.supports-resource-ttl",
	FaultWrapForEveryone:               "TTL-5: SotW resources with a TTL are wrapped for clients that did not advertise resource-in-sotw",
	FaultTTLChangeNotPushed:            "TTL-3: a change of TTL alone is not pushed, so a TTL removed is never sent",
	FaultAliasesIgnored:                "DELTA-10: a delta subscription to an alias is taken for one to a resource of that name",
	FaultOrderAsSubscribed:             "CONS-1..5: the types of one change are pushed in the order the stream subscribed to them",
	FaultRemovalsFirst:                 "CONS-6: the removals of a change go out before its additions",
	FaultSlowWarming:                   "WARM-3: EDS requests for clusters just pushed are answered only at the next change",
	FaultNoCLAAfterClusterUpdate:       "WARM-4: a ClusterLoadAssignment requested again after its Cluster changed is not resent",
	FaultResendRoutesOnListenerUpdate:  "WARM-5 (MAY): a listener's unchanged routes are resent with every update of the listener",
	FaultFullStateEveryType:            "GRP-2 (MAY): every SotW push carries every subscribed resource, whatever the type",
	FaultCrashOnUnservable:             "ROB-1: a request it cannot serve (unknown, missing or foreign type_url, no node) crashes the server",
	FaultWedgeOnUnusualRequest:         "ROB-2: a request at the edges of the message shapes stops its stream answering",
	FaultIgnoreFirstRequest:            "RES-2: the first request of each type on a stream is never answered, its names never applied",
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

// The limits beyond which FaultWedgeOnUnusualRequest finds a request unusual.
const (
	unusualNames      = 1000
	unusualNameBytes  = 1 << 10
	unusualErrorBytes = 64 << 10
)

// unusualNameList reports whether names are at the edges of the message
// shape (FaultWedgeOnUnusualRequest): too many, too long, a control or
// format character, or a name twice.
func unusualNameList(names []string) bool {
	if len(names) > unusualNames {
		return true
	}
	seen := nameSet{}
	for _, n := range names {
		if len(n) > unusualNameBytes || seen[n] || strings.IndexFunc(n, func(r rune) bool { return r < 0x20 || unicode.Is(unicode.Cf, r) }) >= 0 {
			return true
		}
		seen[n] = true
	}
	return false
}

// unusualSotW reports whether a SotW request of ts's type is unusual
// (FaultWedgeOnUnusualRequest): its names, a large error_detail, a nonce
// the stream never sent, or an ACK of the latest response at a version
// that response did not carry.
func (c *sotwConn) unusualSotW(ts *sotwType, req *discovery.DiscoveryRequest) bool {
	nonce := req.GetResponseNonce()
	seq, err := strconv.ParseUint(nonce, 10, 64)
	neverSent := nonce != "" && (err != nil || seq == 0 || seq > c.nonces)
	ackOfOther := nonce != "" && nonce == ts.lastNonce && req.GetErrorDetail() == nil && req.GetVersionInfo() != ts.lastVersion
	return unusualNameList(req.GetResourceNames()) || proto.Size(req.GetErrorDetail()) > unusualErrorBytes || neverSent || ackOfOther
}

// unusualDelta reports whether a delta request is unusual
// (FaultWedgeOnUnusualRequest): its lists, a name in both, or a large
// error_detail.
func unusualDelta(req *discovery.DeltaDiscoveryRequest) bool {
	sub, unsub := req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe()
	both := slices.ContainsFunc(sub, func(n string) bool { return slices.Contains(unsub, n) })
	return unusualNameList(sub) || unusualNameList(unsub) || both || proto.Size(req.GetErrorDetail()) > unusualErrorBytes
}

// wedge is FaultWedgeOnUnusualRequest: the stream's goroutine stops, so
// nothing more is answered or pushed on it until the client goes away.
func (c *conn) wedge() error {
	<-c.ctx.Done()
	return status.FromContextError(c.ctx.Err()).Err()
}

// errCrashed is what every stream of a server that FaultCrashOnUnservable
// crashed ends with, as a client of a server process that died sees it.
var errCrashed = status.Error(codes.Unavailable, "refserver: crashed (fault crash-on-unservable-request)")

// unservable handles a request the server cannot serve: err ends the
// stream (ROB-1), unless FaultCrashOnUnservable crashes the whole server.
func (c *conn) unservable(err error) error {
	if c.s.has(FaultCrashOnUnservable) {
		c.s.crashOnce.Do(func() { close(c.s.crashed) }) // breaks ROB-1
		return errCrashed
	}
	return err
}
