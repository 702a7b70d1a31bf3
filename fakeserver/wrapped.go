package fakeserver

import (
	"context"
	"fmt"
	"maps"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// Locators are the resource locators a request subscribes (xRFC TP2): a
// SotW request's resource_locators, a delta request's
// resource_locators_subscribe.
func (r *Request) Locators() []*discovery.ResourceLocator {
	if r.Delta != nil {
		return r.Delta.GetResourceLocatorsSubscribe()
	}
	return r.SotW.GetResourceLocators()
}

// LocatorNames are the names of Locators.
func (r *Request) LocatorNames() []string {
	var out []string
	for _, l := range r.Locators() {
		out = append(out, l.GetName())
	}
	return out
}

// RespondWrapped sends a response of type t at version carrying the
// Resource wrappers wrapped as they are (named by name or resource_name,
// with metadata, constraints, ...) and the per-resource errors errs
// (xRFC TP3). In SotW each wrapper is packed into an Any of its own and
// version is the version_info; in delta the wrappers are the response's
// resources, each without a version given ResourceVersion(version, its
// name), and version is the system_version_info. It returns the nonce.
func (st *Stream) RespondWrapped(ctx context.Context, t wire.Type, version string, wrapped []*discovery.Resource, errs []*discovery.ResourceError) (string, error) {
	nonce := st.NewNonce()
	if st.Delta {
		resp := &discovery.DeltaDiscoveryResponse{TypeUrl: t.URL, SystemVersionInfo: version, Nonce: nonce, ResourceErrors: errs}
		for _, w := range wrapped {
			if w.GetVersion() == "" {
				name := w.GetName()
				if name == "" {
					name = w.GetResourceName().GetName()
				}
				w = cloneResource(w)
				w.Version = ResourceVersion(version, name)
			}
			resp.Resources = append(resp.Resources, w)
		}
		return nonce, st.Send(ctx, resp)
	}
	resp := &discovery.DiscoveryResponse{TypeUrl: t.URL, VersionInfo: version, Nonce: nonce, ResourceErrors: errs}
	for _, w := range wrapped {
		a, err := anypb.New(w)
		if err != nil {
			return "", fmt.Errorf("packing a Resource wrapper: %w", err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	return nonce, st.Send(ctx, resp)
}

// cloneResource copies the wrapper's top level, so the caller's stays as
// it was.
func cloneResource(w *discovery.Resource) *discovery.Resource {
	return &discovery.Resource{
		Name: w.GetName(), ResourceName: w.GetResourceName(), Aliases: w.GetAliases(), Version: w.GetVersion(),
		Resource: w.GetResource(), Ttl: w.GetTtl(), CacheControl: w.GetCacheControl(), Metadata: w.GetMetadata(),
	}
}

// SameParameters reports whether two locators' dynamic parameters are
// equal (DYN-11).
func SameParameters(a, b *discovery.ResourceLocator) bool {
	return maps.Equal(a.GetDynamicParameters(), b.GetDynamicParameters())
}
