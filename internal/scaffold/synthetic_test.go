package scaffold

import (
	"slices"
	"strings"
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// rec builds a transcript from the client's side, as record writes one.
type rec struct{ t *transcript.Transcript }

func newRec() *rec { return &rec{t: transcript.New()} }

func (r *rec) req(stream string, t wire.Type, nonce, version string, names ...string) {
	r.t.Record(stream, transcript.Sent, &discovery.DiscoveryRequest{TypeUrl: t.URL, ResponseNonce: nonce, VersionInfo: version, ResourceNames: names})
}

func (r *rec) nack(stream string, t wire.Type, nonce string, names ...string) {
	r.t.Record(stream, transcript.Sent, &discovery.DiscoveryRequest{TypeUrl: t.URL, ResponseNonce: nonce, ResourceNames: names,
		ErrorDetail: &status.Status{Code: 3, Message: "no"}})
}

func (r *rec) resp(stream string, t wire.Type, nonce, version string, res ...proto.Message) {
	m := &discovery.DiscoveryResponse{TypeUrl: t.URL, Nonce: nonce, VersionInfo: version}
	for _, x := range res {
		a, _ := anypb.New(x)
		m.Resources = append(m.Resources, a)
	}
	r.t.Record(stream, transcript.Received, m)
}

func (r *rec) file(variant string) *transcript.File {
	return &transcript.File{Format: transcript.FileFormat, Side: transcript.SideClient, Variant: variant, Source: "a test", Entries: r.t.Entries()}
}

func stepsOf(t *testing.T, res *Result) string {
	t.Helper()
	b, err := res.File()
	require.NoError(t, err)
	_, steps, ok := strings.Cut(string(b), "steps:\n")
	require.True(t, ok)
	return steps
}

// A recording (names the server's own, no pair prefix) of a SotW ADS
// client: a legacy wildcard whose full state loses a cluster (a
// deletion), endpoints NACKed then replaced by a push, and a last request
// with a stale nonce the server ignored.
func TestScaffoldSotWRecording(t *testing.T) {
	r := newRec()
	c1 := wire.Build(wire.Cluster, "c1", 1)
	c2 := wire.Build(wire.Cluster, "c2", 1)
	e1 := wire.Build(wire.Endpoint, "e1", 1)
	e1b := wire.Build(wire.Endpoint, "e1", 2)
	r.req("ads#1", wire.Cluster, "", "")
	r.resp("ads#1", wire.Cluster, "n1", "v1", c1, c2)
	r.req("ads#1", wire.Cluster, "n1", "v1")
	r.resp("ads#1", wire.Cluster, "n2", "v2", c1)
	r.req("ads#1", wire.Cluster, "n2", "v2")
	r.req("ads#1", wire.Endpoint, "", "", "e1")
	r.resp("ads#1", wire.Endpoint, "n3", "v1", e1)
	r.nack("ads#1", wire.Endpoint, "n3", "e1")
	r.resp("ads#1", wire.Endpoint, "n4", "v2", e1b)
	r.req("ads#1", wire.Endpoint, "n4", "v2", "e1")
	r.req("ads#1", wire.Endpoint, "n3", "v2", "e1", "e2")
	res, err := Scaffold(r.file("sotw-ads"), Options{})
	require.NoError(t, err)
	assert.Equal(t, "server/scaffold/recorded", res.Doc.ID)
	assert.Equal(t, `  - set: {type: CDS, name: c1, revision: 1}
  - set: {type: CDS, name: c2, revision: 1}
  - wildcard: {type: CDS}
  - expect: {type: CDS, resources: {c1: 1, c2: 1}, exactly: true, ack: true}
  - delete: {type: CDS, name: c2}
  - expect: {type: CDS, resources: {c1: 1}, absent: [c2], exactly: true, ack: true}
  - set: {type: EDS, name: e1, revision: 1}
  - subscribe: {type: EDS, names: [e1]}
  - expect: {type: EDS, as: r3, resources: {e1: 1}}
  - nack: {of: r3, code: 3, message: "no"}
  - settle: {type: EDS}
  - set: {type: EDS, name: e1, revision: 2}
  - expect: {type: EDS, resources: {e1: 2}, ack: true}
  - subscribe: {type: EDS, names: [e2], nonce: $r3.nonce}
  - quiet: {type: EDS, names: [e1, e2], why: 'the request''s nonce is stale, and the recorded server ignored it', rule: NONCE-7}
`, stepsOf(t, res))
	text, _ := res.File()
	assert.NotContains(t, string(text), `"n3"`, "no nonce literal of the recorded server")
	assert.NotContains(t, string(text), "v2", "no version literal of the recorded server")
}

// A client that dropped every name of a type no response had come for
// (grpc-go does as it shuts down): the silence recorded is broken only by
// a response carrying a name it asked for, not by an empty answer, which
// a server may give to the first request and which is still unread when
// the quiet step starts.
func TestScaffoldQuietAfterDroppingEveryName(t *testing.T) {
	r := newRec()
	r.req("ads#1", wire.Cluster, "", "", "c1")
	r.resp("ads#1", wire.Cluster, "n1", "v1", wire.Build(wire.Cluster, "c1", 1))
	r.req("ads#1", wire.Cluster, "n1", "v1", "c1")
	r.req("ads#1", wire.Endpoint, "", "", "e1")
	r.req("ads#1", wire.Endpoint, "", "")
	res, err := Scaffold(r.file("sotw-ads"), Options{})
	require.NoError(t, err)
	assert.Equal(t, `  - set: {type: CDS, name: c1, revision: 1}
  - subscribe: {type: CDS, names: [c1]}
  - expect: {type: CDS, resources: {c1: 1}, exactly: true, ack: true}
  - subscribe: {type: EDS, names: [e1]}
  - unsubscribe: {type: EDS, names: [e1]}
  - quiet: {type: EDS, names: [e1], why: the recorded server sent no EDS response to the last EDS request}
`, stepsOf(t, res))
}

// A delta per-type recording: removals become deletions (of what existed)
// or expectations only (of what never did), a reconnect a reconnect step,
// and a subscription whose nonce no response carries the never-sent
// literal.
func TestScaffoldDeltaRecording(t *testing.T) {
	tr := transcript.New()
	sub := func(stream, nonce string, names ...string) {
		tr.Record(stream, transcript.Sent, &discovery.DeltaDiscoveryRequest{TypeUrl: wire.Endpoint.URL, ResponseNonce: nonce, ResourceNamesSubscribe: names})
	}
	resp := func(stream, nonce string, removed []string, res ...proto.Message) {
		m := &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Endpoint.URL, Nonce: nonce, SystemVersionInfo: "s", RemovedResources: removed}
		for _, x := range res {
			a, _ := anypb.New(x)
			m.Resources = append(m.Resources, &discovery.Resource{Name: wire.NameOf(x), Version: "1", Resource: a})
		}
		tr.Record(stream, transcript.Received, m)
	}
	sub("EDS#1", "", "a", "gone", "never")
	resp("EDS#1", "d1", []string{"never"}, wire.Build(wire.Endpoint, "a", 1), wire.Build(wire.Endpoint, "gone", 1))
	sub("EDS#1", "d1")
	resp("EDS#1", "d2", []string{"gone"})
	sub("EDS#1", "d2")
	sub("EDS#2", "", "a")
	resp("EDS#2", "d3", nil, wire.Build(wire.Endpoint, "a", 1))
	sub("EDS#2", "zzz", "b")
	f := &transcript.File{Format: transcript.FileFormat, Side: transcript.SideClient, Entries: tr.Entries()}
	res, err := Scaffold(f, Options{ID: "server/bugs/delta-removal"})
	require.NoError(t, err)
	assert.Equal(t, []string{"delta-pertype"}, res.Doc.Variants, "the variant is read off the messages and streams")
	assert.Equal(t, `  - set: {type: EDS, name: a, revision: 1}
  - set: {type: EDS, name: gone, revision: 1}
  - subscribe: {type: EDS, names: [a, gone, never]}
  - expect: {type: EDS, resources: {a: 1, gone: 1}, removed: [never], ack: true}
  - delete: {type: EDS, name: gone}
  - expect: {type: EDS, removed: [gone], ack: true}
  - reconnect: {type: EDS}
  - subscribe: {type: EDS, names: [a]}
  - expect: {type: EDS, resources: {a: 1}}
  - subscribe: {type: EDS, names: [b], nonce: xdsconform-never-sent}
  - quiet: {type: EDS, names: [a, b], why: the recorded server sent no EDS response to the last EDS request}
`, stepsOf(t, res))
}

// What a transcript cannot make is a one-line error, never a file that
// does not load.
func TestScaffoldRefuses(t *testing.T) {
	_, err := Scaffold(&transcript.File{Side: transcript.SideClient, Entries: []transcript.Entry{{Direction: transcript.Event, Kind: "event", Note: "opened"}}}, Options{})
	assert.ErrorContains(t, err, "holds no discovery request or response")

	r := newRec()
	r.t.Record("ads#1", transcript.Received, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL})
	_, err = Scaffold(r.file("sotw-ads"), Options{})
	assert.ErrorContains(t, err, "a DiscoveryRequest received by the client side")

	r = newRec()
	r.req("ads#1", wire.Cluster, "", "", "a")
	_, err = Scaffold(r.file("sotw-ads"), Options{})
	assert.ErrorContains(t, err, "nothing the server did that a step could expect")

	r = newRec()
	for i := range 600 {
		r.req("ads#1", wire.Endpoint, "", "", "e"+strings.Repeat("x", i))
		r.resp("ads#1", wire.Endpoint, "n", "v", wire.Build(wire.Endpoint, "e"+strings.Repeat("x", i), 1))
	}
	_, err = Scaffold(r.file("sotw-ads"), Options{})
	assert.ErrorContains(t, err, "more than the 1000 a scenario holds")

	// Past maxMessages the transcript is refused as its messages are
	// read, before any step is built.
	r = newRec()
	r.req("ads#1", wire.Endpoint, "", "", "e")
	r.resp("ads#1", wire.Endpoint, "n", "v", wire.Build(wire.Endpoint, "e", 1))
	f := r.file("sotw-ads")
	pair := slices.Clone(f.Entries[len(f.Entries)-2:])
	for range maxMessages / 2 {
		f.Entries = append(f.Entries, pair...)
	}
	_, err = Scaffold(f, Options{})
	assert.ErrorContains(t, err, "the transcript holds more than 4000 messages")

	_, err = Scaffold(newRecWith().file("rest"), Options{})
	assert.ErrorContains(t, err, "a scaffold replays gRPC streams")

	_, err = Scaffold(newRecWith().file("sotw-ads"), Options{Against: "proxy"})
	assert.ErrorContains(t, err, `against "proxy"`)

}

func newRecWith() *rec {
	r := newRec()
	r.req("ads#1", wire.Cluster, "", "", "a")
	r.resp("ads#1", wire.Cluster, "n", "v", wire.Build(wire.Cluster, "a", 1))
	return r
}
