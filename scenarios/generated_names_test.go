package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Servers such as Consul and Envoy Gateway serve names of their own. Every
// server scenario that does not declare NeedChosenNames must pass against a
// reference server that renames everything set through the fixture; the
// others must be skipped, with the reason.
//
// Consul and Envoy Gateway also build resource content themselves: with a
// reference server that adds to everything it serves, the scenarios must
// recognise revisions by the fields the fixture names, and pass just the
// same.
func TestServerSuiteWithGeneratedNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts targets.ServerOptions
	}{
		{"generated names", targets.ServerOptions{Target: targets.BuiltinReference, GenerateNames: true}},
		{"generated names and content", targets.ServerOptions{Target: targets.BuiltinReference, GenerateNames: true, BuildsContent: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runGeneratedNames(t, tc.opts)
		})
	}
}

func runGeneratedNames(t *testing.T, opts targets.ServerOptions) {
	rs := runTarget(t, opts, testTimeouts, engine.Selection{})
	ran := 0
	for _, r := range rs {
		if r.Outcome == results.Skip {
			assert.Contains(t, r.Message, "generates its own resource names", r.FullName())
			continue
		}
		ran++
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
	assert.Positive(t, ran)
}

// wrongRevisions is a fixture that names revision fields the server does
// not serve.
type wrongRevisions struct{ fixture.Fixture }

func (w wrongRevisions) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	s, err := w.Fixture.Set(ctx, node, t, name, res)
	for i, f := range s.Revision {
		s.Revision[i] = &fixturepb.RevisionField{Path: f.GetPath(), Value: f.GetValue() + "-not-served"}
	}
	return s, err
}

// The revision fields are a check that can fail: when the served content
// does not have them, the scenarios comparing content fail, naming the
// field.
func TestRevisionFieldsCanFail(t *testing.T) {
	ctx := t.Context()
	srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: targets.BuiltinReference, GenerateNames: true, BuildsContent: true})
	require.NoError(t, err)
	defer srv.Close()
	srv.Fixture = wrongRevisions{srv.Fixture}
	pairs, err := engine.Expand(Server(), engine.Selection{Run: []string{"server/stream/node-only-on-first-request", "server/nack/new-version-after-nack"}, Variants: []wire.Variant{wire.SotWADS}})
	require.NoError(t, err)
	rs, _ := engine.Run(ctx, pairs, engine.Config{Env: srv, Timeouts: testTimeouts})
	require.NotEmpty(t, rs)
	for _, r := range rs {
		assert.Equal(t, results.Fail, r.Outcome, r.FullName())
		assert.Contains(t, r.Message, "-not-served", r.FullName())
	}
}
