package targets

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/wire"
)

func TestCheckNodeOptions(t *testing.T) {
	for _, c := range []struct {
		id, want string
	}{
		{"", ""},
		{"sidecar~127.0.0.1~{{.NodeID}}~ns.svc.cluster.local", ""},
		{"sidecar~127.0.0.1~one~ns.svc.cluster.local", "must name {{.NodeID}}"},
		{"{{.Other}}", "only {{.NodeID}} can be named"},
		{"{{.NodeID", "--node-id"},
	} {
		err := CheckNodeOptions(ServerOptions{NodeID: c.id})
		if c.want == "" {
			require.NoError(t, err, c.id)
		} else {
			require.ErrorContains(t, err, c.want, c.id)
		}
	}
}

// recordingFixture records the node ids it is called with.
type recordingFixture struct {
	fixture.Fixture
	nodes []string
}

func (r *recordingFixture) Set(_ context.Context, node string, _ wire.Type, _ string, _ *anypb.Any) (fixture.Served, error) {
	r.nodes = append(r.nodes, node)
	return fixture.Served{}, nil
}

func (r *recordingFixture) Reset(_ context.Context, node string) error {
	r.nodes = append(r.nodes, node)
	return nil
}

// TestNodeIDReachesTheFixture: the fixture is told the node id the fake
// client sends, so a node-scoped server serves what it sets to that node.
func TestNodeIDReachesTheFixture(t *testing.T) {
	_, tmpl, err := nodeTemplates(ServerOptions{NodeID: "sidecar~127.0.0.1~{{.NodeID}}~d"})
	require.NoError(t, err)
	s := &Server{nodeID: tmpl}
	rec := &recordingFixture{}
	f := renamedNodes{rec, s.NodeID}
	_, err = f.Set(context.Background(), "xdsconform-1", wire.Cluster, "c", nil)
	require.NoError(t, err)
	require.NoError(t, f.Reset(context.Background(), "xdsconform-1"))
	require.Equal(t, []string{"sidecar~127.0.0.1~xdsconform-1~d", "sidecar~127.0.0.1~xdsconform-1~d"}, rec.nodes)
	require.Equal(t, "xdsconform-2", (&Server{}).NodeID("xdsconform-2"), "no template: the pair's own id")
	require.True(t, strings.HasPrefix(s.NodeID("n"), "sidecar~"))
}
