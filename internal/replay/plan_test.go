package replay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

func ev(stream, note string) transcript.Entry {
	return transcript.Entry{Stream: stream, Direction: transcript.Event, Kind: "event", Note: note}
}

func msg(stream string, dir transcript.Direction, kind, js string) transcript.Entry {
	return transcript.Entry{Stream: stream, Direction: dir, Kind: kind, Message: json.RawMessage(js)}
}

var ldsReq = `{"type_url":"` + wire.Listener.URL + `","resource_names":["svc"]}`

// TestPlanReadsEveryWriter: the recorder's, the fake client's and the
// fake server's words for the same events give the same steps.
func TestPlanReadsEveryWriter(t *testing.T) {
	ads := wire.MethodFor(wire.SotWADS, wire.Type{})
	for _, tc := range []struct {
		name  string
		side  string
		es    []transcript.Entry
		kinds []Kind
		code  codes.Code
	}{
		{"recorder", transcript.SideClient, []transcript.Entry{
			ev("ads#1", "opened "+ads+" (connection 2 from 127.0.0.1:5)"),
			msg("ads#1", transcript.Sent, "DiscoveryRequest", ldsReq),
			ev("ads#1", "closed by server: PermissionDenied: no; trailer: x=y"),
		}, []Kind{Request, ServerClosed}, codes.PermissionDenied},
		{"fake client", transcript.SideClient, []transcript.Entry{
			ev("ads#1", "opened "+ads),
			msg("ads#1", transcript.Sent, "DiscoveryRequest", ldsReq),
			ev("ads#1", "closed by target: PermissionDenied: no"),
		}, []Kind{Request, ServerClosed}, codes.PermissionDenied},
		{"fake server", transcript.SideServer, []transcript.Entry{
			ev("ads-sotw#1", "opened by client"),
			msg("ads-sotw#1", transcript.Received, "DiscoveryRequest", ldsReq),
			ev("ads-sotw#1", "ended by the harness: PermissionDenied: no"),
		}, []Kind{Request, ServerClosed}, codes.PermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPlan(&transcript.File{Side: tc.side, Entries: tc.es})
			require.NoError(t, err)
			var kinds []Kind
			for _, st := range p.Steps {
				kinds = append(kinds, st.Kind)
			}
			assert.Equal(t, tc.kinds, kinds)
			assert.Equal(t, tc.code, p.Steps[len(p.Steps)-1].Code)
			assert.Equal(t, "no", p.Steps[len(p.Steps)-1].Status)
			v, err := p.Variant()
			require.NoError(t, err)
			assert.Equal(t, wire.SotWADS, v)
			assert.Equal(t, wire.Listener.URL, p.Steps[0].TypeURL)
		})
	}
	p, err := NewPlan(&transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{ev("ads#1", "opened "+ads+" (connection 2 from 127.0.0.1:5)")}})
	require.NoError(t, err)
	assert.Equal(t, 2, p.Streams[0].Conn)
}

// TestPlanStopsAtGaps: what follows an elision or a fold is not what
// came next, so the plan stops before it, saying so.
func TestPlanStopsAtGaps(t *testing.T) {
	ads := wire.MethodFor(wire.SotWADS, wire.Type{})
	for _, gap := range []transcript.Entry{
		{Stream: "harness", Direction: transcript.Event, Kind: "event", Note: "3 more entries, 900 bytes, elided (a transcript keeps its first …)"},
		{Stream: "ads#1", Direction: transcript.Folded, Kind: "folded", Folded: 12},
	} {
		p, err := NewPlan(&transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{
			ev("ads#1", "opened "+ads), msg("ads#1", transcript.Sent, "DiscoveryRequest", ldsReq), gap,
			msg("ads#1", transcript.Sent, "DiscoveryRequest", ldsReq),
		}})
		require.NoError(t, err)
		assert.Len(t, p.Steps, 1)
		require.Len(t, p.Notes, 1)
		assert.Contains(t, p.Notes[0], "entry 3")
	}
}

// TestPlanRefuses: what cannot be replayed is an error naming the entry.
func TestPlanRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		es   []transcript.Entry
		want string
	}{
		{"unknown method", []transcript.Entry{ev("x#1", "opened /grpc.health.v1.Health/Watch")}, "entry 1 (stream x#1): stream opened on /grpc.health.v1.Health/Watch, which is no xDS discovery method"},
		{"undecodable", []transcript.Entry{ev("ads#1", "opened "+wire.MethodFor(wire.SotWADS, wire.Type{})), msg("ads#1", transcript.Sent, "DiscoveryRequest", `{"no_such_field":1,"resource_names":7}`)}, "entry 2"},
		{"wrong kind", []transcript.Entry{ev("ads#1", "opened "+wire.MethodFor(wire.SotWADS, wire.Type{})), msg("ads#1", transcript.Sent, "DeltaDiscoveryRequest", `{}`)}, "a DeltaDiscoveryRequest where the stream carries DiscoveryRequest"},
		{"unknown name", []transcript.Entry{msg("XYZ#1", transcript.Sent, "DiscoveryRequest", `{}`)}, "cannot tell the stream's method"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPlan(&transcript.File{Side: transcript.SideClient, Entries: tc.es})
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestPlanSettlesRecordingOrder: a client's ACK on a stream it then
// replaced, recorded after the new stream began and after the old one's
// end, goes back before both; the file's entry numbers stay.
func TestPlanSettlesRecordingOrder(t *testing.T) {
	lds := wire.MethodFor(wire.DeltaPerType, wire.Listener)
	sub := `{"type_url":"` + wire.Listener.URL + `","resource_names_subscribe":["svc"]}`
	resp := `{"type_url":"` + wire.Listener.URL + `","nonce":"1"}`
	ack := `{"type_url":"` + wire.Listener.URL + `","response_nonce":"1"}`
	cds := wire.MethodFor(wire.DeltaPerType, wire.Cluster)
	p, err := NewPlan(&transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{
		ev("LDS#1", "opened "+lds),                                                                    // 1
		msg("LDS#1", transcript.Sent, "DeltaDiscoveryRequest", sub),                                   // 2
		msg("LDS#1", transcript.Received, "DeltaDiscoveryResponse", resp),                             // 3
		ev("LDS#1", "closed by client: Canceled: context canceled"),                                   // 4
		ev("LDS#2", "opened "+lds),                                                                    // 5
		msg("LDS#2", transcript.Sent, "DeltaDiscoveryRequest", sub),                                   // 6
		ev("CDS#1", "opened "+cds),                                                                    // 7
		msg("CDS#1", transcript.Sent, "DeltaDiscoveryRequest", `{"type_url":"`+wire.Cluster.URL+`"}`), // 8
		msg("LDS#1", transcript.Sent, "DeltaDiscoveryRequest", ack),                                   // 9: the late ACK
		msg("LDS#2", transcript.Received, "DeltaDiscoveryResponse", resp),                             // 10
	}})
	require.NoError(t, err)
	var got []int
	for _, st := range p.Steps {
		got = append(got, st.Index)
	}
	assert.Equal(t, []int{2, 3, 9, 4, 6, 8, 10}, got)
}
