package hostile_test

// Part 1 of the hostile suite, "bounded everywhere, by bytes": a server
// that floods responses (some of 2 MiB) on every stream, a client that
// floods invalid requests, and a client whose admin /config_dump never
// ends. Each runs at small scale through the real binary and asserts the
// exit code, that no pair passes on what the harness could not keep, the
// size of every artefact and the child's peak RSS.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

func init() {
	registerClientMode("flood-invalid-requests", floodInvalidRequests)
	registerClientMode("endless-config-dump", endlessConfigDump)
}

// Flood sizes: every response the reference server sends is followed by
// floodCopies copies with fresh nonces, every floodBigEvery-th of them
// carrying floodBig bytes (in control_plane.identifier, harmless to every
// check but the harness's memory).
const (
	floodCopies    = 40
	floodBigEvery  = 8
	floodBig       = 2 << 20
	floodRequests  = 200000
	floodLifetime  = time.Minute
	reportSlackFor = 1 << 20 // headers, summary and the like
)

// floodingStream wraps a server stream so that each response is followed
// by the flood.
type floodingStream struct {
	grpc.ServerStream
}

func (s floodingStream) SendMsg(m any) error {
	if err := s.ServerStream.SendMsg(m); err != nil {
		return err
	}
	big := strings.Repeat("f", floodBig)
	for i := range floodCopies {
		var id string
		if i%floodBigEvery == 0 {
			id = big
		}
		var out any
		switch m := m.(type) {
		case *discovery.DiscoveryResponse:
			out = &discovery.DiscoveryResponse{TypeUrl: m.TypeUrl, VersionInfo: m.VersionInfo, Resources: m.Resources,
				Nonce: fmt.Sprintf("%s-flood-%d", m.Nonce, i), ControlPlane: &core.ControlPlane{Identifier: id}}
		case *discovery.DeltaDiscoveryResponse:
			out = &discovery.DeltaDiscoveryResponse{TypeUrl: m.TypeUrl, SystemVersionInfo: m.SystemVersionInfo, Resources: m.Resources,
				RemovedResources: m.RemovedResources, Nonce: fmt.Sprintf("%s-flood-%d", m.Nonce, i), ControlPlane: &core.ControlPlane{Identifier: id}}
		default:
			return nil
		}
		if err := s.ServerStream.SendMsg(out); err != nil {
			return err
		}
	}
	return nil
}

// startFloodingServer is the reference server behind the flood; it
// returns the xDS and fixture addresses.
func startFloodingServer(t *testing.T) (xds, fx string) {
	ref := refserver.New()
	g := grpc.NewServer(grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		return h(srv, floodingStream{ss})
	}))
	ref.Register(g)
	fixturepb.RegisterFixtureServer(g, ref.FixtureServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String(), lis.Addr().String()
}

// assertBounded checks what every flood must leave: every artefact under
// its bound, the child under maxRSS, and, when mustNotPass, no pair
// passed (scenarios that watch for resends; a flood of well-formed copies
// breaks no rule a scenario does not check).
func assertBounded(t *testing.T, r cliResult, pairs int, mustNotPass bool) {
	t.Helper()
	run := r.report(t)
	ran := 0
	for _, res := range run.Results {
		if res.Outcome == results.Skip {
			continue
		}
		ran++
		t.Logf("%s[%s]: %s: %.300s", res.ID, res.Variant, res.Outcome, res.Message)
		if mustNotPass {
			assert.Contains(t, []results.Outcome{results.Fail, results.Unsupported, results.Error}, res.Outcome,
				"%s[%s] must not pass against a flood: %s", res.ID, res.Variant, res.Message)
		}
		assert.LessOrEqual(t, len(res.Message), 64<<10, "%s: failure messages are bounded", res.ID)
	}
	require.Positive(t, ran, "at least one pair ran: %s", r.Stdout)
	// A pair keeps at most HeadBytes+TailBytes of transcript and 32 KiB
	// of failures; the JSON report indents messages (up to about three
	// times their size) and JUnit repeats the transcript tail, so four
	// times the pair's keep, plus the rest of the report, bounds each.
	perPair := 4 * (transcript.HeadBytes + transcript.TailBytes + 64<<10)
	bound := pairs*perPair + reportSlackFor
	for name, b := range r.artefacts() {
		t.Logf("%s: %d bytes", name, len(b))
		assert.LessOrEqual(t, len(b), bound, "%s is bounded", name)
	}
	t.Logf("peak RSS: %d MiB", r.MaxRSS>>20)
	assert.Less(t, r.MaxRSS, int64(maxRSS))
}

// TestFloodingServer: responses, some of 2 MiB, flood every stream.
//
// The quiet window is long on purpose. The flood is the target's resend,
// and the flooding server runs in this test's process, which shares the
// CPU with the rest of make test: a resend the target gets out later than
// the window passes, correctly (a must-not-happen window must cover the
// target's own delay, and the window is stretched only by the harness's
// stalls, not the target's). With 200 ms it did, on a loaded CI machine.
// A caught violation ends the window at once, so only a pair about to
// pass waits it out.
func TestFloodingServer(t *testing.T) {
	xds, fx := startFloodingServer(t)
	r := runCLI(t, cliOptions{}, "server", "--target", xds, "--fixture", fx, "--run", "server/ack/*", "--variant", "sotw-ads,delta-ads",
		"--timeout", "2s", "--quiet", "5s", "--scenario-timeout", "15s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	assertBounded(t, r, 4, true)
}

// TestFloodingServerManyPairs: the same flood on 64 pairs at once, so
// that the run-wide budgets, not only each pair's caps, are what keeps the
// harness under maxRSS (the bar: 64 pairs at once must not multiply the
// bounds).
func TestFloodingServerManyPairs(t *testing.T) {
	xds, fx := startFloodingServer(t)
	r := runCLI(t, cliOptions{}, "server", "--target", xds, "--fixture", fx, "--skip", "server/robustness/*",
		"--parallel", "64", "--timeout", "2s", "--quiet", "200ms", "--scenario-timeout", "20s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	pairs := len(r.report(t).Results)
	require.GreaterOrEqual(t, pairs, 64, "enough pairs to fill --parallel")
	assertBounded(t, r, pairs, false)
}

// floodInvalidRequests opens an ADS stream and sends requests no server
// can serve (no type_url), as fast as it can, until the harness ends the
// stream or floodRequests were sent.
func floodInvalidRequests(l launched) int {
	ctx, cancel := context.WithTimeout(context.Background(), floodLifetime)
	defer cancel()
	conn, err := grpc.NewClient(l.Server, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
		return 2
	}
	defer conn.Close()
	ss, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
		return 2
	}
	node := &core.Node{Id: l.NodeID, Cluster: l.Cluster}
	for i := range floodRequests {
		req := &discovery.DiscoveryRequest{Node: node, ResourceNames: []string{fmt.Sprintf("bad-%d-%s", i, strings.Repeat("r", 200))}}
		if err := ss.Send(req); err != nil {
			break
		}
		node = nil
	}
	<-ctx.Done()
	return 0
}

// TestFloodingClient: a client floods invalid requests.
func TestFloodingClient(t *testing.T) {
	r := runCLI(t, cliOptions{}, "client", "--client-cmd", clientCmd("flood-invalid-requests", ""), "--run", "client/ack/*",
		"--variant", "sotw-ads", "--timeout", "2s", "--quiet", "200ms", "--start-timeout", "3s", "--dne-timer", "2s", "--scenario-timeout", "15s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	run := r.report(t)
	assertBounded(t, r, len(run.Results), true)
	flagged := false
	for _, res := range run.Results {
		if strings.Contains(res.Message, "more violations of STREAM-6") {
			flagged = true
		}
	}
	assert.True(t, flagged, "the flood is reported as counted STREAM-6 violations: %s", r.Stdout)
}

// endlessConfigDump is the reference client, with an admin endpoint whose
// /config_dump never ends.
func endlessConfigDump(l launched) int {
	ctx, cancel := context.WithTimeout(context.Background(), floodLifetime)
	defer cancel()
	rc, err := refclient.Start(ctx, refclient.Config{ServerAddr: l.Server, NodeID: l.NodeID, Cluster: l.Cluster,
		Variant: wire.SotWADS, Listener: l.Listener, Profile: refclient.ProfileGRPC})
	if err != nil {
		fmt.Fprintf(os.Stderr, "hostile client: %v\n", err)
		return 2
	}
	defer rc.Close()
	chunk := []byte(`{"configs": [` + strings.Repeat(" ", 64<<10))
	srv := &http.Server{Addr: l.Admin, ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})}
	go func() { _ = srv.ListenAndServe() }()
	defer srv.Close()
	select {
	case <-rc.Done():
	case <-ctx.Done():
	}
	return 0
}

// TestEndlessConfigDump: the client's status view never ends.
func TestEndlessConfigDump(t *testing.T) {
	r := runCLI(t, cliOptions{}, "client", "--client-cmd", clientCmd("endless-config-dump", ""), "--observer", "admin", "--client-profile", "grpc",
		"--run", "client/nack/keeps-previous,client/nack/partial-use", "--variant", "sotw-ads", "--timeout", "2s", "--quiet", "200ms", "--start-timeout", "3s", "--dne-timer", "2s", "--scenario-timeout", "15s")
	require.Equal(t, 1, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	run := r.report(t)
	assertBounded(t, r, len(run.Results), true)
	assert.Contains(t, string(r.JSON), "over 8388608 bytes", "the cause is named")
}
