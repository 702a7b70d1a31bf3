package scenarios

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// C is a client-role scenario in progress: the engine's T, the fake
// management server the client under test connects to, the launched
// client, and Must-style steps. The client is pointed at listener L; the
// scenario serves the chain L → route R → cluster CL → endpoints CL.
type C struct {
	*engine.T
	// Srv is the fake management server; scenarios reach for its streams
	// to send deliberately wrong messages.
	Srv *fakeserver.Server
	// Client is the launched client under test.
	Client targets.Running
	// L, R and CL are the listener, route and cluster names of the chain;
	// the cluster's endpoints are named CL too.
	L, R, CL string

	target *targets.Clients
	after  map[string]int // per type URL: streams up to this ID are gone
	// rule is the rule the current step checks, set by Checking; empty,
	// a step checks its own default rule (see ruleOr).
	rule string
	// onLeave is the rule a client breaks by leaving a stream while the
	// current steps wait for its answer (LeavingBreaks); empty, such a
	// wait breaks ACK-1 as any unanswered response does.
	onLeave string
	// def is the current step's own default rule, when it is not a check
	// (see defaulting); pre is, inside a precondition helper (see
	// precondition), the rule its steps rest on when they have none of
	// their own. Either makes a failure a block (precondition.go).
	def, pre string
	// held keeps the failures of testify assertions on precondition
	// steps until FailNow says whether they were fatal (precondition.go).
	held *pending
}

// LeavingBreaks returns c for steps during which a client that cancels
// the stream it is waited on breaks rule: a scenario about keeping
// streams open (UPD-5) charges it to that rule, whatever step the client
// left in, and every other failure of the steps keeps its own rule.
func (c *C) LeavingBreaks(rule string) *C {
	cp := *c
	cp.onLeave = rule
	return &cp
}

// Checking returns c for a step that checks rule: its failures are
// reported under rule, except those of the checks that always check one
// rule of their own (an ACK's nonce is NONCE-3 whatever the step).
func (c *C) Checking(rule string) *C {
	cp := *c
	cp.rule = rule
	return &cp
}

// defaulting returns c for a step whose own rule is rule: unless the step
// is a check (Checking) or runs in a precondition helper, its failure is
// a failure of rule when the scenario cites it, else a block by it.
func (c *C) defaulting(rule string) *C {
	cp := *c
	cp.def = rule
	return &cp
}

// precondition returns c for the steps of a precondition helper (the
// chain's hops, say) resting on rule: every failure of theirs blocks the
// pair by the step's own rule, else by rule, never a failure of the rule
// a Checking around the helper's call names (see precondition.go).
func (c *C) precondition(rule string) *C {
	cp := *c
	cp.pre, cp.rule, cp.def = rule, "", ""
	return &cp
}

// judged is the rule a failure of the current step is filed under, and
// whether it blocks the pair (judgeStep).
func (c *C) judged() (string, bool) { return judgeStep(c.T, c.pre, c.rule, c.def) }

// ruleOr is the rule a failing step breaks: the one named by Checking,
// else def, else the scenario's headline rule.
func (c *C) ruleOr(def string) string {
	switch {
	case c.rule != "":
		return c.rule
	case def != "":
		return def
	}
	return c.Headline()
}

// Errorf records a failure of the current step's rule; testify's
// assertions report through it. On a precondition step the failure is
// held until FailNow says whether the assertion was fatal (a block) or
// not (a failure of the rule): see precondition.go.
func (c *C) Errorf(format string, args ...any) {
	rule, block := c.judged()
	c.held.errorf(c.T, c, rule, block, format, args...)
}

// FailNow stops the body: a precondition step whose assertion just failed
// blocks the pair, any other fails it with the failures recorded.
func (c *C) FailNow() { c.held.failNow(c.T, c) }

// Fatalf records a failure of the current step's rule and stops the body.
func (c *C) Fatalf(format string, args ...any) {
	c.Errorf(format, args...)
	c.FailNow()
}

// either is sotwRule in SotW variants and deltaRule in delta ones, for
// steps whose rule differs between the protocols.
func (c *C) either(sotwRule, deltaRule string) string {
	if c.Variant.IsDelta() {
		return deltaRule
	}
	return sotwRule
}

// fixedf records a failure of rule, whatever the step checks, and stops:
// for the checks that are about one rule only. They are checks wherever
// they run, the target seen breaking the rule, except in a precondition
// helper, where the pair is blocked by rule (precondition.go).
func (c *C) fixedf(rule, format string, args ...any) {
	stopStep(c.T, c.held, rule, c.pre != "", format, args...)
}

// NewC starts a client-role scenario: a fake management server for this
// pair, a fresh client pointed at it, and the server's invariants checked
// after the body. ClientScript calls it; a body that needs the launch
// adjusted calls NewCWith itself.
func NewC(t *engine.T) *C { return NewCWith(t, nil) }

// NewCWith is NewC, with the launch spec adjusted by prepare (nil: as
// is) before the client starts: authorities, a file to read clusters from.
func NewCWith(t *engine.T, prepare func(*targets.LaunchSpec)) *C {
	target, ok := t.Env.(*targets.Clients)
	if !ok {
		t.Abortf("client scenario run without a client target (env %T)", t.Env)
	}
	srv, err := fakeserver.Start(fakeserver.Options{
		Addr: target.Options().Listen, Variant: t.Variant,
		Timeout: t.Timeouts.Expect, Quiet: t.Timeouts.Quiet, Transcript: t.Transcript,
		MaxRecvSize: target.Options().MaxRecvSize, OnSend: t.SentToTarget,
	})
	if err != nil {
		t.Abortf("%v", err)
	}
	t.Cleanup(srv.Close)
	c := &C{T: t, Srv: srv, target: target, after: map[string]int{},
		L: t.Name("listener"), R: t.Name("route"), CL: t.Name("cluster"), held: newPending(t)}
	if l := target.Options().Listener; l != "" {
		// A client started elsewhere keeps what it learnt in earlier
		// scenarios and asks for it again on reconnecting: the chain's
		// names stay the same from one scenario to the next.
		c.L, c.R, c.CL = l, l+"-route", l+"-cluster"
	}
	t.AfterRun(func(t *engine.T) {
		for _, v := range srv.Violations() {
			t.Errorf("%s", v)
		}
	})
	spec := targets.LaunchSpec{
		ServerAddr: srv.Addr(), NodeID: t.NodeID, Cluster: clientCluster, Listener: c.L, Variant: t.Variant,
	}
	if prepare != nil {
		prepare(&spec)
	}
	run, err := target.Launch(t.Context(), spec)
	if err != nil {
		t.Abortf("%v", err)
	}
	c.Client = run
	// Runs before srv.Close (last registered first), so the client does not
	// see its server go away.
	stopped := make(chan error, 1)
	t.Cleanup(func() { stopped <- run.Stop() })
	// A client that ignored SIGTERM and had to be killed, or left a
	// process behind, is judged by judgeStop. This is decided
	// after the body, where Abortf ends only this check, not the cleanups
	// still to run. A body abandoned while still stopping the client (its
	// time was up, or Ctrl-C) keeps the verdict it has.
	t.AfterRun(func(t *engine.T) {
		select {
		case err := <-stopped:
			judgeStop(t, err)
		default:
		}
	})
	ctx, cancel := c.untilExit()
	defer cancel()
	// A client that calls an xDS v2 method has shown what it speaks: the
	// wait ends at once.
	go func() {
		select {
		case <-srv.V2Called():
			cancel()
		case <-ctx.Done():
		}
	}()
	if _, err := srv.FirstStream(ctx, target.Options().StartTimeout); err != nil && len(srv.Streams()) == 0 {
		// What it called instead, if anything, is why it never opened a
		// stream the harness serves.
		if calls := srv.UnsupportedCalls(); len(calls) > 0 {
			t.Abortf("%s", fakeserver.Unsupported(calls))
		}
		c.abortIfExited()
		target.NeverConnected(err)
		what := "the client never connected to the management server at " + srv.Addr()
		if errors.Is(err, fakeserver.ErrTimeout) {
			// The start timeout, not the scenario's end, gave up on it:
			// name the flag that raises it.
			err = targets.StartTimeoutError(what, target.Options().StartTimeout, err)
		} else {
			err = fmt.Errorf("%s: %w", what, err)
		}
		t.Abortf("%v%s", err, targets.OutputNote(run))
	}
	return c
}

// judgeStop judges err, the problem found stopping the launched client (it
// ignored SIGTERM and had to be killed, or left a process behind), after
// the body: a pair that broke rules stays a failure of those rules, with
// the problem as a note that names no rule; one that already errored keeps
// its cause first; any other (a pass) becomes an error, since the
// documented outcome of a client that cannot be stopped is an error.
func judgeStop(t *engine.T, err error) {
	switch {
	case err == nil:
	case t.AbortReason() != "":
		t.Abortf("%s\nThen, stopping it: %v", t.AbortReason(), err)
	case t.Failed():
		t.Notef("Then, stopping the client: %v", err)
	default:
		t.Abortf("%v", err)
	}
}

// Extra returns the name of a resource beyond the chain (a second cluster,
// say): unique to the pair, or, for a client started elsewhere, the same
// in every scenario, like the chain's names.
func (c *C) Extra(base string) string {
	if !c.Configured() {
		return c.L + "-" + base
	}
	return c.Name(base)
}

// clientCluster is the node.cluster every launched client is given.
const clientCluster = "xdsconform"

// Configured reports whether the harness wrote the client's bootstrap (and
// so knows its node), which a client started elsewhere (--client-wait) has
// not.
func (c *C) Configured() bool { return !c.target.Options().Wait }

// untilExit is the scenario's context, also cancelled when the client
// process stops: a wait on a dead client ends at once.
func (c *C) untilExit() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(c.Context())
	go func() {
		select {
		case <-c.Client.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// abortIfExited turns a client that stopped into an error outcome... unless
// the scenario is about staying alive, which checks Alive itself.
func (c *C) abortIfExited() {
	select {
	case <-c.Client.Exited():
		c.Abortf("the client stopped: %v", c.Client.Err())
	default:
	}
}

// fail reports err from a step and stops: a client that stopped is named
// as the cause. The failure is filed, or the pair blocked, as judged says.
func (c *C) fail(format string, args ...any) {
	rule, block := c.judged()
	c.failJudged(rule, block, format, args...)
}

// failJudged is fail for a failure of rule, or a block by it.
func (c *C) failJudged(rule string, block bool, format string, args ...any) {
	// A step the scenario's deadline (or the run's end) cut short is no
	// rule's to judge: the pair errors, saying so.
	err := errIn(args)
	if why := cutShort(c.T, err); why != "" {
		c.Abortf("%s: %s", why, fmt.Sprintf(format, args...))
	}
	// The fake server's receive side: a client cannot send a server a
	// status, so a message refused for its size there was refused by the
	// harness's own limit.
	if wire.OwnRecvLimit(err) {
		c.Abortf("%s", fakeclient.RecvLimitNote(err))
	}
	if errors.Is(err, fakeserver.ErrOverflow) {
		c.Abortf("%s: %s", queueBoundNote, fmt.Sprintf(format, args...))
	}
	// A client that crashes usually shows first as a stream that ended:
	// give its process a moment to be seen gone, so the report names the
	// crash rather than the stream.
	grace := time.NewTimer(exitGrace)
	defer grace.Stop()
	select {
	case <-c.Client.Exited():
		stopStep(c.T, c.held, rule, block, format+" (the client stopped: %v)", append(args, c.Client.Err())...)
	case <-grace.C:
		stopStep(c.T, c.held, rule, block, format, args...)
	}
}

// errIn is the first error among a step's report arguments, the one the
// step's wait ended with.
func errIn(args []any) error {
	for _, a := range args {
		if err, ok := a.(error); ok {
			return err
		}
	}
	return nil
}

// exited reports whether the client process is seen gone within
// exitGrace.
func (c *C) exited() bool {
	grace := time.NewTimer(exitGrace)
	defer grace.Stop()
	select {
	case <-c.Client.Exited():
		return true
	case <-grace.C:
		return false
	}
}

// exitGrace is how long a failing step waits to see whether the client
// process died; it only delays reports of failures.
const exitGrace = 250 * time.Millisecond

// Alive fails the scenario if the client process stopped.
func (c *C) Alive(why string) {
	select {
	case <-c.Client.Exited():
		c.Fatalf("%s, but the client stopped: %v", why, c.Client.Err())
	default:
	}
}

// Stream returns the live stream carrying t: the ADS stream, or t's own
// stream on per-type variants, waiting for the client to open it.
func (c *C) Stream(t wire.Type) *fakeserver.Stream {
	ctx, cancel := c.untilExit()
	defer cancel()
	var gone *fakeserver.Stream
	for {
		st, err := c.Srv.StreamFor(ctx, t, c.after[t.URL])
		if err != nil {
			if gone != nil {
				c.fail("expected the client to open a stream for %s: %v; its last one, %s, ended: %v", t.Short, err, gone.Name, gone.Err())
			}
			c.fail("expected the client to open a stream for %s: %v", t.Short, err)
		}
		if st.Err() == nil {
			return st
		}
		gone = st
		c.after[t.URL] = st.ID // it came and went: look at the next one
	}
}

// NoStreamAfter checks that, from now until the pair ends, its trailing
// quiet window included, the client opens no stream with an ID above
// after; why says what the new stream would mean. It is a watch: the
// body goes on at once.
func (c *C) NoStreamAfter(after int, why string) {
	rule := c.ruleOr("")
	c.watch(func(ctx context.Context) bool {
		st, err := c.Srv.WaitStream(ctx, after)
		if err != nil || st == nil {
			return false
		}
		c.T.Failf(rule, "%s: the client opened %s", why, st.Name)
		return true
	})
}

// QuietNoStream is NoStreamAfter for the quiet window only, blocking: for
// a scenario that must wait before its next step anyway (a late answer).
func (c *C) QuietNoStream(after int, why string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	st, err := c.Srv.ExpectNoStream(ctx, after)
	if err != nil {
		c.fail("watching for new streams: %v", err)
	}
	if st != nil {
		c.Fatalf("%s: the client opened %s", why, st.Name)
	}
}

// watch runs check on its own goroutine until it reports a violation or
// the pair ends (the trailing quiet window included, in which the client
// keeps running): a must-not-happen check that does not hold up the body.
// check returns when its context ends, or true once it recorded a
// failure.
func (c *C) watch(check func(ctx context.Context) bool) {
	ctx, cancel := context.WithCancel(c.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if check(ctx) {
			c.StopLinger()
		}
	}()
	// Registered after the client's launch, so it runs before the client
	// is stopped: a client going away is not a violation.
	c.Cleanup(func() { cancel(); <-done })
	c.Linger(nil)
}

// Expect returns the next request of type t; none within the expect
// timeout, or the stream ending, fails the scenario.
func (c *C) Expect(t wire.Type) *fakeserver.Request {
	r, err := c.next(t)
	if err != nil {
		c.fail("expected %s request: %v", wording.A(t.Short), err)
	}
	return r
}

// next is the next request of type t, or why none came within the expect
// timeout.
func (c *C) next(t wire.Type) (*fakeserver.Request, error) {
	ctx, cancel := c.untilExit()
	defer cancel()
	return c.Stream(t).Next(ctx, t)
}

// First returns the first request of the live stream carrying t, waiting
// for it; none within the expect timeout fails the scenario.
func (c *C) First(t wire.Type) *fakeserver.Request {
	st := c.Stream(t)
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := st.First(ctx)
	if err != nil {
		c.fail("expected a first request on %s: %v", st.Name, err)
	}
	return r
}

// ExpectSubscribed returns the next request of t, which must ask for
// exactly names (SotW: its resource_names; delta: its subscriptions);
// asking for others, or sending none, breaks RES-1 unless the step names
// its rule.
func (c *C) ExpectSubscribed(t wire.Type, names ...string) *fakeserver.Request {
	v := c.defaulting("RES-1")
	r := v.Expect(t)
	v.requireAsks(r, names)
	return r
}

// requireAsks fails the step unless r asks for exactly names, duplicates
// counted.
func (c *C) requireAsks(r *fakeserver.Request, names []string) {
	if !sameSet(names, r.Names()) {
		c.Fatalf("the client should ask for exactly %q; %s asks for %q", names, r, r.Names())
	}
}

// AwaitSubscribed reads requests of t until one asks for exactly names,
// within the expect timeout: a client may add names one request at a time.
// Asking for others, or no request asking for them in time, breaks RES-1
// unless the step names its rule.
func (c *C) AwaitSubscribed(t wire.Type, names ...string) *fakeserver.Request {
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	v := c.defaulting("RES-1")
	var last *fakeserver.Request
	for {
		r, err := v.next(t)
		if err != nil && last != nil {
			v.fail("the client should come to ask for exactly %q; its last %s request, %s, asks for %q, and no other came: %v", names, t.Short, last, last.Names(), err)
		}
		if err != nil {
			v.fail("the client should ask for exactly %q: expected %s request: %v", names, wording.A(t.Short), err)
		}
		if r.SotW == nil || sameSet(names, r.Names()) {
			v.requireAsks(r, names)
			return r
		}
		last = r
		if deadline.Passed() {
			v.Fatalf("the client should come to ask for exactly %q; its last %s request, %s, asks for %q", names, t.Short, r, r.Names())
		}
	}
}

// AwaitDropped reads requests of t until one drops name (SotW: names no
// longer include it; delta: it is unsubscribed), within the expect timeout.
func (c *C) AwaitDropped(t wire.Type, name string) *fakeserver.Request {
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	for {
		r := c.Expect(t)
		if r.Delta != nil && slices.Contains(r.Delta.GetResourceNamesUnsubscribe(), name) || r.SotW != nil && !slices.Contains(r.Names(), name) {
			return r
		}
		if deadline.Passed() {
			c.Fatalf("the client should come to drop %s %q; its last %s request, %s, does not", t.Short, name, t.Short, r)
		}
	}
}

// sameSet reports whether a and b hold the same names, duplicates counted.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// Respond sends a response of type t at version: SotW with every resource,
// delta with every resource at that version. It returns the nonce.
func (c *C) Respond(t wire.Type, version string, resources ...proto.Message) string {
	st := c.Stream(t)
	var resp interface{ GetNonce() string }
	var err error
	if st.Delta {
		resp, err = st.RespondDelta(c.Context(), t, version, resources)
	} else {
		resp, err = st.Respond(c.Context(), t, version, resources...)
	}
	if err != nil {
		c.fail("sending %s response: %v", wording.A(t.Short), err)
	}
	return resp.GetNonce()
}

// RespondAnys sends a SotW response of type t at version whose resources
// are exactly anys (of another type, wrapped, ...). It returns the nonce.
func (c *C) RespondAnys(t wire.Type, version string, anys ...*anypb.Any) string {
	resp, err := c.Stream(t).RespondAnys(c.Context(), t, version, anys...)
	if err != nil {
		c.fail("sending %s response: %v", wording.A(t.Short), err)
	}
	return resp.GetNonce()
}

// Remove sends a delta response removing names and returns its nonce.
func (c *C) Remove(t wire.Type, version string, names ...string) string {
	return c.RespondDelta(t, version, nil, names...)
}

// RespondDelta sends a delta response of t carrying resources and
// removing removed, at system version version, and returns its nonce.
func (c *C) RespondDelta(t wire.Type, version string, resources []proto.Message, removed ...string) string {
	resp, err := c.Stream(t).RespondDelta(c.Context(), t, version, resources, removed...)
	if err != nil {
		c.fail("sending %s delta response: %v", wording.A(t.Short), err)
	}
	return resp.GetNonce()
}

// Send sends a raw response on the stream carrying t.
func (c *C) Send(t wire.Type, m proto.Message) {
	if err := c.Stream(t).Send(c.Context(), m); err != nil {
		c.fail("sending %s response: %v", wording.A(t.Short), err)
	}
}

// expectReply returns the next request of t, the client's answer to the
// response with nonce: none within the expect timeout breaks ACK-1 (every
// response is answered), whatever the step checks; the scenario then never
// saw what it waited for, so unless it cites ACK-1 the pair is blocked by
// it. A client that died of the response instead breaks the rule the step
// names (Checking), when it names one: what the response held is what the
// step is about.
func (c *C) expectReply(t wire.Type, nonce string) *fakeserver.Request {
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := c.Stream(t).Next(ctx, t)
	if err != nil {
		// In a precondition helper the reply is all the step rests on.
		if c.pre == "" && c.onLeave != "" && fakeserver.EndedByClient(err) {
			c.Checking(c.onLeave).fail("expected an answer (ACK or NACK) to the %s response with nonce %q: the client left the stream instead: %v", t.Short, nonce, err)
		}
		if c.pre == "" && c.rule != "" && c.exited() {
			c.fail("expected an answer (ACK or NACK) to the %s response with nonce %q: %v", t.Short, nonce, err)
		}
		c.failJudged("ACK-1", true, "expected an answer (ACK or NACK) to the %s response with nonce %q: %v", t.Short, nonce, err)
	}
	return r
}

// nonceRule is the rule a reply's nonce checks: NONCE-3 in SotW, the delta
// ACK/NACK shape (DELTA-1) in delta.
func nonceRule(r *fakeserver.Request) string {
	if r.Delta != nil {
		return "DELTA-1"
	}
	return "NONCE-3"
}

// ExpectAck returns the next request of t, which must ACK the response
// with nonce (and, in SotW, carry its version): ACK-2, DELTA-1. A NACK
// instead breaks the step's rule.
func (c *C) ExpectAck(t wire.Type, nonce, version string) *fakeserver.Request {
	return c.checkAck(c.expectReply(t, nonce), nonce, version)
}

// checkAck checks that r ACKs the response with nonce and version (see
// ExpectAck) and returns it.
func (c *C) checkAck(r *fakeserver.Request, nonce, version string) *fakeserver.Request {
	if d := r.ErrorDetail(); d != nil {
		c.Fatalf("%s should ACK the response with nonce %q, but NACKs it: code %d, %q", r, nonce, d.GetCode(), d.GetMessage())
	}
	if r.Nonce() != nonce {
		c.fixedf(nonceRule(r), "%s should ACK the response with nonce %q, but carries nonce %q", r, nonce, r.Nonce())
	}
	if r.SotW != nil && r.Version() != version {
		c.fixedf("ACK-2", "%s should ACK version %q, but carries version %q", r, version, r.Version())
	}
	return r
}

// ExpectNack returns the next request of t, which must NACK the response
// with nonce: it carries that nonce, an error_detail whose code is not OK
// (ACK-3, DELTA-1) and, in SotW, the same names as the client's request
// before it (RES-1: a NACK restates the subscription).
func (c *C) ExpectNack(t wire.Type, nonce string) *fakeserver.Request {
	r := c.expectReply(t, nonce)
	shape := "ACK-3"
	if r.Delta != nil {
		shape = "DELTA-1"
	}
	if r.Nonce() != nonce {
		c.fixedf(nonceRule(r), "%s should answer the response with nonce %q, but carries nonce %q", r, nonce, r.Nonce())
	}
	d := r.ErrorDetail()
	if d == nil {
		c.Fatalf("%s should NACK the invalid response with nonce %q, but ACKs it: it has no error_detail", r, nonce)
	}
	if d.GetCode() == 0 {
		c.fixedf(shape, "%s NACKs with error_detail code 0 (OK): a NACK's status says what went wrong", r)
	}
	if prev := r.Previous(); r.SotW != nil && prev != nil && !sameSet(prev.Names(), r.Names()) {
		c.fixedf("RES-1", "%s NACKs with resource_names %q, but the client's request before it asked for %q: every SotW request, NACKs included, names the whole subscription", r, r.Names(), prev.Names())
	}
	return r
}

// Chain serves the chain from the listener down to upTo (LDS, RDS, CDS or
// EDS) at version "1" and revision 1, checking that the client asks for
// each hop and ACKs it. It returns the nonces by type URL.
//
// The chain is a precondition of the scenarios that serve it: a client
// that does not get through it blocks the pair by the rule the failed
// hop rests on (see serveHop), whatever Checking the call is made under.
func (c *C) Chain(upTo wire.Type) map[string]string {
	nonces := map[string]string{}
	for _, hop := range c.hops(1) {
		nonces[hop.t.URL] = c.serveHop(hop, false)
		if hop.t.URL == upTo.URL {
			break
		}
	}
	return nonces
}

// chainAckRule is the rule a client NACKing a hop of the chain blocks the
// pair by. The chain's resources are valid for the client's profile, yet
// no rule of the catalogue says a client accepts what is valid: VALID-1
// even says clients may reject resources for reasons of their own. What
// the hop waits for is the ACK of an accepted response, whose shape ACK-2
// gives (its version, its nonce, no error_detail); a NACK is not that
// reply, so it is ACK-2 the pair is blocked by, and the message quotes the
// client's error_detail, which says why it rejected the resource.
const chainAckRule = "ACK-2"

// serveHop serves one hop of a chain as a precondition: the client comes
// to ask for exactly its name, or by wildcard for a hop an Envoy asks for
// so (RES-1: what a client asks for), gets it at version "1", and ACKs it (an answer at all: ACK-1; its nonce NONCE-3 or
// DELTA-1; an ACK, not a NACK, of version "1": chainAckRule). It returns
// the response's nonce.
func (c *C) serveHop(h hop, wildcard bool) string {
	ask := c.precondition("RES-1")
	if wildcard {
		ask.ExpectWildcard(h.t)
	} else {
		// A client may reach the name in steps (or, started elsewhere,
		// first ask again for what it knew).
		ask.AwaitSubscribed(h.t, h.name)
	}
	ack := c.precondition(chainAckRule)
	n := ack.Respond(h.t, "1", h.res)
	ack.ExpectAck(h.t, n, "1")
	return n
}

type hop struct {
	t    wire.Type
	name string
	res  proto.Message
}

// hops are the chain's resources at revision rev.
func (c *C) hops(rev int) []hop {
	return []hop{
		{LDS, c.L, wire.ClientListener(c.L, c.R, rev)},
		{RDS, c.R, wire.ClientRoute(c.R, c.CL, rev)},
		{CDS, c.CL, wire.ClientCluster(c.CL, rev)},
		{EDS, c.CL, wire.ClientEndpoints(c.CL, rev)},
	}
}

// resourceNamed is a resource of type t, of the kind the chain uses, named
// name at revision rev: valid for a gRPC-profile client, and pointing at
// the chain's own route and cluster.
func (c *C) resourceNamed(t wire.Type, name string, rev int) proto.Message {
	switch t.URL {
	case LDS.URL:
		return wire.ClientListener(name, c.R, rev)
	case RDS.URL:
		return wire.ClientRoute(name, c.CL, rev)
	case CDS.URL:
		return wire.ClientCluster(name, rev)
	case EDS.URL:
		return wire.ClientEndpoints(name, rev)
	}
	panic("no chain resource of type " + t.Short)
}

// NameOf returns the name of the chain's resource of type t.
func (c *C) NameOf(t wire.Type) string { return wire.NameOf(c.Hop(t, 1)) }

// Hop returns the chain's resource of type t at revision rev.
func (c *C) Hop(t wire.Type, rev int) proto.Message {
	for _, h := range c.hops(rev) {
		if h.t.URL == t.URL {
			return h.res
		}
	}
	panic("no chain hop of type " + t.Short)
}

// Restart ends every live stream with code, as a restarting management
// server does, so the client has to reconnect; later steps talk to the new
// streams.
func (c *C) Restart(code codes.Code) {
	// The streams to end, and so the last old stream, are fixed before the
	// first is ended: the client may reconnect before the others end.
	old := c.newStreamsOnly()
	for _, st := range old {
		if st.Err() != nil {
			continue
		}
		if err := st.End(c.Context(), status.Error(code, "xdsconform: management server restarting")); err != nil {
			c.fail("%v", err)
		}
	}
}

// newStreamsOnly makes later steps read every type off streams opened
// after the current ones, which it returns.
func (c *C) newStreamsOnly() []*fakeserver.Stream {
	old := c.Srv.Streams()
	if len(old) > 0 {
		last := old[len(old)-1].ID // streams are listed oldest first
		for _, t := range wire.AllTypes {
			c.after[t.URL] = max(c.after[t.URL], last)
		}
	}
	return old
}

// reconnectBackoff bounds the wait of a gRPC client before it tries to
// connect again after one failed attempt: gRPC's connection backoff
// (gRFC A6: 1 s, jitter ±20 %). A wait for a client to come back after an
// Outage(1) covers it on top of the expect timeout.
const reconnectBackoff = 1200 * time.Millisecond

// streamBackoff bounds the wait a client may have built up for a stream
// that failed, before any response, while its server was down: each
// stream backs off on its own timer (RECONN-1), and the reference client's
// grows to 4 s. The wait for the listener stream after an outage covers
// it too, since a per-type client reopens its streams one by one.
const streamBackoff = 4 * time.Second

// AwaitReconnect waits for the client to open its listener stream again
// (the ADS stream, or LDS's own) after an Outage of one refusal, for the
// expect timeout plus reconnectBackoff and streamBackoff, and returns it.
func (c *C) AwaitReconnect() *fakeserver.Stream {
	ctx, cancel := c.untilExit()
	defer cancel()
	within := c.Timeouts.Expect + reconnectBackoff + streamBackoff
	st, err := c.Srv.NextStreamCarrying(ctx, LDS, c.after[LDS.URL], within)
	if err != nil {
		c.abortIfExited()
		c.fail("the management server was back, but the client did not open its %s stream again within %s (the expect timeout, gRPC's connection backoff after a failed attempt and a stream's backoff): %v",
			LDS.Short, wording.Duration(within), err)
	}
	return st
}

// Outage makes the fake server unreachable until the client has tried to
// connect refusals times and failed, or the expect timeout passed, then
// serves again on the same address (fakeserver.Server.Outage): a
// management server restarting.
// Every stream ends, so the next request of any type is read off a new
// stream.
func (c *C) Outage(refusals int) {
	c.newStreamsOnly()
	ctx, cancel := c.untilExit()
	defer cancel()
	refused, err := c.Srv.Outage(ctx, refusals, c.Timeouts.Expect)
	if err != nil {
		c.abortIfExited()
		c.fail("%v", err)
	}
	c.Logf("the management server was unreachable until the client had tried %d times (of %d awaited)", refused, refusals)
}

// observer returns the client's status view; scenarios using it declare
// NeedObserver, so a target without one never gets here.
func (c *C) observer() observer.Observer {
	o := c.Client.Observer()
	if o == nil {
		c.Abortf("the client offers no status view")
	}
	return o
}

// observe reads the status view once, within d: a status endpoint that
// accepts the call and never answers cannot hold the scenario. A view over
// the harness's cap ends the pair (overStatusCap).
func (c *C) observe(ctx context.Context, d time.Duration) ([]observer.Resource, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	rs, err := c.observer().Observe(ctx)
	if errors.Is(err, observer.ErrTooLarge) {
		c.Abortf("%s", statusCapNote(err))
	}
	return rs, err
}

// statusCapNote is the error of a pair whose read of the client's status
// view found it larger than the harness reads (--max-status-size): the
// harness's own cap was hit, so it never saw what the client holds and
// nothing was judged; reading again would only hit it again. A failure
// the pair saw before stands (the engine adds this after it).
func statusCapNote(err error) string {
	return fmt.Sprintf("the client's status view is larger than the harness reads (%v): the harness's cap was hit, so nothing was judged; raise it with --max-status-size", err)
}

// pollEvery is how often the client's status view is read while waiting
// for a state: the view has no push, so waiting means reading it again.
const pollEvery = 10 * time.Millisecond

// Await reads the client's status view until resource (t, name) satisfies
// ok, within the expect timeout plus extra, and returns it.
func (c *C) Await(t wire.Type, name, what string, extra time.Duration, ok func(observer.Resource) bool) observer.Resource {
	return c.await(t, name, what, extra, ok, false)
}

// AwaitGone waits for the client to stop holding resource (t, name),
// which its status view showed in use before: the view shows it
// DOES_NOT_EXIST or no longer lists it. A view need not report
// DOES_NOT_EXIST (Envoy's /config_dump lists only what Envoy holds), and
// one that drops a deleted resource shows the deletion as plainly.
func (c *C) AwaitGone(t wire.Type, name string) {
	c.await(t, name, "as deleted (DOES_NOT_EXIST or no longer listed)", 0, isMissing, true)
}

// await is Await; with unlisted, the view no longer listing the resource
// also satisfies it.
func (c *C) await(t wire.Type, name, what string, extra time.Duration, ok func(observer.Resource) bool, unlisted bool) observer.Resource {
	ctx, cancel := c.untilExit()
	defer cancel()
	// A wait of the harness's own running time: the client is given up on
	// only once it had all of it, however long the harness was stalled.
	deadline := lag.NewDeadline(c.Timeouts.Expect + extra)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var last observer.Resource
	var seen bool
	var lastErr error
	for {
		rs, err := c.observe(ctx, c.Timeouts.Expect+extra)
		if err == nil {
			last, seen = observer.Find(rs, t.URL, name)
			if seen && ok(last) || !seen && unlisted {
				return last
			}
		}
		lastErr = err
		if deadline.Passed() {
			switch {
			case lastErr != nil:
				c.fail("the client's status view should show %s %s %s, but it could not be read: %v", t.Short, name, what, lastErr)
			case !seen:
				c.fail("the client's status view should show %s %s %s, but it does not list it", t.Short, name, what)
			default:
				c.fail("the client's status view should show %s %s %s, but shows %s", t.Short, name, what, describe(last))
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			c.fail("waiting for %s %s %s: %v", t.Short, name, what, ctx.Err())
		}
	}
}

// AwaitState waits for the client to report (t, name) in state.
func (c *C) AwaitState(t wire.Type, name string, state observer.State) observer.Resource {
	return c.Await(t, name, "as "+string(state), 0, func(r observer.Resource) bool { return r.State == state })
}

// AwaitAcked waits for the client to report (t, name) ACKED at the
// version of the response at version (see V).
func (c *C) AwaitAcked(t wire.Type, name, version string) observer.Resource {
	v := c.V(version, name)
	return c.Await(t, name, "ACKED at version "+v, 0, func(r observer.Resource) bool {
		return r.State == observer.Acked && r.Version == v
	})
}

// V is the version a client holds resource name at after accepting it in
// a response at version: the response's version_info in SotW, the
// resource's own version in delta (fakeserver.ResourceVersion).
func (c *C) V(version, name string) string {
	if c.Variant.IsDelta() {
		return fakeserver.ResourceVersion(version, name)
	}
	return version
}

// Never checks, from now until the pair ends (its trailing quiet window
// included), that the client's status view never shows resource (t, name)
// satisfying bad. It is a watch: the view is read on its own goroutine
// while the body goes on.
//
// A read that fails saw nothing, so it is no evidence that the resource
// was not shown: when no read in the whole window succeeded, the pair
// aborts (an error outcome, not a pass), unless it already has its
// verdict; when some failed, the transcript says how many, so a reader
// knows the check rests on the others.
func (c *C) Never(t wire.Type, name, what string, bad func(observer.Resource) bool) {
	rule := c.ruleOr("")
	o := c.observer()
	c.watch(func(ctx context.Context) bool {
		tick := time.NewTicker(pollEvery)
		defer tick.Stop()
		var read, failed int
		var lastErr error
		for {
			rctx, cancel := context.WithTimeout(ctx, c.Timeouts.Expect)
			rs, err := o.Observe(rctx)
			cancel()
			// A view over the cap is not a failed read but one the
			// harness will never manage: the watch cannot hold. A pair
			// that has its verdict already keeps it.
			if errors.Is(err, observer.ErrTooLarge) && !c.Decided() {
				c.Abortf("%s", statusCapNote(err))
			}
			switch {
			case err == nil:
				read++
				if r, ok := observer.Find(rs, t.URL, name); ok && bad(r) {
					c.T.Failf(rule, "the client's status view shows %s %s %s: %s", t.Short, name, what, describe(r))
					return true
				}
			case ctx.Err() == nil:
				// Not the window closing on a read in flight: the read
				// itself failed.
				failed++
				lastErr = err
			}
			select {
			case <-ctx.Done():
				if read == 0 {
					// The window closed with no read finished: a harness
					// (or a view) too slow to be read within it. The state
					// the view shows lasts: one more read, bounded by the
					// expect timeout, still sees a violation that happened
					// in the window.
					if late, ok := c.lateRead(o, t, name); ok {
						read++
						if bad(late) {
							c.T.Failf(rule, "the client's status view shows %s %s %s: %s", t.Short, name, what, describe(late))
							return true
						}
					}
				}
				c.neverRead(t, name, what, read, failed, lastErr)
				return false
			case <-tick.C:
			}
		}
	})
}

// lateRead reads the view once more after a watch's window closed with
// no read finished, bounded by the expect timeout, and returns what it
// shows of (t, name), with whether the read succeeded and listed it.
func (c *C) lateRead(o observer.Observer, t wire.Type, name string) (observer.Resource, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), c.Timeouts.Expect)
	defer cancel()
	rs, err := o.Observe(ctx)
	if err != nil {
		return observer.Resource{}, false
	}
	return observer.Find(rs, t.URL, name)
}

// neverRead reports, as Never's window closes, on the reads of the status
// view that failed: an abort when none succeeded, a note when some did.
func (c *C) neverRead(t wire.Type, name, what string, read, failed int, lastErr error) {
	switch {
	case read > 0 && failed > 0:
		c.Logf("%d of %s of the client's status view failed while watching that it never shows %s %s %s; the check rests on the %d that succeeded (last failure: %v)",
			failed, wording.N(read+failed, "read"), t.Short, name, what, read, lastErr)
	case read == 0 && !c.Decided():
		why := "no read finished within the window"
		if lastErr != nil {
			why = fmt.Sprintf("%s failed, the last with: %v", wording.N(failed, "read"), lastErr)
		}
		c.Abortf("the client's status view could not be read while watching that it never shows %s %s %s (%s): a must-not-happen check cannot pass on no reading",
			t.Short, name, what, why)
	}
}

// windowShare is the share of a must-not-happen window, in percent, that
// the harness must have been running for its pass to stand: a window the
// harness's own stalls cut by more than a third watched too little (see
// engine.T.Covers).
const windowShare = 67

// NeverWithin is Never over an explicit window of the client's time: one
// that ends when it says, however late the harness runs, since what comes
// after it may be due then (a heartbeat within a TTL, a timer the window
// must not reach). A harness stalled through much of it watched too
// little for a pass to stand: the pair is then in doubt (engine.T.Covers).
func (c *C) NeverWithin(window time.Duration, t wire.Type, name, what string, bad func(observer.Resource) bool) {
	c.neverFor(window, false, time.Time{}, t, name, what, bad)
}

// NeverThrough is NeverWithin over a window about a peer's own timer:
// what the window watches for is what the client would do when timer
// (named in timerWords: "its does-not-exist timer of 15s") fires, so the
// window, want, must outlast it to prove anything. The run's budget cuts
// want (engine.T.TimerWindow); a window cut shorter than timer is watched
// all the same (a violation in it stands) and then proves nothing: the
// pair is inconclusive, never passed.
func (c *C) NeverThrough(timer, want time.Duration, timerWords string, t wire.Type, name, what string, bad func(observer.Resource) bool) {
	window, _ := c.TimerWindow(c.ruleOr(""), fmt.Sprintf("the window watching that the status view never shows %s %s %s, for %s", t.Short, name, what, timerWords), timer, want)
	c.NeverWithin(window, t, name, what, bad)
}

// QuietView is Never for the quiet window of the harness's own running
// time, blocking: for a scenario that must wait before its next step
// anyway, and whose next step nothing in the client waits for (the
// endpoints that end a warming, the cluster a SotW response left out).
// The window stretches over the harness's stalls (lag.Deadline).
func (c *C) QuietView(t wire.Type, name, what string, bad func(observer.Resource) bool) {
	c.neverFor(c.Timeouts.Quiet, true, time.Time{}, t, name, what, bad)
}

// AwaitWarmingBefore waits for the client's status view to list (t, name)
// as warming at the version of the response at version: REQUESTED, as
// /config_dump's warming sections (dynamic_warming_clusters, a listener's
// warming_state) read. From deadline on (the warming's initial fetch
// timeout) the client may rightly have ended the warming: the view is read
// until then, and it fails if a read before deadline shows it in use, or if
// one finished before deadline and none before it showed the warming; when
// none finished in time (the harness
// stalled, or the view was slow), it is no verdict but a doubt.
func (c *C) AwaitWarmingBefore(deadline time.Time, t wire.Type, name, version string) {
	v := c.V(version, name)
	var last observer.Resource
	var listed bool
	inTime, lastErr := c.readViewBefore(deadline, fmt.Sprintf("%s %s to be shown warming", t.Short, name), func(rs []observer.Resource) bool {
		last, listed = observer.Find(rs, t.URL, name)
		if listed && last.State == observer.Acked {
			// In use: no later read can show it warming again.
			c.Fatalf("while the response that ends its warming was withheld, the client's status view showed %s %s %s: in use before its warming ended", t.Short, name, describe(last))
		}
		return listed && last.State == observer.Requested && last.Version == v
	})
	switch {
	case listed && last.State == observer.Requested && last.Version == v:
		return
	case !inTime && lastErr != nil:
		c.Abortf("the client's status view could not be read before the warming of %s %s could rightly end, so whether it showed the warming is not known: %v", t.Short, name, lastErr)
	case !inTime:
		c.Logf("the harness read the status view only after the client could rightly have ended the warming of %s %s: no verdict", t.Short, name)
		c.DoubtNow(c.ruleOr(""), "the harness's read of the status view before the warming's initial fetch timeout", 0, 0, c.LagIn(deadline.Add(-c.Timeouts.Expect), time.Now()))
	case !listed:
		c.Fatalf("while the response that ends its warming was withheld, the client's status view never listed %s %s, where it should show it warming (REQUESTED) at version %q", t.Short, name, v)
	default:
		c.Fatalf("while the response that ends its warming was withheld, the client's status view showed %s %s %s, where it should show it warming (REQUESTED) at version %q", t.Short, name, describe(last), v)
	}
}

// readViewBefore reads the client's status view every pollEvery until
// deadline (no read outlasts it), and hands see each read that succeeded
// and finished before deadline, until see says it is done. It returns
// whether any read finished in time, and the error of the last read that
// failed. what is what the caller waits for, for the report of a wait the
// client's exit or the pair's end cut short.
func (c *C) readViewBefore(deadline time.Time, what string, see func(rs []observer.Resource) (done bool)) (inTime bool, lastErr error) {
	ctx, cancel := c.untilExit()
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		rs, err := c.observe(ctx, max(time.Until(deadline), time.Millisecond))
		switch {
		case err != nil:
			lastErr = err
		case time.Now().Before(deadline):
			inTime = true
			if see(rs) {
				return inTime, lastErr
			}
		}
		if !time.Now().Before(deadline) {
			return inTime, lastErr
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			c.abortIfExited()
			c.fail("waiting for %s: %v", what, ctx.Err())
		}
	}
}

// AwaitAckedBefore is AwaitAcked for a resource the client must put in
// use as soon as it has all it waits for (a warming cluster's endpoints,
// a warming listener's routes: the caller has just seen the last of them
// ACKed, or an update naming only what the client holds), and
// would put in use anyway at deadline (the warming's initial fetch
// timeout). Waiting until the client does it some time is no check: at
// deadline it would, right or wrong. So a read begun once the prompt
// window (Timeouts.Prompt, of the harness's own running time) passed,
// and finished before deadline, must show it in use. When deadline comes
// first (the harness came late, or the timer is short), the prompt
// window was not watched whole: a doubt, and the wait goes on as
// AwaitAcked for the steps after it.
func (c *C) AwaitAckedBefore(deadline time.Time, t wire.Type, name, version string) observer.Resource {
	v := c.V(version, name)
	prompt := lag.NewDeadline(c.Timeouts.Prompt)
	// due is set after a read, so the next read begins with the prompt
	// window passed.
	var due, inUse bool
	var shown observer.Resource
	c.readViewBefore(deadline, fmt.Sprintf("%s %s to be in use", t.Short, name), func(rs []observer.Resource) bool {
		r, listed := observer.Find(rs, t.URL, name)
		if inUse = listed && r.State == observer.Acked && r.Version == v; inUse {
			shown = r
			return true
		}
		if due {
			seen := "does not list it"
			if listed {
				seen = "shows it " + describe(r)
			}
			c.Fatalf("%s after the client had all that %s %s waits for, and before its initial fetch timeout, the client's status view %s: it should be in use (ACKED at version %q) as soon as it has it",
				wording.Duration(time.Since(prompt.Start())), t.Short, name, seen, v)
		}
		due = prompt.Passed()
		return false
	})
	if inUse {
		return shown
	}
	c.Logf("the warming of %s %s could rightly end at its initial fetch timeout before the prompt window after its dependency came was watched whole: no verdict on its ending then", t.Short, name)
	c.Doubt(c.ruleOr(""), "the time from a warming resource's dependency coming to its initial fetch timeout, which must hold the prompt window", deadline.Sub(prompt.Start()), c.Timeouts.Prompt, c.LagIn(prompt.Start(), time.Now()))
	return c.AwaitAcked(t, name, version)
}

// QuietViewBefore is QuietView for a watch on what the client may rightly
// do from deadline on (its does-not-exist timer firing, a warming's
// initial fetch timeout): the window stretches over the harness's stalls
// but never past deadline, and what the view is seen doing only once
// deadline passed (the harness read it late) is no verdict but a doubt
// (engine.T.DoubtNow).
func (c *C) QuietViewBefore(deadline time.Time, t wire.Type, name, what string, bad func(observer.Resource) bool) {
	c.neverFor(c.Timeouts.Quiet, true, deadline, t, name, what, func(r observer.Resource) bool {
		if !bad(r) {
			return false
		}
		if late := time.Now(); !late.Before(deadline) {
			c.Logf("the harness read the status view only after the client could rightly show %s %s %s: no verdict", t.Short, name, what)
			c.DoubtNow(c.ruleOr(""), "the harness's read of the status view before the client's own timer", time.Since(deadline), 0, c.LagIn(deadline.Add(-c.Timeouts.Quiet), late))
		}
		return true
	})
}

// neverFor is NeverWithin, or with stretch QuietView; a window that
// stretches never goes past until (zero: no bound but its own).
func (c *C) neverFor(window time.Duration, stretch bool, until time.Time, t wire.Type, name, what string, bad func(observer.Resource) bool) {
	if window <= 0 {
		return // an empty window holds nothing to watch
	}
	ctx, cancel := c.untilExit()
	defer cancel()
	dl := lag.NewDeadline(window)
	start := dl.Start()
	end := start.Add(window)
	left := func() time.Duration {
		switch {
		case !stretch:
			return time.Until(end)
		case !until.IsZero():
			return min(dl.Left(), time.Until(until))
		}
		return dl.Left()
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	var read, failed int
	var lastErr error
	for {
		// A read never outlasts the window: the window ends when it
		// says, even on a loaded machine, for steps timed against the
		// client (a heartbeat within a TTL).
		rs, err := c.observe(ctx, max(left(), time.Millisecond))
		if err == nil {
			read++
			if r, ok := observer.Find(rs, t.URL, name); ok && bad(r) {
				c.Fatalf("the client's status view shows %s %s %s: %s", t.Short, name, what, describe(r))
			}
		} else if left() > 0 {
			failed++
			lastErr = err
		}
		if left() <= 0 {
			if read == 0 && failed > 0 {
				c.Logf("no read of the client's status view finished within the %v window while watching that it never shows %s %s %s (last failure: %v)", window, t.Short, name, what, lastErr)
			}
			need := window * windowShare / 100
			if stretch {
				need = engine.StretchedNeed(window)
			}
			c.Covers(c.ruleOr(""), fmt.Sprintf("watching that the status view never shows %s %s %s", t.Short, name, what), need, start, time.Now())
			return
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			c.fail("while watching %s %s: %v", t.Short, name, ctx.Err())
		}
	}
}

func describe(r observer.Resource) string {
	s := fmt.Sprintf("%s at version %q", r.State, r.Version)
	if r.Error != "" {
		s += fmt.Sprintf(" with error %q", r.Error)
	}
	return s
}

// RequireConfig checks that the client uses exactly want for r (when the
// status view shows resource contents).
func (c *C) RequireConfig(r observer.Resource, want proto.Message) {
	if r.Config == nil {
		c.Logf("the status view does not show %s's contents; only its version was checked", r.Name)
		return
	}
	got, err := r.Config.UnmarshalNew()
	if err != nil {
		c.Fatalf("the status view shows %s with contents that do not decode: %v", r.Name, err)
	}
	requireSameMessage(c, want, got, "the client should use exactly the resource last accepted")
}

// Update sends the chain's resource of type t at revision rev as version
// and expects the client to ACK it.
func (c *C) Update(t wire.Type, version string, rev int) {
	n := c.Respond(t, version, c.Hop(t, rev))
	c.ExpectAck(t, n, version)
}

// ClientScript adapts a client-role body to the engine: it is a Scenario's
// Run. The body gets a C whose fake management server the launched client
// under test is connected to.
func ClientScript(body func(c *C)) func(*engine.T) {
	return func(t *engine.T) { body(NewC(t)) }
}

// observed says the scenario reads the client's status view.
var observed = []engine.Need{targets.NeedObserver}

// fresh says the scenario needs a client that has learnt nothing yet.
var fresh = []engine.Need{targets.NeedFreshClient}

// QuietRequests checks that the client sends no request of t for the quiet
// window, which the step waits out; why says what a request would mean.
func (c *C) QuietRequests(t wire.Type, why string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := c.Stream(t).None(ctx, t)
	if err != nil {
		c.fail("watching for %s requests: %v", t.Short, err)
	}
	if r != nil {
		c.Fatalf("%s: the client sent %s", why, r)
	}
}

// Observable reports whether the client offers a status view; scenarios
// whose main check is on the wire use it for extra checks when it does.
func (c *C) Observable() bool { return c.Client.Observer() != nil }
