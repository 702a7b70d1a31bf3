package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// streamWrap serves the reference server with every stream wrapped by wrap.
func streamWrap(t *testing.T, wrap func(grpc.ServerStream) grpc.ServerStream) *targets.Server {
	t.Helper()
	srv, err := targets.ServeInProcess(context.Background(), "wrapped reference", refserver.New(),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			return h(srv, wrap(ss))
		}))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// padded adds pad bytes to every response, in control_plane.identifier,
// which no scenario reads: a response as large as a real big
// configuration, correct in every other way.
type padded struct {
	grpc.ServerStream
	pad string
}

func (p padded) SendMsg(m any) error {
	cp := &core.ControlPlane{Identifier: p.pad}
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		r = proto.Clone(r).(*discovery.DiscoveryResponse)
		r.ControlPlane = cp
		m = r
	case *discovery.DeltaDiscoveryResponse:
		r = proto.Clone(r).(*discovery.DeltaDiscoveryResponse)
		r.ControlPlane = cp
		m = r
	}
	return p.ServerStream.SendMsg(m)
}

// TestRecvLimit: a response over grpc-go's default 4 MiB is accepted under
// the harness's default limit; over a limit set lower, the pair errors,
// saying the harness's limit was exceeded and how to raise it, and the
// transcript says the harness closed the stream, not the target.
func TestRecvLimit(t *testing.T) {
	pad := strings.Repeat("p", 5<<20)
	sel := engine.Selection{Run: []string{"server/ack/no-resend-after-ack[sotw-ads]", "server/ack/no-resend-after-ack[delta-ads]"}}

	t.Run("under the default limit", func(t *testing.T) {
		srv := streamWrap(t, func(ss grpc.ServerStream) grpc.ServerStream { return padded{ss, pad} })
		require.Greater(t, srv.MaxRecvSize, 5<<20)
		rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, sel)
		require.Len(t, rs, 2)
		for _, r := range rs {
			assert.Equal(t, results.Pass, r.Outcome, "%s: %s", r.FullName(), r.Message)
		}
	})
	t.Run("over a lower limit", func(t *testing.T) {
		srv := streamWrap(t, func(ss grpc.ServerStream) grpc.ServerStream { return padded{ss, pad} })
		srv.Dial = append(srv.Dial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4<<20)))
		rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, sel)
		require.Len(t, rs, 2)
		for _, r := range rs {
			dump := r.FullName() + ": " + r.Message
			require.Equal(t, results.Error, r.Outcome, dump)
			assert.Contains(t, r.Message, "over the harness's receive limit", dump)
			assert.Contains(t, r.Message, "--max-recv-size", dump)
			assert.NotContains(t, r.Message, "closed by target", dump)
			assert.True(t, containsEntry(r.Transcript, func(e transcript.Entry) bool {
				return strings.HasPrefix(e.Note, "closed by harness: the target sent a message over the harness's receive limit")
			}), "the transcript says the harness closed the stream: %s", dump)
			assert.False(t, containsEntry(r.Transcript, func(e transcript.Entry) bool {
				return strings.Contains(e.Note, "closed by target")
			}), dump)
		}
	})
}

// TestTargetRefusesAMessage: a target whose own receive limit is below a
// message the scenario sends (here the 8 KB NACK of any-error-code, over
// a server limit of 4 KiB) refuses it with the status grpc-go gives a
// message over the harness's own limit. The pair errors, charged to the
// target: the message says the target refused a message of so many bytes
// against its own limit, and never names the harness's limit or
// --max-recv-size; the transcript says the target closed the stream.
func TestTargetRefusesAMessage(t *testing.T) {
	const targetMax = 4 << 10
	srv, err := targets.ServeInProcess(context.Background(), "reference with a 4 KiB receive limit", refserver.New(), grpc.MaxRecvMsgSize(targetMax))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, engine.Selection{Run: []string{"server/nack/any-error-code[sotw-ads]", "server/nack/any-error-code[delta-ads]"}})
	require.Len(t, rs, 2)
	for _, r := range rs {
		dump := r.FullName() + ": " + r.Message + "\n" + transcript.Format(r.Transcript)
		require.Equal(t, results.Error, r.Outcome, dump)
		assert.Empty(t, r.RulesBroken, dump)
		assert.Contains(t, r.Message, "the target refused a message of ", dump)
		assert.Contains(t, r.Message, fmt.Sprintf("over its own receive limit of %d bytes", targetMax), dump)
		assert.NotContains(t, r.Message, "--max-recv-size", dump)
		assert.NotContains(t, r.Message, "harness's receive limit", dump)
		assert.True(t, containsEntry(r.Transcript, func(e transcript.Entry) bool {
			return strings.HasPrefix(e.Note, "closed by target: ResourceExhausted")
		}), "the transcript says the target closed the stream: %s", dump)
		assert.False(t, containsEntry(r.Transcript, func(e transcript.Entry) bool {
			return strings.Contains(e.Note, "closed by harness")
		}), dump)
	}
}

// lostOn ends the stream with Unavailable, as a lost connection shows,
// at the first request for which lose is true (or, with loseSend, instead
// of the response numbered loseSend): the reference server's context is
// cancelled so its handler returns, and the interceptor (see losing) ends
// the stream with the status.
type lostOn struct {
	grpc.ServerStream
	ctx      context.Context
	cancel   context.CancelFunc
	lose     func(nack bool, n int) bool
	loseSend int
	n, sent  int
	lost     bool
}

func (l *lostOn) SendMsg(m any) error {
	l.sent++
	if l.sent == l.loseSend {
		l.lost = true
		l.cancel()
		return context.Canceled
	}
	return l.ServerStream.SendMsg(m)
}

func (l *lostOn) Context() context.Context { return l.ctx }

func (l *lostOn) RecvMsg(m any) error {
	if err := l.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	l.n++
	nack := false
	switch r := m.(type) {
	case *discovery.DiscoveryRequest:
		nack = r.GetErrorDetail() != nil
	case *discovery.DeltaDiscoveryRequest:
		nack = r.GetErrorDetail() != nil
	}
	if l.lose(nack, l.n) {
		l.lost = true
		l.cancel()
		return context.Canceled
	}
	return nil
}

// losing serves the reference server with every stream lost where lose
// says.
func losing(t *testing.T, lose func(nack bool, n int) bool, loseSend int) *targets.Server {
	t.Helper()
	srv, err := targets.ServeInProcess(context.Background(), "losing reference", refserver.New(),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			ctx, cancel := context.WithCancel(ss.Context())
			defer cancel()
			l := &lostOn{ServerStream: ss, ctx: ctx, cancel: cancel, lose: lose, loseSend: loseSend}
			err := h(srv, l)
			if l.lost {
				return status.Error(codes.Unavailable, "test: connection lost")
			}
			return err
		}))
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	return srv
}

// TestLostConnection: a stream lost mid-step ends the pair with an error,
// not a failure of the step's rule; lost after a NACK, it breaks ACK-9,
// which forbids closing the stream over a NACK, and stays a failure.
func TestLostConnection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		run      string
		lose     func(nack bool, n int) bool
		loseSend int
		outcome  results.Outcome
		message  string
	}{
		{name: "mid-step", run: "server/version/changes-on-update[sotw-ads]",
			lose:     func(bool, int) bool { return false },
			loseSend: 2, // instead of the pushed change the step awaits
			outcome:  results.Error, message: "the connection to the target was lost mid-step"},
		{name: "over a NACK", run: "server/nack/new-version-after-nack[sotw-ads]",
			lose:    func(nack bool, _ int) bool { return nack },
			outcome: results.Fail, message: "ACK-9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := losing(t, tc.lose, tc.loseSend)
			rs := runOn(t, srv, engine.Config{Timeouts: testTimeouts}, engine.Selection{Run: []string{tc.run}})
			require.Len(t, rs, 1)
			r := rs[0]
			require.Equal(t, tc.outcome, r.Outcome, r.Message+"\n"+transcript.Format(r.Transcript))
			assert.Contains(t, r.Message, tc.message)
			assert.Contains(t, r.Message, "test: connection lost")
		})
	}
}

// silent never sends a response.
type silent struct{ grpc.ServerStream }

func (silent) SendMsg(any) error { return nil }

// TestCutByDeadline: a step still waiting when the scenario's deadline
// passes ends the pair with an error naming the deadline, not with a
// failure of the rule the step checks.
func TestCutByDeadline(t *testing.T) {
	srv := streamWrap(t, func(ss grpc.ServerStream) grpc.ServerStream { return silent{ss} })
	short := engine.Timeouts{Expect: time.Minute, Quiet: 100 * time.Millisecond, Scenario: 300 * time.Millisecond}
	rs := runOn(t, srv, engine.Config{Timeouts: short}, engine.Selection{Run: []string{"server/ack/no-resend-after-ack[sotw-ads]"}})
	require.Len(t, rs, 1)
	r := rs[0]
	require.Equal(t, results.Error, r.Outcome, r.Message)
	assert.Contains(t, r.Message, "the step was cut short by the scenario's deadline (--scenario-timeout 300ms)")
	assert.Empty(t, r.RulesBroken)
}
