package scenarios

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// TestQueueBoundIsAnError: in the server role, a step whose wait found
// the fake client's byte-bounded response queue full
// (fakeclient.ErrOverflow) ends the pair with an error saying the
// harness's queue bound was reached, not with a failure of the rule the
// step checks: what it waited for may have been dropped by the harness.
func TestQueueBoundIsAnError(t *testing.T) {
	r := runBody(t, "VER-1", func(t *engine.T) {
		s := &S{T: t}
		err := fmt.Errorf("waiting for a CDS response: 2 responses were not kept: %w", fakeclient.ErrOverflow)
		s.Checking("VER-1").failAs("", err, "expected the changed CDS response: %v", err)
	})
	require.Equal(t, results.Error, r.Outcome, r.Message)
	assert.Contains(t, r.Message, "the harness's queue bound was reached")
	assert.Contains(t, r.Message, "the harness's response queue is full")
	assert.Empty(t, r.RulesBroken)
}

// runBody runs body as the one pair of a scenario citing rule, against
// no target, and returns its result.
func runBody(t *testing.T, rule string, body func(*engine.T)) results.Result {
	t.Helper()
	s := &engine.Scenario{ID: "client/test/body", Title: "test", Requirements: []string{rule},
		Level: results.Must, Variants: []wire.Variant{wire.SotWADS}, Run: body}
	rs, interrupted := engine.Run(t.Context(), []engine.Pair{{Scenario: s, Variant: wire.SotWADS}},
		engine.Config{Env: noEnv{}, Timeouts: testTimeouts})
	require.False(t, interrupted)
	require.Len(t, rs, 1)
	return rs[0]
}

// noEnv runs every pair.
type noEnv struct{}

func (noEnv) Lacks(*engine.Scenario, wire.Variant) string { return "" }

// TestClientQueueBoundIsAnError: in the client role, a step whose wait
// found the fake server's byte-bounded request queue full
// (fakeserver.ErrOverflow) is an error, not a failure of its rule.
func TestClientQueueBoundIsAnError(t *testing.T) {
	r := runBody(t, "ACK-1", func(t *engine.T) {
		c := &C{T: t}
		err := fmt.Errorf("3 requests on ads#1 were not kept: %w", fakeserver.ErrOverflow)
		c.Checking("ACK-1").fail("expected an ACK of the CDS response: %v", err)
	})
	require.Equal(t, results.Error, r.Outcome, r.Message)
	assert.Contains(t, r.Message, "the harness's queue bound was reached")
	assert.Contains(t, r.Message, "expected an ACK of the CDS response")
	assert.Empty(t, r.RulesBroken)
}

// TestStopKeepsFailure: a launched client that had to be killed to stop
// leaves a pair that broke a rule a failure of that rule, the stop problem
// added as a note under no rule; a pair that broke none is an error, and
// one that already errored keeps its cause first.
func TestStopKeepsFailure(t *testing.T) {
	stopErr := errors.New("the client command ignored SIGTERM and had to be killed")
	t.Run("failed", func(t *testing.T) {
		r := runBody(t, "ACK-1", func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { judgeStop(t, stopErr) })
			t.Failf("ACK-2", "the ACK carries the wrong version")
		})
		require.Equal(t, results.Fail, r.Outcome, r.Message)
		assert.Equal(t, []string{"ACK-2"}, r.RulesBroken, "the rule broken is kept, and the note names none")
		assert.Contains(t, r.Message, "the ACK carries the wrong version")
		assert.Contains(t, r.Message, "Then, stopping the client: "+stopErr.Error())
	})
	t.Run("passed", func(t *testing.T) {
		r := runBody(t, "ACK-1", func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { judgeStop(t, stopErr) })
		})
		require.Equal(t, results.Error, r.Outcome, r.Message)
		assert.Equal(t, stopErr.Error(), r.Message)
	})
	t.Run("errored", func(t *testing.T) {
		r := runBody(t, "ACK-1", func(t *engine.T) {
			t.AfterRun(func(t *engine.T) { judgeStop(t, stopErr) })
			t.Abortf("the client never connected")
		})
		require.Equal(t, results.Error, r.Outcome, r.Message)
		assert.Equal(t, "the client never connected\nThen, stopping it: "+stopErr.Error(), r.Message)
	})
}

// silentAfter sends the first n responses of the server, all streams
// together, and then nothing.
type silentAfter struct {
	grpc.ServerStream
	sent *atomic.Int32
	n    int32
}

func (s silentAfter) SendMsg(m any) error {
	if _, ok := m.(*discovery.DiscoveryResponse); ok && s.sent.Add(1) > s.n {
		return nil
	}
	return s.ServerStream.SendMsg(m)
}

// TestRobustnessCutByDeadline: a server robustness scenario whose check
// that the server goes on is cut short by the scenario's deadline ends in
// an error naming the deadline, not in a failure of ROB-2: the server,
// still alive when the pair ends, was not shown to have stopped serving.
func TestRobustnessCutByDeadline(t *testing.T) {
	var sent atomic.Int32
	// Silent after the first response of the scenario's own stream: the
	// two of AddedNamesServed's control come before it.
	srv := streamWrap(t, func(ss grpc.ServerStream) grpc.ServerStream { return silentAfter{ss, &sent, 3} })
	short := engine.Timeouts{Expect: time.Minute, Quiet: 100 * time.Millisecond, Scenario: 3 * time.Second}
	rs := runOn(t, srv, engine.Config{Timeouts: short}, engine.Selection{Run: []string{"server/robustness/unknown-version[sotw-ads]"}})
	require.Len(t, rs, 1)
	r := rs[0]
	require.Equal(t, results.Error, r.Outcome, r.Message+"\n"+transcript.Format(r.Transcript))
	assert.Contains(t, r.Message, "the step was cut short by the scenario's deadline (--scenario-timeout 3s)")
	assert.Contains(t, r.Message, "after the unusual request")
	assert.Empty(t, r.RulesBroken)
}

// TestHugeNackSize: the huge-nack scenario's NACK message is as large as
// its title and docs/state-space.md say.
func TestHugeNackSize(t *testing.T) {
	assert.Len(t, hugeDetail().GetMessage(), 192<<10)
	for _, u := range unusualRequests {
		if u.id == "huge-nack" {
			assert.Contains(t, u.title, "192 KiB")
			return
		}
	}
	t.Fatal("no huge-nack scenario")
}
