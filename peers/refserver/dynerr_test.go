package refserver

import (
	"context"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

func variantReq(t *testing.T, name string, rev int, c *discovery.DynamicParameterConstraints) *fixturepb.SetResourceRequest {
	r := setReq(wire.Endpoint, name, rev)
	a, err := anypb.New(c)
	require.NoError(t, err)
	r.DynamicParameterConstraints = a
	return r
}

func deleteVariantReq(t *testing.T, name string, c *discovery.DynamicParameterConstraints) *fixturepb.DeleteResourceRequest {
	a, err := anypb.New(c)
	require.NoError(t, err)
	return &fixturepb.DeleteResourceRequest{NodeId: node, TypeUrl: wire.Endpoint.URL, Name: name, DynamicParameterConstraints: a}
}

// Variants are stored side by side and each stream sees, under the
// resource's name, the one its parameters match (DYN-7), or nothing
// (DYN-8); deleting one variant leaves the others (DYN-5).
func TestStoreVariants(t *testing.T) {
	s := New()
	f := s.FixtureServer()
	ctx := context.Background()
	prod, test := wire.Exact("env", "prod"), wire.Exact("env", "test")
	_, err := f.SetResource(ctx, variantReq(t, "a", 1, prod))
	require.NoError(t, err)
	_, err = f.SetResource(ctx, variantReq(t, "a", 2, test))
	require.NoError(t, err)

	seen := func(p map[string]string) *entry {
		return s.snapshotFor(node, wire.Endpoint.URL, func(string) map[string]string { return p }).resources["a"]
	}
	require.NotNil(t, seen(map[string]string{"env": "prod"}))
	assert.Equal(t, wire.ConstraintsKey(prod), wire.ConstraintsKey(seen(map[string]string{"env": "prod"}).variant.constraints))
	assert.Equal(t, wire.ConstraintsKey(test), wire.ConstraintsKey(seen(map[string]string{"env": "test", "zone": "eu"}).variant.constraints))
	assert.Nil(t, seen(map[string]string{"env": "qa"}), "no variant matches: missing")
	assert.Nil(t, seen(nil), "no parameters: missing")
	assert.NotEqual(t, seen(map[string]string{"env": "prod"}).version, seen(map[string]string{"env": "test"}).version)

	// The unconstrained resource and variants of one name overlap (DYN-12).
	_, err = f.SetResource(ctx, setReq(wire.Endpoint, "a", 3))
	assert.Equal(t, codes.InvalidArgument, status.Code(err), "%v", err)

	_, err = f.DeleteResource(ctx, deleteVariantReq(t, "a", test))
	require.NoError(t, err)
	assert.Nil(t, seen(map[string]string{"env": "test"}))
	assert.NotNil(t, seen(map[string]string{"env": "prod"}), "deleting env=test leaves env=prod")

	// A batch replaces a variant by others in one change (DYN-6).
	v1 := wire.And(prod, wire.Exact("version", "v1"))
	_, err = f.ApplyChanges(ctx, &fixturepb.ApplyChangesRequest{NodeId: node, Changes: []*fixturepb.Change{
		{Change: &fixturepb.Change_Delete{Delete: deleteVariantReq(t, "a", prod)}},
		setChange(variantReq(t, "a", 4, v1)),
	}})
	require.NoError(t, err)
	assert.Equal(t, wire.ConstraintsKey(v1), wire.ConstraintsKey(seen(map[string]string{"env": "prod", "version": "v1"}).variant.constraints))
	assert.Nil(t, seen(map[string]string{"env": "prod"}))
}

// An error is stored in place of the resource, and refused when it says
// nothing or comes with a resource or constraints.
func TestStoreErrors(t *testing.T) {
	s := New()
	f := s.FixtureServer()
	ctx := context.Background()
	denied := &fixturepb.ResourceError{Code: int32(codes.PermissionDenied), Message: "no"}
	_, err := f.SetResource(ctx, &fixturepb.SetResourceRequest{NodeId: node, TypeUrl: wire.Endpoint.URL, Name: "b", Error: denied})
	require.NoError(t, err)
	snap := s.snapshot(node, wire.Endpoint.URL)
	require.NotNil(t, snap.resources["b"])
	assert.Equal(t, int32(codes.PermissionDenied), snap.resources["b"].err.GetCode())
	assert.Nil(t, snap.resources["b"].res)

	for name, r := range map[string]*fixturepb.SetResourceRequest{
		"code OK":       {NodeId: node, TypeUrl: wire.Endpoint.URL, Name: "c", Error: &fixturepb.ResourceError{}},
		"with resource": {NodeId: node, TypeUrl: wire.Endpoint.URL, Name: "c", Error: denied, Resource: wire.BuildAny(wire.Endpoint, "c", 1)},
		"on a variant": func() *fixturepb.SetResourceRequest {
			r := variantReq(t, "c", 1, wire.Exists("x"))
			r.Resource, r.Error = nil, denied
			return r
		}(),
	} {
		_, err := f.SetResource(ctx, r)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
	}
}
