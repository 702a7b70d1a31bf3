// Package transcript records every message a fake peer sends and receives,
// with time, stream and direction, so that a verdict can always be checked
// against the wire. It is safe for concurrent use.
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/xdsconform/xdsconform/internal/wording"
)

// Direction says which way a message travelled, from the harness's side.
type Direction string

const (
	// Sent is a message the harness sent to the target.
	Sent Direction = "sent"
	// Received is a message the harness received from the target.
	Received Direction = "received"
	// Event is something that happened to a stream (opened, closed, reset).
	Event Direction = "event"
	// Folded is a fold marker: an entry that stands for a run of entries
	// Fold took out because they repeat the entries around it.
	Folded Direction = "folded"
)

// Entry is one recorded message or stream event, or a marker standing for
// entries taken out: an elision (a harness event whose note counts what
// the transcript's caps dropped) or a fold (Direction Folded, see Fold).
type Entry struct {
	// At is the time since the transcript started (for a fold marker, of
	// the first entry folded).
	At time.Duration `json:"at_ns"`
	// Until is, for a fold marker only, the time of the last entry folded.
	Until time.Duration `json:"until_ns,omitempty"`
	// Stream names the stream, e.g. "ads#1" or "CDS#2".
	Stream string `json:"stream"`
	// Direction is sent, received or event.
	Direction Direction `json:"direction"`
	// Kind is the message type's short name ("DiscoveryRequest", ...) or "event".
	Kind string `json:"kind"`
	// Message is the decoded message as proto3 JSON, with secrets redacted.
	Message json.RawMessage `json:"message,omitempty"`
	// Note is free text for events (e.g. the gRPC status of a closed
	// stream), for a message what rendering left out, and for a fold
	// marker what it stands for, in words.
	Note string `json:"note,omitempty"`
	// Folded is, for a fold marker only, how many entries it stands for.
	Folded int `json:"folded,omitempty"`
	// Cycle is, for a fold marker only, how many entries make one repeat:
	// the Cycle entries before the marker (and the Cycle after it) are
	// what repeated Folded/Cycle times in between.
	Cycle int `json:"cycle,omitempty"`
}

// Limits on what one transcript keeps, in bytes of rendered entries (see
// EntrySize; a message not rendered yet counts an upper bound, see scan). A target caught in a loop can send thousands of messages a
// second, some of them megabytes long; the report keeps the beginning,
// which shows how the loop started, and the end, which shows how the run
// ended, and says in one event between them how many entries and bytes
// were elided. The largest transcript of the whole server or client suite
// against the reference peers is about 16 KiB, so no normal pair comes
// near these figures.
const (
	// HeadBytes is how much of a transcript is always kept from the start.
	HeadBytes = 256 << 10
	// TailBytes is how much of the most recent entries is kept after that.
	TailBytes = 256 << 10
	// EntryBytes bounds one entry's rendered message: a larger message is
	// rendered in part (its small fields, the first items of its lists),
	// and the entry's note says what was left out and how big it was.
	EntryBytes = 64 << 10
	// NoteBytes bounds an entry's note (a stream's status message, say,
	// which the target chooses).
	NoteBytes = 4 << 10
	// entryOverhead is what an Entry costs beyond its strings.
	entryOverhead = 96
)

// DefaultBudget is the byte budget of one run's transcripts when the run
// gives none: 64 pairs flooding at once keep at most this much between
// them (32 pairs' worth of HeadBytes+TailBytes), however long they run.
// A whole suite against the reference peers keeps under 1 MiB.
const DefaultBudget = 16 << 20

// DefaultQueueBudget is the byte budget of one run's fake-peer queues
// when the run gives none. Unlike DefaultBudget it is only ever lent: a
// queue gives back what it borrowed as the scenario consumes it and when
// its peer closes, so it bounds what the pairs running at once hold
// unconsumed, not what the run has done. Each queue has a floor of its
// own besides (64 KiB), so a pair is never starved of one message; 16 MiB
// lets about 256 pairs each hold one typical scenario's worth of
// messages past its floor, or two floods hold a few megabytes each.
const DefaultQueueBudget = 16 << 20

// Budget is a byte allowance shared by the pairs of one run, so that 64
// or 256 pairs at once cannot multiply the per-pair caps. A run has two:
// one for what its report keeps (every pair's transcript, never given
// back) and one for what is in flight (the fake peers' queues, given back
// as they are consumed and closed), so that the transcripts of pairs that
// finished cannot starve the queues of pairs still to run, and what a
// pair's peers can queue never depends on which pairs finished before it.
// It is safe for concurrent use; a nil *Budget allows everything (the
// per-transcript and per-queue caps still apply).
type Budget struct {
	limit int64
	used  atomic.Int64
}

// NewBudget returns a budget of limit bytes (DefaultBudget when limit is
// not positive; both defaults are 16 MiB).
func NewBudget(limit int64) *Budget {
	if limit <= 0 {
		limit = DefaultBudget
	}
	return &Budget{limit: limit}
}

// Take reserves n bytes and reports whether they were available; when
// they were not, nothing is reserved.
func (b *Budget) Take(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	for {
		u := b.used.Load()
		if u+n > b.limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// Give returns n bytes taken earlier.
func (b *Budget) Give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.used.Add(-n)
}

// Used is how many bytes are taken now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Limit is the budget's size in bytes (0 for a nil budget: no limit).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Transcript is the ordered record of one scenario run.
type Transcript struct {
	mu         sync.Mutex
	start      time.Time
	budget     *Budget // what the transcript keeps
	queues     *Budget // what the fake peers queue (see QueueBudget)
	head       []kept  // the first entries, up to HeadBytes
	headBytes  int64
	headClosed bool   // an entry did not fit in the head: the rest go to the tail
	tail       []kept // the most recent entries after the head, up to TailBytes
	tailBytes  int64
	elided     int64         // entries dropped between head and tail
	elidedSize int64         // their EntrySize, summed
	elidedAt   time.Duration // when the last one was dropped
	unkept     map[string]*unkept
	streams    map[string]int // per stream kind, the highest number named (StreamName)
}

// kept is an entry as a transcript keeps it, with what it counts against
// the caps (EntrySize, or for a message kept raw its estimate, rawSize).
type kept struct {
	Entry
	raw  *raw // a message not rendered yet (Entry.Message and Note empty), or nil
	size int64
}

// raw is a message kept as its wire bytes until the entry is first read,
// then as its rendering: most entries are never read, or only once the
// pair is over, and rendering is most of what recording costs.
type raw struct {
	once    sync.Once
	typ     protoreflect.MessageType
	wire    []byte // deterministic wire bytes, until rendered
	message json.RawMessage
	note    string
}

// rendered renders r once (concurrent callers wait for the first) and
// lets the wire bytes go.
func (r *raw) rendered() (json.RawMessage, string) {
	r.once.Do(func() {
		m := r.typ.New().Interface()
		if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(r.wire, m); err != nil {
			r.note = Clip(fmt.Sprintf("could not render message: %v", err), NoteBytes)
		} else {
			r.message, r.note = render(m)
			r.note = Clip(r.note, NoteBytes)
		}
		r.wire = nil
	})
	return r.message, r.note
}

// unkept counts the messages a fake peer received on one stream, checked
// and did not keep (see Unkept).
type unkept struct {
	n, bytes int64
	at       time.Duration
}

// New starts an empty transcript whose clock starts now, bound only by
// its own caps (and its fake peers' queues only by theirs).
func New() *Transcript { return NewIn(nil, nil) }

// NewIn is New drawing on report (shared with the run's other
// transcripts) for every entry it keeps, and lending queues to the fake
// peers that record into it (see QueueBudget).
func NewIn(report, queues *Budget) *Transcript {
	return &Transcript{start: time.Now(), budget: report, queues: queues}
}

// ReportBudget is the budget the transcript's entries draw on (nil:
// none). What it takes is kept for the report and never given back.
func (t *Transcript) ReportBudget() *Budget {
	if t == nil {
		return nil
	}
	return t.budget
}

// QueueBudget is the budget the fake peers recording into the transcript
// borrow from for their queues past their own floor (nil: none), and
// give back as the scenario consumes what they queued and when they
// close. It is not the report's budget: transcripts kept by finished
// pairs cannot starve it.
func (t *Transcript) QueueBudget() *Budget {
	if t == nil {
		return nil
	}
	return t.queues
}

// Record appends a message. The message is kept as its wire bytes, so
// later mutation by the caller cannot change the record, and redacted
// and rendered when the entry is first read (Entries), counting until
// then an upper bound of its rendering against the caps (see scan). A
// message that holds a secret, or whose rendering scan cannot bound, is
// rendered at once instead. Either way a message whose rendering would
// exceed EntryBytes is rendered in part.
func (t *Transcript) Record(stream string, dir Direction, m proto.Message) {
	if t == nil {
		return
	}
	pm := m.ProtoReflect()
	e := Entry{Stream: stream, Direction: dir, Kind: string(pm.Descriptor().Name())}
	wire, err := proto.MarshalOptions{Deterministic: true, AllowPartial: true}.Marshal(m)
	if err == nil && len(wire) <= EntryBytes {
		if bound, ok := scan(pm.Descriptor(), wire, 0); ok && bound <= EntryBytes {
			t.keep(kept{Entry: e, raw: &raw{typ: pm.Type(), wire: wire}, size: rawSize(bound, len(wire), e)})
			return
		}
	}
	e.Message, e.Note = render(m)
	t.append(e)
}

// StatusNote renders how a stream ended, for an event note: the gRPC
// status code and message, or "OK (end of stream)" for io.EOF.
func StatusNote(err error) string {
	if errors.Is(err, io.EOF) {
		return "OK (end of stream)"
	}
	st := grpcstatus.Convert(err)
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
}

// StreamName returns the label a new stream is recorded under: name as
// its peer proposes it ("ads#1": a kind, then the peer's own count), or,
// when this transcript has named a stream of that kind and that number or
// a later one (a second connection or a second fake peer of the same
// pair), the kind with the next number. Labels are so unique within a
// pair's transcript, however many peers write to it, and a single peer's
// are its own.
func (t *Transcript) StreamName(name string) string {
	if t == nil {
		return name
	}
	i := strings.LastIndexByte(name, '#')
	if i < 0 {
		return name // not a kind and a count: left as the peer named it
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return name
	}
	kind := name[:i]
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.streams == nil {
		t.streams = map[string]int{}
	}
	if last := t.streams[kind]; n <= last {
		n = last + 1
	}
	t.streams[kind] = n
	return kind + "#" + strconv.Itoa(n)
}

// Event appends a stream event such as "opened" or "closed: Unavailable".
// Notes longer than NoteBytes are clipped.
func (t *Transcript) Event(stream, note string) {
	if t == nil {
		return
	}
	t.append(Entry{Stream: stream, Direction: Event, Kind: "event", Note: note})
}

// Unkept records that a fake peer received a message of size bytes on
// stream, checked it against every invariant, and did not keep it for
// the scenario because its queue was full. The first time for a stream,
// why is recorded as an event; Entries ends with one event per such
// stream saying how many messages and bytes were not kept.
func (t *Transcript) Unkept(stream string, size int64, why string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	if t.unkept == nil {
		t.unkept = map[string]*unkept{}
	}
	u := t.unkept[stream]
	first := u == nil
	if first {
		u = &unkept{}
		t.unkept[stream] = u
	}
	u.n++
	u.bytes += size
	u.at = time.Since(t.start)
	t.mu.Unlock()
	if first {
		t.Event(stream, why)
	}
}

// UnkeptTotal is how many messages, of how many bytes, the fake peers
// received and did not keep (see Unkept): a verdict that rests on what a
// scenario could see is then unsure.
func (t *Transcript) UnkeptTotal() (n, bytes int64) {
	if t == nil {
		return 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, u := range t.unkept {
		n += u.n
		bytes += u.bytes
	}
	return n, bytes
}

// EntrySize is what an entry counts against HeadBytes, TailBytes and the
// budget: its strings plus a fixed overhead for the rest. (A message kept
// unrendered counts an upper bound of it, see scan.)
func EntrySize(e Entry) int64 {
	return int64(len(e.Message)+len(e.Note)+len(e.Stream)+len(e.Kind)) + entryOverhead
}

// append keeps e (an event, or a message rendered already).
func (t *Transcript) append(e Entry) { t.keep(kept{Entry: e}) }

// keep keeps e, eliding what the caps and the budget no longer allow.
func (t *Transcript) keep(e kept) {
	if e.raw == nil {
		e.Note = Clip(e.Note, NoteBytes)
		e.size = EntrySize(e.Entry)
	}
	size := e.size
	t.mu.Lock()
	defer t.mu.Unlock()
	e.At = time.Since(t.start)
	if !t.headClosed {
		if t.headBytes+size <= HeadBytes && t.budget.Take(size) {
			t.head = append(t.head, e)
			t.headBytes += size
			return
		}
		t.headClosed = true
	}
	// Make room in the tail: its oldest entries go first, and what they
	// free pays for the new one when the run's budget is spent.
	for len(t.tail) > 0 && t.tailBytes+size > TailBytes {
		t.dropOldest()
	}
	for !t.budget.Take(size) {
		switch {
		case len(t.tail) > 0:
			t.dropOldest()
		case len(t.head) > 1:
			// The run's budget is spent and this transcript has no tail
			// to give up: the end of its head pays, so that it still
			// shows how it ended (its first entry stays).
			last := t.head[len(t.head)-1]
			t.head[len(t.head)-1] = kept{}
			t.head = t.head[:len(t.head)-1]
			t.headBytes -= last.size
			t.budget.Give(last.size)
			t.elide(last)
		default:
			t.elide(e)
			return
		}
	}
	t.tail = append(t.tail, e)
	t.tailBytes += size
}

// dropOldest elides the oldest tail entry; t.mu must be held.
func (t *Transcript) dropOldest() {
	old := t.tail[0]
	t.tail[0] = kept{} // let its bytes go
	t.tail = t.tail[1:]
	t.tailBytes -= old.size
	t.budget.Give(old.size)
	t.elide(old)
}

// elide counts e as dropped between head and tail; t.mu must be held.
func (t *Transcript) elide(e kept) {
	t.elided++
	t.elidedSize += e.size
	t.elidedAt = e.At
}

// Kept is how many bytes the transcript keeps now, and how many entries
// and bytes it elided, as the caps count them (EntrySize, or for a message
// not rendered yet an upper bound of it, see scan).
func (t *Transcript) Kept() (bytes, elided, elidedBytes int64) {
	if t == nil {
		return 0, 0, 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.headBytes + t.tailBytes, t.elided, t.elidedSize
}

// Entries returns a copy of the entries in order: the head, one event
// saying how many entries and bytes were elided (if any were), the tail,
// and one event per stream on which a fake peer did not keep messages.
// Messages not rendered yet are rendered now, once (outside the lock, so
// that recording goes on meanwhile).
func (t *Transcript) Entries() []Entry {
	if t == nil {
		return nil
	}
	ks := t.snapshot()
	out := make([]Entry, len(ks))
	for i, k := range ks {
		out[i] = k.Entry
		if k.raw != nil {
			out[i].Message, out[i].Note = k.raw.rendered()
		}
	}
	return out
}

// snapshot is Entries before rendering.
func (t *Transcript) snapshot() []kept {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]kept, 0, len(t.head)+len(t.tail)+1+len(t.unkept))
	out = append(out, t.head...)
	if t.elided > 0 {
		out = append(out, kept{Entry: Entry{At: t.elidedAt, Stream: "harness", Direction: Event, Kind: "event",
			Note: fmt.Sprintf("%s, %d bytes, elided (a transcript keeps its first %d and last %d bytes, within %d bytes for the whole run)",
				wording.Count(t.elided, "more entry", "more entries"), t.elidedSize, HeadBytes, TailBytes, t.budget.Limit())}})
	}
	out = append(out, t.tail...)
	streams := make([]string, 0, len(t.unkept))
	for s := range t.unkept {
		streams = append(streams, s)
	}
	sort.Strings(streams)
	for _, s := range streams {
		u := t.unkept[s]
		out = append(out, kept{Entry: Entry{At: u.at, Stream: s, Direction: Event, Kind: "event",
			Note: fmt.Sprintf("%s, %d bytes, %s received and checked but not kept for the scenario", wording.N(u.n, "more message"), u.bytes, wasWere(u.n))}})
	}
	return out
}

// Clip returns s cut to at most n bytes (on a UTF-8 boundary), ending
// with a note of how many bytes were elided when it was cut. Every text
// a peer chooses goes through it before it reaches a report.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d more bytes elided)", s[:cut], len(s)-cut)
}

// String renders the transcript one entry per line, for consoles and JUnit.
func (t *Transcript) String() string { return Format(t.Entries()) }

// Format renders entries one per line.
func Format(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		arrow := map[Direction]string{Sent: "->", Received: "<-", Event: "**", Folded: "~~"}[e.Direction]
		fmt.Fprintf(&b, "%8.3fms %-8s %s %s", float64(e.At.Microseconds())/1000, e.Stream, arrow, e.Kind)
		if len(e.Message) > 0 {
			fmt.Fprintf(&b, " %s", e.Message)
		}
		if e.Note != "" {
			fmt.Fprintf(&b, " %s", e.Note)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

var marshaler = protojson.MarshalOptions{UseProtoNames: true}

// render redacts and renders m as compact JSON, in part when it is larger
// than EntryBytes; the note then says what was left out.
func render(m proto.Message) (json.RawMessage, string) {
	size := proto.Size(m)
	if size <= EntryBytes {
		b, err := marshaler.Marshal(Redact(m))
		if err != nil {
			return nil, fmt.Sprintf("could not render message: %v", err)
		}
		if out := compact(b); len(out) <= EntryBytes {
			return out, ""
		}
	}
	part, left := summarize(m)
	note := fmt.Sprintf("%d bytes on the wire, rendered in part: %s elided", size, strings.Join(left, ", "))
	b, err := marshaler.Marshal(Redact(part))
	if err != nil {
		return nil, Clip(fmt.Sprintf("%s; could not render the rest: %v", note, err), NoteBytes)
	}
	out := compact(b)
	if len(out) > EntryBytes {
		return nil, Clip(fmt.Sprintf("%d bytes on the wire, too large to render", size), NoteBytes)
	}
	return out, Clip(note, NoteBytes)
}

// Limits of a message rendered in part: enough for the fields that
// identify it (type URL, version, nonce, names), not for its payload.
const (
	partString  = 1 << 10  // a string field is cut to this
	partMessage = 4 << 10  // a message field larger than this is left out
	partList    = 16 << 10 // a list keeps its first items up to this
)

// summarize returns a copy of m with its small fields and the first items
// of its lists, and what it left out, in field order (so deterministic).
func summarize(m proto.Message) (proto.Message, []string) {
	src := m.ProtoReflect()
	dst := src.New()
	var left []string
	fields := src.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !src.Has(fd) {
			continue
		}
		v := src.Get(fd)
		switch {
		case fd.IsList():
			l, kept, bytes := v.List(), 0, 0
			out := dst.Mutable(fd).List()
			for j := 0; j < l.Len(); j++ {
				n := valueSize(fd, l.Get(j))
				if bytes+n > partList {
					break
				}
				out.Append(l.Get(j))
				kept++
				bytes += n
			}
			if kept < l.Len() {
				left = append(left, fmt.Sprintf("%s: %d of %d items", fd.Name(), l.Len()-kept, l.Len()))
			}
		case fd.IsMap():
			if n := mapSize(fd, v.Map()); n <= partMessage {
				dst.Set(fd, v)
			} else {
				left = append(left, fmt.Sprintf("%s: %d entries, about %d bytes", fd.Name(), v.Map().Len(), n))
			}
		case fd.Kind() == protoreflect.StringKind && len(v.String()) > partString:
			s := v.String()
			cut := partString
			for cut > 0 && !utf8.RuneStart(s[cut]) {
				cut--
			}
			dst.Set(fd, protoreflect.ValueOfString(strings.ToValidUTF8(s[:cut], "")))
			left = append(left, fmt.Sprintf("%s: %d of %d bytes", fd.Name(), len(s)-cut, len(s)))
		case fd.Kind() == protoreflect.BytesKind && len(v.Bytes()) > partString:
			left = append(left, fmt.Sprintf("%s: %d bytes", fd.Name(), len(v.Bytes())))
		case fd.Message() != nil:
			if n := proto.Size(v.Message().Interface()); n <= partMessage {
				dst.Set(fd, v)
			} else {
				left = append(left, fmt.Sprintf("%s: %d bytes", fd.Name(), n))
			}
		default:
			dst.Set(fd, v)
		}
	}
	if len(left) == 0 {
		left = append(left, "nothing")
	}
	return dst.Interface(), left
}

// valueSize is about what one list item or map key/value costs on the wire.
func valueSize(fd protoreflect.FieldDescriptor, v protoreflect.Value) int {
	switch {
	case fd.Message() != nil && !fd.IsMap():
		return proto.Size(v.Message().Interface())
	case fd.Kind() == protoreflect.StringKind:
		return len(v.String())
	case fd.Kind() == protoreflect.BytesKind:
		return len(v.Bytes())
	}
	return 8
}

func mapSize(fd protoreflect.FieldDescriptor, m protoreflect.Map) int {
	n := 0
	m.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		n += len(k.String()) + valueSize(fd.MapValue(), v)
		return true
	})
	return n
}

func compact(b []byte) json.RawMessage {
	// protojson output is valid JSON but its spacing is deliberately unstable;
	// re-encode so transcripts are byte-identical between runs.
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

// wasWere is the verb after a count of n.
func wasWere(n int64) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
