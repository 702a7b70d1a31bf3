package fakeclient

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// The global invariants read variants (xRFC TP2) and errors (xRFC TP3):
// variants of one name are distinct resources, a variant names itself by
// resource_name only (DYN-4), and no resource is both served and in error
// (ERR-2).
func TestGlobalInvariantsDynErr(t *testing.T) {
	cla := func(name string) *anypb.Any { return wire.BuildAny(wire.Endpoint, name, 1) }
	prod, test := wire.Exact("env", "prod"), wire.Exact("env", "test")
	variant := func(name string, c *discovery.DynamicParameterConstraints) *discovery.Resource {
		return &discovery.Resource{ResourceName: &discovery.ResourceName{Name: name, DynamicParameterConstraints: c}, Version: "1", Resource: cla(name)}
	}
	rn := func(name string, c *discovery.DynamicParameterConstraints) *discovery.ResourceName {
		return &discovery.ResourceName{Name: name, DynamicParameterConstraints: c}
	}
	rerr := func(name string) *discovery.ResourceError {
		return &discovery.ResourceError{ResourceName: &discovery.ResourceName{Name: name}, ErrorDetail: &rpcstatus.Status{Code: 7}}
	}
	wrapped := func(r *discovery.Resource) *anypb.Any {
		a, err := anypb.New(r)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, tc := range []struct {
		name      string
		r         *discovery.DeltaDiscoveryResponse
		wantRules []string
	}{
		{"two variants of one name", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{variant("a", prod), variant("a", test)}}, nil},
		{"a variant replacing another (DYN-6)", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{variant("a", test)},
			RemovedResourceNames: []*discovery.ResourceName{rn("a", prod)}}, nil},
		{"one variant twice", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{variant("a", prod), variant("a", prod)}}, []string{"DUP-1"}},
		{"a variant served and removed", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{variant("a", prod)},
			RemovedResourceNames: []*discovery.ResourceName{rn("a", prod)}}, []string{"DUP-3"}},
		{"name and resource_name", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{{Name: "a", ResourceName: rn("a", prod), Version: "1", Resource: cla("a")}}}, []string{"DYN-4"}},
		{"an error for another resource", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{{Name: "a", Version: "1", Resource: cla("a")}},
			ResourceErrors: []*discovery.ResourceError{rerr("b")}}, nil},
		{"served and in error", &discovery.DeltaDiscoveryResponse{Resources: []*discovery.Resource{{Name: "a", Version: "1", Resource: cla("a")}},
			ResourceErrors: []*discovery.ResourceError{rerr("a")}}, []string{"ERR-2"}},
	} {
		tc.r.TypeUrl, tc.r.Nonce = wire.Endpoint.URL, "1"
		r := decodeDelta("ads#1", tc.r)
		var rules []string
		for _, v := range checkResponse(r, "", nil, map[string]map[string]bool{}, map[string]map[string]string{}, false, false) {
			rules = append(rules, v.Rule)
		}
		assert.Equal(t, tc.wantRules, rules, tc.name)
	}

	// SotW: a variant comes wrapped, named by resource_name; the client
	// that subscribed by locator takes wrappers (DYN-1), so TTL-5 holds.
	sotw := decodeSotW("ads#1", &discovery.DiscoveryResponse{TypeUrl: wire.Endpoint.URL, Nonce: "1", VersionInfo: "1",
		Resources: []*anypb.Any{wrapped(variant("a", prod)), wrapped(variant("a", test))}, ResourceErrors: []*discovery.ResourceError{rerr("b")}})
	assert.Empty(t, checkResponse(sotw, "", nil, map[string]map[string]bool{}, map[string]map[string]string{}, true, false))
	assert.Equal(t, []string{"a", "a"}, sotw.Names())
	assert.Equal(t, wire.ConstraintsKey(prod), wire.ConstraintsKey(sotw.ConstraintsOf("a")))
	assert.NotNil(t, sotw.ErrorFor("b"))
	assert.True(t, locates(&discovery.DiscoveryRequest{ResourceLocators: []*discovery.ResourceLocator{Locator("a", nil)}}))
	assert.False(t, locates(&discovery.DiscoveryRequest{ResourceNames: []string{"a"}}))

	removed := decodeDelta("ads#1", &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Endpoint.URL, Nonce: "2", RemovedResourceNames: []*discovery.ResourceName{rn("a", prod)}})
	assert.True(t, removed.HasRemoved("a"))
	assert.Equal(t, []string{"a"}, removed.removedNames())
}
