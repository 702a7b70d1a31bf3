// Package replay plays one side of a transcript file (a recording by
// `xdsconform record`, or a pair's transcript taken from a JSON report)
// against a live target and reports where the target now behaves
// differently: the client's side against a management server (Server),
// or the server's side against an xDS client (Client).
package replay

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Kind is what a step of a plan does.
type Kind int

// The kinds of steps.
const (
	// Request is a message the client sent.
	Request Kind = iota
	// Response is a message the server sent.
	Response
	// ServerClosed: the server ended the stream, with Code.
	ServerClosed
	// ClientClosed: the client ended the stream (cancelled it, or its
	// connection went).
	ClientClosed
	// HalfClosed: the client half-closed the stream.
	HalfClosed
	// Stopped: whoever recorded the stream ended it (the recording
	// stopped, a limit of the recorder): nothing to compare.
	Stopped
)

// Stream is one recorded stream.
type Stream struct {
	// Name is the stream's name in the file ("ads#1", "CDS#2", ...).
	Name string
	// Variant is the variant its method belongs to.
	Variant wire.Variant
	// Type is the type of a per-type stream (nil on ADS).
	Type *wire.Type
	// Conn numbers the client connection it was opened on (1 when the
	// file does not say).
	Conn int
}

// Step is one entry of the file the replay acts on.
type Step struct {
	// Index is the entry's position in the file, from 1: differences
	// name it.
	Index int
	// Kind says what it is.
	Kind Kind
	// Stream is the stream it happened on.
	Stream *Stream
	// Message is the decoded request or response (SotW or Delta).
	Message proto.Message
	// TypeURL is the message's type_url (the stream's type when a
	// per-type request leaves it empty).
	TypeURL string
	// Partial says the file holds the message in part (the transcript
	// cap rendered it so): its lists may be cut.
	Partial bool
	// Code and Status are how the server ended the stream (ServerClosed).
	Code   codes.Code
	Status string
}

// Plan is a transcript file read for replay.
type Plan struct {
	// File is the file read.
	File *transcript.File
	// Steps are the entries replayed, in order.
	Steps []Step
	// Streams are the recorded streams, in the order they appeared.
	Streams []*Stream
	// Notes say what the plan leaves out, and why (an elision of the
	// recording, entries it cannot replay).
	Notes []string
}

// Variant is the one variant of every stream of the plan, or an error
// naming the ones mixed.
func (p *Plan) Variant() (wire.Variant, error) {
	var vs []string
	var v wire.Variant
	for _, s := range p.Streams {
		if !slices.Contains(vs, s.Variant.String()) {
			vs = append(vs, s.Variant.String())
			v = s.Variant
		}
	}
	switch len(vs) {
	case 0:
		return wire.Variant{}, errors.New("the transcript has no discovery stream")
	case 1:
		return v, nil
	}
	return wire.Variant{}, fmt.Errorf("the transcript's streams mix variants (%s): replay one client of one variant", strings.Join(vs, ", "))
}

// clientSide is the direction of the client's messages in f.
func clientSide(f *transcript.File) transcript.Direction {
	if f.Side == transcript.SideServer {
		return transcript.Received
	}
	return transcript.Sent
}

// NewPlan reads f's entries into steps. Entries it cannot replay (a
// stream of a method it does not know, a message that does not decode)
// are an error naming the entry; it stops at an elision or a fold of the
// transcript, with a note, since what follows is not what came next.
func NewPlan(f *transcript.File) (*Plan, error) {
	p := &Plan{File: f}
	streams := map[string]*Stream{}
	fromClient := clientSide(f)
	for i, e := range f.Entries {
		idx := i + 1
		switch {
		case e.Direction == transcript.Folded:
			p.Notes = append(p.Notes, fmt.Sprintf("entry %d folds %d repeated entries: the replay stops before it", idx, e.Folded))
			return p, nil
		case e.Direction == transcript.Event && strings.Contains(e.Note, "elided (a transcript keeps"):
			p.Notes = append(p.Notes, fmt.Sprintf("entry %d: the recording elided entries here (%s): the replay stops before it", idx, e.Note))
			return p, nil
		case e.Stream == record.RecorderStream || e.Stream == "harness" || e.Stream == "server" || e.Stream == "":
			continue
		}
		s := streams[e.Stream]
		if s == nil {
			var err error
			s, err = newStream(f, e)
			if err != nil {
				return nil, fmt.Errorf("entry %d (stream %s): %w", idx, e.Stream, err)
			}
			if s == nil {
				continue // an event of a stream whose method is not known yet and is not an opening
			}
			streams[e.Stream] = s
			p.Streams = append(p.Streams, s)
		}
		step := Step{Index: idx, Stream: s}
		switch e.Direction {
		case transcript.Sent, transcript.Received:
			if len(e.Message) == 0 {
				p.Notes = append(p.Notes, fmt.Sprintf("entry %d holds no message (%s): skipped", idx, e.Note))
				continue
			}
			step.Kind = Response
			if e.Direction == fromClient {
				step.Kind = Request
			}
			m, err := decode(e, s, step.Kind)
			if err != nil {
				return nil, fmt.Errorf("entry %d (stream %s): %w", idx, e.Stream, err)
			}
			step.Message = m
			step.TypeURL = typeURL(m)
			if step.TypeURL == "" && s.Type != nil {
				step.TypeURL = s.Type.URL
			}
			step.Partial = strings.Contains(e.Note, "rendered in part")
		case transcript.Event:
			k, code, msg, ok := closing(f, e.Note)
			if !ok {
				continue
			}
			step.Kind, step.Code, step.Status = k, code, msg
		default:
			continue
		}
		p.Steps = append(p.Steps, step)
	}
	p.Steps = settle(p.Steps)
	return p, nil
}

// settle puts each stream's steps back in an order they can have
// happened in. A recorder records each stream from goroutines of its own,
// so across streams, and between a client's last messages on a stream
// and the stream's end, the file's order is the order things were
// recorded in, which can differ from the client's: a client that ACKs on
// a stream and then replaces it may have its ACK recorded after the new
// stream opened, even after the old one ended. So a message of a stream
// after the stream's end goes before the end, and the steps of a stream
// after a newer stream of the same method and connection began go before
// the newer one's first step (a client replaces a stream after it is done
// with it). Within a stream the order is never changed otherwise.
func settle(steps []Step) []Step {
	type group struct {
		conn int
		key  string
	}
	out := make([]Step, 0, len(steps))
	first := map[*Stream]int{}  // index in out of the stream's first step
	closed := map[*Stream]int{} // index in out of the step that ended it
	order := map[group][]*Stream{}
	for _, st := range steps {
		s := st.Stream
		g := group{s.Conn, s.Variant.String() + "/" + key(s)}
		if _, ok := first[s]; !ok {
			order[g] = append(order[g], s)
		}
		pos := len(out)
		if i, ok := closed[s]; ok && (st.Kind == Request || st.Kind == Response) {
			pos = min(pos, i)
		}
		newer := false
		for _, o := range order[g] {
			if o == s {
				newer = true
				continue
			}
			if i, ok := first[o]; newer && ok {
				pos = min(pos, i)
			}
		}
		out = slices.Insert(out, pos, st)
		for _, m := range []map[*Stream]int{first, closed} {
			for k, i := range m {
				if i >= pos {
					m[k] = i + 1
				}
			}
		}
		if _, ok := first[s]; !ok {
			first[s] = pos
		}
		if st.Kind != Request && st.Kind != Response {
			if _, ok := closed[s]; !ok {
				closed[s] = pos
			}
		}
	}
	return out
}

// newStream makes the stream e is on, from its opening event's method or
// else from its name and e's message kind; nil for an event before
// either is known.
func newStream(f *transcript.File, e transcript.Entry) (*Stream, error) {
	s := &Stream{Name: e.Stream, Conn: 1}
	if method, conn, ok := opened(e.Note); ok && e.Direction == transcript.Event {
		v, t, known := record.Classify(method)
		if !known {
			return nil, fmt.Errorf("stream opened on %s, which is no xDS discovery method", method)
		}
		s.Variant, s.Type = v, t
		if conn > 0 {
			s.Conn = conn
		}
		return s, nil
	}
	// No opening event (a transcript of the server suite's fake client
	// names the method, a client suite's fake server does not): the
	// stream's name says ADS or the type, the message kind the protocol.
	base, _, _ := strings.Cut(e.Stream, "#")
	key, proto, _ := strings.Cut(base, "-") // fake server names: "ads-sotw", "CDS-delta"
	delta := proto == "delta" || strings.HasPrefix(e.Kind, "Delta")
	if e.Direction == transcript.Event && proto == "" {
		return nil, nil
	}
	if proto == "rest" {
		return nil, errors.New("REST polls cannot be replayed over gRPC")
	}
	v := wire.Variant{Protocol: wire.SotW, Transport: wire.ADS}
	if delta {
		v.Protocol = wire.Delta
	}
	if !strings.EqualFold(key, "ads") {
		t, ok := wire.TypeByShort(key)
		if !ok {
			return nil, fmt.Errorf("cannot tell the stream's method from its name (want ads#N or a type such as CDS#N)")
		}
		v.Transport = wire.PerType
		s.Type = &t
	}
	s.Variant = v
	if fv, err := wire.ParseVariant(f.Variant); err == nil && f.Variant != "" && fv.IsDelta() != delta {
		return nil, fmt.Errorf("the file says %s, but the stream carries %s", f.Variant, e.Kind)
	}
	return s, nil
}

// opened reads an opening event: "opened METHOD ..." as the recorder and
// the fake client write it, with the recorder's "(connection N from …)".
func opened(note string) (method string, conn int, ok bool) {
	rest, ok := strings.CutPrefix(note, record.NoteOpened)
	if !ok {
		return "", 0, false
	}
	method, rest, _ = strings.Cut(rest, " ")
	if !strings.HasPrefix(method, "/") {
		return "", 0, false
	}
	if after, found := strings.CutPrefix(rest, "(connection "); found {
		n, _, _ := strings.Cut(after, " ")
		conn, _ = strconv.Atoi(n)
	}
	return method, conn, true
}

// closing reads an event that ends a stream, in the words of the
// recorder, the fake client (side client) or the fake server (side
// server).
func closing(f *transcript.File, note string) (Kind, codes.Code, string, bool) {
	server := func(s string) (Kind, codes.Code, string, bool) {
		code, msg := parseStatus(s)
		return ServerClosed, code, msg, true
	}
	switch {
	case strings.HasPrefix(note, record.NoteClosedByServer):
		return server(strings.TrimPrefix(note, record.NoteClosedByServer))
	case strings.HasPrefix(note, record.NoteHalfClosed):
		return HalfClosed, 0, "", true
	case strings.HasPrefix(note, record.NoteClosedByClient):
		return ClientClosed, 0, "", true
	case strings.HasPrefix(note, record.NoteClosedByProxy):
		return Stopped, 0, "", true
	}
	if f.Side == transcript.SideServer {
		// The fake server's words: it is the server.
		switch {
		case note == "ended by the harness":
			return ServerClosed, codes.OK, "", true
		case strings.HasPrefix(note, "ended by the harness: "):
			return server(strings.TrimPrefix(note, "ended by the harness: "))
		case note == "closed by client":
			return HalfClosed, 0, "", true
		case strings.HasPrefix(note, "cancelled: "), strings.HasPrefix(note, "broken: "):
			return ClientClosed, 0, "", true
		}
		return 0, 0, "", false
	}
	// The fake client's words: it is the client.
	switch {
	case strings.HasPrefix(note, "closed by target: "):
		return server(strings.TrimPrefix(note, "closed by target: "))
	case strings.HasPrefix(note, "closed by harness"):
		return ClientClosed, 0, "", true
	}
	return 0, 0, "", false
}

// parseStatus reads transcript.StatusNote's "Code: message" (or "OK (end
// of stream)"); the trailer the recorder adds after "; trailer: " is not
// part of the message.
func parseStatus(s string) (codes.Code, string) {
	if strings.HasPrefix(s, "OK") {
		return codes.OK, ""
	}
	name, msg, _ := strings.Cut(s, ": ")
	if i := strings.LastIndex(msg, "; trailer: "); i >= 0 {
		msg = msg[:i]
	}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		if c.String() == name {
			return c, msg
		}
	}
	return codes.Unknown, s
}

// decode reads an entry's message: a request or response of the
// stream's protocol.
func decode(e transcript.Entry, s *Stream, k Kind) (proto.Message, error) {
	var m proto.Message
	switch {
	case s.Variant.IsDelta() && k == Request:
		m = &discovery.DeltaDiscoveryRequest{}
	case s.Variant.IsDelta():
		m = &discovery.DeltaDiscoveryResponse{}
	case k == Request:
		m = &discovery.DiscoveryRequest{}
	default:
		m = &discovery.DiscoveryResponse{}
	}
	if want := string(m.ProtoReflect().Descriptor().Name()); e.Kind != want {
		return nil, fmt.Errorf("a %s where the stream carries %s", e.Kind, want)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(e.Message, m); err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", e.Kind, err)
	}
	return m, nil
}

// typeURL is a discovery message's type_url.
func typeURL(m proto.Message) string {
	switch m := m.(type) {
	case *discovery.DiscoveryRequest:
		return m.GetTypeUrl()
	case *discovery.DeltaDiscoveryRequest:
		return m.GetTypeUrl()
	case *discovery.DiscoveryResponse:
		return m.GetTypeUrl()
	case *discovery.DeltaDiscoveryResponse:
		return m.GetTypeUrl()
	}
	return ""
}
