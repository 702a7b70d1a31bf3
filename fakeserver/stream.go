package fakeserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Stream is one discovery stream the client opened. Requests are queued per
// type URL, because on ADS every type is an independent sub-stream (ADS-1):
// a scenario waits for the next request of the type it is talking about.
type Stream struct {
	// ID numbers the server's streams from 1 in the order they opened.
	ID int
	// Name labels the stream in the transcript, e.g. "ads-sotw#2".
	Name string
	// Service is the per-type service the stream was opened on; nil for ADS.
	Service *wire.Type
	// Delta is true for incremental streams.
	Delta bool
	// REST is true for the polls of one type in the REST variant (rest.go).
	REST bool
	// Opened is when the client opened the stream (RECONN-1 measures the
	// waits between streams).
	Opened time.Time

	srv  *Server
	ops  chan sendOp   // responses for the handler goroutine to send
	end  chan error    // ends the handler with this status
	gone chan struct{} // closed when the handler returned

	mu       sync.Mutex
	ended    time.Time     // when finish ran
	notify   chan struct{} // closed and replaced whenever a request arrives or the stream ends
	seq      int           // requests received, kept or not
	all      []*Request    // the requests kept (see QueueBytes)
	unkept   int           // requests received and not kept; none is kept after the first
	queues   map[string][]*Request
	nonces   map[string]bool // every nonce sent on this stream
	nonceSeq int
	sent     map[string]int // responses handed to gRPC, per type URL
	err      error          // why the stream ended; nil while open
	inFlight int            // REST: polls outstanding
}

type sendOp struct {
	msg  proto.Message
	done chan error
}

func (st *Stream) method() string {
	kind := "sotw"
	if st.Delta {
		kind = "delta"
	}
	if st.REST {
		kind = "rest"
	}
	if st.Service == nil {
		return "ads-" + kind
	}
	return st.Service.Short + "-" + kind
}

// carries reports whether the stream serves t in variant v.
func (st *Stream) carries(t wire.Type, v wire.Variant) bool {
	if st.REST != v.IsREST() {
		return false
	}
	if st.Delta != (v.Protocol == wire.Delta) {
		return false
	}
	if v.Transport == wire.ADS {
		return st.Service == nil
	}
	return st.Service != nil && st.Service.URL == t.URL
}

// Request is one request the client sent, SotW or Delta.
type Request struct {
	// Stream is where it arrived.
	Stream *Stream
	// Seq numbers the stream's requests from 1, in the order they came
	// (kept or not).
	Seq int
	// SotW is set on SotW streams, Delta on incremental ones.
	SotW  *discovery.DiscoveryRequest
	Delta *discovery.DeltaDiscoveryRequest
	// Answered counts the responses of the request's type the server had
	// sent on the stream when the request arrived.
	Answered int
	// Arrived is when the server read it (UPD-2 measures how promptly a
	// client ACKs from it, not from when a scenario got to look).
	Arrived time.Time
	// REST is set on the polls of the REST variant (rest.go).
	REST *RESTPoll
}

// TypeURL is the request's type_url, or the service's type on a per-type
// stream whose request left it empty.
func (r *Request) TypeURL() string {
	u := r.RawTypeURL()
	if u == "" && r.Stream.Service != nil {
		return r.Stream.Service.URL
	}
	return u
}

// RawTypeURL is the type_url exactly as sent.
func (r *Request) RawTypeURL() string {
	if r.Delta != nil {
		return r.Delta.GetTypeUrl()
	}
	return r.SotW.GetTypeUrl()
}

// Nonce is the response_nonce.
func (r *Request) Nonce() string {
	if r.Delta != nil {
		return r.Delta.GetResponseNonce()
	}
	return r.SotW.GetResponseNonce()
}

// Node is the node, nil when omitted.
func (r *Request) Node() *core.Node {
	if r.Delta != nil {
		return r.Delta.GetNode()
	}
	return r.SotW.GetNode()
}

// ErrorDetail is the NACK's error_detail, nil on ACKs and subscriptions.
func (r *Request) ErrorDetail() *rpcstatus.Status {
	if r.Delta != nil {
		return r.Delta.GetErrorDetail()
	}
	return r.SotW.GetErrorDetail()
}

// Version is a SotW request's version_info ("" on delta).
func (r *Request) Version() string { return r.SotW.GetVersionInfo() }

// Names is a SotW request's resource_names, or a delta request's
// resource_names_subscribe.
func (r *Request) Names() []string {
	if r.Delta != nil {
		return r.Delta.GetResourceNamesSubscribe()
	}
	return r.SotW.GetResourceNames()
}

// Previous returns the request of the same type that came before r on its
// stream, nil for the type's first.
func (r *Request) Previous() *Request {
	st := r.Stream
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := len(st.all) - 1; i >= 0; i-- {
		if p := st.all[i]; p.Seq < r.Seq && p.TypeURL() == r.TypeURL() {
			return p
		}
	}
	return nil
}

// String names the request in failure messages.
func (r *Request) String() string {
	return fmt.Sprintf("request #%d on %s (type %s, nonce %q)", r.Seq, r.Stream.Name, r.TypeURL(), r.Nonce())
}

// ClosedError says that a stream ended while a scenario waited on it.
type ClosedError struct {
	// Stream names the stream, as in the transcript.
	Stream string
	// Err is how it ended: io.EOF when the client half-closed, the gRPC
	// status otherwise, or ErrEnded when the scenario ended it.
	Err error
}

// Error says which stream ended and how.
func (e *ClosedError) Error() string {
	return fmt.Sprintf("stream %s ended: %v", e.Stream, e.Err)
}

// Unwrap returns how the stream ended.
func (e *ClosedError) Unwrap() error { return e.Err }

// ErrEnded marks a stream the scenario itself ended with End.
var ErrEnded = errors.New("ended by the harness")

func newStream(srv *Server, service *wire.Type, delta bool) *Stream {
	return &Stream{
		Service: service, Delta: delta, srv: srv, Opened: time.Now(),
		ops: make(chan sendOp), end: make(chan error, 1), gone: make(chan struct{}),
		notify: make(chan struct{}), queues: map[string][]*Request{}, nonces: map[string]bool{}, sent: map[string]int{},
	}
}

func (s *Server) serveSotW(ss wire.SotWServerStream, service *wire.Type) error {
	st := newStream(s, service, false)
	if !s.addStream(st) {
		return grpcstatus.Errorf(codes.ResourceExhausted, "the harness keeps at most %d streams per scenario", maxStreams)
	}
	recv := func() (proto.Message, error) { return ss.Recv() }
	send := func(m proto.Message) error { return ss.Send(m.(*discovery.DiscoveryResponse)) }
	return st.serve(ss.Context(), recv, send)
}

func (s *Server) serveDelta(ss wire.DeltaServerStream, service *wire.Type) error {
	st := newStream(s, service, true)
	if !s.addStream(st) {
		return grpcstatus.Errorf(codes.ResourceExhausted, "the harness keeps at most %d streams per scenario", maxStreams)
	}
	recv := func() (proto.Message, error) { return ss.Recv() }
	send := func(m proto.Message) error { return ss.Send(m.(*discovery.DeltaDiscoveryResponse)) }
	return st.serve(ss.Context(), recv, send)
}

// serve runs in the gRPC handler goroutine. Only this goroutine sends, since
// a gRPC stream must not be written after its handler returned; the
// scenario hands it responses through st.ops.
func (st *Stream) serve(ctx context.Context, recv func() (proto.Message, error), send func(proto.Message) error) (err error) {
	recvDone := make(chan error, 1)
	go func() {
		for {
			m, err := recv()
			if err != nil {
				recvDone <- err
				return
			}
			st.received(m)
		}
	}()
	defer func() {
		// How it ended is recorded before gone is closed: whoever wakes
		// on gone (End, Send) must find Err set.
		note := "ended by the harness"
		if err != nil {
			note += ": " + transcript.StatusNote(err)
		}
		st.finish(ErrEnded, note)
		close(st.gone)
	}()
	for {
		select {
		case op := <-st.ops:
			// Counted before sending: the client may answer before Send
			// returns, and its answer must see the response as sent.
			st.mu.Lock()
			st.sent[typeOf(op.msg)]++
			st.mu.Unlock()
			err := send(op.msg)
			if err == nil {
				st.srv.opts.Transcript.Record(st.Name, transcript.Sent, op.msg)
				st.srv.sent()
			}
			op.done <- err
		case err := <-st.end:
			// Returned, the status goes to the client: a message too.
			st.srv.sent()
			return err
		case err := <-recvDone:
			if errors.Is(err, io.EOF) {
				st.finish(err, "closed by client")
				return nil
			}
			st.finish(err, "broken: "+transcript.StatusNote(err))
			return err
		case <-ctx.Done():
			// gRPC cancels the stream when a request does not decode: the
			// receive error says why, so prefer it if it comes promptly.
			grace := time.NewTimer(100 * time.Millisecond)
			defer grace.Stop()
			select {
			case err := <-recvDone:
				if !errors.Is(err, io.EOF) && grpcstatus.Code(err) != codes.Canceled {
					st.finish(err, "broken: "+transcript.StatusNote(err))
					return err
				}
			case <-grace.C:
			}
			// The stream's context ends when the client cancels the call
			// (or its connection goes) and when this server stops.
			cause := errClientCancelled
			if st.srv.stopping() {
				cause = grpcstatus.Error(codes.Canceled, "the harness's server stopped")
			}
			st.finish(cause, "cancelled: "+transcript.StatusNote(cause))
			return ctx.Err()
		}
	}
}

// errClientCancelled is how a stream the client cancelled ended: one
// value, so that EndedByClient can recognise it however it is wrapped.
var errClientCancelled = grpcstatus.Error(codes.Canceled, "cancelled by the client")

// EndedByClient reports whether err, from a wait on a stream, says the
// client left the stream: it half-closed it (io.EOF), cancelled it or lost
// its connection, rather than that the wait ran out or the harness ended
// it. A client closing its stream may do either first: both are its own
// leaving.
func EndedByClient(err error) bool {
	return errors.Is(err, errClientCancelled) || errors.Is(err, io.EOF)
}

// finish records how the stream ended, once.
func (st *Stream) finish(err error, note string) {
	st.mu.Lock()
	if st.err != nil {
		st.mu.Unlock()
		return
	}
	st.err, st.ended = err, time.Now()
	st.wake()
	st.mu.Unlock()
	st.srv.opts.Transcript.Event(st.Name, note)
}

// Ended is when the stream ended (zero while it is open): RECONN-1
// measures a client's backoff from it to the next stream's Opened.
func (st *Stream) Ended() time.Time {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

func (st *Stream) wake() {
	close(st.notify)
	st.notify = make(chan struct{})
}

func (st *Stream) received(m proto.Message) { st.receive(m, nil) }

// receive queues request m; poll is set on REST polls.
func (st *Stream) receive(m proto.Message, poll *RESTPoll) {
	st.srv.opts.Transcript.Record(st.Name, transcript.Received, m)
	size := int64(proto.Size(m)) + requestOverhead
	st.mu.Lock()
	st.seq++
	r := &Request{Stream: st, Seq: st.seq, Arrived: time.Now(), REST: poll}
	switch m := m.(type) {
	case *discovery.DiscoveryRequest:
		r.SotW = m
	case *discovery.DeltaDiscoveryRequest:
		r.Delta = m
	}
	sentNonce := r.Nonce() == "" || st.nonces[r.Nonce()]
	r.Answered = st.sent[r.TypeURL()]
	// Checked before anyone can see the request: a scenario that ends on
	// it must find its violations recorded.
	st.check(r, sentNonce)
	keep, closed := st.unkept == 0, false
	if keep {
		keep, closed = st.srv.reserve(size)
	}
	switch {
	case keep:
		st.all = append(st.all, r)
		st.queues[r.TypeURL()] = append(st.queues[r.TypeURL()], r)
	case !closed:
		// Counted, so that waits and the verdict know (ErrOverflow,
		// Transcript.Unkept); after Close the scenario is over and
		// nothing is owed.
		st.unkept++
	}
	st.wake()
	st.mu.Unlock()
	if !keep && !closed {
		st.srv.opts.Transcript.Unkept(st.Name, size, fmt.Sprintf(
			"request #%d and every later one on %s are checked but not kept: the scenario's requests exceed %d bytes, or the run's budget is spent", r.Seq, st.Name, QueueBytes))
	}
}

// overflow is the error of a wait that found nothing kept on a stream
// that stopped keeping requests, nil if it did not; st.mu must be held.
func (st *Stream) overflow() error {
	if st.unkept == 0 {
		return nil
	}
	return fmt.Errorf("%s on %s not kept: %w", wording.Count(st.unkept, "request was", "requests were"), st.Name, ErrOverflow)
}

// check applies the invariants every request of every scenario must meet.
func (st *Stream) check(r *Request, sentNonce bool) {
	raw := r.RawTypeURL()
	switch {
	case st.Service == nil && raw == "":
		st.srv.violate(st, "STREAM-6", "request #%d on an aggregated stream has no type_url", r.Seq)
	case raw != "" && st.Service != nil && raw != st.Service.URL && raw != st.Service.URL+"Collection":
		st.srv.violate(st, "STREAM-6", "request #%d has type_url %q on the %s service", r.Seq, raw, st.Service.Short)
	case raw != "":
		// A list collection of a type, "<T>Collection", travels where T
		// does (COLL-1).
		if _, ok := wire.TypeByExactURL(strings.TrimSuffix(raw, "Collection")); !ok {
			st.srv.violate(st, "STREAM-6", "request #%d has type_url %q, which is no xDS v3 type", r.Seq, raw)
		}
	}
	if !sentNonce {
		st.srv.violate(st, "NONCE-5", "request #%d echoes nonce %q, which was never sent on this stream", r.Seq, r.Nonce())
	}
	if !st.Delta && r.TypeURL() == wire.VirtualHost.URL {
		st.srv.violate(st, "STREAM-10", "request #%d asks for VirtualHosts %q over SotW: they exist only in the incremental protocol", r.Seq, r.Names())
	}
}

// First returns the stream's first request, waiting for it (bounded).
func (st *Stream) First(ctx context.Context) (*Request, error) {
	return st.wait(ctx, st.srv.opts.Timeout, func() *Request {
		if len(st.all) > 0 {
			return st.all[0]
		}
		return nil
	}, false)
}

// Requests returns every request kept so far, in arrival order: all of
// them unless the stream stopped keeping (see QueueBytes).
func (st *Stream) Requests() []*Request {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.all)
}

// Next returns the oldest request of type t not yet taken, waiting up to
// the server's Timeout for one.
func (st *Stream) Next(ctx context.Context, t wire.Type) (*Request, error) {
	return st.wait(ctx, st.srv.opts.Timeout, func() *Request { return st.pop(t) }, true)
}

// None watches t for the quiet window and returns the first request of t
// that arrived in it, or nil. A stream that ends meanwhile is an error: a
// closed stream is not silence.
func (st *Stream) None(ctx context.Context, t wire.Type) (*Request, error) {
	r, err := st.wait(ctx, st.srv.opts.Quiet, func() *Request { return st.pop(t) }, true)
	if errors.Is(err, ErrTimeout) {
		return nil, nil
	}
	return r, err
}

// NoneWithin is None over a window of its own, within, instead of the
// quiet window: for a window sized from the peer's own timer.
func (st *Stream) NoneWithin(ctx context.Context, within time.Duration, t wire.Type) (*Request, error) {
	r, err := st.wait(ctx, within, func() *Request { return st.pop(t) }, true)
	if errors.Is(err, ErrTimeout) {
		return nil, nil
	}
	return r, err
}

func (st *Stream) pop(t wire.Type) *Request {
	q := st.queues[t.URL]
	if len(q) == 0 {
		return nil
	}
	st.queues[t.URL] = q[1:]
	return q[0]
}

// wait polls take (under st.mu) until it yields a request, the stream ends
// (when failOnEnd), the bound passes or ctx ends.
//
// The bound is of the harness's own running time (lag.Deadline): a client
// is given up on only once it had all of it, and a quiet window watches
// as long on a busy machine as on an idle one.
func (st *Stream) wait(ctx context.Context, within time.Duration, take func() *Request, failOnEnd bool) (*Request, error) {
	deadline := lag.NewDeadline(within)
	for {
		st.mu.Lock()
		if r := take(); r != nil {
			st.mu.Unlock()
			return r, nil
		}
		if err := st.overflow(); err != nil {
			// Nothing more will be kept: what is waited for may have
			// come and gone.
			st.mu.Unlock()
			return nil, err
		}
		ended, notify := st.err, st.notify
		st.mu.Unlock()
		if ended != nil && failOnEnd {
			return nil, &ClosedError{Stream: st.Name, Err: ended}
		}
		left := deadline.Left()
		if left <= 0 {
			return nil, fmt.Errorf("nothing from the client on %s within %s: %w", st.Name, wording.Duration(time.Since(deadline.Start())), ErrTimeout)
		}
		timer := time.NewTimer(left)
		select {
		case <-notify:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("waiting on %s: %w", st.Name, ctx.Err())
		}
		timer.Stop()
	}
}

// Err is how the stream ended, nil while it is open.
func (st *Stream) Err() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.err
}

// End ends the stream with err as its gRPC status (nil: OK), as a server
// does when it restarts or sheds load, so the client has to reconnect. It
// returns once the handler has returned.
func (st *Stream) End(ctx context.Context, err error) error {
	select {
	case st.end <- err:
	default: // already asked
	}
	// The handler may be stuck sending to a client that does not read.
	timer := time.NewTimer(st.srv.opts.Timeout)
	defer timer.Stop()
	select {
	case <-st.gone:
		return nil
	case <-timer.C:
		return fmt.Errorf("ending %s: its handler is still sending after %v (the client does not read): %w", st.Name, st.srv.opts.Timeout, ErrTimeout)
	case <-ctx.Done():
		return fmt.Errorf("ending %s: %w", st.Name, ctx.Err())
	}
}

// NewNonce returns a nonce unique on this stream and remembers it as sent,
// so the client may echo it.
func (st *Stream) NewNonce() string {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.nonceSeq++
	n := "n" + strconv.Itoa(st.ID) + "-" + strconv.Itoa(st.nonceSeq)
	st.nonces[n] = true
	return n
}

// Send sends m (a DiscoveryResponse or DeltaDiscoveryResponse, sent as is).
// Its nonce is remembered as sent on this stream.
func (st *Stream) Send(ctx context.Context, m proto.Message) error {
	var nonce string
	switch m := m.(type) {
	case *discovery.DiscoveryResponse:
		nonce = m.GetNonce()
	case *discovery.DeltaDiscoveryResponse:
		nonce = m.GetNonce()
	}
	st.mu.Lock()
	st.nonces[nonce] = true
	st.mu.Unlock()
	op := sendOp{msg: m, done: make(chan error, 1)}
	timer := time.NewTimer(st.srv.opts.Timeout)
	defer timer.Stop()
	select {
	case st.ops <- op:
	case <-st.gone:
		return &ClosedError{Stream: st.Name, Err: st.Err()}
	case <-timer.C:
		return fmt.Errorf("sending on %s: handler busy for %v: %w", st.Name, st.srv.opts.Timeout, ErrTimeout)
	case <-ctx.Done():
		return fmt.Errorf("sending on %s: %w", st.Name, ctx.Err())
	}
	select {
	case err := <-op.done:
		if err != nil {
			return fmt.Errorf("sending on %s: %w", st.Name, err)
		}
		return nil
	case <-timer.C:
		// The client does not read: flow control blocks the send.
		return fmt.Errorf("sending on %s: client not reading for %v: %w", st.Name, st.srv.opts.Timeout, ErrTimeout)
	case <-ctx.Done():
		return fmt.Errorf("sending on %s: %w", st.Name, ctx.Err())
	}
}

// Respond sends a SotW response of type t at version carrying resources,
// with a fresh nonce, and returns it.
func (st *Stream) Respond(ctx context.Context, t wire.Type, version string, resources ...proto.Message) (*discovery.DiscoveryResponse, error) {
	anys, err := pack(resources)
	if err != nil {
		return nil, err
	}
	return st.RespondAnys(ctx, t, version, anys...)
}

// RespondAnys is Respond with resources the caller packed, sent as they
// are: of another type than t, in Resource wrappers, or broken.
func (st *Stream) RespondAnys(ctx context.Context, t wire.Type, version string, resources ...*anypb.Any) (*discovery.DiscoveryResponse, error) {
	resp := &discovery.DiscoveryResponse{TypeUrl: t.URL, VersionInfo: version, Resources: resources, Nonce: st.NewNonce()}
	return resp, st.Send(ctx, resp)
}

// RespondDelta sends an incremental response of type t with a fresh nonce:
// system_version_info version, every resource at ResourceVersion(version,
// its name), and removed.
func (st *Stream) RespondDelta(ctx context.Context, t wire.Type, version string, resources []proto.Message, removed ...string) (*discovery.DeltaDiscoveryResponse, error) {
	anys, err := pack(resources)
	if err != nil {
		return nil, err
	}
	resp := &discovery.DeltaDiscoveryResponse{TypeUrl: t.URL, SystemVersionInfo: version, RemovedResources: removed, Nonce: st.NewNonce()}
	for i, a := range anys {
		name := wire.NameOf(resources[i])
		resp.Resources = append(resp.Resources, &discovery.Resource{Name: name, Version: ResourceVersion(version, name), Resource: a})
	}
	return resp, st.Send(ctx, resp)
}

// ResourceVersion is the per-resource version RespondDelta gives resource
// name in a response at version: never the system_version_info, so a
// client that mixes up the two (in initial_resource_versions, say) shows.
func ResourceVersion(version, name string) string { return version + "/" + name }

func pack(resources []proto.Message) ([]*anypb.Any, error) {
	anys := make([]*anypb.Any, len(resources))
	for i, m := range resources {
		a, err := anypb.New(m)
		if err != nil {
			return nil, fmt.Errorf("packing %T: %w", m, err)
		}
		anys[i] = a
	}
	return anys, nil
}

func typeOf(m proto.Message) string {
	switch m := m.(type) {
	case *discovery.DiscoveryResponse:
		return m.GetTypeUrl()
	case *discovery.DeltaDiscoveryResponse:
		return m.GetTypeUrl()
	}
	return ""
}
