package fakeclient

import (
	"testing"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// Every global invariant fires on a response that breaks it, and only then;
// the ones no reference-server fault produces (DUP-3, DELTA-9, TTL-5) are
// proven here.
func TestGlobalInvariants(t *testing.T) {
	cla := func(name string) *anypb.Any { return wire.BuildAny(wire.Endpoint, name, 1) }
	wrapped := func(name string) *anypb.Any {
		a, err := anypb.New(&discovery.Resource{Name: name, Resource: cla(name)})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// REDIR-1: a ResourceLocator payload is a redirect, not a resource
	// of another type.
	redirect, err := anypb.New(&xdscore.ResourceLocator{Authority: "b", ResourceType: "envoy.config.endpoint.v3.ClusterLoadAssignment", Id: "x"})
	if err != nil {
		t.Fatal(err)
	}
	sotw := func(nonce string, res ...*anypb.Any) *Response {
		return decodeSotW("ads#1", &discovery.DiscoveryResponse{TypeUrl: wire.Endpoint.URL, Nonce: nonce, VersionInfo: "1", Resources: res})
	}
	delta := func(nonce string, removed []string, res ...*discovery.Resource) *Response {
		return decodeDelta("ads#1", &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Endpoint.URL, Nonce: nonce, Resources: res, RemovedResources: removed})
	}
	for _, tc := range []struct {
		name      string
		responses []*Response
		stream    string // expected type of a per-type stream
		inSotW    bool
		wantRules []string
		takesTTL  bool
	}{
		{"conformant SotW", []*Response{sotw("1", cla("a"), cla("b")), sotw("2", cla("a"))}, "", false, nil, false},
		{"conformant delta", []*Response{delta("1", []string{"b"}, &discovery.Resource{Name: "a", Version: "1", Resource: cla("a")})}, "", false, nil, false},
		{"empty nonce", []*Response{sotw("", cla("a"))}, "", false, []string{"NONCE-1"}, false},
		{"reused nonce", []*Response{sotw("1", cla("a")), sotw("1", cla("a"))}, "", false, []string{"NONCE-2"}, false},
		{"duplicate name", []*Response{sotw("1", cla("a"), cla("a"))}, "", false, []string{"DUP-1"}, false},
		{"wrong stream type", []*Response{sotw("1", cla("a"))}, wire.Cluster.URL, false, []string{"STREAM-7"}, false},
		{"resource of another type", []*Response{sotw("1", wire.BuildAny(wire.Cluster, "c", 1))}, "", false, []string{"STREAM-7"}, false},
		{"undecodable resource", []*Response{sotw("1", &anypb.Any{TypeUrl: wire.Endpoint.URL, Value: []byte{0xff, 0xff}})}, "", false, []string{"STREAM-7"}, false},
		{"redirect", []*Response{delta("1", nil, &discovery.Resource{Name: "a", Version: "1", Resource: redirect})}, "", false, nil, false},
		{"updated and removed", []*Response{delta("1", []string{"a"}, &discovery.Resource{Name: "a", Version: "1", Resource: cla("a")})}, "", false, []string{"DUP-3"}, false},
		{"unnamed delta resource", []*Response{delta("1", nil, &discovery.Resource{Version: "1", Resource: cla("a")})}, "", false, []string{"DELTA-9"}, false},
		{"wrapper not asked for", []*Response{sotw("1", wrapped("a"))}, "", false, []string{"TTL-5"}, false},
		{"wrapper asked for", []*Response{sotw("1", wrapped("a"))}, "", true, nil, false},
		{"heartbeat", []*Response{
			delta("1", nil, &discovery.Resource{Name: "a", Version: "7", Resource: cla("a")}),
			delta("2", nil, &discovery.Resource{Name: "a", Version: "7"}),
		}, "", false, nil, true},
		{"heartbeat for a client without TTLs", []*Response{
			delta("1", nil, &discovery.Resource{Name: "a", Version: "7", Resource: cla("a")}),
			delta("2", nil, &discovery.Resource{Name: "a", Version: "7"}),
		}, "", false, []string{"TTL-3"}, false},
		{"heartbeat for nothing sent", []*Response{delta("1", nil, &discovery.Resource{Name: "a", Version: "7"})}, "", false, []string{"TTL-3"}, true},
		{"heartbeat at another version", []*Response{
			delta("1", nil, &discovery.Resource{Name: "a", Version: "7", Resource: cla("a")}),
			delta("2", nil, &discovery.Resource{Name: "a", Version: "8"}),
		}, "", false, []string{"TTL-3"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]map[string]bool{}
			st := &stream{held: map[string]map[string]string{}}
			var rules []string
			for _, r := range tc.responses {
				for _, v := range checkResponse(r, tc.stream, nil, seen, st.held, tc.inSotW, tc.takesTTL) {
					rules = append(rules, v.Rule)
				}
				st.hold(r)
			}
			assert.Equal(t, tc.wantRules, rules)
		})
	}
}

// TestUnknownTypeAnswersItsRequest: a response of a type that is not a v3
// resource type breaks STREAM-7 unless it answers a request of that type
// on the stream, which it then names consistently.
func TestUnknownTypeAnswersItsRequest(t *testing.T) {
	const unknown = "type.googleapis.com/example.Unknown"
	r := decodeSotW("ads#1", &discovery.DiscoveryResponse{TypeUrl: unknown, Nonce: "1", VersionInfo: "1"})
	rules := func(asked map[string]bool) []string {
		var out []string
		for _, v := range checkResponse(r, "", asked, map[string]map[string]bool{}, map[string]map[string]string{}, false, false) {
			out = append(out, v.Rule)
		}
		return out
	}
	assert.Equal(t, []string{"STREAM-7"}, rules(nil), "never asked for")
	assert.Empty(t, rules(map[string]bool{unknown: true}), "answers the request")
}
