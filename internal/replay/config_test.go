package replay_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/replay"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// ackedAfter reports whether the entries hold an ACK of type ty sent after
// the n-th response of that type: the client took a pushed change.
func ackedAfter(entries []transcript.Entry, ty wire.Type, n int) bool {
	seen := 0
	for _, e := range entries {
		var m struct {
			TypeURL string          `json:"type_url"`
			Echo    string          `json:"response_nonce"`
			Error   json.RawMessage `json:"error_detail"`
		}
		if len(e.Message) == 0 || json.Unmarshal(e.Message, &m) != nil || m.TypeURL != ty.URL {
			continue
		}
		switch {
		case e.Direction == transcript.Received:
			seen++
		case seen >= n && m.Echo != "" && len(m.Error) == 0:
			return true
		}
	}
	return false
}

// recordWithChange records the reference client following the chain,
// then, once it ACKed every type, changes cluster-a's assignment
// (revision 2), and records until the client ACKed the change.
func recordWithChange(t *testing.T, v wire.Variant, node string) *transcript.File {
	t.Helper()
	return recordChainThen(t, v, node, func(fx fixture.Fixture, entries []transcript.Entry, await func(func([]transcript.Entry) bool)) {
		eds := 0
		for _, e := range entries {
			if e.Direction == transcript.Received && strings.Contains(string(e.Message), `"type_url":"`+wire.Endpoint.URL+`"`) {
				eds++
			}
		}
		// An assignment, not a cluster: a cluster's update brings its
		// assignment again when the client asks for it (WARM-4), which
		// would make the end of the recording a race.
		_, err := fx.Set(context.Background(), node, wire.Endpoint, "cluster-a", mustAny(t, wire.Build(wire.Endpoint, "cluster-a", 2)))
		require.NoError(t, err)
		await(func(es []transcript.Entry) bool { return ackedAfter(es, wire.Endpoint, eds+1) })
	})
}

// A recording holds only the streams; the configuration the server held,
// and the change made to it while the recording ran, are read from its
// responses. Against a server configured as the recording started, a
// replay without the fixture cannot make the change: it says so beside
// the difference. With the fixture, it sets the configuration itself (on
// a server holding nothing) and the change before the response that
// shows it: no difference.
func TestReplayRedoesConfigurationChanges(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		t.Run(v.String(), func(t *testing.T) {
			f := recordWithChange(t, v, "n1")
			plan, err := replay.NewPlan(f)
			require.NoError(t, err)
			cfg := plan.Config()
			require.Len(t, cfg.Changes, 1, "%+v", cfg.Changes)
			assert.Equal(t, wire.Endpoint.URL, cfg.Changes[0].TypeURL)
			assert.Equal(t, "cluster-a", cfg.Changes[0].Name)
			assert.Len(t, cfg.Initial, 6, "the listener, the route, two clusters and their endpoints")

			addr, fx := startRef(t)
			seedChain(t, fx, "n1", 1)
			res := replayAgainst(t, f, addr, replay.ServerOptions{})
			assert.False(t, res.Same(), "the change the recording shows was not made: %s", output(res))
			assert.Contains(t, output(res), "the recording shows the server's configuration changing while it ran: set EDS cluster-a")
			assert.Contains(t, output(res), "may be theirs, not the target's")

			addr, fx = startRef(t) // holds nothing: the fixture sets it all
			res = replayAgainst(t, f, addr, replay.ServerOptions{Fixture: fx, ConfigNode: "n1", Bodies: true})
			assert.True(t, res.Same(), "differences:\n%s\nreplay:\n%s", output(res), res.Transcript)
			assert.Contains(t, output(res), `set through the fixture, for node "n1": the 6 resources the recording shows the server held, and then, before the response that shows each, the 1 change made`)
		})
	}
}
