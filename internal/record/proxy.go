// Package record is a transparent xDS proxy that records: a real client
// connects to it as to its management server, it dials the real server,
// forwards every discovery stream both ways with the bytes of every
// message unchanged, and records each message and stream event, with its
// time, in a transcript (through the same redaction as every artefact of
// the harness). `xdsconform record` runs it and writes the transcript as
// a transcript.File, which `xdsconform replay` and `xdsconform scaffold`
// read.
package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Defaults of the proxy's bounds.
const (
	// DefaultMaxConns is how many client connections the proxy holds at
	// once unless told otherwise: a recording is of one client, or a few.
	DefaultMaxConns = 16
	// DefaultHandshakeTimeout bounds a connection's HTTP/2 handshake:
	// a real client completes it in milliseconds.
	DefaultHandshakeTimeout = 3 * time.Second
	// DefaultMaxStreams is how many streams one client connection may
	// have open at once: ADS is one, per-type at most nine.
	DefaultMaxStreams = 64
)

// RecorderStream is the stream name of the proxy's own events in the
// transcript (connections accepted and refused).
const RecorderStream = "recorder"

// Event notes the proxy writes, which replay reads back. A stream's first
// event is NoteOpened followed by the full method name; its last says who
// ended it.
const (
	NoteOpened         = "opened "
	NoteClosedByServer = "closed by server: "
	NoteClosedByClient = "closed by client: "
	NoteHalfClosed     = "half-closed by client"
	NoteClosedByProxy  = "closed by recorder: "
)

// Options configure a recording proxy.
type Options struct {
	// Listen is where clients connect (HOST:PORT; port 0 picks one).
	Listen string
	// Upstream is the management server's HOST:PORT.
	Upstream string
	// Dial are the options of the connections to Upstream (credentials,
	// a dialer); the proxy adds its codec and message size limits.
	Dial []grpc.DialOption
	// MaxMessageSize bounds every message either way, in bytes (0:
	// wire.DefaultMaxRecvSize). A larger one ends its stream, on both
	// sides, with ResourceExhausted.
	MaxMessageSize int
	// MaxConns bounds the client connections open at once (0:
	// DefaultMaxConns); more are closed as soon as they are accepted.
	MaxConns int
	// HandshakeTimeout is how long a connection may take to send its
	// first bytes (HTTP/2's preface) and complete its handshake (0:
	// DefaultHandshakeTimeout). Until it has spoken a connection holds no
	// MaxConns slot, and one silent that long is closed, so connections
	// that never speak cannot lock real clients out.
	HandshakeTimeout time.Duration
	// MaxStreams bounds the streams of one client connection (0:
	// DefaultMaxStreams).
	MaxStreams int
	// MaxMessages stops recording after this many messages (0: no
	// limit); Full is closed then. Later messages are still forwarded.
	MaxMessages int
	// Transcript receives the recording; nil starts a new one, bounded
	// by the transcript caps.
	Transcript *transcript.Transcript
	// OnRecord, when set, is called after each entry the proxy records
	// (a message, before it is forwarded, or an event), from the
	// goroutine that recorded it: a progress line, or a test waiting for
	// the exchange it drives.
	OnRecord func(e transcript.Direction)
}

// Proxy is a running recording proxy.
type Proxy struct {
	opts     Options
	t        *transcript.Transcript
	lis      *limitListener
	g        *grpc.Server
	served   chan struct{}
	full     chan struct{}
	fullOnce sync.Once
	started  time.Time

	pumps sync.WaitGroup // client → server pumps, which may outlive their handler by a moment

	mu       sync.Mutex
	stopping bool
	upstream map[int]*grpc.ClientConn // per client connection
	opened   map[string]int           // streams opened per key, for names
	variants map[wire.Variant]bool    // variants the streams used
	closed   bool

	recorded  atomic.Int64 // messages recorded
	forwarded atomic.Int64 // messages forwarded, recorded or not
	bytes     atomic.Int64 // bytes forwarded
	streams   atomic.Int64 // streams opened
	conns     atomic.Int64 // connections accepted
	refused   atomic.Int64 // connections refused
	silent    atomic.Int64 // connections closed before they spoke
}

// Start listens on opts.Listen and forwards to opts.Upstream until Stop.
// It does not check that the upstream can be reached: a stream that
// cannot be opened there ends with the status the dial gave.
func Start(opts Options) (*Proxy, error) {
	if opts.Upstream == "" {
		return nil, errors.New("record: no upstream address")
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	opts.MaxMessageSize = wire.MaxRecvSize(opts.MaxMessageSize)
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = DefaultHandshakeTimeout
	}
	t := opts.Transcript
	if t == nil {
		t = transcript.New()
	}
	l, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("record: listening on %s: %w", opts.Listen, err)
	}
	p := &Proxy{
		opts: opts, t: t, served: make(chan struct{}), full: make(chan struct{}), started: time.Now(),
		upstream: map[int]*grpc.ClientConn{}, opened: map[string]int{}, variants: map[wire.Variant]bool{},
	}
	p.lis = newLimitListener(l, opts.MaxConns, opts.HandshakeTimeout)
	p.lis.onAccept = func(id int, remote string) {
		p.conns.Add(1)
		p.event(RecorderStream, fmt.Sprintf("connection %d accepted from %s", id, remote))
	}
	p.lis.onRefuse = func(remote string) {
		if p.refused.Add(1) <= maxRefusalEvents {
			p.event(RecorderStream, fmt.Sprintf("connection from %s refused: %d connections are open already (--max-conns)", remote, opts.MaxConns))
		}
	}
	p.lis.onSilent = func(remote string) {
		if p.silent.Add(1) <= maxRefusalEvents {
			p.event(RecorderStream, fmt.Sprintf("connection from %s closed: it sent nothing within %v", remote, opts.HandshakeTimeout))
		}
	}
	p.lis.onClose = p.connClosed
	go p.lis.serve()
	p.g = grpc.NewServer(
		grpc.UnknownServiceHandler(p.handle),
		grpc.ForceServerCodecV2(rawCodec{}),
		grpc.MaxRecvMsgSize(opts.MaxMessageSize),
		grpc.MaxConcurrentStreams(uint32(opts.MaxStreams)),
		// gRPC's default is 120 s: half-open connections would hold the
		// slots for that long.
		grpc.ConnectionTimeout(opts.HandshakeTimeout),
		// Stop returns once every handler has: nothing the proxy started
		// outlives it.
		grpc.WaitForHandlers(true),
	)
	go func() {
		defer close(p.served)
		_ = p.g.Serve(p.lis)
	}()
	return p, nil
}

// maxRefusalEvents bounds the events about refused connections: a client
// reconnecting in a loop would otherwise fill the transcript with them.
const maxRefusalEvents = 8

// Addr is the address clients connect to.
func (p *Proxy) Addr() string { return p.lis.Addr().String() }

// Full is closed once MaxMessages messages are recorded.
func (p *Proxy) Full() <-chan struct{} { return p.full }

// Transcript is the recording so far.
func (p *Proxy) Transcript() *transcript.Transcript { return p.t }

// Stats are counts of what the proxy did.
type Stats struct {
	// Connections accepted and refused (over MaxConns).
	Connections, Refused int64
	// Streams opened by clients.
	Streams int64
	// Recorded messages, and Forwarded ones (recorded or not), of Bytes.
	Recorded, Forwarded, Bytes int64
}

// Stats returns what the proxy has done so far.
func (p *Proxy) Stats() Stats {
	return Stats{Connections: p.conns.Load(), Refused: p.refused.Load(), Streams: p.streams.Load(),
		Recorded: p.recorded.Load(), Forwarded: p.forwarded.Load(), Bytes: p.bytes.Load()}
}

// Stop ends every stream (clients see Unavailable, servers a cancelled
// call), closes every connection and returns once every goroutine the
// proxy started has ended. It is idempotent.
func (p *Proxy) Stop() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed, p.stopping = true, true
	p.mu.Unlock()
	p.g.Stop()
	<-p.served
	p.pumps.Wait()
	p.mu.Lock()
	ups := p.upstream
	p.upstream = map[int]*grpc.ClientConn{}
	p.mu.Unlock()
	for _, c := range ups {
		_ = c.Close()
	}
}

// Variant is the one variant every stream used, and whether there was
// exactly one (a client may mix them; then the file names none).
func (p *Proxy) Variant() (wire.Variant, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.variants) != 1 {
		return wire.Variant{}, false
	}
	for v := range p.variants {
		return v, true
	}
	return wire.Variant{}, false
}

// File is the recording as a transcript file: side client (Sent is what
// the client sent), the variant when the streams tell it, every entry
// scrubbed of the secrets remembered so far.
func (p *Proxy) File(harnessVersion string) *transcript.File {
	f := &transcript.File{
		Recorded:       p.started.UTC(),
		HarnessVersion: harnessVersion,
		Side:           transcript.SideClient,
		Source:         fmt.Sprintf("xdsconform record: clients on %s, server at %s", p.Addr(), p.opts.Upstream),
		Entries:        transcript.ScrubEntries(p.t.Entries()),
	}
	if v, ok := p.Variant(); ok {
		f.Variant = v.String()
	}
	return f
}

// connClosed lets the upstream connection of a client connection go.
func (p *Proxy) connClosed(id int) {
	p.mu.Lock()
	c := p.upstream[id]
	delete(p.upstream, id)
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	p.event(RecorderStream, fmt.Sprintf("connection %d closed", id))
}

// upstreamFor returns the upstream connection of client connection id,
// dialling it on first use: each client connection gets its own, so the
// server sees the client's connections as the client made them.
func (p *Proxy) upstreamFor(id int) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopping {
		return nil, status.Error(codes.Unavailable, "the recording is stopping")
	}
	if c := p.upstream[id]; c != nil {
		return c, nil
	}
	opts := append(slices.Clone(p.opts.Dial),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(rawCodec{}), grpc.MaxCallRecvMsgSize(p.opts.MaxMessageSize), grpc.MaxCallSendMsgSize(p.opts.MaxMessageSize)))
	c, err := grpc.NewClient(p.opts.Upstream, opts...)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "xdsconform record: dialling %s: %v", p.opts.Upstream, err)
	}
	p.upstream[id] = c
	return c, nil
}

// kind is what a discovery method carries.
type kind struct {
	variant wire.Variant
	typ     *wire.Type // per-type streams
}

func (k kind) key() string {
	if k.typ == nil {
		return "ads"
	}
	return k.typ.Short
}

func (k kind) request() proto.Message {
	if k.variant.IsDelta() {
		return &discovery.DeltaDiscoveryRequest{}
	}
	return &discovery.DiscoveryRequest{}
}

func (k kind) response() proto.Message {
	if k.variant.IsDelta() {
		return &discovery.DeltaDiscoveryResponse{}
	}
	return &discovery.DiscoveryResponse{}
}

// Classify says what the gRPC method ("/service/Method") carries: one of
// the streaming discovery methods of ADS or of a per-type service.
func Classify(method string) (wire.Variant, *wire.Type, bool) {
	k, ok := classify(method)
	return k.variant, k.typ, ok
}

func classify(method string) (kind, bool) {
	if method == wire.MethodFor(wire.SotWADS, wire.Type{}) {
		return kind{variant: wire.SotWADS}, true
	}
	if method == wire.MethodFor(wire.DeltaADS, wire.Type{}) {
		return kind{variant: wire.DeltaADS}, true
	}
	for i := range wire.AllTypes {
		t := &wire.AllTypes[i]
		if t.SotWMethod != "" && method == wire.MethodFor(wire.SotWPerType, *t) {
			return kind{variant: wire.SotWPerType, typ: t}, true
		}
		if method == wire.MethodFor(wire.DeltaPerType, *t) {
			return kind{variant: wire.DeltaPerType, typ: t}, true
		}
	}
	return kind{}, false
}

// pstream is one proxied stream.
type pstream struct {
	name string
	kind kind
	ss   grpc.ServerStream
	cs   grpc.ClientStream

	// pumped is closed when the client → server pump returns.
	pumped chan struct{}

	// sent are the sizes of the last messages forwarded to the server:
	// a server that refuses one for its size says so in the words grpc-go
	// uses for the proxy's own limit, and only these tell the two apart
	// (wire.ClassifySizeRefusal).
	sent wire.SentSizes

	mu        sync.Mutex
	clientErr error // how the client side ended (not io.EOF), set before the upstream call is cancelled
}

// drainBound bounds how long a stream the client ended waits for its
// client → server pump to record what it had already read: the client's
// last messages belong before the close in the file. Once the client's
// side is gone the pump ends at once; the bound is for a transport that
// does not say so.
const drainBound = time.Second

func (s *pstream) setClientErr(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clientErr == nil {
		s.clientErr = err
	}
}

func (s *pstream) clientError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clientErr
}

// handle serves every stream a client opens.
func (p *Proxy) handle(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	k, ok := classify(method)
	if !ok {
		return status.Errorf(codes.Unimplemented, "xdsconform record forwards the xDS discovery streams only, not %s", transcript.Clip(method, 256))
	}
	remote := ""
	if pr, ok := peer.FromContext(ss.Context()); ok && pr.Addr != nil {
		remote = pr.Addr.String()
	}
	conn := p.lis.id(remote)
	p.mu.Lock()
	p.opened[k.key()]++
	p.variants[k.variant] = true
	name := fmt.Sprintf("%s#%d", k.key(), p.opened[k.key()])
	p.mu.Unlock()
	p.streams.Add(1)

	md, _ := metadata.FromIncomingContext(ss.Context())
	note := fmt.Sprintf("%s%s (connection %d from %s)", NoteOpened, method, conn, remote)
	if d := describe(md); d != "" {
		note += "; metadata: " + d
	}
	p.event(name, note)

	up, err := p.upstreamFor(conn)
	if err != nil {
		p.event(name, NoteClosedByProxy+transcript.StatusNote(err))
		return err
	}
	// The upstream call lives as long as the client's: the client's
	// deadline and cancellation reach the server through it.
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	ctx = metadata.NewOutgoingContext(ctx, forwardable(md))
	cs, err := up.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		p.event(name, NoteClosedByProxy+"could not open the stream on the server: "+transcript.StatusNote(err))
		return err
	}
	s := &pstream{name: name, kind: k, ss: ss, cs: cs, pumped: make(chan struct{})}
	p.pumps.Add(1)
	go func() {
		defer p.pumps.Done()
		defer close(s.pumped)
		if err := p.toServer(s); err != nil {
			s.setClientErr(err)
			cancel()
		}
	}()
	err, byClient := p.toClient(s)
	return p.ended(s, err, byClient, ss.Context())
}

// ended records how s ended and returns the status for the client.
func (p *Proxy) ended(s *pstream, err error, byClient bool, clientCtx context.Context) error {
	if clientCtx.Err() != nil {
		// The client's side is gone (it cancelled, its connection went,
		// or the recording is stopping): let the pump record the messages
		// it had read before the close is recorded.
		t := time.NewTimer(drainBound)
		select {
		case <-s.pumped:
		case <-t.C:
		}
		t.Stop()
	}
	p.mu.Lock()
	stopping := p.stopping
	p.mu.Unlock()
	cerr := s.clientError()
	switch {
	case stopping && (clientCtx.Err() != nil || cerr != nil || status.Code(err) == codes.Canceled):
		p.event(s.name, NoteClosedByProxy+"the recording stopped")
		return status.Error(codes.Unavailable, "xdsconform record: the recording stopped")
	case cerr != nil && wire.OwnRecvLimit(cerr):
		// The client's side is the proxy's server side, whose receive
		// cannot carry a status from the client: the proxy's own limit.
		p.event(s.name, NoteClosedByProxy+fmt.Sprintf("the client sent a message over the recorder's limit of %d bytes (--max-message-size): %s", p.opts.MaxMessageSize, status.Convert(cerr).Message()))
		return cerr
	case cerr != nil || byClient || clientCtx.Err() != nil:
		why := cerr
		if why == nil {
			why = err
		}
		if why == nil || status.Code(why) == codes.Canceled && clientCtx.Err() != nil {
			why = status.FromContextError(clientCtx.Err()).Err()
		}
		p.event(s.name, NoteClosedByClient+transcript.StatusNote(why))
		return why
	case errors.Is(err, io.EOF):
		p.event(s.name, NoteClosedByServer+transcript.StatusNote(err)+trailerNote(s.cs))
		return nil
	}
	refusal, sized := wire.ClassifySizeRefusal(err, &s.sent)
	switch {
	case sized && refusal.Ours:
		// The proxy's own limit ended the stream: its status says so,
		// since it is the proxy, not the server, that ended it.
		p.event(s.name, NoteClosedByProxy+fmt.Sprintf("the server sent a message over the recorder's limit of %d bytes (--max-message-size): %s", p.opts.MaxMessageSize, status.Convert(err).Message()))
		return status.Errorf(codes.ResourceExhausted, "xdsconform record: the server sent a message over the recorder's limit of %d bytes (--max-message-size)", p.opts.MaxMessageSize)
	case sized:
		// The server refused a message the client sent, for its size:
		// its own status goes to the client as it was, and the recording
		// says whose limit it was.
		p.event(s.name, NoteClosedByServer+transcript.StatusNote(err)+trailerNote(s.cs)+"; "+serverRefused(refusal))
		return err
	default:
		p.event(s.name, NoteClosedByServer+transcript.StatusNote(err)+trailerNote(s.cs))
		return err
	}
}

// serverRefused says, for the recording, that the server refused a
// message the client sent as too large for the server's own limit.
func serverRefused(r wire.SizeRefusal) string {
	msg := "the server refused a message the client sent, as too large for it"
	if r.Size > 0 {
		msg = fmt.Sprintf("the server refused a message of %d bytes the client sent", r.Size)
		if r.Limit > 0 {
			msg += fmt.Sprintf(", over the server's own receive limit of %d bytes", r.Limit)
		}
	}
	return msg + " (not the recorder's --max-message-size)"
}

// trailerNote quotes the server's trailer metadata, if any.
func trailerNote(cs grpc.ClientStream) string {
	if d := describe(cs.Trailer()); d != "" {
		return "; trailer: " + d
	}
	return ""
}

// toServer forwards the client's messages until the client half-closes
// (nil: the server is told by CloseSend) or its side fails (the error).
func (p *Proxy) toServer(s *pstream) error {
	for {
		f := &frame{}
		if err := s.ss.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				p.event(s.name, NoteHalfClosed)
				return s.cs.CloseSend()
			}
			return err
		}
		p.record(s, transcript.Sent, f)
		s.sent.Add(len(f.data))
		if err := s.cs.SendMsg(f); err != nil {
			// The server ended the stream: toClient reads how.
			return nil
		}
	}
}

// toClient forwards the server's headers, messages and trailer until the
// stream ends; it returns how, and whether it was the client's side that
// failed.
func (p *Proxy) toClient(s *pstream) (error, bool) {
	if hdr, err := s.cs.Header(); err == nil {
		if fwd := forwardable(hdr); len(fwd) > 0 {
			p.event(s.name, "server headers: "+describe(fwd))
			if err := s.ss.SendHeader(fwd); err != nil {
				return err, true
			}
		}
	}
	for {
		f := &frame{}
		if err := s.cs.RecvMsg(f); err != nil {
			s.ss.SetTrailer(forwardable(s.cs.Trailer()))
			return err, false
		}
		p.record(s, transcript.Received, f)
		if err := s.ss.SendMsg(f); err != nil {
			return err, true
		}
	}
}

// record decodes f for the transcript; the bytes forwarded are f's, not
// a re-encoding. A message that does not decode is forwarded all the
// same, and the transcript says so.
func (p *Proxy) record(s *pstream, dir transcript.Direction, f *frame) {
	p.forwarded.Add(1)
	p.bytes.Add(int64(len(f.data)))
	if max := int64(p.opts.MaxMessages); max > 0 {
		n := p.recorded.Add(1)
		if n >= max {
			p.fullOnce.Do(func() { close(p.full) })
		}
		if n > max {
			return
		}
	} else {
		p.recorded.Add(1)
	}
	m := s.kind.response()
	if dir == transcript.Sent {
		m = s.kind.request()
	}
	if err := proto.Unmarshal(f.data, m); err != nil {
		p.event(s.name, fmt.Sprintf("%s %d bytes that do not decode as %s: %v (forwarded as they were)",
			dir, len(f.data), m.ProtoReflect().Descriptor().Name(), err))
		return
	}
	p.t.Record(s.name, dir, m)
	p.recordedOne(dir)
}

// event records a stream event.
func (p *Proxy) event(stream, note string) {
	p.t.Event(stream, note)
	p.recordedOne(transcript.Event)
}

func (p *Proxy) recordedOne(dir transcript.Direction) {
	if p.opts.OnRecord != nil {
		p.opts.OnRecord(dir)
	}
}
