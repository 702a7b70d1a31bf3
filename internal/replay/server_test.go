package replay_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// output renders a result as the CLI prints it.
func output(r *replay.Result) string {
	var b bytes.Buffer
	r.Write(&b)
	return b.String()
}

// TestReplaySameServer: a recording replayed against a server that
// behaves as the recorded one (another reference server, seeded alike)
// shows no difference, in every variant: nonces and versions the target
// picks are not differences.
func TestReplaySameServer(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			f := recordChain(t, v, "n1")
			addr, fx := startRef(t)
			seedChain(t, fx, "n1", 1)
			res := replayAgainst(t, f, addr, replay.ServerOptions{Bodies: true})
			assert.True(t, res.Same(), "differences:\n%s\nreplay:\n%s", output(res), res.Transcript)
			assert.Positive(t, res.Steps)
			assert.Contains(t, output(res), "no difference")
		})
	}
}

// TestReplayFindsFaults replays one recording against reference servers
// each broken in a way that changes what the recording shows, and checks
// that each is reported as a difference at the right entry, in words
// that name it.
func TestReplayFindsFaults(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaPerType} {
		f := recordChain(t, v, "n1")
		for _, tc := range []struct {
			fault     refserver.Fault
			want      string
			deltaOnly bool
		}{
			// Delta resources without a version (VER-7).
			{refserver.FaultNoResourceVersions, "resources sent without a version", true},
			// A response without a nonce (NONCE-1).
			{refserver.FaultEmptyNonce, "has no nonce", false},
			// Only the first name of the two clusters asked for: a
			// resource missing from the response (RES-2).
			{refserver.FaultFirstNameOnly, `missing ["cluster-b"]`, false},
			// Resources packed under another type's URL: NACK-worthy.
			{refserver.FaultWrongTypeUrl, "what a client would NACK the response for", false},
			// Every ACK answered with a resend: extra responses.
			{refserver.FaultResendOnAck, "an extra", false},
		} {
			if tc.deltaOnly && !v.IsDelta() {
				continue
			}
			t.Run(v.String()+"/"+string(tc.fault), func(t *testing.T) {
				addr, fx := startRef(t, tc.fault)
				seedChain(t, fx, "n1", 1)
				res := replayAgainst(t, f, addr, replay.ServerOptions{})
				require.False(t, res.Same(), "the fault was not found; replay:\n%s", res.Transcript)
				out := output(res)
				assert.Contains(t, out, tc.want)
				t.Log(out)
			})
		}
	}
}

// TestReplayMissingResponse: a target that lacks what the recording's
// server served answers differently (an empty Listener or Cluster
// response, the full state of those types) or not at all (routes and
// endpoints by name); both are differences naming the recorded response.
func TestReplayMissingResponse(t *testing.T) {
	f := recordChain(t, wire.SotWADS, "n1")
	addr, _ := startRef(t) // seeded with nothing
	res := replayAgainst(t, f, addr, replay.ServerOptions{})
	require.False(t, res.Same())
	out := output(res)
	assert.Contains(t, out, `DIFF entry 4 (ads#1): LDS response: resources differ: the recording has ["svc"], the target sent none (missing ["svc"])`)
	assert.Contains(t, out, `DIFF entry 7 (ads#1): the target sent no RDS response within 2s where the recording got an RDS response (resources ["route-a"])`)
}

// TestReplayComparesBodiesOnlyWhenAsked: resources of another revision
// are the same response unless bodies are compared.
func TestReplayComparesBodiesOnlyWhenAsked(t *testing.T) {
	f := recordChain(t, wire.SotWADS, "n1")
	addr, fx := startRef(t)
	seedChain(t, fx, "n1", 2)
	res := replayAgainst(t, f, addr, replay.ServerOptions{})
	assert.True(t, res.Same(), output(res))
	res = replayAgainst(t, f, addr, replay.ServerOptions{Bodies: true})
	require.False(t, res.Same())
	assert.Contains(t, output(res), "resource bodies differ")
}

// TestReplayNodeID: the node id of the recording can be replaced, for a
// target that knows the client under another.
func TestReplayNodeID(t *testing.T) {
	f := recordChain(t, wire.DeltaADS, "n1")
	addr, fx := startRef(t)
	seedChain(t, fx, "other", 1)
	res := replayAgainst(t, f, addr, replay.ServerOptions{})
	assert.False(t, res.Same(), "the target has nothing for n1")
	res = replayAgainst(t, f, addr, replay.ServerOptions{NodeID: "other"})
	assert.True(t, res.Same(), output(res))
}

// closingServer answers the first request of every SotW stream by
// closing the stream with code.
func closingServer(t *testing.T, code codes.Code) string {
	t.Helper()
	return recordtest.Serve(t, func(g grpc.ServiceRegistrar) {
		wire.RegisterServices(g, wire.Handlers{
			SotW: func(ss wire.SotWServerStream, _ *wire.Type) error {
				if _, err := ss.Recv(); err != nil {
					return err
				}
				return status.Error(code, "closed on purpose")
			},
			Delta: func(wire.DeltaServerStream, *wire.Type) error { return status.Error(codes.Unimplemented, "no delta") },
		})
	})
}

// recordOneRequest records the harness's fake client asking upstream for
// listener svc, until the response or the stream's end.
func recordOneRequest(t *testing.T, upstream string) *transcript.File {
	t.Helper()
	p, err := record.Start(record.Options{Upstream: upstream, Dial: plaintext()})
	require.NoError(t, err)
	defer p.Stop()
	conn, err := grpc.NewClient(p.Addr(), plaintext()...)
	require.NoError(t, err)
	defer conn.Close()
	c := fakeclient.New(context.Background(), conn, wire.SotWADS, fakeclient.Options{NodeID: "n1", Timeout: wait})
	require.NoError(t, c.Subscribe(wire.Listener, "svc"))
	if r, err := c.Expect(wire.Listener); err == nil {
		require.NoError(t, c.Ack(wire.Listener, r))
	}
	c.Close()
	p.Stop()
	return p.File("test")
}

// TestReplayStreamStatus: a stream the recording's server closed must be
// closed by the target, with the same code; a target that closes one the
// recording's kept open differs too.
func TestReplayStreamStatus(t *testing.T) {
	closedRec := recordOneRequest(t, closingServer(t, codes.PermissionDenied))
	require.True(t, slices.ContainsFunc(closedRec.Entries, func(e transcript.Entry) bool {
		return strings.HasPrefix(e.Note, record.NoteClosedByServer+"PermissionDenied")
	}), "the recording has the close")

	t.Run("same-status", func(t *testing.T) {
		res := replayAgainst(t, closedRec, closingServer(t, codes.PermissionDenied), replay.ServerOptions{})
		assert.True(t, res.Same(), output(res))
	})
	t.Run("other-status", func(t *testing.T) {
		res := replayAgainst(t, closedRec, closingServer(t, codes.Unavailable), replay.ServerOptions{})
		require.False(t, res.Same())
		assert.Contains(t, output(res), "the target closed the stream with Unavailable: closed on purpose where the recording's server closed it with PermissionDenied")
	})
	t.Run("kept-open", func(t *testing.T) {
		addr, fx := startRef(t)
		seedChain(t, fx, "n1", 1)
		res := replayAgainst(t, closedRec, addr, replay.ServerOptions{})
		require.False(t, res.Same())
		assert.Contains(t, output(res), "the target kept it open")
	})
	t.Run("closed-where-open", func(t *testing.T) {
		up, fx := startRef(t)
		seedChain(t, fx, "n1", 1)
		openRec := recordOneRequest(t, up)
		res := replayAgainst(t, openRec, closingServer(t, codes.Unavailable), replay.ServerOptions{})
		require.False(t, res.Same())
		assert.Contains(t, output(res), "the target closed the stream (Unavailable: closed on purpose) where the recording got an LDS response")
	})
}

// TestReplayReconnect: a recording in which the client ended its stream
// and opened another is replayed on two streams in turn; the same server
// shows no difference.
func TestReplayReconnect(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaPerType} {
		t.Run(v.String(), func(t *testing.T) {
			up, fx := startRef(t)
			seedChain(t, fx, "n1", 1)
			p, err := record.Start(record.Options{Upstream: up, Dial: plaintext()})
			require.NoError(t, err)
			defer p.Stop()
			conn, err := grpc.NewClient(p.Addr(), plaintext()...)
			require.NoError(t, err)
			defer conn.Close()
			c := fakeclient.New(context.Background(), conn, v, fakeclient.Options{NodeID: "n1", Timeout: wait})
			for range 2 {
				require.NoError(t, c.Subscribe(wire.Listener, "svc"))
				r, err := c.Expect(wire.Listener)
				require.NoError(t, err)
				require.NoError(t, c.Ack(wire.Listener, r))
				c.Reconnect(wire.Listener)
			}
			c.Close()
			p.Stop()
			f := p.File("test")
			plan, err := replay.NewPlan(f)
			require.NoError(t, err)
			require.Len(t, plan.Streams, 2, "two streams recorded")
			addr, fx2 := startRef(t)
			seedChain(t, fx2, "n1", 1)
			res := replayAgainst(t, f, addr, replay.ServerOptions{})
			assert.True(t, res.Same(), "%s\nrecording:\n%s\nreplay:\n%s", output(res), transcript.Format(f.Entries), res.Transcript)
		})
	}
}
