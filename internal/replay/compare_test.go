package replay

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

func delta(removed []string, res ...*discovery.Resource) *discovery.DeltaDiscoveryResponse {
	return &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "n", Resources: res, RemovedResources: removed}
}

func res(name, version string) *discovery.Resource {
	return &discovery.Resource{Name: name, Version: version, Resource: wire.BuildAny(wire.Cluster, name, 1)}
}

// TestCompareResponses: each thing a replay compares in a response makes
// a difference when, and only when, it differs.
func TestCompareResponses(t *testing.T) {
	base := delta([]string{"gone"}, res("a", "1"), res("b", "1"))
	for _, tc := range []struct {
		name    string
		live    *discovery.DeltaDiscoveryResponse
		partial bool
		want    string // "" for no difference
	}{
		{"same, other versions and nonce", func() *discovery.DeltaDiscoveryResponse {
			d := delta([]string{"gone"}, res("b", "7"), res("a", "9"))
			d.Nonce, d.SystemVersionInfo = "other", "v9"
			return d
		}(), false, ""},
		{"a resource missing", delta([]string{"gone"}, res("a", "1")), false, `resources differ: the recording has ["a" "b"], the target sent ["a"] (missing ["b"])`},
		{"a resource twice", delta([]string{"gone"}, res("a", "1"), res("b", "1"), res("b", "1")), false, `(extra ["b"])`},
		{"a removal missing", delta(nil, res("a", "1"), res("b", "1")), false, `removed resources differ`},
		{"no nonce", func() *discovery.DeltaDiscoveryResponse {
			d := delta([]string{"gone"}, res("a", "1"), res("b", "1"))
			d.Nonce = ""
			return d
		}(), false, "has no nonce"},
		{"no version", delta([]string{"gone"}, res("a", ""), res("b", "1")), false, `resources sent without a version: in the target's response, a`},
		{"packed as another type", delta([]string{"gone"}, res("a", "1"), &discovery.Resource{Name: "b", Version: "1", Resource: wire.BuildAny(wire.Endpoint, "b", 1)}), false, `"b" packed as type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment`},
		{"partial recording: extra names are fine", delta([]string{"gone"}, res("a", "1"), res("b", "1"), res("c", "1")), true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := compareResponses(shapeOf(base, false), shapeOf(tc.live, false), tc.partial)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.NotEmpty(t, got)
			assert.Contains(t, joined(got), tc.want)
		})
	}
}

// TestCompareBodies: bodies count only when asked for.
func TestCompareBodies(t *testing.T) {
	rec := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "1", Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "a", 1)}}
	live := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "2", Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "a", 2)}}
	assert.Empty(t, compareResponses(shapeOf(rec, false), shapeOf(live, false), false))
	assert.Contains(t, joined(compareResponses(shapeOf(rec, true), shapeOf(live, true), false)), `resource bodies differ: ["a"]`)
	assert.Empty(t, compareResponses(shapeOf(rec, true), shapeOf(rec, true), false))
}

// TestCompareRequests: kind, nonce, version, names and unsubscriptions
// of a client's request each make a difference.
func TestCompareRequests(t *testing.T) {
	ack := &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v1", ResponseNonce: "1", ResourceNames: []string{"svc"}}
	for _, tc := range []struct {
		name string
		live *discovery.DiscoveryRequest
		want string
	}{
		{"same", &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v1", ResponseNonce: "1", ResourceNames: []string{"svc"}}, ""},
		{"a NACK", &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v1", ResponseNonce: "1", ResourceNames: []string{"svc"}, ErrorDetail: &status.Status{Code: 3}}, "the client sent a NACK of LDS"},
		{"another nonce", &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v1", ResponseNonce: "2", ResourceNames: []string{"svc"}}, `echoes nonce "2", the recording's "1"`},
		{"another version", &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v0", ResponseNonce: "1", ResourceNames: []string{"svc"}}, `version_info "v0"`},
		{"other names", &discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL, VersionInfo: "v1", ResponseNonce: "1", ResourceNames: []string{"other"}}, "names differ"},
		{"another type", &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, VersionInfo: "v1", ResponseNonce: "1", ResourceNames: []string{"svc"}}, "type CDS, the recording's LDS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := compareRequests(requestShapeOf(ack), requestShapeOf(tc.live))
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, joined(got), tc.want)
		})
	}
	unsub := requestShapeOf(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNamesUnsubscribe: []string{"a"}})
	none := requestShapeOf(&discovery.DeltaDiscoveryRequest{TypeUrl: wire.Cluster.URL})
	assert.Contains(t, joined(compareRequests(unsub, none)), "unsubscribed names differ")
}

func joined(ss []string) string {
	out := ""
	for _, s := range ss {
		out += s + "\n"
	}
	return out
}
