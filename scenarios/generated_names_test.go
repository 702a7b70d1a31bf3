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
	"github.com/xdsconform/xdsconform/peers/refserver"
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
		ref  func() *refserver.Server
	}{
		{"generated names", func() *refserver.Server { return refserver.New().GenerateNames() }},
		{"generated names and content", func() *refserver.Server { return refserver.New().GenerateNames().BuildsContent() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runGeneratedNames(t, serveRef(t, tc.name, tc.ref()))
		})
	}
}

// serveRef serves a reference server set up by the test, with the REST
// hold builtin:reference runs with (the long-poll check watches it whole).
func serveRef(t *testing.T, name string, ref *refserver.Server) *targets.Server {
	srv, err := targets.ServeInProcess(t.Context(), "reference server, "+name, ref.WithRESTHold(targets.ReferenceRESTHold))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

func runGeneratedNames(t *testing.T, srv *targets.Server) {
	rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, engine.Selection{})
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
	srv := serveRef(t, "generated names and content", refserver.New().GenerateNames().BuildsContent())
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

// A server that builds content may change a resource in its own model, so
// the wildcard-ACK quiet check takes a new version of it for a change: a
// resend at the version the client holds must still fail UPD-1.
func TestWildcardAckResendCaughtWhenContentIsBuilt(t *testing.T) {
	srv := serveRef(t, "builds content, resends on ACK", refserver.New(refserver.FaultResendOnAck).BuildsContent())
	rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, engine.Selection{Run: []string{"server/ack/legacy-no-resend-after-ack", "server/ack/star-no-resend-after-ack"}})
	require.NotEmpty(t, rs)
	for _, r := range rs {
		assert.Equal(t, results.Fail, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
		assert.Contains(t, r.RulesBroken, "UPD-1", r.FullName())
	}
}
