package wire

import "slices"

// Client features (node.client_features) the protocol gives meaning to
// (xds_protocol#ttl): a client takes resource TTLs when it advertises
// FeatureTTL, and SotW Resource wrappers (the only way a TTL comes in
// SotW) when it advertises FeatureResourceInSotW or its older spelling.
const (
	FeatureTTL            = "xds.config.supports-resource-ttl"
	FeatureResourceInSotW = "xds.config.resource-in-sotw"
	// FeatureResourceInSotWOld is xds_protocol.rst's spelling; gRPC
	// clients advertise FeatureResourceInSotW.
	FeatureResourceInSotWOld = "xds.config.supports-resource-in-sotw"
)

// TakesTTL reports whether a client advertising features takes TTLs.
func TakesTTL(features []string) bool { return slices.Contains(features, FeatureTTL) }

// TakesResourceInSotW reports whether a client advertising features takes
// Resource wrappers in SotW responses, under either spelling.
func TakesResourceInSotW(features []string) bool {
	return slices.Contains(features, FeatureResourceInSotW) || slices.Contains(features, FeatureResourceInSotWOld)
}
