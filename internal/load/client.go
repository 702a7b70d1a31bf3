package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// client is one simulated xDS client: its streams, the profile step it
// is at, and per resource the last change it saw and the last bad change
// it NACKed.
type client struct {
	r       *runner
	idx     int // in the whole run
	nodeNum int // the number of its node (plan.nodeID)
	node    *core.Node
	tr      *transcript.Transcript // sampled clients only

	mu      sync.Mutex
	last    []int64 // per resource: the last change ACKed; -1 none yet
	nacked  []int64 // per resource: the last bad change NACKed; -1 none
	step    int     // the profile step subscribed last
	synced  bool
	begun   time.Time // its first request
	streams []*stream // at most one per type; a map would cost more than the search
}

// stream is one xDS stream of a client: ADS, or one type's.
type stream struct {
	c       *client
	key     string
	cs      grpc.ClientStream
	checker *fakeclient.Checker // sampled clients only
	opened  time.Time           // when it was opened, until its first response

	sendMu sync.Mutex
	sent   bool    // a request went out (the node goes on the first only)
	types  []state // one per type; the receive loop and step sends share them under c.mu
}

// state is what a stream remembers of one type: enough to ACK.
type state struct {
	url       string
	names     []string // SotW: subscribed names (nil: wildcard)
	version   string   // SotW: the version ACKed last
	lastNonce string   // for the cheap NONCE-2 check
}

// name names the stream in evidence ("ads#1", "CDS#1"): streams are never
// reopened.
func (s *stream) name() string { return s.key + "#1" }

// state is the state of type url; c.mu must be held. add makes one if
// there is none (else nil).
func (s *stream) state(url string, add bool) *state {
	for i := range s.types {
		if s.types[i].url == url {
			return &s.types[i]
		}
	}
	if !add {
		return nil
	}
	s.types = append(s.types, state{url: url})
	return &s.types[len(s.types)-1]
}

func newClient(r *runner, idx int) *client {
	c := &client{r: r, idx: idx, nodeNum: idx % r.p.Nodes,
		// --node-id and --node-metadata, as the suites send them: the
		// fixture is told the same id (targets.Server.NodeID).
		node: &core.Node{Id: r.srv.NodeID(r.p.node(idx)), Cluster: r.srv.NodeCluster(r.p.node(idx)), Metadata: wire.StringStruct(r.srv.NodeMetadata), UserAgentName: "xdsconform-load"}}
	c.last = make([]int64, len(r.p.resources))
	c.nacked = make([]int64, len(r.p.resources))
	for i := range c.last {
		c.last[i], c.nacked[i] = -1, -1
	}
	// Sampled by the client's place in its shard, so every shard samples
	// alike whatever the shard count.
	if r.p.SampleEvery > 0 && (idx/r.p.Shards)%r.p.SampleEvery == 0 {
		c.tr = transcript.New()
	}
	return c
}

// name names the client in evidence.
func (c *client) name() string { return c.node.Id }

// streamKey is the stream a type goes on.
func (c *client) streamKey(t wire.Type) string {
	if c.r.p.Variant.IsADS() {
		return "ads"
	}
	return t.Short
}

// subscribe sends the requests of profile step i, opening the streams
// they need.
func (c *client) subscribe(ctx context.Context, i int) error {
	c.mu.Lock()
	c.step = i
	if i == 0 {
		c.begun = time.Now()
	}
	c.mu.Unlock()
	for _, s := range c.r.p.steps[i] {
		st, err := c.stream(ctx, s.t)
		if err != nil {
			return err
		}
		if err := st.request(s); err != nil {
			return err
		}
	}
	return nil
}

// stream returns the stream type t goes on, opening it if need be.
func (c *client) stream(ctx context.Context, t wire.Type) (*stream, error) {
	key := c.streamKey(t)
	c.mu.Lock()
	var s *stream
	for _, have := range c.streams {
		if have.key == key {
			s = have
		}
	}
	n := len(c.streams)
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	method, err := t.FullMethod(c.r.p.Variant)
	if err != nil {
		return nil, err
	}
	conn := c.r.connFor(c.idx, n)
	opened := time.Now()
	cs, err := conn.NewStream(c.r.streamCtx(ctx), &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return nil, fmt.Errorf("opening %s for %s: %w", method, c.name(), err)
	}
	s = &stream{c: c, key: key, cs: cs, opened: opened}
	if c.tr != nil {
		expected := ""
		if !c.r.p.Variant.IsADS() {
			expected = t.URL
		}
		s.checker = fakeclient.NewChecker(s.name(), expected)
		c.tr.Event(s.name(), "opened "+method)
	}
	c.mu.Lock()
	c.streams = append(c.streams, s)
	c.mu.Unlock()
	c.r.streamOpened()
	c.r.wg.Go(func() { s.receive(ctx) })
	return s, nil
}

// request subscribes to sub on s.
func (s *stream) request(sub sub) error {
	p := s.c.r.p
	var names []string
	if !sub.wildcard {
		for _, r := range sub.res {
			names = append(names, s.c.r.names.name(p, s.c.nodeNum, r))
		}
	}
	s.c.mu.Lock()
	st := s.state(sub.t.URL, true)
	st.names = names
	version := st.version
	s.c.mu.Unlock()
	if p.Variant.IsDelta() {
		return s.send(sub.t.URL, &discovery.DeltaDiscoveryRequest{TypeUrl: sub.t.URL, ResourceNamesSubscribe: names})
	}
	return s.send(sub.t.URL, &discovery.DiscoveryRequest{TypeUrl: sub.t.URL, VersionInfo: version, ResourceNames: names})
}

// send sends a request, with the node when it is the stream's first.
func (s *stream) send(typeURL string, m proto.Message) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if !s.sent {
		switch r := m.(type) {
		case *discovery.DiscoveryRequest:
			r.Node = s.c.node
		case *discovery.DeltaDiscoveryRequest:
			r.Node = s.c.node
		}
		s.sent = true
	}
	if s.checker != nil {
		s.checker.Sent(typeURL)
	}
	s.c.tr.Record(s.name(), transcript.Sent, m)
	if err := s.cs.SendMsg(m); err != nil {
		return fmt.Errorf("sending on %s of %s: %w", s.name(), s.c.name(), err)
	}
	return nil
}

// receive reads every response of s until the stream ends, handing each
// to a worker and waiting for it to be handled before reading the next, so
// a stream's responses are answered in order. It only reads: decoding,
// checking and answering happen on the worker's stack, not on one of ten
// thousand of these.
func (s *stream) receive(ctx context.Context) {
	defer s.c.r.streamClosed()
	done := make(chan error, 1)
	for {
		var m raw
		err := s.cs.RecvMsg(&m)
		if err == nil {
			select {
			case s.c.r.jobs <- job{s: s, b: m.b, done: done}:
				err = <-done
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) && grpcstatus.Code(err) != codes.Canceled {
				note := transcript.StatusNote(err)
				if errors.Is(err, io.EOF) {
					note = "the server ended the stream (" + note + ")"
				}
				s.c.tr.Event(s.name(), "closed: "+note)
				s.c.r.col.streamError(fmt.Sprintf("%s of %s: %s", s.name(), s.c.name(), note))
				s.c.r.suspectTarget()
			}
			return
		}
	}
}

// job is one response for a worker to handle.
type job struct {
	s    *stream
	b    []byte
	done chan<- error
}

// decode decodes and handles one response of s.
func (s *stream) decode(b []byte) error {
	if s.c.r.p.Variant.IsDelta() {
		m := &discovery.DeltaDiscoveryResponse{}
		if err := proto.Unmarshal(b, m); err != nil {
			return fmt.Errorf("a response on %s of %s does not decode: %w", s.name(), s.c.name(), err)
		}
		return s.handle(m.GetTypeUrl(), m.GetNonce(), "", deltaBodies(m), m)
	}
	m := &discovery.DiscoveryResponse{}
	if err := proto.Unmarshal(b, m); err != nil {
		return fmt.Errorf("a response on %s of %s does not decode: %w", s.name(), s.c.name(), err)
	}
	return s.handle(m.GetTypeUrl(), m.GetNonce(), m.GetVersionInfo(), m.GetResources(), m)
}

func deltaBodies(m *discovery.DeltaDiscoveryResponse) []*anypb.Any {
	out := make([]*anypb.Any, 0, len(m.GetResources()))
	for _, r := range m.GetResources() {
		if r.GetResource() != nil {
			out = append(out, r.GetResource())
		}
	}
	return out
}

// handle checks one response, works out which changes it brings, and
// ACKs it, or NACKs it when it brings a change planted bad.
func (s *stream) handle(typeURL, nonce, version string, bodies []*anypb.Any, m proto.Message) error {
	c, r := s.c, s.c.r
	now := time.Now()
	c.tr.Record(s.name(), transcript.Received, m)
	s.check(typeURL, nonce, m)

	var fresh []marker // changes this response brings
	bad, resend := false, int64(0)
	c.mu.Lock()
	if !s.opened.IsZero() {
		// The connect phase times a stream from opening it to its first
		// response: that is when a client can start to work.
		r.col.phase(phaseConnect).latency.Record(now.Sub(s.opened))
		s.opened = time.Time{}
	}
	for _, b := range bodies {
		mk, ok := findMarker(b.GetValue(), r.p.RunID)
		if !ok {
			mk, ok = r.contentMarker(c, b)
		}
		if !ok || mk.res >= len(c.last) || mk.change > int64(len(r.p.changes)) || mk.change <= c.last[mk.res] {
			continue
		}
		if mk.bad {
			bad = true
			if mk.change == c.nacked[mk.res] {
				resend = mk.change
				continue
			}
			c.nacked[mk.res] = mk.change
		}
		fresh = append(fresh, mk)
	}
	// A NACK rejects the whole response: the good resources in it are not
	// taken either, and the server owes them again.
	var reached []string
	kept := fresh[:0]
	for _, mk := range fresh {
		if bad != mk.bad {
			continue
		}
		kept = append(kept, mk)
		if mk.bad {
			continue
		}
		// A client that skips changes (SotW may coalesce them) reaches a
		// phase's last change of a resource when it gets to or past it.
		for phase, final := range r.p.finals[mk.res] {
			if c.last[mk.res] < final && mk.change >= final {
				reached = append(reached, phase)
			}
		}
		c.last[mk.res] = mk.change
	}
	fresh = kept
	st := s.state(typeURL, true)
	if !bad {
		st.version = version
	}
	names, acked, begun := st.names, st.version, c.begun
	c.mu.Unlock()
	latest := int64(-1)
	for _, mk := range fresh {
		latest = max(latest, mk.change)
	}
	ps := r.col.phaseOf(r.p, latest)
	r.col.response(ps, now)
	if resend > 0 {
		r.col.phaseOf(r.p, resend).resends.Add(1)
	}
	var req proto.Message
	var detail *status.Status
	if bad {
		detail = &status.Status{Code: int32(codes.InvalidArgument), Message: "xdsconform load: resource planted bad for the NACK burst"}
	}
	if r.p.Variant.IsDelta() {
		req = &discovery.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: nonce, ErrorDetail: detail}
	} else {
		req = &discovery.DiscoveryRequest{TypeUrl: typeURL, VersionInfo: acked, ResponseNonce: nonce, ResourceNames: names, ErrorDetail: detail}
	}
	if err := s.send(typeURL, req); err != nil {
		return err
	}
	sentAt := time.Now()
	r.col.sent(ps, bad, sentAt)
	for _, mk := range fresh {
		r.noteOrigin(mk)
		if mk.change > 0 {
			r.col.answered(r.p, mk, begun, sentAt)
		}
	}
	for _, phase := range reached {
		r.col.reached(phase)
	}
	return c.advance()
}

// check runs the cheap invariants on every response, and every invariant
// on a sampled client's.
func (s *stream) check(typeURL, nonce string, m proto.Message) {
	c, r := s.c, s.c.r
	if nonce == "" {
		r.col.violation("NONCE-1", fmt.Sprintf("a %s response on %s has an empty nonce", typeURL, s.name()), c.name(), c.tr)
	}
	c.mu.Lock()
	st := s.state(typeURL, false)
	asked := st != nil
	repeat := asked && nonce != "" && nonce == st.lastNonce
	if asked {
		st.lastNonce = nonce
	}
	c.mu.Unlock()
	if !asked {
		r.col.violation("STREAM-7", fmt.Sprintf("a response of type %q on %s, which never asked for it", typeURL, s.name()), c.name(), c.tr)
	}
	if repeat {
		r.col.violation("NONCE-2", fmt.Sprintf("nonce %q reused for a second %s response on %s", nonce, typeURL, s.name()), c.name(), c.tr)
	}
	if s.checker == nil {
		return
	}
	var vs []fakeclient.Violation
	switch m := m.(type) {
	case *discovery.DiscoveryResponse:
		vs = s.checker.SotW(m)
	case *discovery.DeltaDiscoveryResponse:
		vs = s.checker.Delta(m)
	}
	for _, v := range vs {
		if v.Rule == "NONCE-1" || v.Rule == "NONCE-2" {
			continue // counted above, on every client
		}
		r.col.violation(v.Rule, v.Message, c.name(), c.tr)
	}
}

// advance moves the client to its next profile step once every resource
// of the steps so far has arrived, and counts it synced after the last.
func (c *client) advance() error {
	p := c.r.p
	c.mu.Lock()
	if c.synced {
		c.mu.Unlock()
		return nil
	}
	for _, s := range p.steps[c.step] {
		for _, res := range s.res {
			if c.last[res] < 0 {
				c.mu.Unlock()
				return nil
			}
		}
	}
	next := c.step + 1
	if next == len(p.steps) {
		c.synced = true
		took := time.Since(c.begun)
		c.mu.Unlock()
		c.r.col.phase(phaseSync).latency.Record(took)
		c.r.col.reached(phaseSync)
		return nil
	}
	c.step = next
	c.mu.Unlock()
	return c.subscribe(c.r.ctx, next)
}
