package scenarios

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// misbehaviour is how a hostile target breaks the streams it disrupts.
type misbehaviour int

const (
	// resetAfterFirst sends the first response, then ends the stream with
	// status Unavailable, like a proxy or server that drops the connection.
	resetAfterFirst misbehaviour = iota
	// malformed replaces every resource of every response with an Any of
	// type Cluster whose bytes do not parse.
	malformed
)

const resetMessage = "hostile target: connection reset"

// garbage is not a valid protobuf encoding: a tag varint that never ends.
var garbage = []byte{0xff, 0xff, 0xff}

// hostile wraps the reference server's streams for which disrupt is true.
type hostile struct {
	how     misbehaviour
	disrupt func(fullMethod string) bool
}

func (h hostile) intercept(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if !h.disrupt(info.FullMethod) {
		return handler(srv, ss)
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	w := &hostileStream{ServerStream: ss, ctx: ctx, cancel: cancel, how: h.how}
	err := handler(srv, w)
	if w.reset.Load() {
		return status.Error(codes.Unavailable, resetMessage)
	}
	return err
}

// hostileStream intercepts what the reference server sends.
type hostileStream struct {
	grpc.ServerStream
	ctx    context.Context
	cancel context.CancelFunc
	how    misbehaviour
	reset  atomic.Bool
}

func (w *hostileStream) Context() context.Context { return w.ctx }

func (w *hostileStream) SendMsg(m any) error {
	switch w.how {
	case resetAfterFirst:
		if w.reset.Load() {
			return status.Error(codes.Unavailable, resetMessage)
		}
		if err := w.ServerStream.SendMsg(m); err != nil {
			return err
		}
		// Cancelling the handler's context makes the reference server
		// return; the interceptor then ends the stream with Unavailable.
		w.reset.Store(true)
		w.cancel()
		return nil
	case malformed:
		return w.ServerStream.SendMsg(corrupt(m))
	}
	return w.ServerStream.SendMsg(m)
}

func badAny() *anypb.Any { return &anypb.Any{TypeUrl: wire.Cluster.URL, Value: garbage} }

func corrupt(m any) any {
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		c := proto.Clone(r).(*discovery.DiscoveryResponse)
		for i := range c.Resources {
			c.Resources[i] = badAny()
		}
		return c
	case *discovery.DeltaDiscoveryResponse:
		c := proto.Clone(r).(*discovery.DeltaDiscoveryResponse)
		for _, res := range c.Resources {
			res.Resource = badAny()
		}
		return c
	}
	return m
}

// startHostile serves the reference server behind h on a loopback port and
// describes it as a target, the way targets.StartServer does for built-ins.
func startHostile(t *testing.T, h hostile) *targets.Server {
	t.Helper()
	srv, err := targets.ServeInProcess(context.Background(), "hostile reference", refserver.New(), grpc.StreamInterceptor(h.intercept))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

func everyStream(string) bool { return true }

// perTypeCDS is true for the Cluster discovery service's own methods (SotW
// and delta), not for ADS.
func perTypeCDS(method string) bool {
	return strings.HasPrefix(method, "/"+wire.Cluster.Service+"/")
}

// TestHostileTarget: a target that sends a malformed message fails the
// scenarios it disrupts, one that resets a stream (Unavailable: the
// connection lost) ends them with an error that says so, no rule of the
// step's being broken; either way the transcript is the evidence, and
// every other scenario of the run carries on and passes.
func TestHostileTarget(t *testing.T) {
	// Both scenarios need a second response after the first one, so a
	// stream that ends after its first response cannot pass them.
	sel := engine.Selection{Run: []string{
		"server/stream/node-only-on-first-request", // EDS, every variant
		"server/version/changes-on-update",         // CDS, SotW
		"server/version/delta-resource-versions",   // CDS, delta
	}}
	tests := []struct {
		name    string
		h       hostile
		hit     []string // pairs that must end with outcome; every other pair must pass
		outcome results.Outcome
		message []string // in the message of every hit pair
		// evidence is true for a transcript entry that shows the misbehaviour.
		evidence func(transcript.Entry) bool
	}{
		{
			name: "every stream reset after its first response",
			h:    hostile{how: resetAfterFirst, disrupt: everyStream},
			hit: []string{
				"server/stream/node-only-on-first-request[sotw-ads]", "server/stream/node-only-on-first-request[sotw-pertype]",
				"server/stream/node-only-on-first-request[delta-ads]", "server/stream/node-only-on-first-request[delta-pertype]",
				"server/version/changes-on-update[sotw-ads]", "server/version/changes-on-update[sotw-pertype]",
				"server/version/delta-resource-versions[delta-ads]", "server/version/delta-resource-versions[delta-pertype]",
			},
			outcome:  results.Error,
			message:  []string{"connection to the target was lost mid-step", "closed by target", "Unavailable", resetMessage},
			evidence: closedByTarget,
		},
		{
			name: "per-type CDS streams reset after their first response",
			h:    hostile{how: resetAfterFirst, disrupt: perTypeCDS},
			hit: []string{
				"server/version/changes-on-update[sotw-pertype]", "server/version/delta-resource-versions[delta-pertype]",
			},
			outcome:  results.Error,
			message:  []string{"connection to the target was lost mid-step", "closed by target", "Unavailable", resetMessage},
			evidence: closedByTarget,
		},
		{
			name: "per-type CDS streams send resources that do not parse",
			h:    hostile{how: malformed, disrupt: perTypeCDS},
			hit: []string{
				"server/version/changes-on-update[sotw-pertype]", "server/version/delta-resource-versions[delta-pertype]",
			},
			outcome:  results.Fail,
			message:  []string{"STREAM-7", "does not decode"},
			evidence: malformedReceived,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := startHostile(t, tc.h)
			pairs, err := engine.Expand(Server(), sel)
			require.NoError(t, err)
			require.Len(t, pairs, 8)
			rs, interrupted := engine.Run(context.Background(), pairs, engine.Config{Env: target, Timeouts: testTimeouts})
			require.False(t, interrupted)
			require.Len(t, rs, len(pairs), "every pair has a result")

			hit := map[string]bool{}
			for _, n := range tc.hit {
				hit[n] = true
			}
			for _, r := range rs {
				dump := r.FullName() + ": " + r.Message + "\n" + transcript.Format(r.Transcript)
				if !hit[r.FullName()] {
					assert.Equal(t, results.Pass, r.Outcome, "an undisrupted pair carries on: %s", dump)
					continue
				}
				// Never a pass.
				require.Equal(t, tc.outcome, r.Outcome, dump)
				for _, m := range tc.message {
					assert.Contains(t, r.Message, m, dump)
				}
				require.NotEmpty(t, r.Transcript, dump)
				assert.True(t, containsEntry(r.Transcript, tc.evidence), "the transcript shows what the target did: %s", dump)
			}
		})
	}
}

func containsEntry(es []transcript.Entry, f func(transcript.Entry) bool) bool {
	for _, e := range es {
		if f(e) {
			return true
		}
	}
	return false
}

func closedByTarget(e transcript.Entry) bool {
	return e.Direction == transcript.Event && strings.Contains(e.Note, "closed by target: Unavailable") &&
		strings.Contains(e.Note, resetMessage)
}

// malformedReceived is a received response on a CDS stream whose resource
// could not be rendered or is rendered with the Cluster type.
func malformedReceived(e transcript.Entry) bool {
	return e.Direction == transcript.Received && strings.HasPrefix(e.Stream, "CDS#") &&
		(strings.Contains(e.Note, "could not render") || strings.Contains(string(e.Message), wire.Cluster.URL))
}

// TestTranscriptRedactsSecrets: SDS secret payloads never reach a report,
// whatever the variant; the placeholder shows where they were.
func TestTranscriptRedactsSecrets(t *testing.T) {
	secret := protojson.Format(wire.Build(wire.Secret, "probe", 1))
	require.Contains(t, secret, "not-a-real-secret", "the payload this test looks for")

	rs := runServerSuite(t, targets.BuiltinReference, nil, engine.Selection{Run: []string{"server/stream/every-type-served"}})
	require.Len(t, rs, len(wire.AllVariants))
	for _, r := range rs {
		require.Equal(t, results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
		redacted := false
		for _, e := range r.Transcript {
			assert.NotContains(t, string(e.Message), "not-a-real-secret", "%s: %s entry on %s", r.FullName(), e.Direction, e.Stream)
			assert.NotContains(t, e.Note, "not-a-real-secret", r.FullName())
			redacted = redacted || strings.Contains(string(e.Message), transcript.RedactedSecret)
		}
		assert.True(t, redacted, "%s: some received SDS response shows %q", r.FullName(), transcript.RedactedSecret)
		assert.NotContains(t, transcript.Format(r.Transcript), "not-a-real-secret", r.FullName())
	}
}
