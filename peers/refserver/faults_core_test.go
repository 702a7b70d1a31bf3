package refserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/wire"
)

// nackDetail is the error_detail of the NACKs below.
var nackDetail = &status.Status{Code: 3, Message: "rejected"}

// subscribedAB subscribes an ADS client of variant v to endpoints a and
// b, ACKs them, unsubscribes b and makes sure the server took that in
// (a listener barrier).
func subscribedAB(t *testing.T, e *env, v wire.Variant) *fakeclient.Client {
	t.Helper()
	e.set(wire.Endpoint, "a", 1)
	e.set(wire.Endpoint, "b", 1)
	c := e.client(v)
	require.NoError(t, c.Subscribe(wire.Endpoint, "a", "b"))
	require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
	require.NoError(t, c.Unsubscribe(wire.Endpoint, "b"))
	barrier(t, c, wire.Listener)
	return c
}

// replyAddingB subscribes a SotW ADS client to endpoints a and answers the
// response with a request (an ACK, or a NACK with detail) that also adds
// b; it describes the first response to come, a listener barrier's when
// nothing else.
func replyAddingB(t *testing.T, e *env, detail *status.Status) string {
	t.Helper()
	e.set(wire.Endpoint, "a", 1)
	e.set(wire.Endpoint, "b", 1)
	c := e.client(wire.SotWADS)
	require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
	require.NoError(t, c.ReplyChanging(wire.Endpoint, expect(t, c, wire.Endpoint), detail, []string{"b"}, nil))
	return barrier(t, c, wire.Listener)
}

// pendingLate subscribes a SotW ADS client to endpoints a and late, which
// does not exist, and ACKs the answer, which carries a alone.
func pendingLate(t *testing.T, e *env) *fakeclient.Client {
	t.Helper()
	e.set(wire.Endpoint, "a", 1)
	c := e.client(wire.SotWADS)
	require.NoError(t, c.Subscribe(wire.Endpoint, "a", "late"))
	require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
	return c
}

// lateCreated creates late, then a listener l1 whose push marks the end
// of what the creation pushed, and describes what came (see pushedAround).
func lateCreated(t *testing.T, e *env, c *fakeclient.Client) string {
	t.Helper()
	e.set(wire.Endpoint, "late", 1)
	e.set(wire.Listener, "l1", 1)
	return pushedAround(t, c, wire.Listener, wire.Endpoint)
}

// The faults of faults_core.go, each against the reference server and
// with the fault on, as TestEveryFaultChangesBehaviour does for the rest.
func TestCoreFaultsChangeBehaviour(t *testing.T) {
	cases := []struct {
		fault             Fault
		scenario          func(t *testing.T, e *env) string
		reference, faulty string
	}{
		{FaultRemovalAfterUnsubscribe, func(t *testing.T, e *env) string {
			c := subscribedAB(t, e, wire.DeltaADS)
			e.del(wire.Endpoint, "b")
			e.set(wire.Listener, "l1", 1)
			return pushedAround(t, c, wire.Listener, wire.Endpoint)
		}, "LDS:l1 -", "EDS: -b"},

		{FaultRecreationAfterUnsubscribe, func(t *testing.T, e *env) string {
			c := subscribedAB(t, e, wire.SotWADS)
			e.del(wire.Endpoint, "b")
			e.set(wire.Listener, "l1", 1)
			ack(t, c, expect(t, c, wire.Listener)) // the deletion is taken in
			e.set(wire.Endpoint, "b", 2)
			e.set(wire.Listener, "l1", 2)
			return pushedAround(t, c, wire.Listener, wire.Endpoint)
		}, "LDS:l1", "EDS:b"},

		{FaultAckDropsSubscriptionChange, func(t *testing.T, e *env) string {
			return replyAddingB(t, e, nil)
		}, "EDS:a,b", "LDS:"},

		{FaultReplyKeepsDropped, func(t *testing.T, e *env) string {
			for _, n := range []string{"a", "b", "c"} {
				e.set(wire.Endpoint, n, 1)
			}
			c := e.client(wire.SotWADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "a", "b"))
			require.NoError(t, c.ReplyChanging(wire.Endpoint, expect(t, c, wire.Endpoint), nil, []string{"c"}, []string{"b"}))
			return describe(expect(t, c, wire.Endpoint))
		}, "EDS:a,c", "EDS:a,b,c"},

		// The reference answers a NACK that adds b with b alone: a was
		// rejected and has not changed.
		{FaultNackDropsSubscriptionChange, func(t *testing.T, e *env) string {
			return replyAddingB(t, e, nackDetail)
		}, "EDS:b", "LDS:"},

		{FaultNackAddResendsRejected, func(t *testing.T, e *env) string {
			return replyAddingB(t, e, nackDetail)
		}, "EDS:b", "EDS:a,b"},

		{FaultNackByVersion, func(t *testing.T, e *env) string {
			e.set(wire.Endpoint, "a", 1)
			e.set(wire.Endpoint, "b", 1)
			c := e.client(wire.SotWADS)
			require.NoError(t, c.Subscribe(wire.Endpoint, "a"))
			require.NoError(t, c.Ack(wire.Endpoint, expect(t, c, wire.Endpoint)))
			e.set(wire.Endpoint, "a", 2)
			require.NoError(t, c.NackWith(wire.Endpoint, expect(t, c, wire.Endpoint), nackDetail))
			require.NoError(t, c.Subscribe(wire.Endpoint, "b")) // a hint update at version 1
			return barrier(t, c, wire.Listener)
		}, "EDS:b", "LDS:"},

		{FaultPartialAnswerSettles, func(t *testing.T, e *env) string {
			c := pendingLate(t, e)
			barrier(t, c, wire.Listener) // the ACK is taken in
			return lateCreated(t, e, c)
		}, "EDS:late", "LDS:l1"},

		{FaultReconnectForgetsPending, func(t *testing.T, e *env) string {
			c := pendingLate(t, e)
			c.Reconnect(wire.Endpoint)
			require.NoError(t, c.Subscribe(wire.Endpoint)) // {a, late} at the version ACKed
			expect(t, c, wire.Endpoint)
			barrier(t, c, wire.Listener)
			return lateCreated(t, e, c)
		}, "EDS:late", "LDS:l1"},
	}
	for _, tc := range cases {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.reference, tc.scenario(t, start(t)), "reference server")
			assert.Equal(t, tc.faulty, tc.scenario(t, start(t, tc.fault)), "with the fault")
		})
	}
}
