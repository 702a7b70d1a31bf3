package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// ServerOptions configure a replay against a management server.
type ServerOptions struct {
	// Against describes the target, for the result.
	Against string
	// Connect opens a new connection to the target; one per recorded
	// client connection.
	Connect func() (*grpc.ClientConn, error)
	// Metadata is sent on every stream (the recording's own metadata is
	// not: its secrets were redacted).
	Metadata map[string]string
	// Timeout bounds each wait for a response the recording saw, and for
	// a stream the recording's server closed to close.
	Timeout time.Duration
	// Quiet is the window after the last entry in which a response the
	// recording did not have counts as a difference.
	Quiet time.Duration
	// Bodies compares the resources' bodies too (after redaction).
	Bodies bool
	// NodeID, when set, replaces node.id in every request that carries a
	// node: the target may know the client under another id.
	NodeID string
	// Transcript receives the replay's own wire record; nil: a new one.
	Transcript *transcript.Transcript
	// Fixture, when set, is the target's fixture API: the replay resets
	// ConfigNode's resources, sets the configuration the recording shows
	// the server held when it started, and makes each change the
	// recording shows before the response that shows it (Plan.Config).
	// Without it, a recording that shows changes gets a note saying that
	// differences from the first on may come from them.
	Fixture fixture.Fixture
	// ConfigNode is the node the fixture configures: the recorded
	// client's (NodeID, when set, is what the target knows it as).
	ConfigNode string
}

// ErrUnreachable marks a replay that could not reach its target: a
// server it could not connect to, a client that never connected.
var ErrUnreachable = errors.New("target unreachable")

// DefaultTimeout and DefaultQuiet are the waits of a replay unless
// configured, as the suites' --timeout and --quiet.
const (
	DefaultTimeout = 5 * time.Second
	DefaultQuiet   = 1500 * time.Millisecond
)

// liveConn is one recorded client connection, replayed on a connection
// of its own by a fake client.
type liveConn struct {
	conn    *grpc.ClientConn
	client  *fakeclient.Client
	variant wire.Variant
	// current is, per fake-client stream key ("ads" or a type), the
	// recorded stream it stands for now.
	current map[string]*Stream
	// types are the types seen per recorded stream, for the waits that
	// take any of them.
	types map[*Stream][]wire.Type
}

// serverReplay is the state of one replay against a server.
type serverReplay struct {
	ctx   context.Context
	opts  ServerOptions
	plan  *Plan
	res   *Result
	conns map[int]*liveConn
	// nonces maps, per recorded stream, a recorded response nonce to the
	// target's nonce of the response matched to it.
	nonces map[*Stream]map[string]string
	// missed are, per recorded stream, the recorded nonces of responses
	// the target never sent; latest the target's last nonce per stream
	// and type, echoed in their place as a client would.
	missed map[*Stream]map[string]bool
	latest map[*Stream]map[string]string
	// versions maps a recorded version_info (SotW) or
	// system_version_info (delta) per type to the target's.
	versions map[string]map[string]string
	// resVersions maps a delta resource's recorded version to the
	// target's, per type and name.
	resVersions map[string]map[string]map[string]string
	// ended are recorded streams whose live stream the target closed.
	ended  map[*Stream]error
	filler Filler
	// changes are the configuration changes to make before each
	// response, by step index (with a fixture only).
	changes map[int][]ConfigChange
}

// Server replays the client's side of plan against a management server:
// it opens the recorded streams, in the recorded variant, on one
// connection per recorded client connection, sends the recorded requests
// in order (ACK and NACK nonces and versions rewritten to the target's),
// waits for each response the recording saw and compares it, and checks
// that streams end as they did. Differences are the result's; an error
// is a replay that could not be made (a transcript it cannot replay, a
// target it cannot connect to, the context ended).
func Server(ctx context.Context, plan *Plan, opts ServerOptions) (*Result, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Quiet <= 0 {
		opts.Quiet = DefaultQuiet
	}
	if opts.Transcript == nil {
		opts.Transcript = transcript.New()
	}
	if _, err := plan.Variant(); err != nil {
		return nil, err
	}
	r := &serverReplay{
		ctx: ctx, opts: opts, plan: plan,
		res:         &Result{Against: opts.Against, Notes: slices.Clone(plan.Notes), Transcript: opts.Transcript},
		conns:       map[int]*liveConn{},
		nonces:      map[*Stream]map[string]string{},
		missed:      map[*Stream]map[string]bool{},
		latest:      map[*Stream]map[string]string{},
		versions:    map[string]map[string]string{},
		resVersions: map[string]map[string]map[string]string{},
		ended:       map[*Stream]error{},
	}
	defer r.close()
	if err := r.configure(); err != nil {
		return nil, err
	}
	for _, st := range plan.Steps {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay interrupted at entry %d: %w", st.Index, err)
		}
		if err := r.step(st); err != nil {
			return nil, err
		}
		r.res.Steps++
	}
	if err := r.quiet(); err != nil {
		return nil, err
	}
	return r.res, nil
}

func (r *serverReplay) close() {
	for _, lc := range r.conns {
		lc.client.Close()
		_ = lc.conn.Close()
	}
}

// conn is the live connection of recorded connection s.Conn.
func (r *serverReplay) conn(s *Stream) (*liveConn, error) {
	if lc := r.conns[s.Conn]; lc != nil {
		if lc.variant != s.Variant {
			return nil, fmt.Errorf("recorded connection %d mixes %s and %s streams: replay one variant per connection", s.Conn, lc.variant, s.Variant)
		}
		return lc, nil
	}
	conn, err := r.opts.Connect()
	if err != nil {
		return nil, fmt.Errorf("%w: connecting to %s: %w", ErrUnreachable, r.opts.Against, err)
	}
	lc := &liveConn{conn: conn, variant: s.Variant, current: map[string]*Stream{}, types: map[*Stream][]wire.Type{}}
	lc.client = fakeclient.New(r.ctx, conn, s.Variant, fakeclient.Options{
		Metadata: r.opts.Metadata, Timeout: r.opts.Timeout, Transcript: r.opts.Transcript,
	})
	r.conns[s.Conn] = lc
	return lc, nil
}

// key is the fake client's stream key of s.
func key(s *Stream) string {
	if s.Type == nil {
		return "ads"
	}
	return s.Type.Short
}

// typeOf is the wire type a step's message is of, for the fake client:
// the stream's own for a per-type stream, the message's type URL on ADS.
func typeOf(st Step) (wire.Type, bool) {
	if st.Stream.Type != nil {
		return *st.Stream.Type, true
	}
	return wire.TypeByURL(st.TypeURL)
}

// anyType is a type the fake client routes to s's live stream, whatever
// the message: for ADS every type shares the stream.
func anyType(s *Stream) wire.Type {
	if s.Type != nil {
		return *s.Type
	}
	return wire.Listener
}

func (r *serverReplay) step(st Step) error {
	lc, err := r.conn(st.Stream)
	if err != nil {
		return err
	}
	switch st.Kind {
	case Request:
		return r.request(lc, st)
	case Response:
		r.response(lc, st)
	case ServerClosed:
		r.serverClosed(lc, st)
	case ClientClosed, HalfClosed:
		r.clientClosed(lc, st)
	case Stopped:
	}
	return nil
}

// configure reads the configuration the recording shows. With a fixture
// it sets the initial configuration (after a reset of the node) and keeps
// the changes for the responses that show them; without one, changes get
// a note: the target cannot make them by itself.
func (r *serverReplay) configure() error {
	cfg := r.plan.Config()
	if r.opts.Fixture == nil {
		if len(cfg.Changes) > 0 {
			r.res.note("the recording shows the server's configuration changing while it ran: %s. A replay without the fixture (--fixture) cannot make those changes, so the differences from entry %d on may be theirs, not the target's",
				cfg.Summary(), cfg.Changes[0].Before)
		}
		return nil
	}
	if cfg.Partial {
		r.res.note("some responses were kept in part (the transcript's size bound): the resources they carry are set as kept, and may differ from what the server sent")
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	if err := r.opts.Fixture.Reset(ctx, r.opts.ConfigNode); err != nil {
		return fmt.Errorf("%w: the fixture could not reset node %q: %v", ErrUnreachable, r.opts.ConfigNode, err)
	}
	for _, c := range cfg.Initial {
		if err := r.apply(c); err != nil {
			return fmt.Errorf("%w: setting the configuration the recording started with: %v", ErrUnreachable, err)
		}
	}
	r.changes = map[int][]ConfigChange{}
	for _, c := range cfg.Changes {
		r.changes[c.Before] = append(r.changes[c.Before], c)
	}
	if n := len(cfg.Initial); n > 0 {
		r.res.note("set through the fixture, for node %q: the %s the recording shows the server held, and then, before the response that shows each, the %s made while it ran", r.opts.ConfigNode,
			wording.Count(n, "resource", "resources"), wording.Count(len(cfg.Changes), "change", "changes"))
	}
	return nil
}

// change makes the configuration changes the recording shows before the
// response at step index.
func (r *serverReplay) change(index int) error {
	for _, c := range r.changes[index] {
		if err := r.apply(c); err != nil {
			return fmt.Errorf("the fixture could not make the change the recording shows before this response: %v", err)
		}
	}
	return nil
}

// apply sets or deletes one resource through the fixture.
func (r *serverReplay) apply(c ConfigChange) error {
	t, ok := wire.TypeByURL(c.TypeURL)
	if !ok {
		return fmt.Errorf("%s %q: a type the harness does not know", short(c.TypeURL), c.Name)
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.opts.Timeout)
	defer cancel()
	if c.Resource == nil {
		if err := r.opts.Fixture.Delete(ctx, r.opts.ConfigNode, t, c.Name); err != nil {
			return fmt.Errorf("deleting %s %q: %w", t.Short, c.Name, err)
		}
		return nil
	}
	if _, err := r.opts.Fixture.Set(ctx, r.opts.ConfigNode, t, c.Name, c.Resource); err != nil {
		return fmt.Errorf("setting %s %q: %w", t.Short, c.Name, err)
	}
	return nil
}

// use makes s the recorded stream lc's live stream stands for, ending
// the live stream of the one before (as the recording's client opened a
// new stream after the old one).
func (r *serverReplay) use(lc *liveConn, s *Stream, at int) {
	k := key(s)
	prev := lc.current[k]
	if prev == s {
		return
	}
	if prev != nil {
		r.drain(lc, prev, at, "before the recording's next stream "+s.Name)
		lc.client.Reconnect(anyType(prev))
	}
	lc.current[k] = s
}

// request sends a recorded request, its nonce and versions rewritten.
func (r *serverReplay) request(lc *liveConn, st Step) error {
	s := st.Stream
	r.use(lc, s, st.Index)
	if err := r.ended[s]; err != nil {
		return nil // said already: the target closed the stream
	}
	t, ok := typeOf(st)
	if !ok {
		// An unknown type on ADS: it still goes on the one stream.
		t = anyType(s)
	}
	m := proto.Clone(st.Message)
	r.rewrite(s, m)
	if _, err := r.filler.Fill(m); err != nil {
		return fmt.Errorf("entry %d: %w", st.Index, err)
	}
	var err error
	switch req := m.(type) {
	case *discovery.DiscoveryRequest:
		err = lc.client.SendSotW(t, req)
	case *discovery.DeltaDiscoveryRequest:
		err = lc.client.SendDelta(t, req)
	}
	if err == nil {
		if !slices.ContainsFunc(lc.types[s], func(x wire.Type) bool { return x.URL == t.URL }) {
			lc.types[s] = append(lc.types[s], t)
		}
		return nil
	}
	var closed *fakeclient.ClosedError
	if errors.As(err, &closed) {
		r.ended[s] = closed
		r.res.differ(st.Index, s.Name, "the target had closed the stream (%s) where the recording's was open for this request", transcript.StatusNote(closed.Err))
		return nil
	}
	if r.ctx.Err() != nil {
		return fmt.Errorf("replay interrupted at entry %d: %w", st.Index, r.ctx.Err())
	}
	return fmt.Errorf("entry %d: sending the request: %w", st.Index, err)
}

// rewrite gives a recorded request the target's nonce and versions where
// the recording's answered to responses the target answered too.
func (r *serverReplay) rewrite(s *Stream, m proto.Message) {
	nonce := func(n string, typeURL string) string {
		if n == "" {
			return ""
		}
		if live, ok := r.nonces[s][n]; ok {
			return live
		}
		if r.missed[s][n] {
			if live := r.latest[s][typeURL]; live != "" {
				return live
			}
		}
		return n
	}
	node := func(n *core.Node) {
		if n != nil && r.opts.NodeID != "" {
			n.Id = r.opts.NodeID
		}
	}
	switch req := m.(type) {
	case *discovery.DiscoveryRequest:
		req.ResponseNonce = nonce(req.GetResponseNonce(), req.GetTypeUrl())
		if v, ok := r.versions[req.GetTypeUrl()][req.GetVersionInfo()]; ok && req.GetVersionInfo() != "" {
			req.VersionInfo = v
		}
		node(req.GetNode())
	case *discovery.DeltaDiscoveryRequest:
		req.ResponseNonce = nonce(req.GetResponseNonce(), req.GetTypeUrl())
		for name, v := range req.GetInitialResourceVersions() {
			if live, ok := r.resVersions[req.GetTypeUrl()][name][v]; ok {
				req.InitialResourceVersions[name] = live
			}
		}
		node(req.GetNode())
	}
}

// response waits for the target's next response of the recorded one's
// type on its stream and compares them.
func (r *serverReplay) response(lc *liveConn, st Step) {
	s := st.Stream
	r.use(lc, s, st.Index)
	if err := r.ended[s]; err != nil {
		return
	}
	rec := st.Message
	recNonce := nonceOf(rec)
	t, ok := wire.TypeByURL(st.TypeURL)
	if !ok {
		r.res.note("entry %d: a response of type %s, which the harness does not know: not compared", st.Index, short(st.TypeURL))
		return
	}
	if err := r.change(st.Index); err != nil {
		r.res.differ(st.Index, s.Name, "%v", err)
	}
	live, err := lc.client.ExpectWithin(t, r.opts.Timeout)
	if err != nil {
		r.miss(s, recNonce)
		var closed *fakeclient.ClosedError
		switch {
		case errors.As(err, &closed):
			r.ended[s] = closed
			r.res.differ(st.Index, s.Name, "the target closed the stream (%s) where the recording got %s", transcript.StatusNote(closed.Err), describeResponse(rec))
		case errors.Is(err, fakeclient.ErrTimeout):
			r.res.differ(st.Index, s.Name, "the target sent no %s response within %s where the recording got %s", t.Short, wording.Duration(r.opts.Timeout), describeResponse(rec))
		default:
			r.res.differ(st.Index, s.Name, "waiting for %s response: %v", wording.A(t.Short), err)
		}
		return
	}
	var lm proto.Message = live.SotW
	if live.Delta != nil {
		lm = live.Delta
	}
	r.match(s, rec, live)
	for _, d := range compareResponses(shapeOf(rec, r.opts.Bodies), shapeOf(lm, r.opts.Bodies), st.Partial) {
		r.res.differ(st.Index, s.Name, "%s response: %s", t.Short, d)
	}
}

// match remembers what the target's response stands for: its nonce and
// versions for those of the recording's.
func (r *serverReplay) match(s *Stream, rec proto.Message, live *fakeclient.Response) {
	if r.nonces[s] == nil {
		r.nonces[s] = map[string]string{}
		r.latest[s] = map[string]string{}
	}
	r.nonces[s][nonceOf(rec)] = live.Nonce
	r.latest[s][live.TypeURL] = live.Nonce
	if r.versions[live.TypeURL] == nil {
		r.versions[live.TypeURL] = map[string]string{}
	}
	switch m := rec.(type) {
	case *discovery.DiscoveryResponse:
		r.versions[live.TypeURL][m.GetVersionInfo()] = live.Version
	case *discovery.DeltaDiscoveryResponse:
		r.versions[live.TypeURL][m.GetSystemVersionInfo()] = live.Version
		byName := r.resVersions[live.TypeURL]
		if byName == nil {
			byName = map[string]map[string]string{}
			r.resVersions[live.TypeURL] = byName
		}
		for _, res := range m.GetResources() {
			if lr := live.Find(res.GetName()); lr != nil && res.GetVersion() != "" {
				if byName[res.GetName()] == nil {
					byName[res.GetName()] = map[string]string{}
				}
				byName[res.GetName()][res.GetVersion()] = lr.Version
			}
		}
	}
}

// miss remembers a recorded nonce the target never matched.
func (r *serverReplay) miss(s *Stream, nonce string) {
	if r.missed[s] == nil {
		r.missed[s] = map[string]bool{}
	}
	r.missed[s][nonce] = true
}

// serverClosed waits for the target to close the stream the recording's
// server closed, and compares the status.
func (r *serverReplay) serverClosed(lc *liveConn, st Step) {
	s := st.Stream
	if lc.current[key(s)] != s {
		return // the stream was never opened live: nothing to close
	}
	if err := r.ended[s]; err != nil {
		return
	}
	types := lc.types[s]
	if len(types) == 0 {
		types = []wire.Type{anyType(s)}
	}
	deadline := time.Now().Add(r.opts.Timeout)
	for {
		live, err := lc.client.ExpectAnyWithin(time.Until(deadline), types...)
		if err == nil {
			r.res.differ(st.Index, s.Name, "an extra %s response (resources %s) before the stream closed", short(live.TypeURL), quoteList(live.Names()))
			continue
		}
		var closed *fakeclient.ClosedError
		switch {
		case errors.As(err, &closed):
			r.ended[s] = closed
			got := status.Code(closed.Err)
			if errors.Is(closed.Err, io.EOF) {
				got = codes.OK
			}
			if got != st.Code {
				r.res.differ(st.Index, s.Name, "the target closed the stream with %s where the recording's server closed it with %s", transcript.StatusNote(closed.Err), statusWords(st.Code, st.Status))
			}
		case errors.Is(err, fakeclient.ErrTimeout):
			r.res.differ(st.Index, s.Name, "the recording's server closed the stream with %s; the target kept it open for %s", statusWords(st.Code, st.Status), wording.Duration(r.opts.Timeout))
		default:
			r.res.differ(st.Index, s.Name, "waiting for the stream to close: %v", err)
		}
		return
	}
}

// clientClosed ends the live stream as the recording's client ended its
// stream; responses the target sent that the recording did not have are
// differences first.
func (r *serverReplay) clientClosed(lc *liveConn, st Step) {
	s := st.Stream
	if lc.current[key(s)] != s {
		return
	}
	if r.ended[s] == nil {
		r.drain(lc, s, st.Index, "before the client ended the stream")
	}
	lc.client.Reconnect(anyType(s))
	delete(lc.current, key(s))
}

// drain takes every response queued on s's live stream now, each a
// response the recording did not have.
func (r *serverReplay) drain(lc *liveConn, s *Stream, at int, when string) {
	if r.ended[s] != nil {
		return
	}
	for _, t := range lc.types[s] {
		for {
			live, err := lc.client.ExpectNoneWithin(0, t)
			if live == nil || err == nil {
				break
			}
			r.res.differ(at, s.Name, "an extra %s response (resources %s) %s", t.Short, quoteList(live.Names()), when)
		}
	}
}

// quiet watches every live stream for the quiet window after the last
// entry: a response then is one the recording did not have.
func (r *serverReplay) quiet() error {
	deadline := time.Now().Add(r.opts.Quiet)
	for _, n := range sortedConns(r.conns) {
		lc := r.conns[n]
		for _, s := range r.plan.Streams {
			if lc.current[key(s)] != s || r.ended[s] != nil || len(lc.types[s]) == 0 {
				continue
			}
			for {
				left := time.Until(deadline)
				if left < 0 {
					left = 0
				}
				live, err := lc.client.ExpectNoneWithin(left, lc.types[s]...)
				if live != nil {
					r.res.differ(0, s.Name, "an extra %s response (resources %s) within the %s quiet window", short(live.TypeURL), quoteList(live.Names()), wording.Duration(r.opts.Quiet))
					continue
				}
				if err != nil {
					var closed *fakeclient.ClosedError
					if errors.As(err, &closed) {
						r.res.differ(0, s.Name, "the target closed the stream (%s) after the last entry, where the recording's stayed open", transcript.StatusNote(closed.Err))
						break
					}
					if r.ctx.Err() != nil {
						return fmt.Errorf("replay interrupted in the quiet window: %w", r.ctx.Err())
					}
				}
				break
			}
		}
	}
	return nil
}

func sortedConns(m map[int]*liveConn) []int {
	ns := make([]int, 0, len(m))
	for n := range m {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// nonceOf is a response's nonce.
func nonceOf(m proto.Message) string {
	switch m := m.(type) {
	case *discovery.DiscoveryResponse:
		return m.GetNonce()
	case *discovery.DeltaDiscoveryResponse:
		return m.GetNonce()
	}
	return ""
}

// describeResponse names a recorded response in a difference.
func describeResponse(m proto.Message) string {
	sh := shapeOf(m, false)
	s := fmt.Sprintf("%s response (resources %s", wording.A(short(sh.typeURL)), quoteList(sh.names))
	if len(sh.removed) > 0 {
		s += fmt.Sprintf(", removed %s", quoteList(sh.removed))
	}
	return s + ")"
}

// statusWords renders a recorded status.
func statusWords(c codes.Code, msg string) string {
	if c == codes.OK {
		return "OK"
	}
	if msg == "" {
		return c.String()
	}
	return fmt.Sprintf("%s: %s", c, transcript.Clip(msg, 256))
}
