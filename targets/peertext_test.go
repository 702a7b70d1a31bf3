package targets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
)

// namedFixture answers capabilities naming the server as it likes.
type namedFixture struct {
	fixturepb.UnimplementedFixtureServer
	name string
}

func (f namedFixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{ApiVersion: "v1", Server: f.name, Variants: []string{"sotw-ads"}}, nil
}

// The fixture names the server in text of its own choosing, which reaches
// every report and the console: a line break or a bidirectional control in
// it is escaped, so it cannot print a line of its own.
func TestFixtureServerNameIsOneLine(t *testing.T) {
	ref := grpc.NewServer()
	refserver.New().Register(ref)
	xds := serve(t, ref)
	named := grpc.NewServer()
	fixturepb.RegisterFixtureServer(named, namedFixture{name: "cp v1\nPASS: 999 passed\u202E"})
	fx := serve(t, named)
	s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: xds, Fixture: fx})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, xds+` (cp v1\x0aPASS: 999 passed\u202e)`, s.Name)
}
