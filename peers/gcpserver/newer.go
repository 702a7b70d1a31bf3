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
// envoy/service/discovery/v3/discovery.pb.go; no file of the
// go-control-plane v0.14.0 module names them). Its subscriptions are the
// request's names only (pkg/server/sotw/v3/xds.go:128,131 and ads.go:107,
// 110 read resource_names; pkg/server/delta/v3/server.go:239 reads
// resource_names_subscribe and _unsubscribe), its delta resources are
// named by name (pkg/cache/v3/cache.go:365), and its caches hold one
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
