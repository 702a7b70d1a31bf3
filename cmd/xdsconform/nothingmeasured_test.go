package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
)

// Issue 23: a fixture that answers GetCapabilities and then nothing ends
// the server suite at its first deadline (--timeout), with exit 3 and one
// line naming the fixture and the call that hung; every pair errors with
// that one cause, none waits out its own timeout. It used to take
// hundreds of seconds and exit 1.
func TestServerFixtureHangs(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	start := time.Now()
	code, _, stderr := run(t, "server", "--target", "builtin:reference", "--fault", "fixture-hangs", "--timeout", "1s", "--json", js)
	took := time.Since(start)
	require.Equal(t, exitUnreachable, code, stderr)
	line := strings.TrimSpace(stderr)
	assert.Equal(t, 1, strings.Count(line, "\n")+1, "one line: %q", stderr)
	assert.Contains(t, line, "the in-process fixture API of builtin:reference (faults: fixture-hangs) stopped answering")
	assert.Regexp(t, `the last (Reset|SetResource|DeleteResource|ApplyChanges) after`, line, "names the call")
	rep := readRun(t, js)
	require.NotEmpty(t, rep.Results)
	for _, r := range rep.Results {
		if r.Outcome == results.Skip {
			continue
		}
		assert.Equal(t, results.Error, r.Outcome, r.FullName())
		assert.True(t, strings.HasPrefix(r.Message, "the run could not go on: the in-process fixture API"), "%s: %s", r.FullName(), r.Message)
	}
	t.Logf("%d pairs ended in %s", len(rep.Results), took.Round(time.Millisecond))
}

// hangingFixture answers GetCapabilities and blocks every Reset and
// SetResource until its caller gives up.
type hangingFixture struct{ fixturepb.FixtureServer }

func (hangingFixture) SetResource(ctx context.Context, _ *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

func (hangingFixture) Reset(ctx context.Context, _ *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

// A fixture API of its own (--fixture HOST:PORT) that hangs is named by
// its address.
func TestServerFixtureHangsAtAddress(t *testing.T) {
	xdsAddr, fixtureAddr, _ := fixtureTarget(t, func(f fixturepb.FixtureServer) fixturepb.FixtureServer { return hangingFixture{f} })
	code, _, stderr := run(t, "server", "--target", xdsAddr, "--fixture", fixtureAddr, "--timeout", "1s", "--run", "server/nonce/*")
	require.Equal(t, exitUnreachable, code, stderr)
	assert.Contains(t, stderr, "xdsconform: the run stopped early, so the scenarios after it errored: the fixture API at "+fixtureAddr+" stopped answering")
}

// The same fixture ends a load run with exit 3 naming it, well within the
// sync timeout's bound, and with no verdict: the run measured nothing
// because its target could not be driven, which is not a failure of the
// objectives.
func TestLoadFixtureHangs(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := run(t, "load", "--target", "builtin:reference", "--fault", "fixture-hangs", "--clients", "5", "--sync-timeout", "2s", "--json", js)
	require.Equal(t, exitUnreachable, code, stderr)
	assert.Contains(t, stderr, "xdsconform: the load run stopped early: the in-process fixture API of builtin:reference (faults: fixture-hangs) stopped answering")
	assert.Contains(t, stderr, "the last SetResource after")
	assert.NotContains(t, stderr, "SLO", "no verdict")
	rep := readLoad(t, js)
	assert.Nil(t, rep.SLO)
	assert.False(t, rep.Interrupted)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "the run stopped early: the in-process fixture API")
}

// refusingFixture answers GetCapabilities and refuses every change, as a
// fixture whose backend is read-only does.
type refusingFixture struct{ fixturepb.FixtureServer }

func (refusingFixture) SetResource(context.Context, *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	return nil, status.Error(codes.FailedPrecondition, "read-only")
}

// fixtureTarget serves the reference's xDS and fixture (through wrap) on
// two loopback ports, with opts on the xDS server; it returns them and
// the xDS server.
func fixtureTarget(t *testing.T, wrap func(fixturepb.FixtureServer) fixturepb.FixtureServer, opts ...grpc.ServerOption) (xdsAddr, fixtureAddr string, xds *grpc.Server) {
	t.Helper()
	ref := refserver.New()
	xds = grpc.NewServer(opts...)
	ref.Register(xds)
	fx := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fx, wrap(ref.FixtureServer()))
	for _, g := range []*grpc.Server{xds, fx} {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		go func() { _ = g.Serve(lis) }()
		t.Cleanup(g.Stop)
		if g == xds {
			xdsAddr = lis.Addr().String()
		} else {
			fixtureAddr = lis.Addr().String()
		}
	}
	return xdsAddr, fixtureAddr, xds
}

// A load run whose fixture set nothing measured nothing: it fails (exit
// 1) saying why, in the console and the JSON report, even under an SLO
// its zero counts meet ("violations=0" of no stream at all), and so does
// its report merged, judged or not.
func TestLoadNothingMeasuredFails(t *testing.T) {
	xdsAddr, fixtureAddr, _ := fixtureTarget(t, func(f fixturepb.FixtureServer) fixturepb.FixtureServer { return refusingFixture{f} })
	js := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := run(t, "load", "--target", xdsAddr, "--fixture", fixtureAddr, "--clients", "5", "--duration", "500ms",
		"--sync-timeout", "2s", "--settle", "1s", "--slo", "violations=0", "--json", js)
	require.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, stderr, "SLO broken: something measured (nothing: the fixture set nothing: none of its")
	assert.Contains(t, stderr, "read-only")
	assert.Contains(t, stdout, "nothing measured: the fixture set nothing")
	rep := readLoad(t, js)
	require.NotEmpty(t, rep.Unmeasured)
	assert.Contains(t, rep.Unmeasured[0], "the fixture set nothing")
	require.NotNil(t, rep.SLO)
	assert.False(t, rep.SLO.OK)

	// Merged: unjudged, it still fails; judged, the objective it meets
	// does not make it pass.
	for _, slo := range [][]string{nil, {"--slo", "violations=0"}} {
		code, _, stderr = run(t, append(append([]string{"report", "merge", "--json", filepath.Join(t.TempDir(), "m.json")}, slo...), js)...)
		assert.Equal(t, exitFailures, code, "%v: %s", slo, stderr)
		assert.Contains(t, stderr, "the fixture set nothing", slo)
		assert.NotContains(t, stderr, "SLO met", slo)
	}
}

// Ctrl-C during a load run: exit 130, a line saying it was interrupted,
// no SLO verdict (the default objectives are not met or broken by half a
// run), and the JSON report says interrupted and carries none.
func TestLoadInterruptIsNoVerdict(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOnWrite{marker: "load: churn", cancel: cancel}
	var out bytes.Buffer
	code := execute(ctx, []string{"load", "--target", "builtin:reference", "--clients", "10", "--duration", "1m", "--json", js}, &out, errw)
	require.Equal(t, exitInterrupted, code, errw.String())
	assert.Contains(t, errw.String(), "xdsconform: interrupted during the churn phase: no SLO verdict")
	assert.NotContains(t, errw.String(), "SLO met")
	assert.NotContains(t, errw.String(), "SLO broken")
	assert.Contains(t, out.String(), "interrupted")
	rep := readLoad(t, js)
	assert.True(t, rep.Interrupted)
	assert.Nil(t, rep.SLO, "no verdict in the report either")
	assert.Empty(t, rep.Unmeasured, "an interrupted run is not judged")
}

// A target that dies in the middle of a load run is exit 3 naming it, as
// in the suites, not exit 1 for the objectives its death then broke.
func TestLoadTargetDies(t *testing.T) {
	const dieAfter = 10 // streams: every client's first one
	var streams atomic.Int32
	var once sync.Once
	var xds *grpc.Server
	xdsAddr, fixtureAddr, xds := fixtureTarget(t, func(f fixturepb.FixtureServer) fixturepb.FixtureServer { return f },
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if streams.Add(1) == dieAfter {
				once.Do(func() { go xds.Stop() }) // Stop waits for handlers: not from one
			}
			return h(srv, ss)
		}))
	js := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := run(t, "load", "--target", xdsAddr, "--fixture", fixtureAddr, "--clients", "10", "--duration", "30s",
		"--sync-timeout", "30s", "--settle", "30s", "--json", js)
	require.Equal(t, exitUnreachable, code, stderr)
	assert.Contains(t, stderr, "xdsconform: the target died during the load run")
	assert.Contains(t, stderr, xdsAddr)
	assert.NotContains(t, stderr, "SLO")
	rep := readLoad(t, js)
	assert.Less(t, time.Duration(rep.DurationNS), 30*time.Second, "the run stopped when the target was found dead")
}
