package refserver

// The faults of dynamic parameters (xRFC TP2) and per-resource errors
// (xRFC TP3), each breaking the step of a server/dynamic or server/errors
// scenario that checks its rule.
const (
	// FaultLocatorSubscriptionsIgnored ignores resource_locators in
	// requests, serving only what resource_names subscribe (DYN-2).
	FaultLocatorSubscriptionsIgnored Fault = "locator-subscriptions-ignored"
	// FaultNamesNotResourceNames sends variants by name alone, without
	// their constraints (DYN-3).
	FaultNamesNotResourceNames Fault = "names-not-resource-names"
	// FaultNameAndResourceName sets both name and resource_name on
	// variants (DYN-4).
	FaultNameAndResourceName Fault = "name-and-resource-name"
	// FaultPlainVariantRemoval removes a variant in removed_resources,
	// without its constraints (DYN-5).
	FaultPlainVariantRemoval Fault = "plain-variant-removal"
	// FaultVariantRemovalDropsAll deletes every variant of a name when the
	// fixture deletes one (DYN-5).
	FaultVariantRemovalDropsAll Fault = "variant-removal-drops-all"
	// FaultTornVariantChange sends the removal of a replaced variant in a
	// response of its own, ahead of its replacement (DYN-6).
	FaultTornVariantChange Fault = "torn-variant-change"
	// FaultIgnoreConstraints serves every subscription the same variant,
	// whatever its parameters (DYN-7).
	FaultIgnoreConstraints Fault = "ignore-constraints"
	// FaultUnconstrainedKeysBlock lets parameters the constraints do not
	// mention prevent a match (DYN-7).
	FaultUnconstrainedKeysBlock Fault = "unconstrained-keys-block"
	// FaultNoMatchServesDefault serves a variant to a subscription no
	// variant matches (DYN-8).
	FaultNoMatchServesDefault Fault = "no-match-serves-default"
	// FaultNoResourceErrors never reports resource_errors: a name in error
	// is neither served nor reported (ERR-1, MAY).
	FaultNoResourceErrors Fault = "no-resource-errors"
	// FaultErrorAndResource sends, with the error of a resource, the
	// resource as last sent (ERR-2).
	FaultErrorAndResource Fault = "error-and-resource"
	// FaultErrorsDropFullState sends a SotW response that reports an
	// error without any resource (ERR-3).
	FaultErrorsDropFullState Fault = "errors-drop-full-state"
	// FaultRepeatErrors repeats a resource's error in every SotW response
	// that could carry it (ERR-4, MAY).
	FaultRepeatErrors Fault = "repeat-errors"
	// FaultWildcardErrorsUnnamed reports the error of a resource a client
	// gets through a legacy wildcard under the wildcard's empty name, not
	// the resource's (ERR-11).
	FaultWildcardErrorsUnnamed Fault = "wildcard-errors-unnamed"
	// FaultVariantTTLDropped leaves the TTL out of the Resource wrapper a
	// SotW variant travels in, as a server that builds variants' wrappers
	// apart from plain resources' may (TTL-3).
	FaultVariantTTLDropped Fault = "variant-ttl-dropped"
)

// dynerrDescriptions are the descriptions of the faults above.
var dynerrDescriptions = map[Fault]string{
	FaultLocatorSubscriptionsIgnored: "DYN-2: ignores resource_locators, serving only resource_names",
	FaultNamesNotResourceNames:       "DYN-3: sends variants by name, without their constraints",
	FaultNameAndResourceName:         "DYN-4: sets both name and resource_name on variants",
	FaultPlainVariantRemoval:         "DYN-5: removes variants in removed_resources, without their constraints",
	FaultVariantRemovalDropsAll:      "DYN-5: deleting one variant deletes every variant of the name",
	FaultTornVariantChange:           "DYN-6: a replaced variant's removal comes in a response of its own",
	FaultIgnoreConstraints:           "DYN-7: every subscription gets the same variant, whatever its parameters",
	FaultUnconstrainedKeysBlock:      "DYN-7: parameters the constraints do not mention prevent a match",
	FaultNoMatchServesDefault:        "DYN-8: a subscription no variant matches is served a variant anyway",
	FaultNoResourceErrors:            "ERR-1 (MAY): never reports resource_errors",
	FaultErrorAndResource:            "ERR-2: sends a resource in error both in resource_errors and in resources",
	FaultErrorsDropFullState:         "ERR-3: a SotW response reporting an error carries no resources",
	FaultRepeatErrors:                "ERR-4 (MAY): repeats errors in every SotW response",
	FaultWildcardErrorsUnnamed:       "ERR-11: a wildcard member's error is named with the wildcard's empty name, not the member's",
	FaultVariantTTLDropped:           "TTL-3: a SotW variant's Resource wrapper carries no TTL",
}

func init() {
	AllFaults = append(AllFaults,
		FaultLocatorSubscriptionsIgnored, FaultNamesNotResourceNames, FaultNameAndResourceName,
		FaultPlainVariantRemoval, FaultVariantRemovalDropsAll, FaultTornVariantChange,
		FaultIgnoreConstraints, FaultUnconstrainedKeysBlock, FaultNoMatchServesDefault,
		FaultNoResourceErrors, FaultErrorAndResource, FaultErrorsDropFullState, FaultRepeatErrors,
		FaultWildcardErrorsUnnamed, FaultGlobErrorsDropped, FaultVariantTTLDropped)
	for f, d := range dynerrDescriptions {
		faultDescriptions[f] = d
	}
}

// FaultGlobErrorsDropped serves a glob collection's members even when the
// collection as a whole is in error, never reporting that error under the
// glob's URL (ERR-11).
const FaultGlobErrorsDropped Fault = "glob-errors-dropped"

func init() {
	faultDescriptions[FaultGlobErrorsDropped] = "ERR-11: an error set on a glob collection's URL is never reported; its members are served instead"
}
