package consulfixture

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// A resource the adapter cannot translate is refused before Consul is
// called (base points nowhere: a call fails with Unavailable); neither
// leaves anything behind for the node's next registration.
func TestSetRefusesUntranslatableResources(t *testing.T) {
	f := &Fixture{base: "http://127.0.0.1:1", nodes: map[string]*proxy{}, port: 30000, suffix: ".consul"}
	empty, err := anypb.New(&endpoint.ClusterLoadAssignment{ClusterName: "svc"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, resName string
		res           *anypb.Any
		code          codes.Code
	}{
		{"assignment without endpoints", "svc", empty, codes.InvalidArgument},
		{"type it cannot serve", "svc", wire.BuildAny(wire.Listener, "svc", 1), codes.InvalidArgument},
		{"name Consul would refuse", "Not_A_Service", wire.BuildAny(wire.Endpoint, "svc", 1), codes.InvalidArgument},
		{"Consul unreachable", "svc", wire.BuildAny(wire.Endpoint, "svc", 1), codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.SetResource(context.Background(), &fixturepb.SetResourceRequest{NodeId: "n", TypeUrl: wire.Endpoint.URL, Name: tc.resName, Resource: tc.res})
			assert.Equal(t, tc.code, status.Code(err), "%v", err)
			assert.Empty(t, f.proxyLocked("n").upstreams)
			assert.Equal(t, 30000, f.port)
		})
	}
}
