// Package refserver is the reference xDS management server of the harness:
// a compact implementation that follows the rule catalogue as faithfully as
// it can, with fault switches that each break exactly one rule.
//
// With no faults every scenario of the harness must pass against it; with a
// fault on, the scenarios checking the broken rule must fail. That is how the
// harness tests itself. The normal code path is written to be read: it is
// where the protocol rules live, each marked with its rule ID from
// requirements.md, and each fault is a single `if s.has(Fault...)` at the
// point of the rule it breaks.
//
// Design: the fixture store holds resources per node and type. Every stream
// is served by one goroutine that owns all of that stream's state and is the
// only one to call Send; a helper goroutine only receives. Store changes wake
// the streams of the node through a one-slot channel, and the stream then
// recomputes what to push by comparing the store with what it has sent, so a
// fixture call never waits for a stream and nothing is queued per change.
package refserver

import (
	"context"
	"errors"
	"fmt"
	"io"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// Server is the reference management server. Create it with New, expose the
// xDS services with Register and drive its resources through FixtureServer.
type Server struct {
	faults map[Fault]bool
	// generateNames serves every resource set through the fixture under a
	// name of its own (GeneratedPrefix + the requested name), as servers
	// that derive xDS names from their own config do (Consul, Envoy
	// Gateway). Not a fault: it proves scenarios work with served names.
	generateNames bool
	// buildsContent serves every resource set through the fixture with an
	// addition of its own (an unknown field, which clients skip), so that
	// what is served is never the message that was set, as with servers
	// that build resources from their own model; SetResource returns the
	// revision fields (fixture API builds_content). Not a fault either.
	buildsContent bool
	// restHold is how long a REST poll at the current version is held
	// before it ends with 304 Not Modified (DefaultRESTHold; WithRESTHold).
	restHold time.Duration

	mu       sync.Mutex
	nodes    map[string]map[string]*typeStore      // node id -> type URL -> store
	watchers map[string]map[chan struct{}]struct{} // node id -> wake channels of its streams
	// clustersPushed are, per node, the clusters sent in the last Cluster
	// response of any stream (FaultSlowWarming's memory).
	clustersPushed map[string]nameSet

	// crashed is closed when FaultCrashOnUnservable crashes the server.
	crashed   chan struct{}
	crashOnce sync.Once

	// hooks let the package's tests act at a point where timing alone
	// would decide an outcome; zero outside tests.
	hooks hooks
}

// hooks are points where a test acts inside the server, so that a race
// it guards against is played out deterministically instead of by load.
type hooks struct {
	// viewed runs on a stream's goroutine while it pushes a change
	// (onWake), once it has its view of the type url.
	viewed func(url string)
}

// New returns a server with the given faults switched on; with none it is
// the faithful reference implementation.
func New(faults ...Fault) *Server {
	s := &Server{
		faults:         map[Fault]bool{},
		nodes:          map[string]map[string]*typeStore{},
		watchers:       map[string]map[chan struct{}]struct{}{},
		clustersPushed: map[string]nameSet{},
		crashed:        make(chan struct{}),
		restHold:       DefaultRESTHold,
	}
	for _, f := range faults {
		s.faults[f] = true
	}
	return s
}

// GeneratedPrefix starts every name a name-generating server serves.
const GeneratedPrefix = "gen-"

// GenerateNames switches on the name-generating mode (see Server) and
// returns s; call it before serving.
func (s *Server) GenerateNames() *Server {
	s.generateNames = true
	return s
}

// BuildsContent switches on the content-building mode (see Server) and
// returns s; call it before serving.
func (s *Server) BuildsContent() *Server {
	s.buildsContent = true
	return s
}

// WithRESTHold sets how long a REST poll at the current version is held
// (REST-4) before it ends with 304 Not Modified, and returns s; call it
// before serving. A suite whose time budget is shorter than the default
// 30 s runs the reference with a shorter hold, and sizes its window from
// the one it set. A hold of zero or less keeps the default.
func (s *Server) WithRESTHold(d time.Duration) *Server {
	if d > 0 {
		s.restHold = d
	}
	return s
}

// RESTHold is how long the server holds a REST poll at the current version.
func (s *Server) RESTHold() time.Duration { return s.restHold }

// has reports whether fault f is switched on.
func (s *Server) has(f Fault) bool { return s.faults[f] }

type (
	sotwStream  = wire.SotWServerStream
	deltaStream = wire.DeltaServerStream
)

// Register registers ADS (SotW and Delta) and every per-type discovery
// service (SotW and Delta; VHDS Delta only) on g.
func (s *Server) Register(g grpc.ServiceRegistrar) {
	wire.RegisterServices(g, wire.Handlers{SotW: s.serveSotW, Delta: s.serveDelta})
}

// conn is the state shared by SotW and Delta streams: which node and type
// the stream serves and the stream-wide nonce counter.
type conn struct {
	s       *Server
	service *wire.Type // the per-type service's type; nil on ADS
	node    string     // taken from the first request only (STREAM-4)
	started bool       // the first request has been seen
	// features are the client features of the first request's node:
	// TTLs and SotW Resource wrappers are only for clients that ask
	// for them (TTL-1, TTL-5).
	features []string
	wake     chan struct{}

	dyn dynState // dynamic parameters the client subscribes with (dynamic.go)

	naming namingState // the naming faults' memory (naming.go)

	nonces    uint64 // stream-wide counter: nonces never repeat on a stream (NONCE-2)
	lastNonce string // last nonce sent on the stream for any type

	// later carries work a fault schedules for the stream's goroutine
	// (FaultLateNackResend); ctx is the stream's.
	later chan func() error
	ctx   context.Context
}

func newConn(s *Server, service *wire.Type) *conn {
	return &conn{s: s, service: service, wake: make(chan struct{}, 1), later: make(chan func() error)}
}

// after runs f on the stream's goroutine after d, unless the stream ends
// first: only faults schedule anything.
func (c *conn) after(d time.Duration, f func() error) {
	ctx := c.ctx
	time.AfterFunc(d, func() {
		select {
		case c.later <- f:
		case <-ctx.Done():
		}
	})
}

// begin handles the node of a request. The first request names the node and
// subscribes the stream to its store; later ones may omit it (STREAM-4).
func (c *conn) begin(node *core.Node) error {
	if !c.started {
		if node == nil {
			// ROB-1: a first request without a node is served as the
			// node with an empty id; only the fault treats it otherwise.
			if err := c.unservable(nil); err != nil {
				return err
			}
		}
		c.started = true
		c.node = node.GetId()
		c.features = node.GetClientFeatures()
		c.s.watch(c.node, c.wake)
		return nil
	}
	hasNode := node != nil
	if c.s.has(FaultRequireNodeEveryRequest) && !hasNode {
		return status.Error(codes.InvalidArgument, "node missing") // breaks STREAM-4
	}
	return nil
}

func (c *conn) end() {
	if c.started {
		c.s.unwatch(c.node, c.wake)
	}
}

// takesTTL reports whether the client may be sent TTLs (TTL-1).
func (c *conn) takesTTL() bool {
	return wire.TakesTTL(c.features) || c.s.has(FaultTTLForEveryone) // breaks TTL-1 when set
}

// takesWrappers reports whether SotW resources may be wrapped in
// discovery Resources for the client (TTL-5).
func (c *conn) takesWrappers() bool {
	return wire.TakesResourceInSotW(c.features) || c.s.has(FaultWrapForEveryone) // breaks TTL-5 when set
}

// resolveType finds the type a request is about. Per-type streams default to
// the service's type when type_url is empty.
func (c *conn) resolveType(typeURL string) (wire.Type, error) {
	if c.service != nil {
		// ROB-4: the type is implicit on a per-type stream.
		if (typeURL == "" && !c.s.has(FaultTypeURLRequired)) || typeURL == c.service.URL { // breaks ROB-4 when set
			return *c.service, nil
		}
		// ROB-1: another type on a per-type stream ends that stream alone.
		return wire.Type{}, c.unservable(status.Errorf(codes.InvalidArgument, "type_url %q on the %s service", typeURL, c.service.Short))
	}
	t, err := typeByURL(typeURL)
	if err != nil {
		// ROB-1: a type it does not serve (none, on ADS) ends the stream
		// with INVALID_ARGUMENT, and only that stream.
		return wire.Type{}, c.unservable(err)
	}
	return t, nil
}

// typeByURL finds a type by its full type URL, the only form requests and
// fixture calls may use.
func typeByURL(typeURL string) (wire.Type, error) {
	t, ok := wire.TypeByExactURL(typeURL)
	if !ok {
		return wire.Type{}, status.Errorf(codes.InvalidArgument, "unknown type_url %q", typeURL)
	}
	return t, nil
}

// nextNonce returns a fresh nonce for a response of any type: non-empty
// (NONCE-1) and never repeated on the stream (NONCE-2).
func (c *conn) nextNonce() string {
	c.nonces++
	n := fmt.Sprintf("%d", c.nonces)
	if c.s.has(FaultEmptyNonce) {
		n = "" // breaks NONCE-1
	}
	if c.s.has(FaultReuseNonce) {
		n = "1" // breaks NONCE-2
	}
	c.lastNonce = n
	return n
}

// pack returns the resource as sent on the wire. It is the stored Any, whose
// type URL is the resource's own (STREAM-7), never wrapped in a
// discovery Resource (TTL-5).
func (c *conn) pack(t wire.Type, e *entry) *anypb.Any {
	if t.URL == wire.Listener.URL && c.s.has(FaultListenerNameWithoutPort) {
		// Breaks RES-7: the listener comes back under another name.
		if name, err := wire.AnyName(e.res); err == nil {
			if a, err := wire.Renamed(e.res, c.servedName(t, name)); err == nil {
				return a
			}
		}
	}
	if c.s.has(FaultWrongTypeUrl) {
		// Breaks STREAM-7: same bytes, type URL of the next type.
		for i, u := range wire.AllTypes {
			if u.URL == t.URL {
				return &anypb.Any{TypeUrl: wire.AllTypes[(i+1)%len(wire.AllTypes)].URL, Value: e.res.GetValue()}
			}
		}
	}
	return e.res
}

// servedName is the name a resource is served under: its own (RES-7), or,
// with FaultListenerNameWithoutPort, a "host:port" listener name cut to host.
func (c *conn) servedName(t wire.Type, name string) string {
	if xdstp.Is(name) {
		return c.deliveredName(name) // XDSTP-4: as subscribed
	}
	if t.URL == wire.Listener.URL && c.s.has(FaultListenerNameWithoutPort) {
		if host, _, ok := strings.Cut(name, ":"); ok {
			return host
		}
	}
	return name
}

// unrequestedType is the type FaultPushUnrequestedTypes pushes on ADS when t
// is first requested: Cluster, or Listener when t is Cluster.
func unrequestedType(t wire.Type) wire.Type {
	if t.URL == wire.Cluster.URL {
		return wire.Listener
	}
	return wire.Cluster
}

// serve runs the loop shared by both protocols: one goroutine receives, this
// one handles requests and wake-ups in order and is the only one to Send.
func serve[Req any](ctx context.Context, c *conn, recv func() (*Req, error), onRequest func(*Req) error, onWake func() error) error {
	defer c.end()
	c.ctx = ctx
	select {
	case <-c.s.crashed:
		return errCrashed // FaultCrashOnUnservable: no stream is served
	default:
	}
	reqs := make(chan *Req)
	recvErr := make(chan error, 1)
	go func() {
		for {
			r, err := recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- r:
			case <-ctx.Done(): // the handler returned or the client went away
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-c.s.crashed:
			return errCrashed // FaultCrashOnUnservable: every stream ends
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case r := <-reqs:
			if err := onRequest(r); err != nil {
				return err
			}
		case f := <-c.later:
			if err := f(); err != nil {
				return err
			}
		case <-c.wake:
			// Requests that have already arrived are handled first, so a
			// change is judged against the latest subscription (UPD-3).
			for drained := false; !drained; {
				select {
				case r := <-reqs:
					if err := onRequest(r); err != nil {
						return err
					}
				default:
					drained = true
				}
			}
			if err := onWake(); err != nil {
				return err
			}
		}
	}
}

// mergeAny is FaultMergeUpdates: next merged into prev, as a server that
// patches the copy it sent instead of replacing it would send (GRP-4
// broken). Anything that does not decode is sent as it is.
func mergeAny(prev, next *anypb.Any) *anypb.Any {
	p, err := prev.UnmarshalNew()
	if err != nil {
		return next
	}
	n, err := next.UnmarshalNew()
	if err != nil {
		return next
	}
	proto.Merge(p, n)
	merged, err := anypb.New(p)
	if err != nil {
		return next
	}
	return merged
}

// firstNameOnly reports whether a request's names are cut to the first
// (FaultFirstNameOnly, or FaultRoutesFirstNameOnly for routes).
func (s *Server) firstNameOnly(t wire.Type) bool {
	return s.has(FaultFirstNameOnly) || (t.URL == wire.Route.URL && s.has(FaultRoutesFirstNameOnly))
}

// dropped reports whether the server ignores requests of t altogether
// (FaultDropOneType: Runtime; FaultNoDeltaVHDS: VirtualHost on delta).
func (s *Server) dropped(t wire.Type, delta bool) bool {
	return (t.URL == wire.Runtime.URL && s.has(FaultDropOneType)) ||
		(t.URL == wire.VirtualHost.URL && delta && s.has(FaultNoDeltaVHDS))
}

// sent notes, for the faults that depend on it, the resources of type t a
// stream of node just sent.
func (s *Server) sent(node string, t wire.Type, names []string) {
	if t.URL != wire.Cluster.URL || !s.has(FaultSlowWarming) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clustersPushed[node] = setOfNames(names)
}

// warming reports whether FaultSlowWarming holds back the answer to an
// EDS request for name: the cluster was just pushed.
func (s *Server) warming(node string, t wire.Type, name string) bool {
	if t.URL != wire.Endpoint.URL || !s.has(FaultSlowWarming) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clustersPushed[node][name] // breaks WARM-3
}

// nameSet is a set of resource names.
type nameSet map[string]bool

// typeBase is the state of one resource type on a stream that SotW and
// Delta keep alike; sotwType and deltaType embed it, so the rules and
// faults both protocols implement read the same fields.
type typeBase struct {
	t       wire.Type
	started bool // a request of this type has been seen
	// wildcard is a legacy (WILD-2) or explicit "*" (WILD-1) wildcard.
	wildcard bool

	lastNonce   string // nonce of the last response of this type (NONCE-7, NONCE-12)
	lastVersion string // version of the last response (FaultBumpAllTypes)

	excluded       nameSet               // FaultUnsubscribeWildcardMember, FaultForgetDeleted: names dropped under "*"
	everSubscribed nameSet               // FaultUpdatesAfterUnsubscribe: every name ever subscribed
	frozen         nameSet               // FaultWildcardFrozen: what existed when the wildcard began
	stalled        bool                  // FaultStallAfterNack: a NACK came and no request since
	ignoredFirst   bool                  // FaultIgnoreFirstRequest: the type's first request was ignored
	sentAny        map[string]*anypb.Any // FaultMergeUpdates: what was last sent per name
	rearmed        nameSet               // FaultRecreationAfterUnsubscribe: names a deletion re-armed
	// repliedNonce is the nonce of the latest response once a request
	// answered it (FaultAckDropsSubscriptionChange tells the ACK from a
	// later hint update by it).
	repliedNonce string
}

// newTypeBase is the state of type t before its first request, its maps
// made so that the stream can fill them in.
func newTypeBase(t wire.Type) typeBase {
	return typeBase{t: t, excluded: nameSet{}, everSubscribed: nameSet{}, sentAny: map[string]*anypb.Any{}, rearmed: nameSet{}}
}

// covers reports whether the wildcard subscription covers name: the
// wildcard covers every resource of the type for the node, less what a
// fault takes out of it.
func (ts *typeBase) covers(s *Server, name string) bool {
	return ts.wildcard && !ts.excluded[name] && (!s.has(FaultWildcardFrozen) || ts.frozen[name]) // breaks WILD-1/2 when frozen
}

// holdsHeadOfLine is FaultADSHeadOfLine on an ADS stream: a subscribed
// EDS name that does not exist holds back every response. eds are the
// names the stream subscribes to explicitly for Endpoint, nil when it has
// not asked for that type.
func (c *conn) holdsHeadOfLine(eds nameSet) bool {
	if c.service != nil || eds == nil || !c.s.has(FaultADSHeadOfLine) {
		return false
	}
	snap := c.snapshot(wire.Endpoint.URL)
	for n := range eds {
		if _, ok := snap.resources[n]; !ok {
			return true
		}
	}
	return false
}

// phase is one phase of a change pushed make-before-break: its pending
// pushes, one per type, and whether they are the removals.
type phase[P any] struct {
	pending  []P
	removing bool
}

// phases orders the two phases of one change (CONS-1..6): first the
// updates, then the removals, referrers first (typeOf gives a pending
// push's type URL); with FaultRemovalsFirst the removals go first.
func phases[P any](c *conn, updates, removals []P, typeOf func(P) string) []phase[P] {
	out := []phase[P]{{pending: updates}, {pending: inRemovalOrder(removals, typeOf), removing: true}}
	if c.s.has(FaultRemovalsFirst) {
		out[0], out[1] = out[1], out[0] // breaks CONS-6
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
