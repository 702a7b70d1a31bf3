package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// S is a server-role scenario in progress: the engine's T plus a fake xDS
// client connected to the target, and Must-style steps that fail the
// scenario (or abort it, when the harness or fixture cannot go on) so that
// scenario bodies stay short.
type S struct {
	*engine.T
	// C is the fake client; scenarios reach for it to send deliberately
	// wrong messages.
	C      *fakeclient.Client
	target *targets.Server
	// served are the names the fixture said it serves this pair's
	// resources under: a server that generates names may not keep the
	// pair's prefix.
	served map[string]bool
	// revisions are the fields that identify each revision set, on a
	// server that builds content itself.
	revisions map[revisionKey][]*fixturepb.RevisionField

	// rule is the rule the current step checks, set by Checking; empty,
	// a step checks its own default rule (see ruleOr).
	rule string
	// next holds, per type URL, the rule the next awaited response of the
	// type answers to: the request or change that provokes it says which
	// (a new subscription RES-2, a name added RES-4, a delta subscribe
	// DELTA-3, a pushed change VER-1 or DELTA-4, a deletion DEL-1 or
	// DEL-7). A scenario whose headline check awaits a response names
	// its rule with Checking instead.
	next map[string]string
	// closing holds, per type URL, the rule a target breaks by closing
	// the stream from then on (ACK-9 after a NACK).
	closing map[string]string
	// pre is, inside a precondition helper (see precondition), the rule
	// its steps rest on when they have none of their own; every failure
	// there blocks the pair.
	pre string
	// held keeps the failures of testify assertions on precondition
	// steps until FailNow says whether they were fatal (precondition.go).
	held *pending
}

// Checking returns s for a step that checks rule: every failure of the
// step is reported under it, whatever the step's own default. The last
// step of a scenario, the one its title is about, names its rule this way.
func (s *S) Checking(rule string) *S {
	c := *s
	c.rule = rule
	return &c
}

// precondition returns s for the steps of a precondition helper (Barrier,
// say) resting on rule: every failure of theirs blocks the pair by the
// step's own rule, else by rule, never a failure of the rule a Checking
// around the helper's call names (see precondition.go).
func (s *S) precondition(rule string) *S {
	c := *s
	c.pre, c.rule = rule, ""
	return &c
}

// ruleOr is the rule a failing step breaks: the one named by Checking,
// else def (the step's own), else the scenario's headline rule.
func (s *S) ruleOr(def string) string {
	switch {
	case s.rule != "":
		return s.rule
	case def != "":
		return def
	}
	return s.Headline()
}

// Errorf records a failure of the current step's rule; testify's
// assertions report through it. On a precondition step the failure is
// held until FailNow says whether the assertion was fatal (a block) or
// not (a failure of the rule): see precondition.go.
func (s *S) Errorf(format string, args ...any) {
	rule, block := judgeStep(s.T, s.pre, s.rule, "")
	s.held.errorf(s.T, s, rule, block, format, args...)
}

// FailNow stops the body: a precondition step whose assertion just failed
// blocks the pair, any other fails it with the failures recorded.
func (s *S) FailNow() { s.held.failNow(s.T, s) }

// Fatalf records a failure of the current step's rule and stops the body.
func (s *S) Fatalf(format string, args ...any) {
	s.Errorf(format, args...)
	s.FailNow()
}

// failAs records a failure and stops the body. It is filed under the
// closing rule in force when err says the stream ended (after a NACK,
// closing it breaks ACK-9 whichever step noticed, and so does losing it:
// a check, wherever it is seen), else as judgeStep says: inside a
// precondition helper, or outside one on a step that is no check and whose
// def the scenario does not cite, it blocks the pair by def (or the
// helper's rule); otherwise it fails the step's rule (Checking), else def,
// else the headline. A step the
// harness cut short (its receive limit, its queue bound, the scenario's
// deadline) or that lost its connection, with no closing rule in force, ends the pair with
// an error instead: the target broke no rule the step checks.
//
// A stream the target ended because it refused a message the harness
// sent, as too large for its own limit, ends the pair with an error
// charged to the target, closing rule or not: xDS bounds no message, and
// a server may end a stream it cannot serve with a status (ROB-1, ROB-2),
// so the refusal breaks no rule, but the scenario could not go on. The
// error names the target's limit, not the harness's (--max-recv-size),
// which had no part in it.
func (s *S) failAs(def string, err error, format string, args ...any) {
	if fakeclient.RecvLimitExceeded(err) {
		s.Abortf("%s", fakeclient.RecvLimitNote(err))
	}
	if r, ok := fakeclient.TargetRefused(err); ok {
		s.Abortf("%s: %s", fakeclient.RefusedNote(r), fmt.Sprintf(format, args...))
	}
	if errors.Is(err, fakeclient.ErrOverflow) {
		s.Abortf("%s: %s", queueBoundNote, fmt.Sprintf(format, args...))
	}
	if why := cutShort(s.T, err); why != "" {
		s.Abortf("%s: %s", why, fmt.Sprintf(format, args...))
	}
	var closed *fakeclient.ClosedError
	if errors.As(err, &closed) {
		if url := closedType(s, closed); url != "" {
			s.T.Failf(s.closing[url], format, args...)
			s.FailNow()
		}
		if grpcstatus.Code(err) == codes.Unavailable {
			s.Abortf("the connection to the target was lost mid-step: %s", fmt.Sprintf(format, args...))
		}
	} else if grpcstatus.Code(err) == codes.Unavailable {
		// Not a stream the target ended but one that could not be opened:
		// gRPC fails a new stream with Unavailable only when it cannot
		// reach the target (a refused connection, a dead process). The
		// target broke no rule the step checks; the engine's liveness
		// check says whether it died.
		s.Abortf("the target could not be reached: %s", fmt.Sprintf(format, args...))
	}
	rule, block := judgeStep(s.T, s.pre, s.rule, def)
	stopStep(s.T, s.held, rule, block, format, args...)
}

// queueBoundNote heads the error of a step whose wait found the harness's
// own byte-bounded queue full (fakeclient.ErrOverflow,
// fakeserver.ErrOverflow): what it waited for may have been dropped, so
// the target broke no rule the step checks.
const queueBoundNote = "the harness's queue bound was reached, so what the step waited for may have been dropped by the harness"

// cutShort says why a step that ended with err was cut short by the
// harness — the scenario's deadline, or an interrupt or a dead target
// ending the run — or "" when it was not: whatever the wait returned then,
// it returned because the pair's time was up.
func cutShort(t *engine.T, err error) string {
	ctxErr := t.Context().Err()
	if d, ok := t.Context().Deadline(); ok && ctxErr == nil && err != nil && !time.Now().Before(d) {
		// gRPC reads the deadline itself and may fail a call with
		// DeadlineExceeded a moment before the context's own timer
		// fires: the pair's time is up all the same.
		ctxErr = context.DeadlineExceeded
	}
	switch {
	case err == nil || ctxErr == nil:
		return ""
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Sprintf("the step was cut short by the scenario's deadline (--scenario-timeout %v)", t.Timeouts.Scenario)
	}
	return "the step was cut short: the run is ending"
}

// closedType is the type URL whose closing rule applies to a stream the
// target closed: on ADS any type's, on a per-type stream its own.
func closedType(s *S, closed *fakeclient.ClosedError) string {
	for url := range s.closing {
		if t, ok := wire.TypeByURL(url); ok && (s.Variant.IsADS() || strings.HasPrefix(closed.Stream, t.Short+"#")) {
			return url
		}
	}
	return ""
}

// expecting records the rule the next awaited response of t answers to.
func (s *S) expecting(t wire.Type, rule string) { s.next[t.URL] = rule }

// awaitRule is the rule a wait for a response of t breaks when nothing
// comes (see failAs for a stream the target closed).
func (s *S) awaitRule(t wire.Type) string { return s.next[t.URL] }

// NewS starts a server-role scenario: a fresh connection and fake client
// for this pair, a clean fixture state for its node, and the global
// invariants checked after the body. ServerScript calls it.
func NewS(t *engine.T) *S {
	target, ok := t.Env.(*targets.Server)
	if !ok {
		t.Abortf("server scenario run without a server target (env %T)", t.Env)
	}
	// Registered first so it runs last, after every fake client closed:
	// the reset's removals must not reach a client whose watches are
	// still on.
	t.Cleanup(func() {
		if target.Fixture != nil {
			// Leave the shared server as we found it, even when the
			// scenario's own context has run out; failure here cannot
			// change the verdict.
			ctx, cancel := context.WithTimeout(context.Background(), t.Timeouts.Expect)
			defer cancel()
			_ = target.Fixture.Reset(ctx, t.NodeID)
		}
	})
	if target.Fixture != nil {
		ctx, cancel := context.WithTimeout(t.Context(), t.Timeouts.Expect)
		defer cancel()
		if err := target.Fixture.Reset(ctx, t.NodeID); err != nil {
			t.Abortf("%v", err)
		}
	}
	c := connect(t, target)
	s := &S{T: t, C: c, target: target, served: map[string]bool{}, revisions: map[revisionKey][]*fixturepb.RevisionField{},
		next: map[string]string{}, closing: map[string]string{}, held: newPending(t)}
	return s
}

// Set creates or replaces resource base (made unique to the pair) at
// revision rev through the fixture and returns the name the server serves.
func (s *S) Set(t wire.Type, base string, rev int) string {
	return s.SetWith(t, base, rev, fixture.SetRequest{})
}

// SetWith is Set with the options of the fixture's features (a TTL,
// aliases) taken from opts; its Type, Name and Resource are filled in.
func (s *S) SetWith(t wire.Type, base string, rev int, opts fixture.SetRequest) string {
	opts.Resource = nil
	return s.setAs(t, base, rev, opts)
}

// SetContent sets resource base to content a, of the pair's making (made
// for name s.Name(base)); rev is the revision a fixture that builds its
// own content builds instead.
func (s *S) SetContent(t wire.Type, base string, rev int, a *anypb.Any) string {
	return s.setAs(t, base, rev, fixture.SetRequest{Resource: a})
}

// setAs sets opts through the fixture, its Type and Name filled in, and
// its Resource when unset: revision rev of the harness's own content.
func (s *S) setAs(t wire.Type, base string, rev int, opts fixture.SetRequest) string {
	name := s.Name(base)
	opts.Type, opts.Name = t, name
	if opts.Resource == nil {
		opts.Resource = wire.BuildAny(t, name, rev)
	}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	var served fixture.Served
	var err error
	if opts.TTL == 0 && len(opts.Aliases) == 0 && opts.Constraints == nil && opts.Error == nil {
		// The plain call when no feature is used: what every fixture
		// implements, and what test doubles of the fixture wrap.
		served, err = s.target.Fixture.Set(ctx, s.NodeID, t, name, opts.Resource)
	} else {
		served, err = s.target.Fixture.SetWith(ctx, s.NodeID, opts)
	}
	if err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, false)
	s.record(t, name, rev, served)
	return served.Name
}

// changed notes that a resource of t was set (or deleted): the next wait
// for a response of t is for the push that tells the client, under the
// rule of that push.
func (s *S) changed(t wire.Type, deleted bool) {
	switch {
	case !deleted:
		s.expecting(t, s.pushRule())
	case s.Variant.IsDelta():
		s.expecting(t, "DEL-1")
	case t.Wildcard:
		s.expecting(t, "DEL-7")
	}
}

// record notes what the fixture said of a resource it set.
func (s *S) record(t wire.Type, name string, rev int, served fixture.Served) {
	s.served[served.Name] = true
	if s.target.Caps.GetBuildsContent() {
		if len(served.Revision) == 0 {
			s.Abortf("fixture SetResource %s %q: the server builds content but returned no revision fields", t.Short, name)
		}
		s.revisions[revisionKey{t.URL, served.Name, rev}] = served.Revision
	}
}

// Change is one change of a batch (see Apply): Set of a revision (Message
// nil) or of a message, or a deletion.
type Change struct {
	Type wire.Type
	// Base is the resource's name before it is made unique to the pair;
	// for a deletion, the name served.
	Base    string
	Rev     int
	Message proto.Message // content to set instead of revision Rev
	Delete  bool
}

// Apply applies changes through the fixture's batch (feature "batch"), so
// the server sees them as one change, and returns the names served, one
// per change.
func (s *S) Apply(changes ...Change) []string {
	var fcs []fixture.Change
	for _, c := range changes {
		if c.Delete {
			fcs = append(fcs, fixture.DeleteChange(c.Type, c.Base))
			continue
		}
		name := s.Name(c.Base)
		m := c.Message
		if m == nil {
			m = wire.Build(c.Type, name, c.Rev)
		}
		a, err := anypb.New(m)
		if err != nil {
			s.Abortf("packing %T: %v", m, err)
		}
		fcs = append(fcs, fixture.SetChange(fixture.SetRequest{Type: c.Type, Name: name, Resource: a}))
	}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	served, err := s.target.Fixture.Apply(ctx, s.NodeID, fcs)
	if err != nil {
		s.Abortf("%v", err)
	}
	var names []string
	i := 0
	for _, c := range changes {
		s.changed(c.Type, c.Delete)
		if c.Delete {
			names = append(names, c.Base)
			continue
		}
		if c.Message == nil {
			s.record(c.Type, s.Name(c.Base), c.Rev, served[i])
		} else {
			s.served[served[i].Name] = true
		}
		names = append(names, served[i].Name)
		i++
	}
	return names
}

// WithFeatures replaces the scenario's fake client, before it has sent
// anything, by one that advertises client features (TTLs, Resource
// wrappers in SotW).
func (s *S) WithFeatures(features ...string) {
	s.C = connectWith(s.T, s.target, fakeclient.Options{ClientFeatures: features})
}

// pushRule is the rule a change to a subscribed resource is pushed
// under: a new type version in SotW (VER-1), an update of a tracked
// resource in delta (DELTA-4).
func (s *S) pushRule() string {
	if s.Variant.IsDelta() {
		return "DELTA-4"
	}
	return "VER-1"
}

// revisionKey names one revision of one served resource.
type revisionKey struct {
	typeURL, name string
	rev           int
}

// isRevision reports whether got is revision rev of resource name, and if
// not, why. A server that serves what was set must serve it whole (wire.Build);
// one that builds content must show the revision's fields.
func (s *S) isRevision(t wire.Type, name string, rev int, got proto.Message) (bool, string) {
	if fields, ok := s.revisions[revisionKey{t.URL, name, rev}]; ok {
		why := revisionMismatch(got, fields)
		return why == "", why
	}
	if proto.Equal(wire.Build(t, name, rev), got) {
		return true, ""
	}
	return false, "it differs from the resource set"
}

// Delete removes a resource through the fixture.
func (s *S) Delete(t wire.Type, name string) {
	ctx, cancel := s.fixtureContext()
	defer cancel()
	if err := s.target.Fixture.Delete(ctx, s.NodeID, t, name); err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, true)
}

// fixtureContext bounds one fixture call by the expect timeout: a fixture
// that hangs ends the scenario with an error outcome naming the call, not
// with the whole scenario's time running out.
func (s *S) fixtureContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.Context(), s.Timeouts.Expect)
}

// Subscribe asks for names of type t (see fakeclient.Client.Subscribe).
func (s *S) Subscribe(t wire.Type, names ...string) {
	s.expecting(t, s.subscribeRule(t, names))
	s.must(t, s.C.Subscribe(t, names...))
}

// subscribeRule is the rule the answer to a subscription checks: "*"
// asks for the wildcard (WILD-1); a type's first request on a stream
// asks for resources that exist (RES-2); a later SotW request adds names
// (RES-4) and a later delta one subscribes (DELTA-3).
func (s *S) subscribeRule(t wire.Type, names []string) string {
	switch {
	case slices.Contains(names, "*"):
		return "WILD-1"
	case !s.C.Started(t):
		return "RES-2"
	case s.Variant.IsDelta():
		return "DELTA-3"
	}
	return "RES-4"
}

// SubscribeWithNonce is Subscribe on a request whose response_nonce is
// nonce instead of the latest one: a stale or unknown nonce (NONCE-7,
// NONCE-12).
func (s *S) SubscribeWithNonce(t wire.Type, nonce string, names ...string) {
	s.expecting(t, s.subscribeRule(t, names))
	s.must(t, s.C.SubscribeWithNonce(t, nonce, names...))
}

// Unsubscribe drops names of type t.
func (s *S) Unsubscribe(t wire.Type, names ...string) { s.must(t, s.C.Unsubscribe(t, names...)) }

// Wildcard sends the legacy wildcard request for t.
func (s *S) Wildcard(t wire.Type) {
	s.expecting(t, "WILD-2")
	s.must(t, s.C.RequestWildcardLegacy(t))
}

// Ack acknowledges r.
func (s *S) Ack(t wire.Type, r *fakeclient.Response) { s.must(t, s.C.Ack(t, r)) }

// Nack rejects r with an error_detail. From then on a stream the target
// closes breaks ACK-9: a NACK is an ordinary message.
func (s *S) Nack(t wire.Type, r *fakeclient.Response) {
	s.closing[t.URL] = "ACK-9"
	s.must(t, s.C.Nack(t, r, "xdsconform: rejected on purpose by the scenario"))
}

// NackWith rejects r with detail; a stream the target closes from then on
// breaks the step's rule (ACK-9 unless the step names one).
func (s *S) NackWith(t wire.Type, r *fakeclient.Response, detail *status.Status) {
	s.closing[t.URL] = s.ruleOr("ACK-9")
	s.must(t, s.C.NackWith(t, r, detail))
}

// ReplyChanging answers r and changes the subscription in one request: an
// ACK (detail nil) or a NACK that also adds names add and drops names
// drop (fakeclient.Client.ReplyChanging). The answer to the names added
// answers the subscription (RES-4 in SotW, DELTA-3 in delta); after a
// NACK, a stream the target closes breaks ACK-9.
func (s *S) ReplyChanging(t wire.Type, r *fakeclient.Response, detail *status.Status, add, drop []string) {
	if len(add) > 0 {
		s.expecting(t, s.subscribeRule(t, add))
	}
	if detail != nil {
		s.closing[t.URL] = "ACK-9"
	}
	s.must(t, s.C.ReplyChanging(t, r, detail, add, drop))
}

// EndingBreaks says that, from now on, the target ending the stream that
// carries t breaks rule, whichever step notices: the request just sent is
// one the server must take in its stride (a delta unsubscribe of a name
// never subscribed, UNSUB-4), as a NACK is (ACK-9, which Nack sets). It is
// a check: a later precondition (a barrier) that finds the stream gone
// fails rule rather than blocking on its own.
func (s *S) EndingBreaks(t wire.Type, rule string) { s.closing[t.URL] = rule }

// must stops the scenario on a request that could not be sent: the
// target closed the stream, which breaks the closing rule in force.
func (s *S) must(t wire.Type, err error) {
	if err != nil {
		s.failAs(s.awaitRule(t), err, "%v", err)
	}
}

// Expect returns the next response of type t; none within the expect
// timeout, or a closed stream, fails the scenario.
func (s *S) Expect(t wire.Type) *fakeclient.Response {
	r, err := s.C.Expect(t)
	if err != nil {
		s.failAs(s.awaitRule(t), err, "expected %s response: %v", wording.A(t.Short), err)
	}
	return r
}

// awaitWhere reads responses of t until done holds for one and returns it,
// ACKing each response before it. One deadline covers the whole wait: a
// server that keeps sending responses that are not the awaited one (an ACK
// loop, say) cannot keep the scenario waiting beyond the expect timeout.
// what describes the awaited response, for the report.
func (s *S) awaitWhere(t wire.Type, what string, done func(*fakeclient.Response) bool) *fakeclient.Response {
	return s.awaitExplaining(t, what, done, nil)
}

// AwaitMatching reads responses of t until done holds for one and returns
// it, ACKing each response before it, all within the expect timeout: a
// step that waits for what its own predicate describes (what, in words,
// for the report). lastMiss, if not nil, says why the last response read
// was not the awaited one. Nothing came that would do breaks the rule of
// the request or change that provoked the wait, or the step's (Checking).
func (s *S) AwaitMatching(t wire.Type, what string, done func(*fakeclient.Response) bool, lastMiss func() string) *fakeclient.Response {
	return s.awaitExplaining(t, what, done, lastMiss)
}

// ExpectMatching returns the next response of t, which must be what check
// accepts: check says what is wrong with it ("" when nothing is), and a
// response it refuses fails the step under the rule Expect's wait would
// (the request's or change's, or the step's own).
func (s *S) ExpectMatching(t wire.Type, what string, check func(*fakeclient.Response) string) *fakeclient.Response {
	r := s.Expect(t)
	if why := check(r); why != "" {
		s.failAs(s.awaitRule(t), nil, "expected the next %s response (nonce %q) to be %s: %s", t.Short, r.Nonce, what, why)
	}
	return r
}

// IsRevision reports whether got, the content of resource name of t as
// served, is revision rev as the fixture set it, and if not, why.
func (s *S) IsRevision(t wire.Type, name string, rev int, got proto.Message) (bool, string) {
	return s.isRevision(t, name, rev, got)
}

// awaitExplaining is awaitWhere whose failure also says why the responses
// read were not the awaited one: lastMiss, if set, describes the last.
func (s *S) awaitExplaining(t wire.Type, what string, done func(*fakeclient.Response) bool, lastMiss func() string) *fakeclient.Response {
	// One wait of the harness's own running time (lag.Deadline) for the
	// whole step: the server is given up on only once it had all of it.
	deadline := lag.NewDeadline(s.Timeouts.Expect)
	start := deadline.Start()
	passed := 0
	for {
		r, err := s.C.ExpectWithin(t, max(deadline.Left(), 0))
		if err != nil {
			why := waitEnded(err, t.Short+" response", start, passed)
			s = s.unansweredMay(t, err, passed)
			if lastMiss != nil && lastMiss() != "" {
				s.failAs(s.awaitRule(t), err, "expected %s: %s (the last one was not: %s)", what, why, lastMiss())
			}
			s.failAs(s.awaitRule(t), err, "expected %s: %s", what, why)
		}
		if done(r) {
			return r
		}
		passed++
		s.Logf("response %q is not yet %s; ACKing it and waiting on", r.Nonce, what)
		s.Ack(t, r)
	}
}

// unansweredMay is s for the failure of a wait that read passed responses
// of t and ended with err. A check of a MAY rule judges what the server
// sent: a server that sent nothing of t at all was not seen leaving the
// optional behaviour out, it left the request or change that provoked the
// wait unanswered. That is a precondition of the check, resting on the
// rule of that request or change (RES-2 for a first subscription, ...),
// so the pair is blocked by it rather than reported unsupported.
func (s *S) unansweredMay(t wire.Type, err error, passed int) *S {
	provoked := s.awaitRule(t)
	if passed > 0 || !errors.Is(err, fakeclient.ErrTimeout) || s.rule == "" || provoked == "" || s.pre != "" ||
		engine.LevelOf(s.rule, "") != results.May {
		return s
	}
	return s.precondition(provoked)
}

// waitEnded says why a wait that began at start, reading responses (kind:
// "EDS response", say) until one would do and passing over the others,
// ended with err. On a
// timeout it names the time the whole wait took and how many responses it
// passed over: err itself only knows its last read, which had what was left
// of the wait ("within 3ms"). Any other end is err's own text.
func waitEnded(err error, kind string, start time.Time, passed int) string {
	if !errors.Is(err, fakeclient.ErrTimeout) {
		return err.Error()
	}
	why := "none came within " + wording.Duration(time.Since(start))
	if passed > 0 {
		why += fmt.Sprintf(" (%s came meanwhile)", wording.N(passed, "other "+kind))
	}
	return why
}

// ExpectAcked is Expect followed by an ACK of the response.
func (s *S) ExpectAcked(t wire.Type) *fakeclient.Response {
	r := s.Expect(t)
	s.Ack(t, r)
	return r
}

// Never checks that no response of any of types arrives from now until
// the pair ends, its trailing quiet window included (a watch: the body
// goes on at once). why is the rule in words, for the report; the rule
// is the step's (Checking) or the headline.
func (s *S) Never(why string, types ...wire.Type) {
	s.forbidOn(s.C, fakeclient.Watch{Rule: s.ruleOr(""), Why: why, Types: types})
}

// NeverCarrying checks that, from now until the pair ends, no response of
// t carries (or removes) one of names. Responses about other resources
// are harmless.
func (s *S) NeverCarrying(why string, t wire.Type, names ...string) {
	s.forbidOn(s.C, s.watch(why, t, names...))
}

// watch is the watch NeverCarrying sets, for a client of the scenario's
// choosing (see Another).
func (s *S) watch(why string, t wire.Type, names ...string) fakeclient.Watch {
	return fakeclient.Watch{Rule: s.ruleOr(""), Why: why, Types: []wire.Type{t}, Match: carrying(names)}
}

// forbidOn sets watch w on client c and keeps the pair for the trailing
// window, in which c ACKs whatever still comes.
func (s *S) forbidOn(c *fakeclient.Client, w fakeclient.Watch) {
	c.Forbid(w)
	s.Linger(c.AutoAck)
}

// carrying matches responses that carry or remove one of names.
func carrying(names []string) func(*fakeclient.Response) bool {
	return func(r *fakeclient.Response) bool {
		for _, n := range names {
			if r.Has(n) || r.HasRemoved(n) {
				return true
			}
		}
		return false
	}
}

// Settle gives the server the quiet window to take in a request that gets
// no answer (a NACK), before the scenario changes what the server holds:
// a scenario about what a server does after a NACK cannot send another
// request of the type to learn that the NACK arrived, since any request
// would wake a server that stalls the type until the client speaks
// again; and on a per-type stream no request of another type can act as a
// barrier (on ADS, Barrier with another type does). What arrives of t
// meanwhile is ACKed, so a server resending the
// rejected version is not kept in a NACK loop (that loop is
// server/nack/no-resend-loop's to report); nothing here fails.
func (s *S) Settle(t wire.Type) { s.quiet(t, "", carrying(nil)) }

// QuietCarrying is NeverCarrying for a while only: it watches for the
// quiet window, ACKing harmless responses so the stream stays in step,
// then lets the scenario go on to a step after which names may come
// again (a resubscription, say).
func (s *S) QuietCarrying(why string, t wire.Type, names ...string) { s.quiet(t, why, carrying(names)) }

// Quiet checks that no response of t at all arrives for the quiet window,
// which the step waits out (Never is the watch that runs to the end of
// the pair instead); why says what a response would mean.
func (s *S) Quiet(why string, t wire.Type) {
	s.quiet(t, why, func(*fakeclient.Response) bool { return true })
}

// quiet watches responses of t for the quiet window, ACKing each, and
// fails (saying why) at the first one bad matches.
//
// The window is of the harness's own running time (lag.Deadline): it
// watches as long on a busy machine as on an idle one, and what the
// scenario does next only comes later.
func (s *S) quiet(t wire.Type, why string, bad func(*fakeclient.Response) bool) {
	deadline := lag.NewDeadline(s.Timeouts.Quiet)
	for {
		r, err := s.C.ExpectNoneWithin(max(deadline.Left(), 0), t)
		if err == nil {
			return
		}
		if r == nil {
			s.failAs(s.awaitRule(t), err, "%v", err)
		}
		if bad(r) {
			s.Errorf("%s: unexpected %s response (nonce %q) carrying %q", why, t.Short, r.Nonce, r.Names())
			return
		}
		s.Logf("ACKing response %q, which came in the quiet window", r.Nonce)
		s.Ack(t, r)
	}
}

// AwaitResource reads responses of t until one carries name, ACKing each
// response before it (they are about other resources, which a server may
// send separately: GRP-2), and returns it. It fails if none does within
// the expect timeout.
func (s *S) AwaitResource(t wire.Type, name string) *fakeclient.Response {
	return s.awaitWhere(t, fmt.Sprintf("%s response carrying %q", wording.A(t.Short), name), func(r *fakeclient.Response) bool {
		return r.Has(name)
	})
}

// AwaitRemoved reads delta responses of t until one lists name in
// removed_resources, ACKing each one before it.
func (s *S) AwaitRemoved(t wire.Type, name string) *fakeclient.Response {
	// A response still carrying name is no failure on its own: a server
	// whose model catches up with the fixture a little later (Consul) may
	// send the resource once more before it removes it.
	return s.awaitWhere(t, fmt.Sprintf("%s response removing %q", wording.A(t.Short), name), func(r *fakeclient.Response) bool {
		return r.HasRemoved(name)
	})
}

// RequireResource fails unless r carries name with exactly the content of
// revision rev (a whole-message comparison). Content that differs from
// what was set breaks GRP-4: a resource is replaced whole.
func (s *S) RequireResource(t wire.Type, r *fakeclient.Response, name string, rev int) {
	got := r.Get(name)
	if got == nil {
		s.failAs(s.next[t.URL], nil, "%s response (nonce %q) does not carry %q; it carries %q", t.Short, r.Nonce, name, r.Names())
	}
	whole := s.Checking(s.ruleOr("GRP-4"))
	if fields, ok := s.revisions[revisionKey{t.URL, name, rev}]; ok {
		require.Empty(whole, revisionMismatch(got, fields), "%s %q is not revision %d", t.Short, name, rev)
		return
	}
	requireSameMessage(whole, wire.Build(t, name, rev), got, "%s %q is not revision %d", t.Short, name, rev)
}

// Own returns the names in r made by this pair, sorted: on a server shared
// with other pairs, wildcard responses also carry theirs.
func (s *S) Own(r *fakeclient.Response) []string {
	own := r.Filter(func(name string) bool { return s.Owns(name) || s.served[name] })
	slices.Sort(own)
	return own
}

// RequireOwnExactly fails unless this pair's resources in r are exactly names.
func (s *S) RequireOwnExactly(r *fakeclient.Response, names ...string) {
	want := slices.Clone(names)
	slices.Sort(want)
	require.Equal(s, want, s.Own(r), "%s response (nonce %q, version %q): the resources of this scenario", shortType(r.TypeURL), r.Nonce, r.Version)
}

func shortType(url string) string {
	if t, ok := wire.TypeByURL(url); ok {
		return t.Short
	}
	return url
}

// requireSameMessage compares two messages whole and shows a readable diff
// of their JSON forms when they differ. The forms are the redactor's (a
// served resource can inline a private key), so messages that differ
// only where it redacts are said to.
func requireSameMessage(t require.TestingT, want, got proto.Message, msgAndArgs ...any) {
	if proto.Equal(want, got) {
		return
	}
	opts := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}
	w, g := opts.Format(transcript.Redact(want)), opts.Format(transcript.Redact(got))
	if w == g {
		require.Fail(t, "the messages differ only in fields redacted as secret, or in fields this build does not know", msgAndArgs...)
	}
	require.Equal(t, w, g, msgAndArgs...)
}

// revisionMismatch is fixture.Mismatch with the secrets kept out: the
// fixture's revision paths can reach into a credential, and the mismatch
// quotes what it finds there and what the fixture wants. Secrets in got
// are made known to the scrubber by redacting it, and so is the value
// wanted at any path the redaction changes; the comparison itself is of
// the resource as served.
func revisionMismatch(got proto.Message, fields []*fixturepb.RevisionField) string {
	why := fixture.Mismatch(got, fields)
	if why == "" {
		return ""
	}
	if red := transcript.Redact(got); red != got {
		for _, f := range fields {
			// Only a path both forms have, with different values, is a
			// secret's: a resource that does not render (an Any of a type
			// not linked) differs from its redacted form everywhere.
			g, errG := fixture.Field(got, f.GetPath())
			r, errR := fixture.Field(red, f.GetPath())
			if errG == nil && errR == nil && g.GetValue() != r.GetValue() {
				transcript.RememberSecret(f.GetValue())
			}
		}
	}
	return transcript.Scrub(why)
}

// AwaitAll reads responses of t until every one of names has been carried
// by some response, ACKing each response as it comes (a server may split
// them: GRP-2), and returns the last response read.
func (s *S) AwaitAll(t wire.Type, names ...string) *fakeclient.Response {
	missing := map[string]bool{}
	for _, n := range names {
		missing[n] = true
	}
	r := s.awaitWhere(t, fmt.Sprintf("%s responses carrying %q", t.Short, names), func(r *fakeclient.Response) bool {
		for _, n := range r.Names() {
			delete(missing, n)
		}
		return len(missing) == 0
	})
	s.Ack(t, r)
	return r
}

// Types lists the resource types the target serves that the variant can
// carry, in catalogue order.
func (s *S) Types() []wire.Type {
	var out []wire.Type
	for _, t := range wire.AllTypes {
		if t.Speaks(s.Variant.Protocol) && (s.target.Caps == nil || fixture.Effective(s.target.Caps, s.Variant).Serves(t)) {
			out = append(out, t)
		}
	}
	return out
}

// TypesOf lists those of types the target serves in the variant, in the
// order given; a scenario about several types checks the ones served, and
// is skipped when there are none.
func (s *S) TypesOf(types ...wire.Type) []wire.Type {
	served := s.Types()
	var out []wire.Type
	for _, t := range types {
		if slices.ContainsFunc(served, func(u wire.Type) bool { return u.URL == t.URL }) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		s.Skipf("the server serves none of the types this scenario checks in %s", s.Variant)
	}
	return out
}

// Another opens a second fake client for the same node on its own
// connection, for scenarios about several streams (MULTI-2).
func (s *S) Another() *fakeclient.Client {
	return connect(s.T, s.target)
}

// connect opens a connection and a fake client for the pair's node, closes
// both after the body and checks the global invariants on everything the
// client received.
func connect(t *engine.T, target *targets.Server) *fakeclient.Client {
	return connectWith(t, target, fakeclient.Options{})
}

// connectWith is connect for a client of its own kind: o's
// ClientFeatures and NodeOnEveryRequest; the rest is the pair's.
func connectWith(t *engine.T, target *targets.Server, o fakeclient.Options) *fakeclient.Client {
	conn, err := target.Connect()
	if err != nil {
		t.Abortf("%v", err)
	}
	c := fakeclient.New(t.Context(), conn, t.Variant, fakeclient.Options{
		NodeID:             target.NodeID(t.NodeID),
		Cluster:            target.NodeCluster(t.NodeID),
		NodeMetadata:       target.NodeMetadata,
		NodeOnEveryRequest: o.NodeOnEveryRequest,
		ClientFeatures:     o.ClientFeatures,
		Metadata:           target.Metadata,
		Timeout:            t.Timeouts.Expect,
		Transcript:         t.Transcript,
		OnViolation:        t.StopLinger,
		OnSend:             t.SentToTarget,
	})
	t.Cleanup(func() { c.Close(); conn.Close() })
	t.AfterRun(func(t *engine.T) {
		for _, v := range c.Violations() {
			t.Failf(v.Rule, "%s", v)
		}
	})
	return c
}

// AwaitRevision reads responses of t until one carries name with exactly
// the content of revision rev, ACKing each response before it (earlier
// revisions and other resources are harmless on the way), and returns it.
func (s *S) AwaitRevision(t wire.Type, name string, rev int) *fakeclient.Response {
	return s.AwaitRevisionChecking(t, name, rev, nil)
}

// AwaitRevisionChecking is AwaitRevision that also applies check to every
// response read on the way, the awaited one included, for rules about what
// must not come along with it.
func (s *S) AwaitRevisionChecking(t wire.Type, name string, rev int, check func(*fakeclient.Response)) *fakeclient.Response {
	var miss string
	return s.awaitExplaining(t, fmt.Sprintf("%s response carrying %q at revision %d", wording.A(t.Short), name, rev), func(r *fakeclient.Response) bool {
		if check != nil {
			check(r)
		}
		got := r.Get(name)
		if got == nil {
			return false
		}
		ok, why := s.isRevision(t, name, rev, got)
		miss = why
		return ok
	}, func() string { return miss })
}

// AddedNamesServed is the precondition of a check that awaits a name a
// later request adds to the subscription, when that request is unusual
// (it omits node or type_url, follows a stale nonce, a NACK, a request the
// server had to tolerate): on a client of its own, a name added by the
// plainest such request must come: the ACK of the first response,
// carrying node and type_url as a first request does (RES-4 in SotW,
// DELTA-3 in delta). A server that serves no added name at all is blocked
// here, the one cause, instead of failing the rule of each unusual
// request whose check could not tell the two apart.
//
// A server that failed the control in a run, while it still answered
// connections, fails it in every pair of that variant: a pair that runs
// alone (the robustness pairs, one at a time, after the rest) is blocked
// at once, naming the first pair (by name) that showed it, rather than
// each waiting out the same timeout in turn. Only pairs that run alone
// are so spared: they start once every other pair has ended, so which
// pairs showed it, and so the report, does not depend on scheduling.
func (s *S) AddedNamesServed(t wire.Type) {
	key := addedNamesKey{s.Variant, t.URL}
	if s.target != nil {
		seen, _ := s.target.Learned().LoadOrStore(key, &controlFailures{})
		failures := seen.(*controlFailures)
		if pair, rule := failures.first(); pair != "" && s.RunsAlone() {
			s.Block(rule, "the control precondition for names a request adds (%s %s) failed earlier in this run, in %s, against a server that still answered connections: see that pair's transcript; not tried again",
				s.Variant, t.Short, pair)
		}
		defer func() {
			if rule := s.BlockedBy(); rule != "" && s.stillAnswers() {
				failures.add(s.Pair(), rule)
			}
		}()
	}
	p := s.precondition("RES-4")
	p.C = connectWith(s.T, s.target, fakeclient.Options{NodeOnEveryRequest: true})
	defer p.C.Close()
	// The control's expectations are its own: the scenario's client
	// keeps the rules its next responses answer to.
	p.next, p.closing = map[string]string{}, map[string]string{}
	a, b := p.Set(t, "added-control-a", 1), p.Set(t, "added-control-b", 1)
	p.Subscribe(t, a)
	p.ReplyChanging(t, p.awaitUnacked(t, a), nil, []string{b}, nil)
	p.AwaitResource(t, b)
}

// addedNamesKey is what AddedNamesServed's outcome is remembered under in
// a run: it holds for a variant and a type.
type addedNamesKey struct {
	variant wire.Variant
	typeURL string
}

// controlFailures are the pairs of a run that failed a control
// precondition, with the rule each was blocked under.
type controlFailures struct {
	mu    sync.Mutex
	pairs map[string]string
}

func (c *controlFailures) add(pair, rule string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pairs == nil {
		c.pairs = map[string]string{}
	}
	c.pairs[pair] = rule
}

// first is the pair first by name, and its rule; "" when none failed.
func (c *controlFailures) first() (pair, rule string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for p, r := range c.pairs {
		if pair == "" || p < pair {
			pair, rule = p, r
		}
	}
	return pair, rule
}

// stillAnswers reports whether the target still answers connections, so
// that a failure just seen is the server's behaviour, not its loss.
func (s *S) stillAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), s.Timeouts.Expect)
	defer cancel()
	return s.target.CheckAlive(ctx) == nil
}

// Barrier makes sure the server has processed every request sent so far on
// the stream carrying t before the scenario changes server state. A pure
// unsubscribe has no reply, so without it a fixture change could overtake
// the request and be pushed legitimately. bar must exist (create it at the
// start) and must not be subscribed on the stream yet: subscribing to it
// then always produces a response (RES-2 on a type's first request, RES-4
// in SotW, DELTA-3 in delta), and a server handles the requests of one
// stream in order. A name already subscribed would owe no SotW response
// (the subscription does not change), and in delta would rest on
// DELTA-3's resend of what the client holds, a behaviour scenarios check.
//
// The barrier is a precondition: the server not delivering it blocks the
// pair by the rule its answer rests on, never a failure of the rule the
// scenario checks, whatever Checking the call is made under. A scenario
// whose own rule is the barrier's (a DELTA-3 scenario, say) must use one
// that rests on another (another type on ADS, a fresh name), or say why
// it may rest on its own.
func (s *S) Barrier(t wire.Type, bar string) {
	if s.C.Started(t) && slices.Contains(s.C.Names(t), bar) {
		s.Abortf("scenario bug: the barrier %s %q is already subscribed on the stream, so a correct server owes no response to it", t.Short, bar)
	}
	p := s.precondition(s.subscribeRule(t, []string{bar}))
	p.Subscribe(t, bar)
	p.Ack(t, p.AwaitResource(t, bar))
}
