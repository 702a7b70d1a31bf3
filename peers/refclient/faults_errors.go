package refclient

// The fault switches of per-resource errors (xRFC TP3, gRFC A88), dynamic
// parameters (xRFC TP2) and the Resource wrapper's metadata (CACHE-2).
// They live in a file of their own and join AllFaults and the
// descriptions in init, so the older list stays as it is.
const (
	// FaultForgetErrors forgets a resource's error at the next response of its type that does not repeat it (ERR-5).
	FaultForgetErrors Fault = "forget-errors"
	// FaultErrorKeepsTimer leaves the does-not-exist timer running when an error arrives for a resource not yet received (ERR-6).
	FaultErrorKeepsTimer Fault = "error-keeps-timer"
	// FaultTransientDropsCache drops the cached resource on UNAVAILABLE, INTERNAL or UNKNOWN (ERR-7).
	FaultTransientDropsCache Fault = "transient-drops-cache"
	// FaultIgnoreDataErrors treats NOT_FOUND and PERMISSION_DENIED as transient (ERR-8 not used, MAY).
	FaultIgnoreDataErrors Fault = "ignore-data-errors"
	// FaultUnknownCodeDrops treats codes other than the five TP3 names as data errors (ERR-9).
	FaultUnknownCodeDrops Fault = "unknown-code-drops"
	// FaultDeltaNotFoundKept keeps a cached resource a delta response reports NOT_FOUND (ERR-10).
	FaultDeltaNotFoundKept Fault = "delta-not-found-kept"
	// FaultErrorsNotShown shows resources with an error as if there were none in CSDS (ERR-12).
	FaultErrorsNotShown Fault = "errors-not-shown"
	// FaultWrapperNeedsName rejects Resource wrappers named by resource_name instead of name (DYN-1).
	FaultWrapperNeedsName Fault = "wrapper-needs-name"
	// FaultStrictConstraints lets a parameter the constraints do not mention prevent a match (DYN-7).
	FaultStrictConstraints Fault = "strict-constraints"
	// FaultNoVariantCheck accepts variants whose constraints do not match the parameters sent (DYN-10 not used, MAY).
	FaultNoVariantCheck Fault = "no-variant-check"
	// FaultParametersDrift sends other dynamic parameters for clusters and endpoints than for listeners and routes (DYN-11).
	FaultParametersDrift Fault = "parameters-drift"
	// FaultNackResourceMetadata rejects resources whose Resource wrapper carries metadata (CACHE-2).
	FaultNackResourceMetadata Fault = "nack-resource-metadata"
	// FaultResendAtHeldVersionIsHeartbeat takes a delta resource that
	// comes with its body at the version held for a heartbeat: nothing is
	// stored, so an error remembered for it outlives its arrival (ERR-5).
	FaultResendAtHeldVersionIsHeartbeat Fault = "resend-at-held-version-is-heartbeat"
	// FaultForeignTypeApplied reads a response of another type on a
	// per-type stream as one of the stream's type, without rejecting it:
	// an empty SotW one is a full state deleting every resource held
	// (ROB-3).
	FaultForeignTypeApplied Fault = "foreign-type-applied"
	// FaultGiveUpAfterFailedOpen stops reconnecting at the first stream
	// that cannot be opened (the server unreachable, as while it
	// restarts): the client never talks to the server again (RECONN-2).
	FaultGiveUpAfterFailedOpen Fault = "give-up-after-failed-open"
	// FaultWeightedClustersIgnored asks for the cluster a route names
	// alone, not for those of its weighted_clusters (RES-1).
	FaultWeightedClustersIgnored Fault = "weighted-clusters-ignored"
	// FaultUnwatchedErrorEndsErrors stops reading a response's
	// resource_errors at the first one for a name the client does not
	// watch, so the errors listed after it are never applied (ERR-12).
	FaultUnwatchedErrorEndsErrors Fault = "unwatched-error-ends-errors"
)

var errorFaultDescriptions = map[Fault]string{
	FaultForgetErrors:                   "ERR-5: a resource's error is forgotten at the next response of its type that does not repeat it",
	FaultErrorKeepsTimer:                "ERR-6: an error for a resource not yet received leaves its does-not-exist timer running",
	FaultTransientDropsCache:            "ERR-7: UNAVAILABLE, INTERNAL and UNKNOWN errors drop the cached resource",
	FaultIgnoreDataErrors:               "ERR-8 (MAY): NOT_FOUND and PERMISSION_DENIED errors are treated as transient",
	FaultUnknownCodeDrops:               "ERR-9: errors with other codes (FAILED_PRECONDITION, ...) drop the cached resource",
	FaultDeltaNotFoundKept:              "ERR-10: a delta NOT_FOUND error keeps the cached resource instead of removing it",
	FaultErrorsNotShown:                 "ERR-12: CSDS shows resources with a server error as ACKED or REQUESTED, without the error",
	FaultWrapperNeedsName:               "DYN-1: Resource wrappers named by resource_name (no name) are rejected",
	FaultStrictConstraints:              "DYN-7: a dynamic parameter the constraints do not mention makes a variant not match",
	FaultNoVariantCheck:                 "DYN-10 (MAY): variants whose constraints do not match the parameters sent are accepted",
	FaultParametersDrift:                "DYN-11: clusters and endpoints are subscribed with other dynamic parameters than listeners and routes",
	FaultNackResourceMetadata:           "CACHE-2: resources whose Resource wrapper carries metadata are rejected",
	FaultResendAtHeldVersionIsHeartbeat: "ERR-5: a delta resource resent with its body at the version held is taken for a heartbeat, so its remembered error stays",
	FaultForeignTypeApplied:             "ROB-3: a response of another type on a per-type stream is applied as one of the stream's type (an empty SotW one deletes every resource held)",
	FaultGiveUpAfterFailedOpen:          "RECONN-2: the client stops reconnecting at the first stream it cannot open, as when its server is unreachable for a while",
	FaultWeightedClustersIgnored:        "RES-1: the clusters of a route's weighted_clusters are not asked for",
	FaultUnwatchedErrorEndsErrors:       "ERR-12: a response's resource_errors are read only up to the first one for a name the client does not watch",
}

func init() {
	for _, f := range []Fault{
		FaultForgetErrors, FaultErrorKeepsTimer, FaultTransientDropsCache, FaultIgnoreDataErrors,
		FaultUnknownCodeDrops, FaultDeltaNotFoundKept, FaultErrorsNotShown, FaultWrapperNeedsName,
		FaultStrictConstraints, FaultNoVariantCheck, FaultParametersDrift, FaultNackResourceMetadata,
		FaultResendAtHeldVersionIsHeartbeat, FaultForeignTypeApplied, FaultGiveUpAfterFailedOpen,
		FaultWeightedClustersIgnored, FaultUnwatchedErrorEndsErrors,
	} {
		AllFaults = append(AllFaults, f)
		faultDescriptions[f] = errorFaultDescriptions[f]
	}
}
