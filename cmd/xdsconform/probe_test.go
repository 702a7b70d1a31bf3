package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// onlyMethods registers on g the discovery methods keep accepts: a server
// that serves part of xDS, as real ones do (Consul serves delta ADS only).
type onlyMethods struct {
	g    *grpc.Server
	keep func(method string) bool
}

func (o onlyMethods) RegisterService(d *grpc.ServiceDesc, impl any) {
	cp := *d
	cp.Streams = slices.DeleteFunc(slices.Clone(d.Streams), func(s grpc.StreamDesc) bool { return !o.keep(s.StreamName) })
	if len(cp.Streams) > 0 {
		o.g.RegisterService(&cp, impl)
	}
}

// serveGRPC serves g on a fresh loopback port until the test ends.
func serveGRPC(t *testing.T, g *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() { g.Stop(); <-done })
	return lis.Addr().String()
}

// partialServer serves the reference server's discovery methods that keep
// accepts, with no fixture API.
func partialServer(t *testing.T, keep func(method string) bool) string {
	g := grpc.NewServer()
	refserver.New().Register(onlyMethods{g, keep})
	return serveGRPC(t, g)
}

// TestServerWithoutFixture: without --fixture the harness asks the target
// which discovery methods it serves; the pairs of a variant it does not
// serve are skipped with the method and the target's answer, never
// failed, and the report records what was found.
func TestServerWithoutFixture(t *testing.T) {
	deltaADS := partialServer(t, func(m string) bool { return m == wire.ADSDeltaMethod })
	js := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := run(t, "server", "--target", deltaADS, "--json", js)
	require.Equal(t, exitOK, code, "stdout:\n%s\nstderr: %s", out, stderr)
	assert.Contains(t, out, "no --fixture: the target serves only delta-ads; the pairs that need another service are skipped\n")
	rep := readRun(t, js)
	assert.Equal(t, "delta-ads", rep.Options["target_serves"])
	byName := map[string]results.Result{}
	for _, r := range rep.Results {
		byName[r.FullName()] = r
		assert.NotEqual(t, results.Fail, r.Outcome, "%s: %s", r.FullName(), r.Message)
	}
	ran := byName["server/missing/delta-reported-removed[delta-ads]"]
	assert.Equal(t, results.Pass, ran.Outcome, ran.Message)
	skipped := byName["server/missing/delta-reported-removed[delta-pertype]"]
	assert.Equal(t, results.Skip, skipped.Outcome)
	assert.Equal(t, "the target does not serve envoy.service.endpoint.v3.EndpointDiscoveryService/DeltaEndpoints (Unimplemented)", skipped.Message)
	other := byName["server/nonce/non-empty[sotw-ads]"]
	assert.Equal(t, "the target does not serve envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources (Unimplemented)", other.Message,
		"a variant the target does not serve is the reason given first")

	// A SotW-only server without a fixture can run nothing: that is a
	// configuration error, with the reasons.
	sotwADS := partialServer(t, func(m string) bool { return m == wire.ADSSotWMethod })
	checkExitCodes(t, []exitCase{
		{"sotw only", []string{"server", "--target", sotwADS, "--run", "server/missing/*"}, exitUsage,
			"the target does not serve envoy.service.discovery.v3.AggregatedDiscoveryService/DeltaAggregatedResources (Unimplemented)"},
	})
}

// TestServerNotXDS: a --target that answers but serves no xDS is a
// configuration error (exit 2) whose one line names what answered; one
// that does not answer stays unreachable (exit 3).
func TestServerNotXDS(t *testing.T) {
	fx := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fx, refserver.New().FixtureServer())
	fixturePort := serveGRPC(t, fx)
	web := httptest.NewServer(http.NotFoundHandler())
	defer web.Close()
	webAddr := web.Listener.Addr().String()
	checkExitCodes(t, []exitCase{
		{"the fixture's port", []string{"server", "--target", fixturePort}, exitUsage,
			fixturePort + " serves no xDS service (it answered Unimplemented for ADS and every per-type discovery service; it serves the fixture API"},
		{"the fixture's port, with the fixture", []string{"server", "--target", fixturePort, "--fixture", fixturePort}, exitUsage,
			"give this address as --fixture and the xDS port as --target"},
		{"a web server", []string{"server", "--target", webAddr}, exitUsage,
			webAddr + " is not a gRPC server, so it serves no xDS service: it does not speak HTTP/2 and answered the HTTP/2 preface with an HTTP/1.x response"},
		{"nothing there", []string{"server", "--target", closedPort(t), "--connect-timeout", "300ms"}, exitUnreachable, "connection refused"},
	})
}
