package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// replayToClient serves f's server side to a reference client (with
// faults) started against a fake server in the recording's variant.
func replayToClient(t *testing.T, f *transcript.File, faults ...refclient.Fault) *replay.Result {
	t.Helper()
	plan, err := replay.NewPlan(f)
	require.NoError(t, err)
	v, err := plan.Variant()
	require.NoError(t, err)
	tr := transcript.New()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: v, Timeout: 2 * time.Second, Quiet: 300 * time.Millisecond, Transcript: tr})
	require.NoError(t, err)
	defer srv.Close()
	c, err := refclient.Start(context.Background(), refclient.Config{ServerAddr: srv.Addr(), NodeID: "n1", Variant: v, Listener: "svc", Faults: faults})
	require.NoError(t, err)
	defer c.Close()
	res, err := replay.Client(context.Background(), plan, replay.ClientOptions{
		Against: "refclient", Server: srv, Timeout: 2 * time.Second, Quiet: 300 * time.Millisecond, Start: wait, Transcript: tr,
	})
	require.NoError(t, err)
	return res
}

// TestReplayToSameClient: a recording's server side served to a client
// that behaves as the recorded one shows no difference, in every
// variant.
func TestReplayToSameClient(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			f := recordChain(t, v, "n1")
			res := replayToClient(t, f)
			assert.True(t, res.Same(), "differences:\n%s\nreplay:\n%s", output(res), res.Transcript)
			assert.Positive(t, res.Steps)
		})
	}
}

// TestReplayToClientFindsFaults: clients broken in ways that change the
// requests the recording shows are reported, naming what changed.
func TestReplayToClientFindsFaults(t *testing.T) {
	f := recordChain(t, wire.SotWADS, "n1")
	for _, tc := range []struct {
		fault refclient.Fault
		want  string
	}{
		{refclient.FaultAckWrongVersion, "version_info"},
		{refclient.FaultAckEmptyNonce, "the client sent a request for LDS"},
		{refclient.FaultWrongListenerName, "names differ"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			res := replayToClient(t, f, tc.fault)
			require.False(t, res.Same(), "replay:\n%s", res.Transcript)
			assert.Contains(t, output(res), tc.want)
			t.Log(output(res))
		})
	}
}

// TestReplayToClientKeepingAStreamOpen: where the recording's client
// ended a stream and opened another, a client that keeps its stream open
// differs.
func TestReplayToClientKeepingAStreamOpen(t *testing.T) {
	ads := wire.MethodFor(wire.SotWADS, wire.Type{})
	req := `{"node":{"id":"n1"},"type_url":"` + wire.Listener.URL + `","resource_names":["svc"]}`
	f := &transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{
		{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "opened " + ads},
		{Stream: "ads#1", Direction: transcript.Sent, Kind: "DiscoveryRequest", Message: []byte(req)},
		{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "closed by client: Canceled: context canceled"},
		{Stream: "ads#2", Direction: transcript.Event, Kind: "event", Note: "opened " + ads},
		{Stream: "ads#2", Direction: transcript.Sent, Kind: "DiscoveryRequest", Message: []byte(req)},
	}}
	res := replayToClient(t, f)
	require.False(t, res.Same())
	assert.Contains(t, output(res), "DIFF entry 3 (ads#1): the recording's client ended the stream; the client kept it open for 2s")
}
