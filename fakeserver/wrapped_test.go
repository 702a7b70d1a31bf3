package fakeserver_test

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/wire"
)

// RespondWrapped sends the wrappers and errors as given: packed one by
// one in SotW, as the resources in delta with a version filled in, and
// the errors in resource_errors either way.
func TestRespondWrapped(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		t.Run(v.String(), func(t *testing.T) {
			ctx := t.Context()
			srv, c, _ := start(t, v)
			require.NoError(t, c.Subscribe(wire.Cluster, "c1", "c2"))
			st, err := srv.StreamFor(ctx, wire.Cluster, 0)
			require.NoError(t, err)
			_, err = st.Next(ctx, wire.Cluster)
			require.NoError(t, err)
			body, err := anypb.New(wire.ClientCluster("c1", 1))
			require.NoError(t, err)
			w := &discovery.Resource{ResourceName: &discovery.ResourceName{Name: "c1"}, Resource: body}
			e := &discovery.ResourceError{ResourceName: &discovery.ResourceName{Name: "c2"}, ErrorDetail: &rpcstatus.Status{Code: 14}}
			nonce, err := st.RespondWrapped(ctx, wire.Cluster, "1", []*discovery.Resource{w}, []*discovery.ResourceError{e})
			require.NoError(t, err)
			resp, err := c.Expect(wire.Cluster)
			require.NoError(t, err)
			assert.Equal(t, nonce, resp.Nonce)
			if v.IsDelta() {
				require.Len(t, resp.Delta.GetResources(), 1)
				got := resp.Delta.GetResources()[0]
				assert.Equal(t, "c1", got.GetResourceName().GetName())
				assert.Equal(t, fakeserver.ResourceVersion("1", "c1"), got.GetVersion())
				assert.Empty(t, w.GetVersion(), "the caller's wrapper is left as it was")
				assert.Equal(t, "c2", resp.Delta.GetResourceErrors()[0].GetResourceName().GetName())
				return
			}
			require.Len(t, resp.SotW.GetResources(), 1)
			assert.Equal(t, wire.ResourceWrapperURL, resp.SotW.GetResources()[0].GetTypeUrl())
			assert.Equal(t, "c2", resp.SotW.GetResourceErrors()[0].GetResourceName().GetName())
		})
	}
}
