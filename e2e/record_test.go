//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/observer"
	// builtin:reference, which the replays run against.
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// recordNode is the node id the recorded grpc-go client identifies as.
const recordNode = "record-e2e"

// seedRecordChain sets, through fx, the chain grpc-go follows from
// listener svc to one cluster and its endpoints.
func seedRecordChain(fx fixture.Fixture) {
	for _, r := range []struct {
		t    wire.Type
		name string
		m    proto.Message
	}{
		{wire.Listener, "svc", wire.ClientListener("svc", "route-a", 1)},
		{wire.Route, "route-a", wire.ClientRoute("route-a", "cluster-a", 1)},
		{wire.Cluster, "cluster-a", wire.ClientCluster("cluster-a", 1)},
		{wire.Endpoint, "cluster-a", wire.ClientEndpoints("cluster-a", 1)},
	} {
		a, err := anypb.New(r.m)
		require.NoError(GinkgoT(), err)
		_, err = fx.Set(context.Background(), recordNode, r.t, r.name, a)
		require.NoError(GinkgoT(), err)
	}
}

// ackedAll reports whether the recording shows the client ACKing a
// response of every type of the chain.
func ackedAll(entries []transcript.Entry) bool {
	for _, ty := range []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint} {
		nonces, ok := map[string]bool{}, false
		for _, e := range entries {
			var m struct {
				TypeURL string          `json:"type_url"`
				Nonce   string          `json:"nonce"`
				Echo    string          `json:"response_nonce"`
				Error   json.RawMessage `json:"error_detail"`
			}
			if len(e.Message) == 0 || json.Unmarshal(e.Message, &m) != nil || m.TypeURL != ty.URL {
				continue
			}
			if e.Direction == transcript.Received {
				nonces[m.Nonce] = true
			} else if e.Direction == transcript.Sent && m.Echo != "" && nonces[m.Echo] && len(m.Error) == 0 {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

var grpcGoDriver = targets.ClientOptions{Command: peerDir("grpc-go") + "/bin/grpc-go-driver {{.Target}} {{.CSDS}}", Observer: targets.ObserveNone}

// The bug-report workflow's first half between two real peers: record
// grpc-go's xDS client talking to go-control-plane (its resources set
// through its fixture), then replay the file against the same server and
// the same client (no difference), and against a reference server and
// client each broken in a way the recording shows (differences).
var _ = Describe("record and replay", Ordered, Label("record", "grpc-go", "go-control-plane"), func() {
	var (
		gcpAddr string
		file    *transcript.File
		cli     string
	)
	BeforeAll(func() {
		proc, line, err := startAnnouncing([]string{peerDir("go-control-plane") + "/bin/gcp-server", "-flavour", "snapshot"}, "xds=")
		require.NoError(GinkgoT(), err, "starting gcp-server (did make e2e-deps run?)")
		DeferCleanup(func() { _ = proc.Stop(2 * time.Second) })
		gcpAddr, _, _ = strings.Cut(line, " ")
		conn, err := grpc.NewClient(gcpAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(GinkgoT(), err)
		DeferCleanup(conn.Close)
		seedRecordChain(fixture.FromConn(conn))
		// The commands a user runs, for the bug-report workflow below;
		// its directory lasts as long as this container.
		cli = filepath.Join(buildCLI(), "xdsconform")
	})

	It("records grpc-go and go-control-plane through the proxy", func() {
		notify := make(chan struct{}, 1)
		dial, err := targets.Reach(context.Background(), gcpAddr, targets.TLSOptions{}, nil, 5*time.Second)
		require.NoError(GinkgoT(), err)
		p, err := record.Start(record.Options{Upstream: gcpAddr, Dial: dial, OnRecord: func(transcript.Direction) {
			select {
			case notify <- struct{}{}:
			default:
			}
		}})
		require.NoError(GinkgoT(), err)
		defer p.Stop()
		clients, err := targets.NewClients(grpcGoDriver)
		require.NoError(GinkgoT(), err)
		running, err := clients.Launch(context.Background(), targets.LaunchSpec{ServerAddr: p.Addr(), NodeID: recordNode, Cluster: "xdsconform", Listener: "svc", Variant: wire.SotWADS})
		require.NoError(GinkgoT(), err)
		defer func() { _ = running.Stop() }()
		deadline := time.NewTimer(30 * time.Second)
		defer deadline.Stop()
		for !ackedAll(p.Transcript().Entries()) {
			select {
			case <-notify:
			case <-deadline.C:
				require.FailNowf(GinkgoT(), "timed out", "waiting for grpc-go to ACK the chain:\n%s", p.Transcript())
			}
		}
		// The recording stops first, as a user stops it: what the client
		// does as it shuts down (grpc-go unsubscribes) is no part of the
		// exchange under study.
		p.Stop()
		require.NoError(GinkgoT(), running.Stop())
		file = p.File("e2e")
		assert.Equal(GinkgoT(), "sotw-ads", file.Variant)
		// Kept with the run's artefacts, a level below the reports: make
		// compat reads every out/*/*.json as a report, and fails on
		// anything else.
		out := filepath.Join(outDir, "recordings", "grpc-go-go-control-plane", "recording.json")
		require.NoError(GinkgoT(), os.MkdirAll(filepath.Dir(out), 0o755))
		require.NoError(GinkgoT(), transcript.WriteFile(out, file))
	})

	replayServer := func(addr string) *replay.Result {
		plan, err := replay.NewPlan(file)
		require.NoError(GinkgoT(), err)
		res, err := replay.Server(context.Background(), plan, replay.ServerOptions{
			Against: addr, Connect: func() (*grpc.ClientConn, error) {
				return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			},
			Timeout: 5 * time.Second, Quiet: time.Second,
		})
		require.NoError(GinkgoT(), err)
		return res
	}

	It("replays against the same server with no difference", func() {
		res := replayServer(gcpAddr)
		assert.True(GinkgoT(), res.Same(), "%v", res.Differences)
	})

	It("replays against a reference server that drops a nonce, and says where", func() {
		ref := refserver.New(refserver.FaultEmptyNonce)
		srv, err := targets.ServeInProcess(context.Background(), "reference (empty-nonce)", ref)
		require.NoError(GinkgoT(), err)
		defer srv.Close()
		seedRecordChain(srv.Fixture)
		res := replayServer(srv.Addr)
		require.False(GinkgoT(), res.Same())
		assert.Contains(GinkgoT(), res.Differences[0].What, "has no nonce")
	})

	replayClient := func(opts targets.ClientOptions) *replay.Result {
		plan, err := replay.NewPlan(file)
		require.NoError(GinkgoT(), err)
		tr := transcript.New()
		srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 5 * time.Second, Quiet: time.Second, Transcript: tr})
		require.NoError(GinkgoT(), err)
		defer srv.Close()
		clients, err := targets.NewClients(opts)
		require.NoError(GinkgoT(), err)
		running, err := clients.Launch(context.Background(), targets.LaunchSpec{ServerAddr: srv.Addr(), NodeID: recordNode, Cluster: "xdsconform", Listener: "svc", Variant: wire.SotWADS})
		require.NoError(GinkgoT(), err)
		defer func() { _ = running.Stop() }()
		res, err := replay.Client(context.Background(), plan, replay.ClientOptions{Against: clients.Name(), Server: srv, Timeout: 5 * time.Second, Quiet: time.Second, Start: 10 * time.Second, Transcript: tr})
		require.NoError(GinkgoT(), err)
		return res
	}

	It("serves the recording to the same client with no difference", func() {
		res := replayClient(grpcGoDriver)
		assert.True(GinkgoT(), res.Same(), "%v\nreplay:\n%s", res.Differences, res.Transcript)
	})

	It("serves the recording to a reference client that ACKs without a nonce, and says where", func() {
		res := replayClient(targets.ClientOptions{Target: targets.BuiltinReference, Observer: targets.ObserveNone, Faults: []string{"ack-empty-nonce"}})
		require.False(GinkgoT(), res.Same())
		assert.Contains(GinkgoT(), res.Differences[0].What, "where the recording's sent an ACK")
	})

	// The bug-report workflow through the commands a user runs (issue 14's
	// Bar): xdsconform record between the grpc-go driver and
	// go-control-plane, xdsconform scaffold of the recording, and the
	// scaffold run with xdsconform server against the same server (it
	// passes) and against reference servers broken in ways the recording
	// shows (it fails, naming the rule).
	var scaffolded string
	It("records through xdsconform record, and the scaffold of the recording passes against the same server", func() {
		dir, err := filepath.Abs(filepath.Join(outDir, "recordings", "grpc-go-go-control-plane-cli"))
		require.NoError(GinkgoT(), err)
		require.NoError(GinkgoT(), os.MkdirAll(dir, 0o755))
		recording := filepath.Join(dir, "recording.json")
		recordWithCLI(cli, gcpAddr, recording)

		scaffolded = filepath.Join(dir, "scaffold.yaml")
		out, code := runCLI(cli, "scaffold", recording, "-o", scaffolded)
		require.Equal(GinkgoT(), 0, code, "xdsconform scaffold: %s", out)
		var body []byte
		body, err = os.ReadFile(scaffolded)
		require.NoError(GinkgoT(), err)
		GinkgoWriter.Printf("the scaffold:\n%s", body)

		report := filepath.Join(dir, "same-server.json")
		out, code = runCLI(cli, "server", "--target", gcpAddr, "--fixture", gcpAddr, "--scenario-file", scaffolded, "--json", report)
		require.Equal(GinkgoT(), 0, code, "the scaffold against the go-control-plane it was recorded from: %s", out)
		run, _, err := reports.ReadJSONFile(context.Background(), report)
		require.NoError(GinkgoT(), err)
		require.NotEmpty(GinkgoT(), run.Results)
		for _, r := range run.Results {
			assert.Equal(GinkgoT(), results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
		}
	})

	// Each fault breaks what every recorded exchange shows: grpc-go sends
	// its node on the first request of the stream only, and every response
	// of go-control-plane carries a nonce.
	for _, c := range []struct{ fault, rule string }{
		{string(refserver.FaultRequireNodeEveryRequest), "RES-2"},
		{string(refserver.FaultEmptyNonce), "NONCE-1"},
	} {
		It("fails the scaffold against the reference server with fault "+c.fault+", naming "+c.rule, func() {
			require.NotEmpty(GinkgoT(), scaffolded, "the spec before scaffolds the recording")
			report := filepath.Join(filepath.Dir(scaffolded), "fault-"+c.fault+".json")
			out, code := runCLI(cli, "server", "--target", targets.BuiltinReference, "--fault", c.fault, "--scenario-file", scaffolded, "--json", report)
			require.Equal(GinkgoT(), 1, code, "the scaffold against a reference server with fault %s: %s", c.fault, out)
			run, _, err := reports.ReadJSONFile(context.Background(), report)
			require.NoError(GinkgoT(), err)
			var broken []string
			for _, r := range run.Results {
				broken = append(broken, r.RulesBroken...)
			}
			assert.Contains(GinkgoT(), broken, c.rule, "%s", out)
		})
	}
})

// recordWithCLI records, with xdsconform record run as a command, the grpc-go
// driver following the chain seeded on the go-control-plane at upstream,
// and stops the recording (SIGTERM, as Ctrl-C would) once the driver's CSDS
// shows every resource of the chain ACKed; the transcript is then at path.
func recordWithCLI(cli, upstream, path string) {
	t := GinkgoT()
	rec, line, err := startAnnouncing([]string{cli, "record", "--upstream", upstream, "-o", path}, "recording: point the client at ")
	require.NoError(t, err, "starting xdsconform record")
	defer func() { _ = rec.Stop(5 * time.Second) }()
	listen, _, _ := strings.Cut(line, ";")

	clients, err := targets.NewClients(targets.ClientOptions{Command: grpcGoDriver.Command})
	require.NoError(t, err)
	running, err := clients.Launch(context.Background(), targets.LaunchSpec{ServerAddr: listen, NodeID: recordNode, Cluster: "xdsconform", Listener: "svc", Variant: wire.SotWADS})
	require.NoError(t, err)
	defer func() { _ = running.Stop() }()
	require.NotNil(t, running.Observer(), "the grpc-go driver serves CSDS")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		rs, err := running.Observer().Observe(ctx)
		if err == nil && chainAcked(rs) {
			break
		}
		select {
		case <-ctx.Done():
			require.FailNowf(t, "timed out", "waiting for grpc-go's CSDS to show the chain ACKed (last: %v, %v); the recorder says: %s", rs, err, rec.Tail())
		case <-running.Exited():
			require.FailNowf(t, "the grpc-go driver exited", "%v", running.Err())
		case <-tick.C:
		}
	}
	// The recording stops first, as in the spec above.
	require.NoError(t, rec.Stop(5*time.Second), "stopping xdsconform record")
	require.NoError(t, rec.ExitErr(), "xdsconform record: %s", rec.Tail())
	require.NoError(t, running.Stop())
	f, err := transcript.ReadFile(context.Background(), path)
	require.NoError(t, err)
	assert.Equal(t, "sotw-ads", f.Variant)
}

// chainAcked reports whether a status view shows the chain of
// seedRecordChain ACKed, every type of it.
func chainAcked(rs []observer.Resource) bool {
	for _, want := range []struct {
		t    wire.Type
		name string
	}{{wire.Listener, "svc"}, {wire.Route, "route-a"}, {wire.Cluster, "cluster-a"}, {wire.Endpoint, "cluster-a"}} {
		r, ok := observer.Find(rs, want.t.URL, want.name)
		if !ok || r.State != observer.Acked {
			return false
		}
	}
	return true
}

// runCLI runs the xdsconform binary with args from the repository root,
// bounded in time, and returns its output and exit code.
func runCLI(cli string, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	require.NoError(GinkgoT(), err, "running xdsconform %v: %s", args, out)
	return string(out), -1
}
