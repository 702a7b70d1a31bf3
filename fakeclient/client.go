// Package fakeclient plays an xDS client against a management server under
// test. It opens any of the four gRPC variants, sends exactly the requests a
// scenario asks for (including deliberately wrong ones), never ACKs on its
// own, checks the global invariants on every response, and records every
// message in a transcript.
package fakeclient

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Options configure a fake client.
type Options struct {
	// NodeID and Cluster identify the client in node.id and node.cluster.
	NodeID, Cluster string
	// NodeMetadata is node.metadata, string values by key (nil: none).
	NodeMetadata map[string]string
	// NodeOnEveryRequest sends node on every request, not only on a
	// stream's first: a control request that differs from the plainest
	// one in nothing a scenario's unusual request may leave out.
	NodeOnEveryRequest bool
	// ClientFeatures are advertised in node.client_features.
	ClientFeatures []string
	// Metadata is sent as gRPC call metadata on every stream (e.g. tokens).
	Metadata map[string]string
	// Timeout bounds every wait for an expected response.
	Timeout time.Duration
	// Transcript receives every message; nil records nothing.
	Transcript *transcript.Transcript
	// OnViolation, if set, is called (once) when the first watch or
	// global invariant is broken, from the receiving goroutine; the engine
	// uses it to end a pair's trailing window early.
	OnViolation func()
	// OnSend, if set, is called after each message the client sent the
	// target on any stream, from the sending goroutine: the engine
	// charges a target's death to the pair that last sent it a message
	// (engine.T.SentToTarget).
	OnSend func()
}

// ErrTimeout is returned (wrapped) when an expected response did not arrive
// within Options.Timeout.
var ErrTimeout = errors.New("timed out")

// Client is one fake xDS client. Its methods are safe for concurrent use,
// though scenarios normally drive it from one goroutine.
type Client struct {
	ctx     context.Context
	conn    grpc.ClientConnInterface
	variant wire.Variant
	opts    Options

	mu         sync.Mutex
	notify     chan struct{} // closed and replaced whenever anything arrives
	streams    map[string]*stream
	opened     map[string]int // streams opened per key, for names
	types      map[string]*typeState
	violations []Violation
	perRule    map[string]int // violations seen per rule, kept or not
	watches    []*watch
	autoAck    bool
	reported   bool  // OnViolation was called
	seq        int   // responses received so far
	queued     int64 // bytes of responses queued (see QueueBytes)
	borrowed   int64 // the part of queued taken from the run's budget
}

// typeState is what the fake client remembers about one resource type. It
// lives across reconnects, except for the nonce and the queue.
type typeState struct {
	names        []string                     // SotW: current resource_names (may hold "*")
	locators     []*discovery.ResourceLocator // SotW: current resource_locators (xRFC TP2)
	subscribed   []string                     // delta: names subscribed (may hold "*")
	ackedVersion string                       // SotW: version of the last response ACKed through Ack
	nonce        string                       // latest nonce received on the current stream
	known        map[string]string            // delta: name -> version received and not removed
	queue        []*Response                  // received and not yet consumed by Expect
	unkept       int                          // responses not queued since the queue filled (see QueueBytes)
	started      bool                         // a request of the type went out on the current stream
}

type stream struct {
	key      string
	name     string
	cs       grpc.ClientStream
	cancel   context.CancelFunc
	sentAny  bool
	closing  bool  // the harness is ending the stream itself
	err      error // set when the receive loop ends
	done     chan struct{}
	expected string // per-type streams: the only type URL they may carry
	nonces   map[string]map[string]bool
	asked    map[string]bool              // type URLs of the requests sent on the stream, as sent
	located  bool                         // a request on the stream carried resource_locators: it takes Resource wrappers (DYN-1)
	held     map[string]map[string]string // type URL -> name -> version last received
	sendMu   sync.Mutex
	// sizes are the sizes of the last messages sent, the evidence that a
	// size refusal is the target's (wire.ClassifySizeRefusal).
	sizes wire.SentSizes
	// refusal, set with err, says the stream ended because a message was
	// refused for its size, and by whom.
	refusal *wire.SizeRefusal
}

// New returns a client for variant v over conn. Nothing is sent until the
// scenario sends; streams are opened on first use and live until ctx ends
// or Close.
func New(ctx context.Context, conn grpc.ClientConnInterface, v wire.Variant, opts Options) *Client {
	return &Client{
		ctx: ctx, conn: conn, variant: v, opts: opts,
		notify:  make(chan struct{}),
		streams: map[string]*stream{},
		opened:  map[string]int{},
		types:   map[string]*typeState{},
		perRule: map[string]int{},
	}
}

// Node returns the node the client identifies as.
func (c *Client) Node() *core.Node {
	n := &core.Node{
		Id:             c.opts.NodeID,
		Cluster:        c.opts.Cluster,
		UserAgentName:  "xdsconform",
		ClientFeatures: slices.Clone(c.opts.ClientFeatures),
	}
	n.Metadata = wire.StringStruct(c.opts.NodeMetadata)
	return n
}

// Violations returns the global-invariant breaches seen so far, then one
// per watch that caught something. A rule broken over and over (a server
// flooding bad responses) is listed maxPerRule times, the last entry
// saying how many more there were.
func (c *Client) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.violations)
	for rule, n := range c.perRule {
		if n > maxPerRule {
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].Rule == rule {
					out[i].Message += fmt.Sprintf(" (and %d more violations of %s)", n-maxPerRule, rule)
					break
				}
			}
		}
	}
	for _, w := range c.watches {
		if w.hits > 0 {
			v := w.first
			if w.hits > 1 {
				v.Message += fmt.Sprintf(" (%d such responses in all)", w.hits)
			}
			out = append(out, v)
		}
	}
	return out
}

// maxPerRule bounds how many violations of one global invariant are kept.
const maxPerRule = 3

// addViolations records global-invariant breaches; c.mu must be held.
func (c *Client) addViolations(vs []Violation) {
	for _, v := range vs {
		c.perRule[v.Rule]++
		if c.perRule[v.Rule] <= maxPerRule {
			v.Message = transcript.Clip(v.Message, violationBytes)
			c.violations = append(c.violations, v)
		}
	}
	if len(vs) > 0 {
		c.violated()
	}
}

// violated calls OnViolation the first time; c.mu must be held.
func (c *Client) violated() {
	if !c.reported && c.opts.OnViolation != nil {
		c.reported = true
		go c.opts.OnViolation()
	}
}

// Watch is a must-not-happen check: from the moment it is set until the
// client closes (or stop is called), every response of its types that
// Match accepts breaks Rule. It is how "the server must not send X" is
// checked without blocking the scenario: the scenario goes on, and the
// watch sees a violation whenever it comes, up to the pair's trailing
// window.
type Watch struct {
	// Rule is the catalogue ID the matching response breaks.
	Rule string
	// Why says in words what must not happen, for the report.
	Why string
	// Types are the response types watched.
	Types []wire.Type
	// Match reports whether a response is forbidden; nil forbids every
	// response of Types.
	Match func(*Response) bool
}

type watch struct {
	Watch
	stopped bool
	hits    int
	first   Violation
}

func (w *watch) watches(r *Response) bool {
	if w.stopped || !slices.ContainsFunc(w.Types, func(t wire.Type) bool { return t.URL == r.TypeURL }) {
		return false
	}
	return w.Match == nil || w.Match(r)
}

// check applies w to r; c.mu must be held.
func (c *Client) check(w *watch, r *Response) {
	if !w.watches(r) {
		return
	}
	if w.hits == 0 {
		w.first = Violation{Rule: w.Rule, Stream: r.Stream, Nonce: r.Nonce,
			Message: fmt.Sprintf("%s, yet %s response came (version %q, resources %q, removed %q)",
				w.Why, wording.A(shortType(r.TypeURL)), r.Version, r.Names(), r.removedNames())}
		w.first.Message = transcript.Clip(w.first.Message, violationBytes)
		c.opts.Transcript.Event(r.Stream, fmt.Sprintf("violation: %s: %s (nonce %q)", w.Rule, w.Why, r.Nonce))
	}
	w.hits++
	c.violated()
}

// Forbid sets a watch. Responses already received and not yet consumed are
// judged at once: they arrived after whatever the scenario did before.
// stop ends the watch, for a scenario in which what is forbidden becomes
// allowed again later.
func (c *Client) Forbid(w Watch) (stop func()) {
	ws := &watch{Watch: w}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watches = append(c.watches, ws)
	for _, t := range w.Types {
		for _, r := range c.state(t).queue {
			c.check(ws, r)
		}
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		ws.stopped = true
	}
}

// AutoAck makes the client ACK every response from now on, and the ones
// received and not yet consumed: once a scenario's steps are over, its
// watches may still wait for a violation, and a server that sends nothing
// new until its last response is ACKed must not be kept from sending it.
// It stops ACKing once a violation was seen: the verdict is in, and ACKing
// a server that answers every ACK would only feed a loop.
func (c *Client) AutoAck() {
	c.mu.Lock()
	c.autoAck = true
	var pending []*Response
	for _, st := range c.types {
		pending = append(pending, st.queue...)
		c.release(st.queue...)
		st.queue = nil
	}
	c.mu.Unlock()
	for _, r := range pending {
		c.autoAckOne(r)
	}
}

func (c *Client) autoAckOne(r *Response) {
	c.mu.Lock()
	on := c.autoAck && !c.reported
	c.mu.Unlock()
	if t, ok := wire.TypeByURL(r.TypeURL); ok && on {
		_ = c.Ack(t, r) // the stream may be closing; nothing to report
	}
}

func shortType(url string) string {
	if t, ok := wire.TypeByURL(url); ok {
		return t.Short
	}
	return url
}

func (c *Client) state(t wire.Type) *typeState {
	s := c.types[t.URL]
	if s == nil {
		s = &typeState{known: map[string]string{}}
		c.types[t.URL] = s
	}
	return s
}

func (c *Client) key(t wire.Type) string {
	if c.variant.IsADS() {
		return "ads"
	}
	return t.Short
}

// streamFor returns the live stream carrying t, opening one if needed.
func (c *Client) streamFor(t wire.Type) (*stream, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.key(t)
	if s := c.streams[k]; s != nil {
		return s, nil
	}
	method, err := t.FullMethod(c.variant)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(c.ctx)
	if len(c.opts.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(c.opts.Metadata))
	}
	c.opened[k]++
	name := c.opts.Transcript.StreamName(fmt.Sprintf("%s#%d", k, c.opened[k]))
	cs, err := c.conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, method)
	if err != nil {
		cancel()
		c.opts.Transcript.Event(name, fmt.Sprintf("could not open %s: %v", method, err))
		return nil, fmt.Errorf("open %s stream %s: %w", c.variant, method, err)
	}
	s := &stream{key: k, name: name, cs: cs, cancel: cancel, done: make(chan struct{}), nonces: map[string]map[string]bool{}, held: map[string]map[string]string{}}
	if !c.variant.IsADS() {
		s.expected = t.URL
	}
	c.streams[k] = s
	c.opts.Transcript.Event(name, "opened "+method)
	go c.receive(s)
	return s, nil
}

// receive reads every message of s until the stream ends.
func (c *Client) receive(s *stream) {
	defer close(s.done)
	for {
		var r *Response
		var err error
		if c.variant.IsDelta() {
			r, err = recv(c, s, &discovery.DeltaDiscoveryResponse{}, decodeDelta)
		} else {
			r, err = recv(c, s, &discovery.DiscoveryResponse{}, decodeSotW)
		}
		if err != nil {
			c.ended(s, err)
			return
		}
		c.mu.Lock()
		c.seq++
		r.Seq = c.seq
		c.addViolations(checkResponse(r, s.expected, s.asked, s.nonces, s.held, c.resourceInSotW() || s.located, c.takesTTL()))
		s.hold(r)
		for _, w := range c.watches {
			c.check(w, r)
		}
		ack, unkept := false, false
		if t, ok := wire.TypeByURL(r.TypeURL); ok && c.streams[s.key] == s {
			st := c.state(t)
			st.nonce = r.Nonce
			for _, res := range r.Resources {
				if _, ok := st.known[res.Name]; ok || len(st.known) < maxNames {
					st.known[res.Name] = res.Version
				}
			}
			for _, n := range r.removedNames() {
				delete(st.known, n)
			}
			switch {
			case c.autoAck:
				ack = true
			case !c.enqueue(st, r):
				unkept = true
			}
		}
		c.wake()
		c.mu.Unlock()
		if unkept {
			c.opts.Transcript.Unkept(s.name, r.size, fmt.Sprintf(
				"%s response and every later one of its type on %s are checked but not kept: the unconsumed responses exceed %d bytes, or the run's budget is spent",
				wording.A(shortType(r.TypeURL)), s.name, QueueBytes))
		}
		if ack {
			c.autoAckOne(r)
		}
	}
}

// recv reads the next message of s into m, records it and decodes it.
func recv[M proto.Message](c *Client, s *stream, m M, decode func(string, M) *Response) (*Response, error) {
	if err := s.cs.RecvMsg(m); err != nil {
		return nil, err
	}
	c.opts.Transcript.Record(s.name, transcript.Received, m)
	r := decode(s.name, m)
	r.size = responseSize(m)
	return r, nil
}

// hold records the versions a response gives the resources it carries
// (the heartbeat check compares with them).
func (s *stream) hold(r *Response) {
	if s.held[r.TypeURL] == nil {
		s.held[r.TypeURL] = map[string]string{}
	}
	held := s.held[r.TypeURL]
	for _, res := range r.Resources {
		if res.Heartbeat {
			continue
		}
		if _, ok := held[res.Name]; !ok && len(held) >= maxNames {
			held[namesFull] = ""
			continue
		}
		held[res.Name] = res.Version
	}
	for _, n := range r.removedNames() {
		delete(s.held[r.TypeURL], n)
	}
}

func (c *Client) takesTTL() bool { return wire.TakesTTL(c.opts.ClientFeatures) }

func (c *Client) resourceInSotW() bool { return wire.TakesResourceInSotW(c.opts.ClientFeatures) }

func (c *Client) ended(s *stream, err error) {
	c.mu.Lock()
	byHarness := s.closing || c.ctx.Err() != nil
	c.mu.Unlock()
	var refusal *wire.SizeRefusal
	if r, ok := wire.ClassifySizeRefusal(err, &s.sizes); ok {
		refusal = &r
	}
	note := "closed by target: " + transcript.StatusNote(err)
	switch {
	case refusal != nil && refusal.Ours:
		note = "closed by harness: " + RecvLimitNote(err)
	case refusal != nil:
		note += " (" + refusedBy(*refusal) + ")"
	case byHarness:
		note = "closed by harness"
	}
	c.opts.Transcript.Event(s.name, note)
	c.mu.Lock()
	s.err, s.refusal = err, refusal
	c.wake()
	c.mu.Unlock()
}

// ClosedError says that the target ended a stream. It wraps the gRPC status
// the stream ended with, so status.Code works on it.
type ClosedError struct {
	// Stream names the stream, as in the transcript.
	Stream string
	// Err is what the stream's receive returned (a gRPC status or io.EOF).
	Err error
	// Refusal, when set, says the stream ended because a message was
	// refused for its size: by the harness's own receive limit
	// (Refusal.Ours; then the harness, not the target, ended it) or by
	// the target, which refused a message the harness sent.
	Refusal *wire.SizeRefusal
}

func (e *ClosedError) Error() string {
	switch {
	case e.Refusal != nil && e.Refusal.Ours:
		return fmt.Sprintf("stream %s closed by harness: %s", e.Stream, RecvLimitNote(e.Err))
	case e.Refusal != nil:
		return fmt.Sprintf("stream %s closed by target: %s (%s)", e.Stream, transcript.StatusNote(e.Err), refusedBy(*e.Refusal))
	}
	return fmt.Sprintf("stream %s closed by target: %s", e.Stream, transcript.StatusNote(e.Err))
}

// Unwrap returns the stream's own error.
func (e *ClosedError) Unwrap() error { return e.Err }

func closedError(s *stream) error {
	return &ClosedError{Stream: s.name, Err: s.err, Refusal: s.refusal}
}

// wake tells waiters something arrived; c.mu must be held.
func (c *Client) wake() {
	close(c.notify)
	c.notify = make(chan struct{})
}

// send writes m on the stream carrying t and records it.
func (c *Client) send(t wire.Type, m proto.Message) error {
	s, err := c.streamFor(t)
	if err != nil {
		return err
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	c.opts.Transcript.Record(s.name, transcript.Sent, m)
	// The size on the wire: the proto codec's length prefix is
	// proto.Size, which a target that refuses the message quotes.
	s.sizes.Add(proto.Size(m))
	c.mu.Lock()
	s.sentAny = true
	if locates(m) {
		s.located = true
	}
	if u := requestTypeURL(m); u != "" && len(s.asked) < maxAsked {
		if s.asked == nil {
			s.asked = map[string]bool{}
		}
		s.asked[u] = true
	}
	c.mu.Unlock()
	if err := s.cs.SendMsg(m); err != nil {
		// SendMsg reports io.EOF when the server has ended the stream; the
		// real status comes from the receive side.
		<-s.done
		return fmt.Errorf("send on %s: %w", s.name, closedError(s))
	}
	if c.opts.OnSend != nil {
		c.opts.OnSend()
	}
	return nil
}

// firstOnStream reports whether the next request for t opens or starts a
// stream, i.e. must carry the node (STREAM-3).
func (c *Client) firstOnStream(t wire.Type) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.streams[c.key(t)]
	return s == nil || !s.sentAny
}

// SotWRequest builds the SotW request a well-behaved client would send now
// for t with the given names: the last ACKed version, the latest nonce of the
// type on this stream, and the node only on the stream's first request.
// Scenarios may alter it before SendSotW.
func (c *Client) SotWRequest(t wire.Type, names []string) *discovery.DiscoveryRequest {
	c.mu.Lock()
	st := c.state(t)
	req := &discovery.DiscoveryRequest{
		TypeUrl:       t.URL,
		VersionInfo:   st.ackedVersion,
		ResponseNonce: st.nonce,
		ResourceNames: slices.Clone(names),
		// TP2: locators are part of the subscription, which every SotW
		// request restates whole (RES-1).
		ResourceLocators: cloneLocators(st.locators),
	}
	c.mu.Unlock()
	if c.opts.NodeOnEveryRequest || c.firstOnStream(t) {
		req.Node = c.Node()
	}
	return req
}

// DeltaRequest builds an empty delta request for t, with the node only on
// the stream's first request. Scenarios fill in the lists.
func (c *Client) DeltaRequest(t wire.Type) *discovery.DeltaDiscoveryRequest {
	req := &discovery.DeltaDiscoveryRequest{TypeUrl: t.URL}
	if c.opts.NodeOnEveryRequest || c.firstOnStream(t) {
		req.Node = c.Node()
	}
	return req
}

// SendSotW sends req exactly as given on the stream carrying t, and
// remembers its resource_names as the current subscription.
func (c *Client) SendSotW(t wire.Type, req *discovery.DiscoveryRequest) error {
	if c.variant.IsDelta() {
		return fmt.Errorf("SendSotW on a %s client", c.variant)
	}
	c.mu.Lock()
	c.state(t).names = slices.Clone(req.GetResourceNames())
	c.state(t).locators = cloneLocators(req.GetResourceLocators())
	c.state(t).started = true
	c.mu.Unlock()
	return c.send(t, req)
}

// SendDelta sends req exactly as given on the stream carrying t, and
// applies its subscribe and unsubscribe lists to the tracked subscription.
func (c *Client) SendDelta(t wire.Type, req *discovery.DeltaDiscoveryRequest) error {
	if !c.variant.IsDelta() {
		return fmt.Errorf("SendDelta on a %s client", c.variant)
	}
	c.mu.Lock()
	st := c.state(t)
	for _, n := range req.GetResourceNamesSubscribe() {
		if !slices.Contains(st.subscribed, n) {
			st.subscribed = append(st.subscribed, n)
		}
	}
	st.subscribed = slices.DeleteFunc(st.subscribed, func(n string) bool {
		return slices.Contains(req.GetResourceNamesUnsubscribe(), n)
	})
	st.started = true
	c.mu.Unlock()
	return c.send(t, req)
}

// Started reports whether a request of type t went out on the stream that
// carries t now: the next one is then not the type's first on the stream.
func (c *Client) Started(t wire.Type) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state(t).started
}

// Subscribe adds names to the subscription for t: in SotW a request with
// the whole new name set, in delta a request subscribing names. "*" is the
// explicit wildcard.
func (c *Client) Subscribe(t wire.Type, names ...string) error {
	return c.subscribe(t, nil, names)
}

// SubscribeWithNonce is Subscribe with response_nonce set to nonce instead
// of the last one received: a stale or unknown nonce, for the rules about
// requests that carry one.
func (c *Client) SubscribeWithNonce(t wire.Type, nonce string, names ...string) error {
	return c.subscribe(t, &nonce, names)
}

func (c *Client) subscribe(t wire.Type, nonce *string, names []string) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResourceNamesSubscribe = names
		if nonce != nil {
			req.ResponseNonce = *nonce
		}
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	set := slices.Clone(c.state(t).names)
	c.mu.Unlock()
	for _, n := range names {
		if !slices.Contains(set, n) {
			set = append(set, n)
		}
	}
	req := c.SotWRequest(t, set)
	if nonce != nil {
		req.ResponseNonce = *nonce
	}
	return c.SendSotW(t, req)
}

// Unsubscribe drops names from the subscription for t.
func (c *Client) Unsubscribe(t wire.Type, names ...string) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResourceNamesUnsubscribe = names
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	set := slices.DeleteFunc(slices.Clone(c.state(t).names), func(n string) bool { return slices.Contains(names, n) })
	// A name subscribed by locator (xRFC TP2) is dropped the same way.
	locs := slices.DeleteFunc(cloneLocators(c.state(t).locators), func(l *discovery.ResourceLocator) bool { return slices.Contains(names, l.GetName()) })
	c.mu.Unlock()
	req := c.SotWRequest(t, set)
	req.ResourceLocators = locs
	return c.SendSotW(t, req)
}

// Respell writes the subscribed name from as to in the SotW requests of t
// from the next one on (ACKs and NACKs included), in its place: the same
// resource written otherwise, an xdstp name with its context parameters
// in another order (XDSTP-3). Delta requests carry no subscribed names
// but in their lists, which scenarios fill in.
func (c *Client) Respell(t wire.Type, from, to string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state(t)
	for i, n := range st.names {
		if n == from {
			st.names[i] = to
		}
	}
}

// RequestWildcardLegacy sends the legacy wildcard request for t: SotW with
// no names, delta with empty lists (WILD-2).
func (c *Client) RequestWildcardLegacy(t wire.Type) error {
	if c.variant.IsDelta() {
		return c.SendDelta(t, c.DeltaRequest(t))
	}
	return c.SendSotW(t, c.SotWRequest(t, nil))
}

// Names returns the current SotW resource_names (or delta subscriptions) for t.
func (c *Client) Names(t wire.Type) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.variant.IsDelta() {
		return slices.Clone(c.state(t).subscribed)
	}
	return slices.Clone(c.state(t).names)
}

// Ack acknowledges r: SotW with r's version and nonce and the current
// names; delta with r's nonce and empty lists (DELTA-2).
func (c *Client) Ack(t wire.Type, r *Response) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResponseNonce = r.Nonce
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	c.state(t).ackedVersion = r.Version
	names := c.state(t).names
	c.mu.Unlock()
	req := c.SotWRequest(t, names)
	req.ResponseNonce = r.Nonce
	return c.SendSotW(t, req)
}

// Nack rejects r with error_detail (code INVALID_ARGUMENT, message msg):
// SotW keeps the last ACKed version (ACK-3).
func (c *Client) Nack(t wire.Type, r *Response, msg string) error {
	return c.NackWith(t, r, &status.Status{Code: 3, Message: msg})
}

// NackWith NACKs r with the given error_detail (any code and message).
func (c *Client) NackWith(t wire.Type, r *Response, detail *status.Status) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResponseNonce = r.Nonce
		req.ErrorDetail = detail
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	names := c.state(t).names
	c.mu.Unlock()
	req := c.SotWRequest(t, names)
	req.ResponseNonce = r.Nonce
	req.ErrorDetail = detail
	return c.SendSotW(t, req)
}

// ReplyChanging answers r and changes the subscription in the same
// request: an ACK (detail nil) or a NACK (detail set) that also adds names
// add and drops names drop. SotW: r's version for an ACK, the last ACKed
// one for a NACK (ACK-3), r's nonce, and the new whole name set (RES-1);
// delta: r's nonce with the lists (DELTA-1).
func (c *Client) ReplyChanging(t wire.Type, r *Response, detail *status.Status, add, drop []string) error {
	if c.variant.IsDelta() {
		req := c.DeltaRequest(t)
		req.ResponseNonce = r.Nonce
		req.ErrorDetail = detail
		req.ResourceNamesSubscribe = slices.Clone(add)
		req.ResourceNamesUnsubscribe = slices.Clone(drop)
		return c.SendDelta(t, req)
	}
	c.mu.Lock()
	st := c.state(t)
	if detail == nil {
		st.ackedVersion = r.Version
	}
	set := slices.DeleteFunc(slices.Clone(st.names), func(n string) bool { return slices.Contains(drop, n) })
	c.mu.Unlock()
	for _, n := range add {
		if !slices.Contains(set, n) {
			set = append(set, n)
		}
	}
	req := c.SotWRequest(t, set)
	req.ResponseNonce = r.Nonce
	req.ErrorDetail = detail
	return c.SendSotW(t, req)
}

// Known returns, for delta, the resources received for t and not removed
// since, with their versions: what a real client would list in
// AckedVersion is the version_info of the last SotW response of t ACKed
// through Ack: what the client's next request says it holds.
func (c *Client) AckedVersion(t wire.Type) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state(t).ackedVersion
}

// initial_resource_versions after a reconnect.
func (c *Client) Known(t wire.Type) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.state(t).known)
}

// Expect waits for the next response of type t (bounded by Options.Timeout
// and the client's context) and consumes it.
func (c *Client) Expect(t wire.Type) (*Response, error) {
	return c.next(t, c.opts.Timeout, true)
}

// ExpectWithin is Expect with an explicit bound, for loops that share one
// deadline across several responses.
func (c *Client) ExpectWithin(t wire.Type, wait time.Duration) (*Response, error) {
	return c.next(t, wait, true)
}

// ExpectNoneWithin watches for window and returns an error carrying the
// first response of any of types that arrives (consumed), or of one that
// had already arrived unconsumed.
func (c *Client) ExpectNoneWithin(window time.Duration, types ...wire.Type) (*Response, error) {
	// The window is of the harness's own running time: stretched over its
	// stalls, so that it watches as long on a busy machine as on an idle
	// one.
	deadline := lag.NewDeadline(window)
	for {
		for _, t := range types {
			r, err := c.next(t, 0, false)
			if err != nil && !errors.Is(err, ErrTimeout) {
				// The target closed the stream: that is not silence.
				return nil, err
			}
			if err == nil {
				return r, fmt.Errorf("unexpected %s response (nonce %q, version %q, resources %q, removed %q) within the %v quiet window",
					t.Short, r.Nonce, r.Version, r.Names(), r.removedNames(), window)
			}
		}
		left := deadline.Left()
		if left <= 0 {
			return nil, nil
		}
		c.mu.Lock()
		ch := c.notify
		c.mu.Unlock()
		timer := time.NewTimer(left)
		select {
		case <-ch:
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("interrupted while watching for silence: %w", c.ctx.Err())
		}
		timer.Stop()
	}
}

// ExpectAnyWithin returns the response that arrived first among those of
// types not yet consumed, waiting up to wait for one: for rules about the
// order in which a server sends several types on one stream.
func (c *Client) ExpectAnyWithin(wait time.Duration, types ...wire.Type) (*Response, error) {
	return c.nextOf(types, wait, true)
}

// next pops the next response of t, waiting up to wait. With block false
// it only looks at what is queued. A closed stream ends the wait at once.
func (c *Client) next(t wire.Type, wait time.Duration, block bool) (*Response, error) {
	return c.nextOf([]wire.Type{t}, wait, block)
}

// nextOf is next for the response that arrived first among types.
func (c *Client) nextOf(types []wire.Type, wait time.Duration, block bool) (*Response, error) {
	what := "response"
	if len(types) == 1 {
		what = types[0].Short + " response"
	}
	// A wait of the harness's own running time: a target is given up on
	// only once it had the whole wait of the harness's attention, however
	// long the harness itself was stalled meanwhile (up to lag.Stretch).
	deadline := lag.NewDeadline(wait)
	start := deadline.Start()
	for {
		c.mu.Lock()
		var first *typeState
		var closed error
		for _, t := range types {
			st := c.state(t)
			if len(st.queue) > 0 && (first == nil || st.queue[0].Seq < first.queue[0].Seq) {
				first = st
			}
			if s := c.streams[c.key(t)]; s != nil && s.err != nil && closed == nil {
				closed = fmt.Errorf("waiting for %s: %w", wording.A(what), closedError(s))
			}
		}
		if first != nil {
			r := first.queue[0]
			first.queue[0] = nil // let it go once the scenario does
			first.queue = first.queue[1:]
			c.release(r)
			c.mu.Unlock()
			return r, nil
		}
		var states []*typeState
		for _, t := range types {
			states = append(states, c.state(t))
		}
		if err := c.overflowed(what, states); err != nil {
			// Nothing more of these types is kept: what is waited for may
			// have come and gone.
			c.mu.Unlock()
			return nil, err
		}
		ch := c.notify
		c.mu.Unlock()
		if closed != nil {
			return nil, closed
		}
		left := deadline.Left()
		switch {
		case !block:
			return nil, fmt.Errorf("no %s queued: %w", what, ErrTimeout)
		case left <= 0:
			// The time this call waited: a caller that spreads one
			// deadline over several reads words the whole wait itself.
			return nil, fmt.Errorf("no %s within %s: %w", what, wording.Duration(time.Since(start)), ErrTimeout)
		}
		timer := time.NewTimer(left)
		select {
		case <-ch:
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("interrupted while waiting for %s: %w", wording.A(what), c.ctx.Err())
		}
		timer.Stop()
	}
}

// StreamClosed reports the status with which the target closed the stream
// carrying t, or nil if it is open (or was never opened).
func (c *Client) StreamClosed(t wire.Type) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.streams[c.key(t)]; s != nil && s.err != nil {
		return closedError(s)
	}
	return nil
}

// Reconnect ends the stream carrying t (on ADS: the one stream) and forgets
// its nonces, unconsumed responses and delta subscriptions, like a client
// whose stream broke. SotW names, ACKed versions and delta known versions
// are kept; the next request opens a new stream (a delta one must name its
// subscriptions again).
func (c *Client) Reconnect(t wire.Type) {
	c.mu.Lock()
	k := c.key(t)
	s := c.streams[k]
	if s != nil {
		s.closing = true
	}
	delete(c.streams, k)
	for url, st := range c.types {
		tt, _ := wire.TypeByURL(url)
		if c.key(tt) == k {
			st.nonce = ""
			c.release(st.queue...)
			st.queue = nil
			st.unkept = 0
			st.subscribed = nil
			st.started = false
		}
	}
	c.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
}

// Close ends every stream and waits for their receive loops.
func (c *Client) Close() {
	c.mu.Lock()
	ss := slices.Collect(maps.Values(c.streams))
	for _, s := range ss {
		s.closing = true
	}
	c.streams = map[string]*stream{}
	// The queues stay readable; what they borrowed goes back to the run
	// for the pairs still to come.
	c.opts.Transcript.QueueBudget().Give(c.borrowed)
	c.borrowed = 0
	c.mu.Unlock()
	for _, s := range ss {
		// CloseSend must not run alongside a SendMsg (an auto-ACK from the
		// receive loop); a send in progress, which may be blocked on flow
		// control, is ended by the cancel instead.
		if s.sendMu.TryLock() {
			_ = s.cs.CloseSend()
			s.sendMu.Unlock()
		}
		s.cancel()
		<-s.done
	}
}

// maxAsked bounds how many distinct request type URLs a stream remembers:
// a scenario sends a handful, and a bound keeps a hostile script cheap.
const maxAsked = 64

// requestTypeURL is the type_url of a request exactly as sent.
func requestTypeURL(m proto.Message) string {
	switch req := m.(type) {
	case *discovery.DiscoveryRequest:
		return req.GetTypeUrl()
	case *discovery.DeltaDiscoveryRequest:
		return req.GetTypeUrl()
	}
	return ""
}
