package transcript

import (
	"strings"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"
)

func TestBudgetTakeGive(t *testing.T) {
	b := NewBudget(100)
	require.True(t, b.Take(60))
	require.False(t, b.Take(41), "over the limit")
	require.Equal(t, int64(60), b.Used(), "a refused Take reserves nothing")
	require.True(t, b.Take(40))
	b.Give(50)
	require.Equal(t, int64(50), b.Used())
	require.Equal(t, int64(DefaultBudget), NewBudget(0).Limit())
	var none *Budget
	require.True(t, none.Take(1<<40), "a nil budget allows everything")
}

// TestHeadAndTailByBytes floods a transcript with events and checks that
// it keeps its first HeadBytes and last TailBytes, with one note between
// them counting exactly what was elided.
func TestHeadAndTailByBytes(t *testing.T) {
	tr := New()
	note := strings.Repeat("x", 1000)
	const n = 5000
	var total int64
	for i := range n {
		e := Entry{Stream: "s", Direction: Event, Kind: "event", Note: note + strings.Repeat("y", i%7)}
		total += EntrySize(e)
		tr.Event("s", e.Note)
	}
	kept, elided, elidedBytes := tr.Kept()
	require.LessOrEqual(t, kept, int64(HeadBytes+TailBytes))
	require.Greater(t, kept, int64(HeadBytes+TailBytes-2*1200), "the caps are used up to within one entry each")
	require.Equal(t, total, kept+elidedBytes, "every byte is either kept or counted as elided")

	es := tr.Entries()
	require.Equal(t, int64(n), int64(len(es)-1)+elided, "one note stands for the elided entries")
	require.Equal(t, note, es[0].Note, "the head starts with the first entry")
	require.Equal(t, note+strings.Repeat("y", (n-1)%7), es[len(es)-1].Note, "the tail ends with the last entry")
	var notes []string
	for _, e := range es {
		if e.Stream == "harness" {
			notes = append(notes, e.Note)
		}
	}
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "more entries")
	assert.Contains(t, notes[0], itoa(elided)+" more entries, "+itoa(elidedBytes)+" bytes, elided")
}

func itoa(n int64) string { return fmtInt(n) }

func fmtInt(n int64) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// TestSharedBudget checks that transcripts drawing on one budget keep no
// more than it between them, and that each still keeps its latest entries.
func TestSharedBudget(t *testing.T) {
	b := NewBudget(300 << 10)
	trs := []*Transcript{NewIn(b, nil), NewIn(b, nil), NewIn(b, nil), NewIn(b, nil)}
	note := strings.Repeat("z", 2000)
	for i := range 1000 {
		for _, tr := range trs {
			tr.Event("s", note+fmtInt(int64(i)))
		}
	}
	var kept int64
	for _, tr := range trs {
		k, elided, _ := tr.Kept()
		kept += k
		require.Positive(t, elided)
		es := tr.Entries()
		last := es[len(es)-1].Note
		require.True(t, strings.HasSuffix(last, "z999"), "every transcript keeps its last entry, not %.80q", last)
	}
	require.LessOrEqual(t, kept, b.Limit())
	require.Equal(t, b.Used(), kept, "the budget counts exactly what is kept")
}

// TestQueueBudgetApart: what transcripts keep for the report is not
// taken from the budget the fake peers borrow for their queues, so a run
// whose transcripts spent theirs still lends queues all of the other.
func TestQueueBudgetApart(t *testing.T) {
	report, queues := NewBudget(64<<10), NewBudget(256<<10)
	tr := NewIn(report, queues)
	for range 200 {
		tr.Event("s", strings.Repeat("q", 1000))
	}
	require.Greater(t, report.Used(), report.Limit()-2000, "the transcript spent the report's budget")
	require.Same(t, report, tr.ReportBudget())
	require.Same(t, queues, tr.QueueBudget())
	require.Zero(t, queues.Used(), "keeping entries takes nothing from the queue budget")
	require.True(t, tr.QueueBudget().Take(queues.Limit()), "the queues can borrow all of theirs")
	tr.QueueBudget().Give(queues.Limit())
	var none *Transcript
	require.Nil(t, none.QueueBudget())
	require.Nil(t, New().QueueBudget(), "a transcript of its own lends no budget: the queues' caps apply")
}

// TestLargeMessageRenderedInPart records a response carrying three 2 MiB
// resources: the entry stays under EntryBytes, keeps what identifies the
// response and says what it left out.
func TestLargeMessageRenderedInPart(t *testing.T) {
	big := &cluster.Cluster{Name: "big", AltStatName: strings.Repeat("a", 2<<20)}
	a, err := anypb.New(big)
	require.NoError(t, err)
	resp := &discovery.DiscoveryResponse{TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster", VersionInfo: "7",
		Nonce: "n-1", Resources: []*anypb.Any{a, a, a}}
	tr := New()
	tr.Record("ads#1", Received, resp)
	tr.Record("ads#1", Received, resp)
	es := tr.Entries()
	require.Len(t, es, 2)
	e := es[0]
	require.LessOrEqual(t, len(e.Message), EntryBytes)
	assert.Contains(t, string(e.Message), `"nonce":"n-1"`)
	assert.Contains(t, string(e.Message), `"version_info":"7"`)
	assert.NotContains(t, string(e.Message), "aaaa")
	assert.Contains(t, e.Note, "resources: 3 of 3 items")
	assert.Contains(t, e.Note, "bytes on the wire, rendered in part")
	assert.Equal(t, es[0].Message, es[1].Message, "rendering is deterministic")
	assert.Equal(t, es[0].Note, es[1].Note)

	// A small message is rendered whole.
	small := &discovery.DiscoveryResponse{TypeUrl: resp.TypeUrl, Nonce: "n-2"}
	tr.Record("ads#1", Received, small)
	last := tr.Entries()[2]
	assert.Empty(t, last.Note)
	assert.JSONEq(t, `{"type_url":"type.googleapis.com/envoy.config.cluster.v3.Cluster","nonce":"n-2"}`, string(last.Message))
}

func TestLongNoteClipped(t *testing.T) {
	tr := New()
	tr.Event("s", strings.Repeat("q", 1<<20))
	e := tr.Entries()[0]
	require.Less(t, len(e.Note), NoteBytes+100)
	assert.Contains(t, e.Note, "more bytes elided")
}

func TestUnkept(t *testing.T) {
	tr := New()
	tr.Unkept("ads#1", 100, "queue full")
	tr.Unkept("ads#1", 50, "queue full")
	tr.Unkept("cds#1", 7, "queue full too")
	n, bytes := tr.UnkeptTotal()
	require.Equal(t, int64(3), n)
	require.Equal(t, int64(157), bytes)
	var notes []string
	for _, e := range tr.Entries() {
		notes = append(notes, e.Stream+": "+e.Note)
	}
	require.Equal(t, []string{
		"ads#1: queue full",
		"cds#1: queue full too",
		"ads#1: 2 more messages, 150 bytes, were received and checked but not kept for the scenario",
		"cds#1: 1 more message, 7 bytes, was received and checked but not kept for the scenario",
	}, notes)
}

func TestClip(t *testing.T) {
	require.Equal(t, "short", Clip("short", 10))
	require.Equal(t, "abc... (3 more bytes elided)", Clip("abcdef", 3))
	// Never cuts a rune in two.
	require.Equal(t, "a... (4 more bytes elided)", Clip("aéé", 2))
}

// Two peers writing one pair's transcript (two connections of the fake
// client, say) each count their own streams from 1; the transcript keeps
// every label unique, and a single peer's labels as it proposed them.
func TestStreamNamesAreUniqueWithinATranscript(t *testing.T) {
	tr := New()
	assert.Equal(t, "ads#1", tr.StreamName("ads#1"), "first connection")
	assert.Equal(t, "ads#2", tr.StreamName("ads#1"), "second connection, its first stream")
	assert.Equal(t, "ads#3", tr.StreamName("ads#2"), "first connection, reopened")
	assert.Equal(t, "CDS#1", tr.StreamName("CDS#1"), "kinds count apart")
	assert.Equal(t, "CDS#7", tr.StreamName("CDS#7"), "a peer's own numbering stands when it is free")
	assert.Equal(t, "odd", tr.StreamName("odd"), "a name that is not kind#n is left alone")
	var none *Transcript
	assert.Equal(t, "ads#1", none.StreamName("ads#1"))
}
