package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// seededRef serves a reference server (with faults) holding, for node
// n1, the chain from listener svc to one cluster and its endpoints.
func seededRef(t *testing.T, faults ...refserver.Fault) string {
	t.Helper()
	ref := refserver.New(faults...)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer()
	ref.Register(g)
	done := make(chan struct{})
	go func() { defer close(done); _ = g.Serve(lis) }()
	t.Cleanup(func() { g.Stop(); <-done })
	fx := fixture.FromServer(ref.FixtureServer())
	for _, r := range []struct {
		t    wire.Type
		name string
		m    proto.Message
	}{
		{wire.Listener, "svc", wire.ClientListener("svc", "route-a", 1)},
		{wire.Route, "route-a", wire.ClientRoute("route-a", "cluster-a", 1)},
		{wire.Cluster, "cluster-a", wire.Build(wire.Cluster, "cluster-a", 1)},
		{wire.Endpoint, "cluster-a", wire.Build(wire.Endpoint, "cluster-a", 1)},
	} {
		a, err := anypb.New(r.m)
		require.NoError(t, err)
		_, err = fx.Set(context.Background(), "n1", r.t, r.name, a)
		require.NoError(t, err)
	}
	return lis.Addr().String()
}

// lines is a writer a test can wait on for a line matching a pattern.
type lines struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	notify chan struct{}
}

func newLines() *lines { return &lines{notify: make(chan struct{}, 1)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.notify <- struct{}{}:
	default:
	}
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// await waits (bounded) for re to match the output and returns its first
// group.
func (l *lines) await(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		if m := re.FindStringSubmatch(l.String()); m != nil {
			return m[1]
		}
		select {
		case <-l.notify:
		case <-deadline.C:
			require.FailNowf(t, "timed out", "waiting for %s in:\n%s", re, l.String())
		}
	}
}

// startRecord runs `xdsconform record` in the background; it returns the
// address clients connect to and a function that waits for its exit.
func startRecord(t *testing.T, ctx context.Context, args ...string) (string, func() (int, string)) {
	t.Helper()
	out, errb := newLines(), &bytes.Buffer{}
	codeC := make(chan int, 1)
	go func() { codeC <- execute(ctx, append([]string{"record"}, args...), out, errb) }()
	addr := out.await(t, regexp.MustCompile(`point the client at (\S+);`))
	return addr, func() (int, string) {
		select {
		case code := <-codeC:
			return code, out.String() + errb.String()
		case <-time.After(20 * time.Second):
			require.FailNow(t, "record did not exit")
			return 0, ""
		}
	}
}

// TestRecordThenReplay records the reference client and server through
// the CLI, then replays the file through the CLI both ways: against the
// same server and the same client it is the same (exit 0); against a
// server and a client each broken in a way the recording shows, it
// differs (exit 1) and says where.
func TestRecordThenReplay(t *testing.T) {
	up := seededRef(t)
	file := filepath.Join(t.TempDir(), "rec.json")
	// The chain in SotW ADS is 12 messages: for each of four types a
	// subscription, the response and its ACK.
	addr, wait := startRecord(t, context.Background(), "--upstream", up, "-o", file, "--max-messages", "12")
	c, err := refclient.Start(context.Background(), refclient.Config{ServerAddr: addr, NodeID: "n1", Variant: wire.SotWADS, Listener: "svc"})
	require.NoError(t, err)
	code, out := wait()
	c.Close()
	require.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "recorded 12 messages on 1 stream over 1 connection")
	f, err := transcript.ReadFile(context.Background(), file)
	require.NoError(t, err)
	assert.Equal(t, "sotw-ads", f.Variant)

	code, stdout, stderr := run(t, "replay", "--against", "server", "--target", seededRef(t), "--timeout", "2s", "--quiet", "300ms", file)
	assert.Equal(t, exitOK, code, stdout+stderr)
	assert.Contains(t, stdout, "no difference")

	code, stdout, stderr = run(t, "replay", "--against", "server", "--target", seededRef(t, refserver.FaultEmptyNonce), "--timeout", "2s", "--quiet", "300ms", file)
	assert.Equal(t, exitFailures, code, stdout+stderr)
	assert.Contains(t, stdout, "DIFF entry 4 (ads#1): LDS response: the target's response has no nonce")

	code, stdout, stderr = run(t, "replay", "--against", "client", "--target", "builtin:reference", "--timeout", "2s", "--quiet", "300ms", file)
	assert.Equal(t, exitOK, code, stdout+stderr)
	assert.Contains(t, stdout, "no difference")

	code, stdout, stderr = run(t, "replay", "--against", "client", "--target", "builtin:reference", "--fault", "ack-empty-nonce", "--timeout", "2s", "--quiet", "300ms", file)
	assert.Equal(t, exitFailures, code, stdout+stderr)
	assert.Contains(t, stdout, "the client sent a request for LDS")

	out2 := filepath.Join(t.TempDir(), "replay.json")
	code, stdout, stderr = run(t, "replay", "--against", "server", "--target", seededRef(t), "--timeout", "2s", "--quiet", "300ms", "--transcript-out", out2, file)
	assert.Equal(t, exitOK, code, stdout+stderr)
	rf, err := transcript.ReadFile(context.Background(), out2)
	require.NoError(t, err)
	assert.Equal(t, transcript.SideClient, rf.Side)
}

// TestRecordInterrupted: Ctrl-C ends a recording with the file of what
// was recorded, and exit 0; a recording nobody connected to is exit 1
// and writes nothing.
func TestRecordInterrupted(t *testing.T) {
	up := seededRef(t)
	file := filepath.Join(t.TempDir(), "rec.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, wait := startRecord(t, ctx, "--upstream", up, "-o", file)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	cs, err := conn.NewStream(context.Background(), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, wire.MethodFor(wire.DeltaADS, wire.Type{}))
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&discovery.DeltaDiscoveryRequest{Node: nodeN1(), TypeUrl: wire.Listener.URL, ResourceNamesSubscribe: []string{"svc"}}))
	require.NoError(t, cs.RecvMsg(&discovery.DeltaDiscoveryResponse{}))
	cancel()
	code, out := wait()
	require.Equal(t, exitOK, code, out)
	assert.Contains(t, out, "(interrupted)")
	f, err := transcript.ReadFile(context.Background(), file)
	require.NoError(t, err)
	assert.Equal(t, "delta-ads", f.Variant)

	empty := filepath.Join(t.TempDir(), "empty.json")
	code, stdout, stderr := run(t, "record", "--upstream", up, "-o", empty, "--duration", "100ms")
	assert.Equal(t, exitFailures, code, stdout+stderr)
	assert.Contains(t, stderr, "nothing recorded")
	assert.NoFileExists(t, empty)

	// A client that connects and sends nothing is no recording either.
	quiet := filepath.Join(t.TempDir(), "quiet.json")
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	addr2, wait2 := startRecord(t, ctx2, "--upstream", up, "-o", quiet)
	idle, err := grpc.NewClient(addr2, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer idle.Close()
	idle.Connect()
	ready, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for s := idle.GetState(); s != connectivity.Ready; s = idle.GetState() {
		require.True(t, idle.WaitForStateChange(ready, s), "the idle client never connected")
	}
	cancel2()
	code, out = wait2()
	assert.Equal(t, exitFailures, code, out)
	assert.Contains(t, out, "1 connection to")
	assert.Contains(t, out, "carried no message")
	assert.NoFileExists(t, quiet)
}

// TestRecordReplayExitCodes: bad flags and unreadable transcripts are
// usage errors (2), an unreachable server or a client that never comes
// exit 3, each with one line.
func TestRecordReplayExitCodes(t *testing.T) {
	dir := t.TempDir()
	unreachable := closedPort(t)
	notTranscript := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(notTranscript, []byte(`{"format":"something else","side":"client","entries":[{}]}`), 0o644))
	good := filepath.Join(dir, "good.json")
	require.NoError(t, transcript.WriteFile(good, &transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{
		{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "opened " + wire.MethodFor(wire.SotWADS, wire.Type{})},
		{Stream: "ads#1", Direction: transcript.Sent, Kind: "DiscoveryRequest", Message: []byte(`{"type_url":"` + wire.Listener.URL + `","resource_names":["svc"]}`)},
	}}))
	mixed := filepath.Join(dir, "mixed.json")
	require.NoError(t, transcript.WriteFile(mixed, &transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{
		{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "opened " + wire.MethodFor(wire.SotWADS, wire.Type{})},
		{Stream: "ads#2", Direction: transcript.Event, Kind: "event", Note: "opened " + wire.MethodFor(wire.DeltaADS, wire.Type{})},
	}}))
	checkExitCodes(t, []exitCase{
		{"record without upstream", []string{"record", "-o", filepath.Join(dir, "r.json")}, exitUsage, "--upstream is required"},
		{"record without output", []string{"record", "--upstream", unreachable}, exitUsage, "-o is required"},
		{"record bad upstream", []string{"record", "--upstream", "nonsense", "-o", filepath.Join(dir, "r.json")}, exitUsage, "want HOST:PORT"},
		{"record bad listen", []string{"record", "--upstream", unreachable, "--listen", "127.0.0.1:70000", "-o", filepath.Join(dir, "r.json")}, exitUsage, "--listen"},
		{"record missing dir", []string{"record", "--upstream", unreachable, "-o", filepath.Join(dir, "no", "r.json")}, exitUsage, "does not exist"},
		{"record zero conns", []string{"record", "--upstream", unreachable, "--max-conns", "0", "-o", filepath.Join(dir, "r.json")}, exitUsage, "--max-conns"},
		{"record tls half", []string{"record", "--upstream", unreachable, "--upstream-tls-key", "k.pem", "-o", filepath.Join(dir, "r.json")}, exitUsage, "go together"},
		{"record arguments", []string{"record", "--upstream", unreachable, "-o", filepath.Join(dir, "r.json"), "extra"}, exitUsage, "unknown command"},
		{"record unreachable", []string{"record", "--upstream", unreachable, "--connect-timeout", "300ms", "-o", filepath.Join(dir, "r.json")}, exitUnreachable, unreachable},
		{"replay without against", []string{"replay", good}, exitUsage, "--against"},
		{"replay without file", []string{"replay", "--against", "server", "--target", unreachable}, exitUsage, "accepts 1 arg"},
		{"replay without target", []string{"replay", "--against", "server", good}, exitUsage, "needs --target"},
		{"replay client flag on server", []string{"replay", "--against", "server", "--target", unreachable, "--listen", "127.0.0.1:0", good}, exitUsage, "--listen: only apply to --against client"},
		{"replay server flag on client", []string{"replay", "--against", "client", "--target", "builtin:reference", "--tls", good}, exitUsage, "--tls: only apply to --against server"},
		{"replay two clients", []string{"replay", "--against", "client", "--target", "builtin:reference", "--listen", "127.0.0.1:0", good}, exitUsage, "exactly one of"},
		{"replay bad compare", []string{"replay", "--against", "server", "--target", unreachable, "--compare", "everything", good}, exitUsage, "--compare"},
		{"replay missing file", []string{"replay", "--against", "server", "--target", unreachable, filepath.Join(dir, "absent.json")}, exitUsage, "absent.json"},
		{"replay not a transcript", []string{"replay", "--against", "server", "--target", unreachable, notTranscript}, exitUsage, "format"},
		{"replay mixed variants", []string{"replay", "--against", "server", "--target", unreachable, mixed}, exitUsage, "mix variants"},
		{"replay fault elsewhere", []string{"replay", "--against", "server", "--target", unreachable, "--fault", "empty-nonce", good}, exitUsage, "--fault only applies"},
		{"replay unknown client", []string{"replay", "--against", "client", "--target", "builtin:nope", good}, exitUsage, "unknown client target"},
		{"replay unreachable server", []string{"replay", "--against", "server", "--target", unreachable, "--connect-timeout", "300ms", good}, exitUnreachable, unreachable},
		{"replay no client", []string{"replay", "--against", "client", "--listen", "127.0.0.1:0", "--start-timeout", "200ms", good}, exitUnreachable, "no client connected"},
		{"replay no client names the flag", []string{"replay", "--against", "client", "--listen", "127.0.0.1:0", "--start-timeout", "200ms", good}, exitUnreachable, "(--start-timeout 200ms: raise it"},
		{"replay launched client never connects", []string{"replay", "--against", "client", "--client-cmd", "echo 'waiting for the config service' >&2; exec sleep 60", "--start-timeout", "200ms", good},
			exitUnreachable, "--start-timeout 200ms: raise it if the client is only slow to start) The client's output ends with: waiting for the config service"},
	})
}

func nodeN1() *core.Node { return &core.Node{Id: "n1"} }
