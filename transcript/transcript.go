// Package transcript records every message a fake peer sends and receives,
// with time, stream and direction, so that a verdict can always be checked
// against the wire. It is safe for concurrent use.
package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
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
)

// Entry is one recorded message or stream event.
type Entry struct {
	// At is the time since the transcript started.
	At time.Duration `json:"at_ns"`
	// Stream names the stream, e.g. "ads#1" or "CDS#2".
	Stream string `json:"stream"`
	// Direction is sent, received or event.
	Direction Direction `json:"direction"`
	// Kind is the message type's short name ("DiscoveryRequest", ...) or "event".
	Kind string `json:"kind"`
	// Message is the decoded message as proto3 JSON, with secrets redacted.
	Message json.RawMessage `json:"message,omitempty"`
	// Note is free text for events (e.g. the gRPC status of a closed stream).
	Note string `json:"note,omitempty"`
}

// Limits on what one transcript keeps. A target caught in a loop can send
// thousands of messages a second; the report keeps the beginning, which
// shows how the loop started, and the end, which shows how the run ended.
const (
	// KeepHead is how many entries are always kept from the start.
	KeepHead = 1000
	// KeepTail is how many of the most recent entries are kept after that.
	KeepTail = 2000
)

// Transcript is the ordered record of one scenario run.
type Transcript struct {
	mu      sync.Mutex
	start   time.Time
	entries []Entry // the first KeepHead entries
	tail    []Entry // ring of the most recent entries after them
	next    int     // ring write position once tail is full
	dropped int     // entries overwritten in the ring
}

// New starts an empty transcript whose clock starts now.
func New() *Transcript { return &Transcript{start: time.Now()} }

// Record appends a message. The message is redacted and rendered at once,
// so later mutation by the caller cannot change the record.
func (t *Transcript) Record(stream string, dir Direction, m proto.Message) {
	if t == nil {
		return
	}
	e := Entry{Stream: stream, Direction: dir, Kind: string(m.ProtoReflect().Descriptor().Name())}
	b, err := marshaler.Marshal(Redact(m))
	if err != nil {
		e.Note = fmt.Sprintf("could not render message: %v", err)
	} else {
		e.Message = compact(b)
	}
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

// Event appends a stream event such as "opened" or "closed: Unavailable".
func (t *Transcript) Event(stream, note string) {
	if t == nil {
		return
	}
	t.append(Entry{Stream: stream, Direction: Event, Kind: "event", Note: note})
}

func (t *Transcript) append(e Entry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.At = time.Since(t.start)
	switch {
	case len(t.entries) < KeepHead:
		t.entries = append(t.entries, e)
	case len(t.tail) < KeepTail:
		t.tail = append(t.tail, e)
	default:
		t.tail[t.next] = e
		t.next = (t.next + 1) % KeepTail
		t.dropped++
	}
}

// Entries returns a copy of the entries in order.
func (t *Transcript) Entries() []Entry {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]Entry(nil), t.entries...)
	if t.dropped > 0 {
		out = append(out, Entry{At: t.tail[t.next].At, Stream: "harness", Direction: Event, Kind: "event",
			Note: fmt.Sprintf("%d entries omitted (the transcript keeps the first %d and the last %d)", t.dropped, KeepHead, KeepTail)})
	}
	out = append(out, t.tail[t.next:]...)
	return append(out, t.tail[:t.next]...)
}

// String renders the transcript one entry per line, for consoles and JUnit.
func (t *Transcript) String() string { return Format(t.Entries()) }

// Format renders entries one per line.
func Format(entries []Entry) string {
	var b strings.Builder
	for _, e := range entries {
		arrow := map[Direction]string{Sent: "->", Received: "<-", Event: "**"}[e.Direction]
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
