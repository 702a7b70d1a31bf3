package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"

	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

func TestClientExitCodes(t *testing.T) {
	checkExitCodes(t, []exitCase{
		{"no target", []string{"client"}, exitUsage, "exactly one of"},
		{"two targets", []string{"client", "--target", "builtin:reference", "--client-cmd", "true"}, exitUsage, "exactly one of"},
		{"unknown builtin", []string{"client", "--target", "builtin:nope"}, exitUsage, "unknown client target"},
		{"unknown fault", []string{"client", "--target", "builtin:reference", "--fault", "nope"}, exitUsage, "nope"},
		{"fault on grpc-go", []string{"client", "--target", "builtin:grpc-go", "--fault", "no-node"}, exitUsage, "--fault only applies"},
		{"variant grpc-go lacks", []string{"client", "--target", "builtin:grpc-go", "--client-variants", "delta-ads"}, exitUsage, "does not speak delta-ads"},
		{"bad template", []string{"client", "--client-cmd", "run {{.Nope}}"}, exitUsage, "Nope"},
		{"wait without listen", []string{"client", "--client-wait"}, exitUsage, "--listen"},
		{"client dir without command", []string{"client", "--target", "builtin:reference", "--client-dir", "."}, exitUsage, "--client-dir only applies to --client-cmd"},
		{"client dir missing", []string{"client", "--client-cmd", "true", "--client-dir", "no/such/dir"}, exitUsage, "--client-dir"},
		{"bad observer", []string{"client", "--target", "builtin:reference", "--observer", "psychic"}, exitUsage, "unknown observer"},
		{"bad profile", []string{"client", "--target", "builtin:reference", "--client-profile", "istio"}, exitUsage, "unknown client profile"},
		{"envoy fault in grpc profile", []string{"client", "--target", "builtin:reference", "--fault", "no-warming"}, exitUsage, "--client-profile envoy"},
		{"grpc-go as envoy", []string{"client", "--target", "builtin:grpc-go", "--client-profile", "envoy"}, exitUsage, "grpc client profile only"},
		{"unknown status-lacks state", []string{"client", "--target", "builtin:reference", "--status-lacks", "bogus"}, exitUsage, `unknown status-view state "BOGUS"`},
		{"bad dne timer", []string{"client", "--target", "builtin:reference", "--dne-timer", "0s"}, exitUsage, "--dne-timer"},
		{"quiet outlasts timer", []string{"client", "--target", "builtin:reference", "--dne-timer", "1s", "--quiet", "1s"}, exitUsage, "--quiet"},
		{"scenario bound below timer", []string{"client", "--target", "builtin:reference", "--scenario-timeout", "10s"}, exitUsage, "--scenario-timeout"},
		{"reference passes", []string{"client", "--target", "builtin:reference", "--run", "client/nack/*"}, exitOK, ""},
		{"fault fails", []string{"client", "--target", "builtin:reference", "--fault", "ack-duplicates", "--run", "client/nack/duplicate-names", "--timeout", "1s"}, exitFailures, ""},
		{"envoy reference passes", []string{"client", "--target", "builtin:reference", "--client-profile", "envoy", "--run", "client/warming/*"}, exitOK, ""},
		{"envoy fault fails", []string{"client", "--target", "builtin:reference", "--client-profile", "envoy", "--fault", "no-warming", "--run", "client/warming/cluster-waits-for-endpoints", "--variant", "delta-ads"}, exitFailures, ""},
	})
}

// misbehavingClient is the test binary run as a --client-cmd client that
// breaks the protocol in the way XDSCONFORM_TEST_CLIENT says.
const misbehavingClient = "XDSCONFORM_TEST_CLIENT"

// runMisbehavingClient runs in the child process: it connects to the
// harness at addr and misbehaves, then waits to be stopped.
func runMisbehavingClient(mode, addr string) int {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	switch mode {
	case "wrong-service": // per-type CDS while the harness expects ADS
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, wire.MethodFor(wire.SotWPerType, wire.Cluster))
		if err == nil {
			err = st.SendMsg(&discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"}})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	case "garbage": // bytes that are no DiscoveryRequest on the ADS method
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, wire.MethodFor(wire.SotWADS, wire.Listener), grpc.ForceCodecV2(rawCodec{}))
		if err == nil {
			err = st.SendMsg([]byte{0xff, 0xff, 0xff, 0x0f, 0x01})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	select {} // until the harness stops the process
}

// rawCodec sends []byte as they are.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }
func (rawCodec) Name() string                         { return "proto" }

func clientReport(t *testing.T, args ...string) (int, results.Run, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "r.json")
	code, out, stderr := run(t, append(args, "--json", js)...)
	require.FileExists(t, js, "stdout:\n%s\nstderr:\n%s", out, stderr)
	return code, readRun(t, js), out
}

// A --client-cmd that exits at once, never connects or ignores SIGTERM
// gives an error outcome naming the cause, leaves no process behind, and
// does not stop the run.
func TestClientCommandFailures(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, cmd string
		want      []string
	}{
		{"exits at once", "echo 'cannot start: no config' >&2; exit 7", []string{"cannot start: no config"}},
		// One that never connects is told of with the flag to raise and
		// what it printed, or that it printed nothing.
		{"never connects", "echo $$ > " + filepath.Join(dir, "never") + "; exec sleep 60",
			[]string{"never connected", "within --start-timeout 1s", "The client has printed nothing."}},
		{"never connects, saying why", "echo 'waiting for the config service' >&2; echo $$ > " + filepath.Join(dir, "says") + "; exec sleep 60",
			[]string{"never connected", "within --start-timeout 1s", "The client's output ends with:\nwaiting for the config service"}},
		{"ignores SIGTERM", "trap '' TERM; echo $$ > " + filepath.Join(dir, "hangs") + "; while :; do sleep 1; done", []string{"never connected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, rep, out := clientReport(t, "client", "--client-cmd", tc.cmd, "--start-timeout", "1s",
				"--run", "client/stream/client-speaks-first,client/ack/every-response", "--variant", "sotw-ads")
			assert.Equal(t, exitFailures, code, out)
			require.Len(t, rep.Results, 2, "the run carries on after a broken client")
			for _, r := range rep.Results {
				assert.Equal(t, results.Error, r.Outcome, r.FullName())
				for _, w := range tc.want {
					assert.Contains(t, r.Message, w, r.FullName())
				}
			}
		})
	}
	for _, f := range []string{"never", "says", "hangs"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		require.NoError(t, err)
		assert.False(t, process.Alive(pid), "the %s client (pid %d) must be gone", f, pid)
	}
}

// A client that opens the wrong service or sends garbage fails the
// scenario, with the evidence in the transcript.
func TestMisbehavingClientFails(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, mode := range []string{"wrong-service", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			cmd := misbehavingClient + "=" + mode + " " + process.Quote(exe) + " {{.Server}}"
			code, rep, out := clientReport(t, "client", "--client-cmd", cmd, "--timeout", "1s",
				"--run", "client/stream/client-speaks-first", "--variant", "sotw-ads")
			assert.Equal(t, exitFailures, code, out)
			require.Len(t, rep.Results, 1)
			r := rep.Results[0]
			assert.Equal(t, results.Fail, r.Outcome, r.Message)
			assert.NotEmpty(t, r.Transcript)
			assert.Contains(t, r.Message, map[string]string{"wrong-service": "variant under test", "garbage": "ended"}[mode])
		})
	}
}

// --client-wait runs scenarios one at a time against a client started
// elsewhere, which reconnects to --listen for each.
func TestClientWait(t *testing.T) {
	listen := closedPort(t)
	rc, err := refclient.Start(t.Context(), refclient.Config{
		ServerAddr: listen, NodeID: "started-elsewhere", Variant: wire.SotWADS, Listener: "waited-listener",
	})
	require.NoError(t, err)
	defer rc.Close()
	code, rep, out := clientReport(t, "client", "--client-wait", "--listen", listen, "--listener", "waited-listener",
		"--observer-addr", rc.CSDSAddr(), "--variant", "sotw-ads",
		"--run", "client/nack/recovery,client/stream/node-on-first-request,client/nack/keeps-previous")
	assert.Equal(t, exitOK, code, out)
	assert.Len(t, rep.Results, 3)
}

// The client profile is recorded in the report's options, and decides
// which scenarios run: in the Envoy profile, those of the gRPC profile are
// skipped.
func TestClientProfileInReport(t *testing.T) {
	code, rep, out := clientReport(t, "client", "--target", "builtin:reference", "--client-profile", "envoy",
		"--run", "client/warming/cluster-waits-for-endpoints,client/nack/recovery", "--variant", "sotw-ads")
	assert.Equal(t, exitOK, code, out)
	assert.Equal(t, "envoy", rep.Options["client_profile"])
	require.Len(t, rep.Results, 2)
	for _, r := range rep.Results {
		if r.ID == "client/nack/recovery" {
			assert.Equal(t, results.Skip, r.Outcome)
			assert.Equal(t, "written for the gRPC client profile; the client runs the envoy profile", r.Message)
		} else {
			assert.Equal(t, results.Pass, r.Outcome, r.Message)
		}
	}
}

// TestClientWaitWithoutClient: with --client-wait and no client, the first
// pair waits out --start-timeout and the rest error at once with that
// cause; the run exits 3 with one line, the report of what ran written.
func TestClientWaitWithoutClient(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := run(t, "client", "--client-wait", "--listen", closedPort(t), "--listener", "l", "--observer", "none",
		"--start-timeout", "300ms", "--run", "client/ack/*", "--json", js)
	require.Equal(t, exitUnreachable, code, stderr)
	assert.Contains(t, stderr, "no client connected to --listen")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
	rs := readRun(t, js).Results
	require.Greater(t, len(rs), 1)
	waited := 0
	for _, r := range rs {
		if r.Outcome == results.Skip {
			continue
		}
		require.Equal(t, results.Error, r.Outcome, r.FullName())
		assert.Contains(t, r.Message, "no client connected to --listen", r.FullName())
		if strings.Contains(r.Message, "what this pair saw: the client never connected") {
			waited++
		}
	}
	assert.Equal(t, 1, waited, "only the first pair waits for the client")
}
