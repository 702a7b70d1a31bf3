package refclient

// Faults of federation (xdstp.go): each breaks one XDSTP rule. They live
// in a file of their own and join AllFaults at init.
const (
	// FaultSendDirectives subscribes to a locator with its #directives (XDSTP-8).
	FaultSendDirectives Fault = "send-directives"
	// FaultUdpaScheme writes xdstp names with the old udpa:// scheme on the wire (XDSTP-1).
	FaultUdpaScheme Fault = "udpa-scheme"
	// FaultExactNameMatch matches delivered xdstp names string for string, context-parameter order included (XDSTP-3).
	FaultExactNameMatch Fault = "exact-name-match"
	// FaultIgnoreContextParams takes a delivered xdstp name for a watched one with the same authority, type and id, whatever its context parameters (XDSTP-5).
	FaultIgnoreContextParams Fault = "ignore-context-params"
	// FaultIgnoreAuthority sends every name to the default server, whatever its authority, redirect targets included (XDSTP-13, REDIR-3).
	FaultIgnoreAuthority Fault = "ignore-authority"
	// FaultUnknownAuthorityToDefault asks the default server for names of an authority the bootstrap does not know, redirect targets included (XDSTP-13, REDIR-3).
	FaultUnknownAuthorityToDefault Fault = "unknown-authority-to-default"
	// FaultChannelPerAuthority opens a channel and stream per authority, even for authorities with the same server (XDSTP-14).
	FaultChannelPerAuthority Fault = "channel-per-authority"
	// FaultTemplateNotEncoded puts the target's name into an xdstp listener template without percent-encoding it (XDSTP-15).
	FaultTemplateNotEncoded Fault = "template-not-encoded"
	// FaultXdstpClusterWithoutServiceName accepts an EDS cluster named by an xdstp name without eds_cluster_config.service_name (XDSTP-16).
	FaultXdstpClusterWithoutServiceName Fault = "xdstp-cluster-without-service-name"
	// FaultGlobOverSotW subscribes to glob collections over SotW too (COLL-6).
	FaultGlobOverSotW Fault = "glob-over-sotw"
	// FaultDirectivesDecodedBeforeSplit decodes a locator's fragment before splitting it at ',' (XDSTP-9).
	FaultDirectivesDecodedBeforeSplit Fault = "directives-decoded-before-split"
	// FaultCollectionFrozen follows a list collection's first membership and none after (COLL-2).
	FaultCollectionFrozen Fault = "collection-frozen"
	// FaultXdstpDeltaOnly never asks for xdstp names over SotW, as the first draft of the naming scheme had it (XDSTP-18).
	FaultXdstpDeltaOnly Fault = "xdstp-delta-only"
	// FaultSharedVersionAcrossServers keeps one accepted version per type for every
	// management server, so a request to one server carries the version last
	// accepted from another (VER-3).
	FaultSharedVersionAcrossServers Fault = "shared-version-across-servers"
	// FaultIrvOfEveryServer lists in initial_resource_versions, on a
	// reconnect to one management server, what the client holds from
	// every server (DELTA-6).
	FaultIrvOfEveryServer Fault = "irv-of-every-server"
)

// xdstpFaults are the federation faults, in the order AllFaults lists
// them.
var xdstpFaults = []Fault{
	FaultSendDirectives, FaultUdpaScheme, FaultExactNameMatch, FaultIgnoreContextParams,
	FaultIgnoreAuthority, FaultUnknownAuthorityToDefault, FaultChannelPerAuthority,
	FaultTemplateNotEncoded, FaultXdstpClusterWithoutServiceName, FaultXdstpDeltaOnly,
	FaultGlobOverSotW, FaultDirectivesDecodedBeforeSplit, FaultCollectionFrozen,
	FaultSharedVersionAcrossServers, FaultIrvOfEveryServer,
}

var xdstpFaultDescriptions = map[Fault]string{
	FaultSendDirectives:                 "subscribes to xdstp locators with their #directives (breaks XDSTP-8)",
	FaultUdpaScheme:                     "writes xdstp names as udpa:// on the wire (breaks XDSTP-1)",
	FaultExactNameMatch:                 "matches delivered xdstp names string for string, context-parameter order included (breaks XDSTP-3)",
	FaultIgnoreContextParams:            "takes a delivered xdstp name for a watched one whatever its context parameters (breaks XDSTP-5)",
	FaultIgnoreAuthority:                "asks the default server for every name, whatever its authority (breaks XDSTP-13, REDIR-3)",
	FaultUnknownAuthorityToDefault:      "asks the default server for names of an authority missing from the bootstrap (breaks XDSTP-13, REDIR-3)",
	FaultChannelPerAuthority:            "opens a channel per authority even when authorities share a server (breaks XDSTP-14)",
	FaultTemplateNotEncoded:             "puts the target's name into an xdstp listener template unencoded (breaks XDSTP-15)",
	FaultXdstpClusterWithoutServiceName: "accepts an xdstp-named EDS cluster without service_name (breaks XDSTP-16)",
	FaultXdstpDeltaOnly:                 "asks for xdstp names over delta only, never over SotW (breaks XDSTP-18)",
	FaultCollectionFrozen:               "follows a list collection's first membership and none after (breaks COLL-2)",
	FaultGlobOverSotW:                   "subscribes to glob collections over SotW too (breaks COLL-6)",
	FaultDirectivesDecodedBeforeSplit:   "decodes a locator's fragment before splitting it, so an encoded ',' splits a value (breaks XDSTP-9)",
	FaultSharedVersionAcrossServers:     "keeps one accepted version per type across management servers, so a NACK to one carries another's version (breaks VER-3)",
	FaultIrvOfEveryServer:               "lists, reconnecting to one management server, what it holds from every server in initial_resource_versions (breaks DELTA-6)",
}

func init() {
	AllFaults = append(AllFaults, xdstpFaults...)
	for f, d := range xdstpFaultDescriptions {
		faultDescriptions[f] = d
	}
}
