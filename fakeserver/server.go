// Package fakeserver plays the management server against an xDS client
// under test. One listener serves ADS and every per-type service, SotW and
// Delta; every stream the client opens is handed to the scenario, which
// waits for requests (bounded), sends any response it likes, including
// deliberately wrong ones, and can end the stream to force a reconnect.
// Every message and stream event goes into the transcript, and a few
// global invariants are checked on every request.
package fakeserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Options configure a fake management server.
type Options struct {
	// Addr is the address to listen on; default 127.0.0.1:0.
	Addr string
	// Variant is what the client is expected to speak. A stream opened on
	// another method (delta instead of SotW, per-type instead of ADS) is
	// recorded as a violation, though it is still served.
	Variant wire.Variant
	// Timeout bounds every wait for an expected stream or request.
	Timeout time.Duration
	// Quiet is the window in which a must-not-happen request is watched for.
	Quiet time.Duration
	// Transcript receives every message; nil records nothing.
	Transcript *transcript.Transcript
	// MaxRecvSize is the largest request, in bytes, accepted from the
	// client (0: wire.DefaultMaxRecvSize).
	MaxRecvSize int
	// OnSend, if set, is called after each message the server sent the
	// client (a response, or the status a stream is ended with), from
	// the goroutine that sent it: the engine charges a target's death to
	// the pair that last sent it a message (engine.T.SentToTarget).
	OnSend func()
}

// ErrTimeout is returned (wrapped) when an expected stream or request did
// not arrive within Options.Timeout.
var ErrTimeout = errors.New("timed out")

// ErrServerClosed is returned by waits once the server is closed.
var ErrServerClosed = errors.New("fake server closed")

// Violation is a global invariant the client broke.
type Violation struct {
	// Rule is the catalogue ID, e.g. "STREAM-6", or "variant" for a stream
	// opened on a method of another variant than the one under test.
	Rule string
	// Stream names the stream, as in the transcript.
	Stream string
	// Message says what was wrong.
	Message string
}

// String renders the violation for reports.
func (v Violation) String() string { return fmt.Sprintf("%s on %s: %s", v.Rule, v.Stream, v.Message) }

// Server is one fake management server. Its methods are safe for
// concurrent use.
type Server struct {
	opts Options
	lis  net.Listener
	addr string // lis's address, kept through an Outage
	// g serves the gRPC variants, done is closed when its Serve returns;
	// both are replaced by an Outage, under mu.
	g    *grpc.Server
	done chan struct{}

	mu         sync.Mutex
	notify     chan struct{} // closed and replaced whenever a stream opens
	streams    []*Stream
	violations []Violation
	perRule    map[string]int // violations seen per rule, kept or not
	queued     int64          // bytes of requests kept (see QueueBytes)
	borrowed   int64          // the part of queued borrowed from the run's queue budget
	closed     bool

	unsupported *unsupported // calls on methods not served (unsupported.go)

	rest        *http.Server       // the REST variant's server, nil on gRPC (rest.go)
	restStreams map[string]*Stream // REST: the stream of each type's polls
}

// Bounds on what the server keeps. A client flooding requests, or
// breaking an invariant on every one, must cost a few lines and a bounded
// queue, not one line and one request per message.
const (
	// QueueBytes bounds the requests one server keeps for its scenario,
	// all streams together, counted as their wire size plus
	// requestOverhead each. Past it a request is still checked against
	// every invariant and recorded in the transcript, but not queued, and
	// neither is any later one on its stream (so a scenario never sees a
	// later request as the next one); a scenario waiting for one gets an
	// ErrOverflow. The server's first request is kept whatever its size
	// (the receive limit bounds it).
	QueueBytes = 4 << 20
	// queueFloor is the part of QueueBytes a server always has; the rest
	// it borrows from the run's queue budget (Options.Transcript's
	// QueueBudget), so that many pairs at once cannot each queue
	// QueueBytes.
	queueFloor      = 64 << 10
	requestOverhead = 256
	// maxStreams bounds the streams one server keeps; a client that
	// opens more (in a loop, say) has the rest refused.
	maxStreams = 1024
	// maxPerRule bounds how many violations of one invariant are kept;
	// Violations says how many more there were.
	maxPerRule = 3
	// violationBytes bounds a violation's message (it quotes what the
	// client sent).
	violationBytes = 1 << 10
)

// ErrOverflow is returned (wrapped) by a wait whose stream stopped
// keeping requests (see QueueBytes): what the scenario waits for may have
// been among them.
var ErrOverflow = errors.New("the harness's request queue is full")

// reserve books n bytes of queue for a request; it reports whether they
// were available and whether the server is closed (then nothing is kept,
// and nothing is owed).
func (s *Server) reserve(n int64) (ok, closed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, true
	}
	if s.queued == 0 {
		// The first request is kept whatever its size, which the
		// receive limit bounds: a scenario can always see one.
		s.queued = n
		return true, false
	}
	if s.queued+n > QueueBytes {
		return false, false
	}
	borrow := s.queued + n - max(queueFloor, s.queued)
	if borrow > 0 {
		if !s.opts.Transcript.QueueBudget().Take(borrow) {
			return false, false
		}
		s.borrowed += borrow
	}
	s.queued += n
	return true, false
}

// Queued is how many bytes of requests the server keeps, and how many of
// them it borrowed from the run's queue budget.
func (s *Server) Queued() (bytes, borrowed int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queued, s.borrowed
}

// Start listens and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Quiet <= 0 {
		opts.Quiet = 300 * time.Millisecond
	}
	lis, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("fake management server: listening on %s: %w", opts.Addr, err)
	}
	s := &Server{opts: opts, lis: lis, addr: lis.Addr().String(), done: make(chan struct{}), notify: make(chan struct{}), unsupported: newUnsupported()}
	if opts.Variant.IsREST() {
		s.startREST()
		return s, nil
	}
	s.g = s.serveGRPC(lis, s.done)
	return s, nil
}

// serveGRPC serves the gRPC services on lis until stopped, closing done
// when Serve returns.
func (s *Server) serveGRPC(lis net.Listener, done chan struct{}) *grpc.Server {
	g := grpc.NewServer(grpc.UnknownServiceHandler(s.serveUnknown), grpc.MaxRecvMsgSize(wire.MaxRecvSize(s.opts.MaxRecvSize)))
	wire.RegisterServices(g, wire.Handlers{SotW: s.serveSotW, Delta: s.serveDelta})
	go func() {
		defer close(done)
		_ = g.Serve(lis) // returns when Close (or an Outage) stops the server
	}()
	return g
}

// Addr is the host:port clients connect to.
func (s *Server) Addr() string { return s.addr }

// Outage makes the server unreachable for a while, as a management server
// that restarts is: every stream and connection ends, and the next
// refusals connections the client makes are accepted and closed at once,
// a dial that fails; then the server serves again on the same address,
// its streams and transcript going on. Counting the client's attempts,
// not waiting a while, ends the outage: it lasts until the client has
// tried and failed refusals times, however slow the machine, or until
// within passed (a client that does not try again is not waited for: the
// scenario's next step finds it gone). It returns how many connections it
// refused, once the server serves again; an error when ctx ends or the
// server is closed meanwhile (it then stays down).
func (s *Server) Outage(ctx context.Context, refusals int, within time.Duration) (int, error) {
	if s.rest != nil {
		return 0, errors.New("fake management server: an outage is of the gRPC variants")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, errors.New("fake management server: closed")
	}
	g, done := s.g, s.done
	open := slices.Clone(s.streams)
	s.mu.Unlock()
	// Each stream ends as ended by the harness (UNAVAILABLE), so the
	// transcript says who ended it; then the connections go.
	for _, st := range open {
		if st.Err() == nil {
			if err := st.End(ctx, status.Error(codes.Unavailable, "xdsconform: management server unreachable (an outage)")); err != nil {
				return 0, err
			}
		}
	}
	g.Stop() // closes the listener and every connection
	<-done
	refused, err := s.refuse(ctx, refusals, within)
	if err != nil {
		return refused, err
	}
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		return refused, fmt.Errorf("fake management server: listening on %s again after the outage: %w", s.addr, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = lis.Close()
		return refused, errors.New("fake management server: closed during the outage")
	}
	s.lis, s.done = lis, make(chan struct{})
	s.g = s.serveGRPC(lis, s.done)
	return refused, nil
}

// refuse listens on the server's address and closes the next n
// connections as they come, for at most within; it returns how many it
// closed.
func (s *Server) refuse(ctx context.Context, n int, within time.Duration) (int, error) {
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		return 0, fmt.Errorf("fake management server: listening on %s to refuse connections: %w", s.addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = lis.Close() })
	defer stop()
	defer lis.Close()
	refused := 0
	for refused < n {
		conn, err := lis.Accept()
		if err != nil {
			switch {
			case errors.Is(ctx.Err(), context.DeadlineExceeded):
				return refused, nil // the client did not try again in time
			case ctx.Err() != nil:
				return refused, fmt.Errorf("fake management server: during the outage: %w", context.Cause(ctx))
			}
			return refused, fmt.Errorf("fake management server: refusing connections: %w", err)
		}
		_ = conn.Close()
		refused++
	}
	return refused, nil
}

// Close ends every stream (clients see Unavailable) and stops listening.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.wake()
	s.mu.Unlock()
	if s.rest != nil {
		s.closeREST()
	} else {
		s.mu.Lock()
		g, done := s.g, s.done
		s.mu.Unlock()
		g.Stop()
		<-done
	}
	// The requests stay readable; what they borrowed goes back to the run
	// for the pairs still to come.
	s.mu.Lock()
	s.opts.Transcript.QueueBudget().Give(s.borrowed)
	s.borrowed = 0
	s.mu.Unlock()
}

func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Violations returns the global invariants broken so far. An invariant
// broken over and over (a client flooding bad requests) is listed
// maxPerRule times, the last entry saying how many more there were.
func (s *Server) Violations() []Violation {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.violations)
	for i := len(out) - 1; i >= 0; i-- {
		rule := out[i].Rule
		if n := s.perRule[rule]; n > maxPerRule && !slices.ContainsFunc(out[i+1:], func(v Violation) bool { return v.Rule == rule }) {
			out[i].Message += fmt.Sprintf(" (and %d more violations of %s)", n-maxPerRule, rule)
		}
	}
	return out
}

// Streams returns every stream opened so far, oldest first.
func (s *Server) Streams() []*Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.streams)
}

// StreamFor waits for a stream carrying type t whose ID is greater than
// after (0: any), on the method the variant prescribes: the ADS stream for
// aggregated variants, t's own service otherwise. It returns the oldest
// such stream, whether or not it is still open.
func (s *Server) StreamFor(ctx context.Context, t wire.Type, after int) (*Stream, error) {
	return s.waitStream(ctx, s.opts.Timeout, func(st *Stream) bool {
		return st.ID > after && st.carries(t, s.opts.Variant)
	})
}

// FirstStream waits up to within for the client's first stream of any kind,
// so a client that never connects is told apart from one that connects and
// then misbehaves.
func (s *Server) FirstStream(ctx context.Context, within time.Duration) (*Stream, error) {
	return s.waitStream(ctx, within, func(*Stream) bool { return true })
}

// ExpectNoStream watches for the quiet window and returns the first stream
// opened in it with an ID greater than after, or nil when none was. A
// watch cut short (ctx done, the server closed) is an error, not silence.
func (s *Server) ExpectNoStream(ctx context.Context, after int) (*Stream, error) {
	st, err := s.waitStream(ctx, s.opts.Quiet, func(st *Stream) bool { return st.ID > after })
	if errors.Is(err, ErrTimeout) {
		return nil, nil // the window passed quietly
	}
	return st, err
}

// NextStream waits, for within of the harness's own running time, for a
// stream with an ID greater than after.
func (s *Server) NextStream(ctx context.Context, after int, within time.Duration) (*Stream, error) {
	return s.waitStream(ctx, within, func(st *Stream) bool { return st.ID > after })
}

// NextStreamCarrying waits up to within for the next stream with an ID
// greater than after that carries t (the ADS stream, or t's own).
func (s *Server) NextStreamCarrying(ctx context.Context, t wire.Type, after int, within time.Duration) (*Stream, error) {
	return s.waitStream(ctx, within, func(st *Stream) bool { return st.ID > after && st.carries(t, s.opts.Variant) })
}

// WaitStream waits, until ctx ends, for a stream with an ID greater than
// after; it returns nil, nil when ctx ends first or the server closes.
func (s *Server) WaitStream(ctx context.Context, after int) (*Stream, error) {
	st, err := s.waitStream(ctx, 0, func(st *Stream) bool { return st.ID > after })
	if err != nil {
		return nil, nil // no stream came while anyone was waiting: no error
	}
	return st, nil
}

// waitStream waits for a stream that matches, within (zero: until ctx
// ends).
//
// The wait is of the harness's own running time (lag.Deadline): a client
// is given up on only once it had all of it, however long the harness was
// stalled meanwhile, and a quiet window watches as long on a busy machine
// as on an idle one.
func (s *Server) waitStream(ctx context.Context, within time.Duration, match func(*Stream) bool) (*Stream, error) {
	deadline := lag.NewDeadline(within)
	for {
		s.mu.Lock()
		for _, st := range s.streams {
			if match(st) {
				s.mu.Unlock()
				return st, nil
			}
		}
		closed, notify := s.closed, s.notify
		s.mu.Unlock()
		if closed {
			return nil, ErrServerClosed
		}
		var expired <-chan time.Time
		var timer *time.Timer
		if within > 0 {
			left := deadline.Left()
			if left <= 0 {
				return nil, fmt.Errorf("no matching stream opened within %s: %w", wording.Duration(time.Since(deadline.Start())), ErrTimeout)
			}
			timer = time.NewTimer(left)
			expired = timer.C
		}
		select {
		case <-notify:
		case <-expired:
		case <-ctx.Done():
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("waiting for a stream: %w", ctx.Err())
		}
	}
}

// wake tells waiters a stream opened; s.mu must be held.
func (s *Server) wake() {
	close(s.notify)
	s.notify = make(chan struct{})
}

// violate records a broken invariant: the first maxPerRule of each rule
// in full (message cut to violationBytes), in the list and the transcript,
// the rest only counted.
func (s *Server) violate(st *Stream, rule, format string, args ...any) {
	s.mu.Lock()
	if s.perRule == nil {
		s.perRule = map[string]int{}
	}
	s.perRule[rule]++
	keep := s.perRule[rule] <= maxPerRule
	s.mu.Unlock()
	if !keep {
		return
	}
	v := Violation{Rule: rule, Stream: st.Name, Message: transcript.Clip(fmt.Sprintf(format, args...), violationBytes)}
	s.opts.Transcript.Event(st.Name, "violation: "+v.String())
	s.mu.Lock()
	s.violations = append(s.violations, v)
	s.mu.Unlock()
}

// addStream registers a stream the client opened; it reports false,
// having recorded why, when the server already has maxStreams.
func (s *Server) addStream(st *Stream) bool {
	s.mu.Lock()
	if len(s.streams) >= maxStreams {
		s.mu.Unlock()
		s.opts.Transcript.Unkept("server", 0, fmt.Sprintf("the client opened more than %d streams: the rest are refused (ResourceExhausted) and not kept", maxStreams))
		return false
	}
	st.ID = len(s.streams) + 1
	st.Name = s.opts.Transcript.StreamName(fmt.Sprintf("%s#%d", st.method(), st.ID))
	s.streams = append(s.streams, st)
	s.wake()
	s.mu.Unlock()
	s.opts.Transcript.Event(st.Name, "opened by client")
	if want := s.opts.Variant; (want.Protocol == wire.Delta) != st.Delta || (want.Transport == wire.ADS) != (st.Service == nil) || want.IsREST() != st.REST {
		s.violate(st, "variant", "the client opened %s, but the variant under test is %s (does the client speak it?)", st.method(), want)
	}
	return true
}

// sent tells OnSend, if set, that a message went out to the client.
func (s *Server) sent() {
	if s.opts.OnSend != nil {
		s.opts.OnSend()
	}
}
