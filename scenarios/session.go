// Package scenarios is the catalogue of conformance scenarios. Each file
// covers one area of the specification; each scenario cites its rules from
// the requirements catalogue and reads like the spec: a short script of
// protocol steps against a fake peer, ending in expectations.
package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/targets"
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
}

// server starts a server-role scenario: a fresh connection and fake client
// for this pair, a clean fixture state for its node, and the global
// invariants checked after the body.
func server(t *engine.T) *S {
	target, ok := t.Env.(*targets.Server)
	if !ok {
		t.Abortf("server scenario run without a server target (env %T)", t.Env)
	}
	c := connect(t, target)
	s := &S{T: t, C: c, target: target, served: map[string]bool{}, revisions: map[revisionKey][]*fixturepb.RevisionField{}}
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
		ctx, cancel := s.fixtureContext()
		defer cancel()
		if err := target.Fixture.Reset(ctx, t.NodeID); err != nil {
			t.Abortf("%v", err)
		}
	}
	return s
}

// Set creates or replaces resource base (made unique to the pair) at
// revision rev through the fixture and returns the name the server serves.
func (s *S) Set(t wire.Type, base string, rev int) string {
	name := s.Name(base)
	ctx, cancel := s.fixtureContext()
	defer cancel()
	served, err := s.target.Fixture.Set(ctx, s.NodeID, t, name, wire.BuildAny(t, name, rev))
	if err != nil {
		s.Abortf("%v", err)
	}
	s.served[served.Name] = true
	if s.target.Caps.GetBuildsContent() {
		if len(served.Revision) == 0 {
			s.Abortf("fixture SetResource %s %q: the server builds content but returned no revision fields", t.Short, name)
		}
		s.revisions[revisionKey{t.URL, served.Name, rev}] = served.Revision
	}
	return served.Name
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
		why := fixture.Mismatch(got, fields)
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
}

// fixtureContext bounds one fixture call by the expect timeout: a fixture
// that hangs ends the scenario with an error outcome naming the call, not
// with the whole scenario's time running out.
func (s *S) fixtureContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.Context(), s.Timeouts.Expect)
}

// Subscribe asks for names of type t (see fakeclient.Client.Subscribe).
func (s *S) Subscribe(t wire.Type, names ...string) { s.must(s.C.Subscribe(t, names...)) }

// SubscribeWithNonce is Subscribe on a request whose response_nonce is
// nonce instead of the latest one: a stale or unknown nonce (NONCE-7,
// NONCE-12).
func (s *S) SubscribeWithNonce(t wire.Type, nonce string, names ...string) {
	s.must(s.C.SubscribeWithNonce(t, nonce, names...))
}

// Unsubscribe drops names of type t.
func (s *S) Unsubscribe(t wire.Type, names ...string) { s.must(s.C.Unsubscribe(t, names...)) }

// Wildcard sends the legacy wildcard request for t.
func (s *S) Wildcard(t wire.Type) { s.must(s.C.RequestWildcardLegacy(t)) }

// Ack acknowledges r.
func (s *S) Ack(t wire.Type, r *fakeclient.Response) { s.must(s.C.Ack(t, r)) }

// Nack rejects r with an error_detail.
func (s *S) Nack(t wire.Type, r *fakeclient.Response) {
	s.must(s.C.Nack(t, r, "xdsconform: rejected on purpose by the scenario"))
}

func (s *S) must(err error) {
	if err != nil {
		s.Fatalf("%v", err)
	}
}

// Expect returns the next response of type t; none within the expect
// timeout, or a closed stream, fails the scenario.
func (s *S) Expect(t wire.Type) *fakeclient.Response {
	r, err := s.C.Expect(t)
	if err != nil {
		s.Fatalf("expected a %s response: %v", t.Short, err)
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

// awaitExplaining is awaitWhere whose failure also says why the responses
// read were not the awaited one: lastMiss, if set, describes the last.
func (s *S) awaitExplaining(t wire.Type, what string, done func(*fakeclient.Response) bool, lastMiss func() string) *fakeclient.Response {
	deadline := time.Now().Add(s.Timeouts.Expect)
	for {
		r, err := s.C.ExpectWithin(t, max(time.Until(deadline), 0))
		if err != nil {
			if lastMiss != nil && lastMiss() != "" {
				s.Fatalf("expected %s within %v: %v (the last one was not: %s)", what, s.Timeouts.Expect, err, lastMiss())
			}
			s.Fatalf("expected %s within %v: %v", what, s.Timeouts.Expect, err)
		}
		if done(r) {
			return r
		}
		s.Logf("response %q is not yet %s; ACKing it and waiting on", r.Nonce, what)
		s.Ack(t, r)
	}
}

// ExpectAcked is Expect followed by an ACK of the response.
func (s *S) ExpectAcked(t wire.Type) *fakeclient.Response {
	r := s.Expect(t)
	s.Ack(t, r)
	return r
}

// ExpectNone fails the scenario if a response of any of types arrives
// within the quiet window. why is the rule in words, for the report.
func (s *S) ExpectNone(why string, types ...wire.Type) {
	if _, err := s.C.ExpectNone(types...); err != nil {
		s.Errorf("%s: %v", why, err)
	}
}

// ExpectNoneCarrying fails if, within the quiet window, a response of t
// carries (or removes) one of names. Responses about other resources are
// harmless here and are ACKed so the stream stays in step.
func (s *S) ExpectNoneCarrying(why string, t wire.Type, names ...string) {
	s.expectNoneCarryingOn(s.C, why, t, names...)
}

// expectNoneCarryingOn is ExpectNoneCarrying on client c (see Another).
func (s *S) expectNoneCarryingOn(c *fakeclient.Client, why string, t wire.Type, names ...string) {
	deadline := time.Now().Add(s.Timeouts.Quiet)
	for {
		r, err := c.ExpectNoneWithin(time.Until(deadline), t)
		if err == nil {
			return
		}
		if r == nil {
			s.Fatalf("%v", err)
		}
		for _, n := range names {
			if r.Has(n) || r.HasRemoved(n) {
				s.Errorf("%s: unexpected %s response (nonce %q) carrying %q", why, t.Short, r.Nonce, n)
				return
			}
		}
		s.must(c.Ack(t, r))
	}
}

// AwaitResource reads responses of t until one carries name, ACKing each
// response before it (they are about other resources, which a server may
// send separately: GRP-2), and returns it. It fails if none does within
// the expect timeout.
func (s *S) AwaitResource(t wire.Type, name string) *fakeclient.Response {
	return s.awaitWhere(t, fmt.Sprintf("a %s response carrying %q", t.Short, name), func(r *fakeclient.Response) bool {
		return r.Has(name)
	})
}

// AwaitRemoved reads delta responses of t until one lists name in
// removed_resources, ACKing each one before it.
func (s *S) AwaitRemoved(t wire.Type, name string) *fakeclient.Response {
	// A response still carrying name is no failure on its own: a server
	// whose model catches up with the fixture a little later (Consul) may
	// send the resource once more before it removes it.
	return s.awaitWhere(t, fmt.Sprintf("a %s response removing %q", t.Short, name), func(r *fakeclient.Response) bool {
		return r.HasRemoved(name)
	})
}

// RequireResource fails unless r carries name with exactly the content of
// revision rev (a whole-message comparison).
func (s *S) RequireResource(t wire.Type, r *fakeclient.Response, name string, rev int) {
	got := r.Get(name)
	require.NotNil(s, got, "%s response (nonce %q) does not carry %q; it carries %q", t.Short, r.Nonce, name, r.Names())
	if fields, ok := s.revisions[revisionKey{t.URL, name, rev}]; ok {
		require.Empty(s, fixture.Mismatch(got, fields), "%s %q is not revision %d", t.Short, name, rev)
		return
	}
	requireSameMessage(s, wire.Build(t, name, rev), got, "%s %q is not revision %d", t.Short, name, rev)
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
// of their JSON forms when they differ.
func requireSameMessage(t require.TestingT, want, got proto.Message, msgAndArgs ...any) {
	if proto.Equal(want, got) {
		return
	}
	opts := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}
	require.Equal(t, opts.Format(want), opts.Format(got), msgAndArgs...)
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
		if t.Speaks(s.Variant.Protocol) && (s.target.Caps == nil || fixture.Serves(s.target.Caps, t)) {
			out = append(out, t)
		}
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
	conn, err := target.Connect()
	if err != nil {
		t.Abortf("%v", err)
	}
	c := fakeclient.New(t.Context(), conn, t.Variant, fakeclient.Options{
		NodeID:     t.NodeID,
		Cluster:    target.NodeCluster(t.NodeID),
		Metadata:   target.Metadata,
		Timeout:    t.Timeouts.Expect,
		Quiet:      t.Timeouts.Quiet,
		Transcript: t.Transcript,
	})
	t.Cleanup(func() { c.Close(); conn.Close() })
	t.AfterRun(func(t *engine.T) {
		for _, v := range c.Violations() {
			t.Errorf("%s", v)
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
	return s.awaitExplaining(t, fmt.Sprintf("a %s response carrying %q at revision %d", t.Short, name, rev), func(r *fakeclient.Response) bool {
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

// Barrier makes sure the server has processed every request sent so far on
// the stream carrying t before the scenario changes server state. A pure
// unsubscribe has no reply, so without it a fixture change could overtake
// the request and be pushed legitimately. bar must exist (create it at the
// start); subscribing to it always produces a response (RES-4, DELTA-3),
// and a server handles the requests of one stream in order.
func (s *S) Barrier(t wire.Type, bar string) {
	s.Subscribe(t, bar)
	s.Ack(t, s.AwaitResource(t, bar))
}
