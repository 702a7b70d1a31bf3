package gcpserver

import (
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
)

// go-control-plane v0.14.0 implements neither dynamic parameters (xRFC
// TP2) nor per-resource errors (xRFC TP3): nothing under its pkg/ reads
// DiscoveryRequest.resource_locators or DeltaDiscoveryRequest
// .resource_locators_subscribe, or sets Resource.resource_name,
// DeltaDiscoveryResponse.removed_resource_names or the responses'
// resource_errors (the fields exist only in the generated envoy protos,
// envoy/service/discovery/v3/discovery.pb.go). Its subscriptions are
// names (pkg/server/stream/v3/subscription.go) and its caches hold one
// resource per name, so no flavour claims "dynamic-parameters" or
// "resource-errors", and a fixture request that uses them is refused.

// refuseNewer refuses a SetResource that sets a variant or an error.
func refuseNewer(r *fixturepb.SetResourceRequest) error {
	switch {
	case r.GetDynamicParameterConstraints() != nil:
		return unclaimed(fixture.FeatureDynamicParameters)
	case r.GetError() != nil:
		return unclaimed(fixture.FeatureResourceErrors)
	}
	return nil
}

// refuseVariantDelete refuses a DeleteResource of one variant.
func refuseVariantDelete(r *fixturepb.DeleteResourceRequest) error {
	if r.GetDynamicParameterConstraints() != nil {
		return unclaimed(fixture.FeatureDynamicParameters)
	}
	return nil
}
