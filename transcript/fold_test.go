package transcript

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// nackLoop records what go-control-plane's SnapshotCache and a client
// that NACKs do to each other (cache/v3/simple.go resends the NACKed
// snapshot at once): one subscription, then cycles × (the same response
// with a new nonce, the same NACK of it). resource gives the response's
// contents per cycle. With cycles = 1500 that is 3,001 entries.
func nackLoop(cycles int, resource func(i int) *anypb.Any) []Entry {
	var entries []Entry
	at := time.Duration(0)
	record := func(dir Direction, m proto.Message) {
		e := Entry{At: at, Stream: "ads#1", Direction: dir, Kind: string(m.ProtoReflect().Descriptor().Name())}
		e.Message, e.Note = render(m)
		entries = append(entries, e)
		at += 500 * time.Microsecond
	}
	record(Sent, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"}})
	for i := range cycles {
		nonce := strconv.Itoa(i + 1)
		record(Received, &discovery.DiscoveryResponse{VersionInfo: "v1", TypeUrl: wire.Cluster.URL,
			Nonce: nonce, Resources: []*anypb.Any{resource(i)}})
		record(Sent, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"},
			ResponseNonce: nonce, ErrorDetail: &status.Status{Code: 3, Message: "cluster c: rejected on purpose"}})
	}
	return entries
}

func sameCluster(int) *anypb.Any { return wire.BuildAny(wire.Cluster, "c", 1) }

// A 3,001-entry NACK loop folds to the subscription, the first cycle, one
// marker and the last cycle; the marker counts what it stands for and
// when, and the kept entries are as recorded.
func TestFoldNACKLoop(t *testing.T) {
	entries := nackLoop(1500, sameCluster)
	require.Equal(t, 3001, len(entries))
	folded := Fold(entries)
	require.Equal(t, 6, len(folded), Format(folded))

	assert.Equal(t, entries[:3], folded[:3], "the subscription and the first cycle are kept as recorded")
	assert.Equal(t, entries[3001-2:], folded[4:], "the last cycle is kept as recorded")
	m := folded[3]
	assert.Equal(t, Folded, m.Direction)
	assert.Equal(t, FoldedKind, m.Kind)
	assert.Equal(t, "ads#1", m.Stream)
	assert.Equal(t, 2996, m.Folded, "every entry between the first and the last cycle")
	assert.Equal(t, 2, m.Cycle)
	assert.Equal(t, entries[3].At, m.At, "from the first entry folded")
	assert.Equal(t, entries[2998].At, m.Until, "to the last entry folded")
	assert.Empty(t, m.Message)
	assert.Contains(t, m.Note, "2996 entries folded: the 2 entries before (DiscoveryResponse received, DiscoveryRequest sent) repeated 1498 more times")
	assert.Contains(t, string(folded[4].Message), `"nonce":"1500"`, "the last cycle keeps its own nonce")

	// Every renderer sees it: the console and JUnit's lines, and JSON.
	text := Format(folded)
	assert.Equal(t, 6, strings.Count(text, "\n"))
	assert.Contains(t, text, " ads#1    ~~ folded 2996 entries folded")
	b, err := json.Marshal(folded)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"direction":"folded","kind":"folded"`)
	assert.Contains(t, string(b), `"folded":2996,"cycle":2`)
	var back []Entry
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, folded, back)
	all, err := json.Marshal(entries)
	require.NoError(t, err)
	assert.Less(t, len(b)*100, len(all), "folded, the loop is under 1%% of its size: %d of %d bytes", len(b), len(all))
	t.Logf("3,001 entries: %d bytes of JSON; folded: %d", len(all), len(b))

	assert.Equal(t, folded, Fold(folded), "folding again changes nothing")
	for _, e := range entries {
		require.NotEqual(t, Folded, e.Direction, "the entries given are not modified")
	}
}

// A resend whose resources change is a change, not a repeat: nothing folds.
func TestFoldKeepsChanges(t *testing.T) {
	entries := nackLoop(50, func(i int) *anypb.Any { return wire.BuildAny(wire.Cluster, "c", i) })
	assert.Equal(t, entries, Fold(entries))
}

// Short repeats stay as they are: fewer than MinFolded entries between the
// first and last cycle.
func TestFoldLeavesShortRepeats(t *testing.T) {
	entries := nackLoop(3, sameCluster) // cycles 1 to 3: one folded cycle of 2 entries
	assert.Equal(t, entries, Fold(entries))
	entries = nackLoop(4, sameCluster) // two cycles of 2 between first and last: folded
	assert.Len(t, Fold(entries), 1+2+1+2)
}

// A cycle of one: a flood of events that differ only in a counter, with
// the entries around it left alone.
func TestFoldEventFlood(t *testing.T) {
	tr := New()
	tr.Event("ads#1", "opened by client")
	for i := range 1000 {
		tr.Event("ads#1", fmt.Sprintf("violation: NONCE-5: request %d carries a nonce never sent", i))
	}
	tr.Event("ads#1", "closed: OK")
	folded := Fold(tr.Entries())
	require.Len(t, folded, 5, Format(folded))
	assert.Equal(t, "opened by client", folded[0].Note)
	assert.Contains(t, folded[1].Note, "request 0 ")
	assert.Equal(t, 998, folded[2].Folded)
	assert.Equal(t, 1, folded[2].Cycle)
	assert.Contains(t, folded[2].Note, "998 entries folded: the entry before (event) repeated 998 more times")
	assert.Contains(t, folded[3].Note, "request 999 ")
	assert.Equal(t, "closed: OK", folded[4].Note)
}

// Repeats on different streams are not one cycle: a marker stands on one
// stream.
func TestFoldOneStreamPerCycle(t *testing.T) {
	var entries []Entry
	for i := range 100 {
		entries = append(entries,
			Entry{At: time.Duration(i), Stream: "CDS#1", Direction: Event, Kind: "event", Note: "x"},
			Entry{At: time.Duration(i), Stream: "EDS#1", Direction: Event, Kind: "event", Note: "y"})
	}
	assert.Equal(t, entries, Fold(entries))
}

// A loop long enough for the transcript's caps to elide its middle folds
// on both sides of the elision note, which stays.
func TestFoldAroundElision(t *testing.T) {
	tr := New()
	for _, e := range nackLoop(1500, func(int) *anypb.Any {
		return wire.BuildAny(wire.Cluster, strings.Repeat("c", 2000), 1)
	}) {
		tr.append(e)
	}
	entries := tr.Entries()
	var elisions int
	for _, e := range entries {
		if e.Stream == "harness" {
			elisions++
		}
	}
	require.Equal(t, 1, elisions, "the loop is longer than the caps")
	folded := Fold(entries)
	var markers, kept int
	for _, e := range folded {
		switch {
		case e.Direction == Folded:
			markers++
		case e.Stream == "harness":
			kept++
		}
	}
	assert.Equal(t, 2, markers, Format(folded))
	assert.Equal(t, 1, kept)
	assert.Less(t, len(folded), 16)
}
