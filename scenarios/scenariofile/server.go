package scenariofile

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// serverRun is one pair of a server-role file scenario in progress: the
// DSL's S, the names the fixture served each base name under, and the
// labelled responses.
type serverRun struct {
	s      *scenarios.S
	served map[string]string // type URL + "\x00" + base name → name served
	labels map[string]*fakeclient.Response
}

// name is the name the pair uses for base: the name the fixture served it
// under when set, else the pair-unique name the DSL makes of it (a
// resource set later, or never); "*" stays the wildcard.
func (r *serverRun) name(t wire.Type, base string) string {
	if base == "*" {
		return base
	}
	if n, ok := r.served[t.URL+"\x00"+base]; ok {
		return n
	}
	return r.s.Name(base)
}

func (r *serverRun) names(t wire.Type, bases []string) []string {
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = r.name(t, b)
	}
	return out
}

// checking is s for a step that names rule, else s as it is.
func (r *serverRun) checking(rule string) *scenarios.S {
	if rule != "" {
		return r.s.Checking(rule)
	}
	return r.s
}

// serverOp is one compiled server step.
type serverOp func(r *serverRun)

// protoState is the static view of a server-role scenario in one protocol
// that finds the rule each wait checks by default, as the DSL decides it
// at run time (S.Subscribe, S.Set, S.Delete).
type protoState struct {
	delta   bool
	started map[string]bool
	next    map[string]string
	// names are, per type URL, the base names subscribed on the stream
	// (SotW: the names its requests restate; delta: those subscribed and
	// not unsubscribed since), for the barrier steps to check against.
	names map[string]map[string]bool
}

func newProtoState(delta bool) *protoState {
	return &protoState{delta: delta, started: map[string]bool{}, next: map[string]string{}, names: map[string]map[string]bool{}}
}

// subscribe adds names to what the stream has subscribed of t.
func (p *protoState) subscribe(t wire.Type, names []string) {
	if p.names[t.URL] == nil {
		p.names[t.URL] = map[string]bool{}
	}
	for _, n := range names {
		p.names[t.URL][n] = true
	}
}

// unsubscribe drops names from what the stream has subscribed of t.
func (p *protoState) unsubscribe(t wire.Type, names []string) {
	for _, n := range names {
		delete(p.names[t.URL], n)
	}
}

// reconnected is a new stream for t: nothing of t is started, and a delta
// stream starts with no subscription, whereas a SotW client's first
// request restates every name it had.
func (p *protoState) reconnected(t wire.Type) {
	p.started[t.URL] = false
	if p.delta {
		delete(p.names, t.URL)
	}
}

// barrierOwed says why a correct server may leave a barrier on name of t
// unanswered in this protocol, "" when it owes the answer: the barrier
// rests on the answer to a subscription that changes something, not on a
// behaviour a scenario may be checking.
func (p *protoState) barrierOwed(t wire.Type, name string) string {
	switch {
	case !p.names[t.URL][name]:
		return ""
	case p.delta:
		return fmt.Sprintf("%s %q is already subscribed on the delta stream: subscribing it again rests on DELTA-3's resend of what the client holds, a behaviour of its own, not on the server catching up", t.Short, name)
	case p.started[t.URL]:
		return fmt.Sprintf("%s %q is already subscribed on the SotW stream: a request naming it again does not change the subscription, so a correct server owes no response (RES-4 asks for one when the name set changes)", t.Short, name)
	}
	// A SotW stream not started yet (a reconnect): the barrier's request
	// is the type's first on it, answered under RES-2.
	return ""
}

func (p *protoState) subscribed(t wire.Type, names []string) {
	switch {
	case slices.Contains(names, "*"):
		p.next[t.URL] = "WILD-1"
	case !p.started[t.URL]:
		p.next[t.URL] = "RES-2"
	case p.delta:
		p.next[t.URL] = "DELTA-3"
	default:
		p.next[t.URL] = "RES-4"
	}
	p.started[t.URL] = true
}

func (p *protoState) changed(t wire.Type, deleted bool) {
	switch {
	case !deleted && p.delta:
		p.next[t.URL] = "DELTA-4"
	case !deleted:
		p.next[t.URL] = "VER-1"
	case p.delta:
		p.next[t.URL] = "DEL-1"
	case t.Wildcard:
		p.next[t.URL] = "DEL-7"
	}
}

// server compiles a server-role document's steps.
func (c *compiler) server() (func(*engine.T), error) {
	var protos []*protoState
	if c.sotw {
		protos = append(protos, newProtoState(false))
	}
	if c.delta {
		protos = append(protos, newProtoState(true))
	}
	each := func(f func(p *protoState)) {
		for _, p := range protos {
			f(p)
		}
	}
	// set and asked record, per type and base name, whether the name was
	// set so far and whether a request named it before it was: a scenario
	// that subscribes first and creates later must know the name the
	// server will serve (chosen-names).
	set, asked := map[string]bool{}, map[string]bool{}
	// exists records, per type and base name, whether the name is set and
	// not deleted since, for the barrier steps: a correct server owes no
	// resource that does not exist.
	exists := map[string]bool{}
	ask := func(t wire.Type, names []string) {
		for _, n := range names {
			if !set[t.URL+"\x00"+n] {
				asked[t.URL+"\x00"+n] = true
			}
		}
	}
	var ops []serverOp
	for i, st := range c.doc.ServerSteps {
		op, err := c.serverStep(i, st, each, set, asked, exists, ask)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return scenarios.ServerScript(func(s *scenarios.S) {
		r := &serverRun{s: s, served: map[string]string{}, labels: map[string]*fakeclient.Response{}}
		for _, op := range ops {
			op(r)
		}
	}), nil
}

func (c *compiler) serverStep(i int, st ServerStep, each func(func(*protoState)), set, asked, exists map[string]bool, ask func(wire.Type, []string)) (serverOp, error) {
	switch {
	case st.Set != nil:
		a := st.Set
		t, err := c.typeOf(stepPtr(i, "set", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "set", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		c.usesType(t, true)
		opts := fixture.SetRequest{Aliases: a.Aliases}
		if a.TTL != "" {
			d, err := time.ParseDuration(a.TTL)
			if err != nil || d <= 0 {
				return nil, c.errf(stepPtr(i, "set", "ttl"), "ttl %q: want a positive duration such as 30s", a.TTL)
			}
			opts.TTL = d
			c.addNeed(targets.NeedTTL)
		}
		if len(a.Aliases) > 0 {
			c.addNeed(targets.NeedAliases)
		}
		key := t.URL + "\x00" + a.Name
		if asked[key] && !set[key] {
			c.addNeed(targets.NeedChosenNames)
		}
		set[key], exists[key] = true, true
		each(func(p *protoState) { p.changed(t, false) })
		return func(r *serverRun) {
			r.served[key] = r.checking(a.Rule).SetWith(t, a.Name, a.Revision, opts)
		}, nil

	case st.Delete != nil:
		a := st.Delete
		t, err := c.typeOf(stepPtr(i, "delete", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "delete", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		c.usesType(t, true)
		exists[t.URL+"\x00"+a.Name] = false
		each(func(p *protoState) { p.changed(t, true) })
		return func(r *serverRun) { r.checking(a.Rule).Delete(t, r.name(t, a.Name)) }, nil

	case st.Subscribe != nil:
		a := st.Subscribe
		t, err := c.typeOf(stepPtr(i, "subscribe", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "subscribe", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		label, _, err := c.ref(stepPtr(i, "subscribe", "nonce"), a.Nonce, "nonce")
		if err != nil {
			return nil, err
		}
		c.usesType(t, false)
		if slices.Contains(a.Names, "*") {
			c.addNeed(targets.NeedExplicitWildcard)
		}
		ask(t, a.Names)
		each(func(p *protoState) { p.subscribed(t, a.Names); p.subscribe(t, a.Names) })
		return func(r *serverRun) {
			s := r.checking(a.Rule)
			names := r.names(t, a.Names)
			switch {
			case label != "":
				s.SubscribeWithNonce(t, r.labels[label].Nonce, names...)
			case a.Nonce != "":
				s.SubscribeWithNonce(t, a.Nonce, names...)
			default:
				s.Subscribe(t, names...)
			}
		}, nil

	case st.Unsubscribe != nil:
		a := st.Unsubscribe
		t, err := c.typeOf(stepPtr(i, "unsubscribe", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "unsubscribe", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		c.usesType(t, false)
		each(func(p *protoState) { p.unsubscribe(t, a.Names) })
		return func(r *serverRun) { r.checking(a.Rule).Unsubscribe(t, r.names(t, a.Names)...) }, nil

	case st.Wildcard != nil:
		a := st.Wildcard
		t, err := c.typeOf(stepPtr(i, "wildcard", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "wildcard", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		c.usesType(t, false)
		c.addNeed(targets.NeedLegacyWildcard)
		each(func(p *protoState) { p.next[t.URL] = "WILD-2"; p.started[t.URL] = true })
		return func(r *serverRun) { r.checking(a.Rule).Wildcard(t) }, nil

	case st.Ack != nil:
		a := st.Ack
		t, err := c.use(stepPtr(i, "ack", "of"), a.Of)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "ack", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		return func(r *serverRun) { r.checking(a.Rule).Ack(t, r.labels[a.Of]) }, nil

	case st.Nack != nil:
		a := st.Nack
		t, err := c.use(stepPtr(i, "nack", "of"), a.Of)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "nack", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		if a.Code == nil && a.Message == nil && a.Rule == "" {
			return func(r *serverRun) { r.s.Nack(t, r.labels[a.Of]) }, nil
		}
		detail := &status.Status{Code: 3, Message: "xdsconform: rejected on purpose by the scenario"}
		if a.Code != nil {
			detail.Code = *a.Code
		}
		if a.Message != nil {
			detail.Message = *a.Message
		}
		return func(r *serverRun) { r.checking(a.Rule).NackWith(t, r.labels[a.Of], detail) }, nil

	case st.Expect != nil:
		return c.serverExpect(i, st.Expect, each)

	case st.Quiet != nil, st.Never != nil:
		a, action := st.Quiet, "quiet"
		if a == nil {
			a, action = st.Never, "never"
		}
		t, err := c.typeOf(stepPtr(i, action, "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, action, "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		c.usesType(t, false)
		switch {
		case action == "quiet" && len(a.Names) == 0:
			return func(r *serverRun) { r.checking(a.Rule).Quiet(a.Why, t) }, nil
		case action == "quiet":
			return func(r *serverRun) { r.checking(a.Rule).QuietCarrying(a.Why, t, r.names(t, a.Names)...) }, nil
		case len(a.Names) == 0:
			return func(r *serverRun) { r.checking(a.Rule).Never(a.Why, t) }, nil
		}
		return func(r *serverRun) { r.checking(a.Rule).NeverCarrying(a.Why, t, r.names(t, a.Names)...) }, nil

	case st.Settle != nil:
		t, err := c.typeOf(stepPtr(i, "settle", "type"), st.Settle.Type)
		if err != nil {
			return nil, err
		}
		return func(r *serverRun) { r.s.Settle(t) }, nil

	case st.Barrier != nil:
		a := st.Barrier
		t, err := c.typeOf(stepPtr(i, "barrier", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		// A barrier is a precondition: it must rest on an answer every
		// correct server owes, never on a behaviour a scenario checks.
		if a.Name == "*" {
			return nil, c.errf(stepPtr(i, "barrier", "name"), `barrier: "*" is the wildcard, not a resource: a barrier subscribes to one resource that exists`)
		}
		if !exists[t.URL+"\x00"+a.Name] {
			return nil, c.errf(stepPtr(i, "barrier", "name"), "barrier: %s %q is not set at this step (set it before the barrier, and do not delete it): a correct server owes no resource that does not exist", t.Short, a.Name)
		}
		var why string
		each(func(p *protoState) {
			if why == "" {
				why = p.barrierOwed(t, a.Name)
			}
		})
		if why != "" {
			return nil, c.errf(stepPtr(i, "barrier", "name"), "barrier: %s; use a name no request has subscribed on the stream yet", why)
		}
		ask(t, []string{a.Name})
		each(func(p *protoState) { p.subscribed(t, []string{a.Name}); p.subscribe(t, []string{a.Name}) })
		return func(r *serverRun) { r.s.Barrier(t, r.name(t, a.Name)) }, nil

	case st.Reconnect != nil:
		t, err := c.typeOf(stepPtr(i, "reconnect", "type"), st.Reconnect.Type)
		if err != nil {
			return nil, err
		}
		each(func(p *protoState) { p.reconnected(t) })
		return func(r *serverRun) { r.s.C.Reconnect(t) }, nil
	}
	// The schema lets no other step through.
	return nil, c.errf(stepPtr(i, "", ""), "empty step")
}

// serverExpect compiles an expect step: await (or, with next, take the
// next) response of a type showing names, resources at revisions,
// removals and absences.
func (c *compiler) serverExpect(i int, a *ExpectStep, each func(func(*protoState))) (serverOp, error) {
	t, err := c.typeOf(stepPtr(i, "expect", "type"), a.Type)
	if err != nil {
		return nil, err
	}
	if err := c.rule(stepPtr(i, "expect", "rule"), a.Rule, true); err != nil {
		return nil, err
	}
	if len(a.Removed) > 0 && c.sotw {
		return nil, c.errf(stepPtr(i, "expect", "removed"), "removed: only delta responses list removals: list only delta variants (variants: [delta-ads, delta-pertype]), or use absent: in SotW")
	}
	if a.Exactly && len(a.Names)+len(a.Resources) == 0 {
		return nil, c.errf(stepPtr(i, "expect", "exactly"), "exactly: says the response carries exactly names and resources, but the step lists none")
	}
	if err := c.define(stepPtr(i, "expect", "as"), a.As, t); err != nil {
		return nil, err
	}
	c.usesType(t, false)
	if a.Rule == "" {
		each(func(p *protoState) { c.checks(p.next[t.URL]) })
	}
	bases := slices.Sorted(maps.Keys(a.Resources))
	criteria := len(a.Names)+len(a.Resources)+len(a.Removed)+len(a.Absent) > 0
	return func(r *serverRun) {
		s := r.checking(a.Rule)
		w := &wanted{t: t, s: r.s, names: r.names(t, a.Names), removed: r.names(t, a.Removed), absent: r.names(t, a.Absent), revs: map[string]int{}}
		for _, b := range bases {
			w.revs[r.name(t, b)] = a.Resources[b]
		}
		w.reset()
		var resp *fakeclient.Response
		switch {
		case !criteria:
			resp = s.Expect(t)
		case a.Next:
			resp = s.ExpectMatching(t, w.describe(), func(resp *fakeclient.Response) string {
				w.reset()
				return w.observe(resp)
			})
		default:
			var miss string
			resp = s.AwaitMatching(t, w.describe(), func(resp *fakeclient.Response) bool {
				miss = w.observe(resp)
				return miss == ""
			}, func() string { return miss })
		}
		if a.Exactly {
			s.RequireOwnExactly(resp, append(slices.Clone(w.names), slices.Sorted(maps.Keys(w.revs))...)...)
		}
		if a.As != "" {
			r.labels[a.As] = resp
		}
		if a.Ack {
			r.s.Ack(t, resp)
		}
	}, nil
}

// wanted is what an expect step waits for, in the names the pair uses,
// and what the responses read so far have shown of it: a server may split
// what a step waits for over several responses (GRP-2).
type wanted struct {
	t                      wire.Type
	s                      *scenarios.S
	names, removed, absent []string
	revs                   map[string]int

	seen, seenRemoved map[string]bool
}

func (w *wanted) reset() { w.seen, w.seenRemoved = map[string]bool{}, map[string]bool{} }

// observe takes in one response and says what is still missing ("" when
// nothing is): every name carried, every resource at its revision, every
// removal listed by some response read, and none of the absent names in
// this one.
func (w *wanted) observe(r *fakeclient.Response) string {
	var miss []string
	for _, n := range w.names {
		if r.Has(n) {
			w.seen[n] = true
		}
	}
	for n, rev := range w.revs {
		got := r.Get(n)
		if got == nil {
			continue
		}
		if ok, why := w.s.IsRevision(w.t, n, rev, got); ok {
			w.seen[n] = true
		} else if !w.seen[n] {
			miss = append(miss, fmt.Sprintf("%q is not revision %d: %s", n, rev, why))
		}
	}
	for _, n := range w.removed {
		if r.HasRemoved(n) {
			w.seenRemoved[n] = true
		}
	}
	for _, n := range w.absent {
		if r.Has(n) {
			miss = append(miss, fmt.Sprintf("it still carries %q", n))
		}
	}
	for _, n := range w.names {
		if !w.seen[n] {
			miss = append(miss, fmt.Sprintf("%q not carried", n))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(w.revs)) {
		if !w.seen[n] && r.Get(n) == nil {
			miss = append(miss, fmt.Sprintf("%q not carried", n))
		}
	}
	for _, n := range w.removed {
		if !w.seenRemoved[n] {
			miss = append(miss, fmt.Sprintf("%q not removed", n))
		}
	}
	return strings.Join(miss, "; ")
}

// describe says in words what the step waits for.
func (w *wanted) describe() string {
	var parts []string
	if len(w.names) > 0 {
		parts = append(parts, fmt.Sprintf("carrying %q", w.names))
	}
	for _, n := range slices.Sorted(maps.Keys(w.revs)) {
		parts = append(parts, fmt.Sprintf("carrying %q at revision %d", n, w.revs[n]))
	}
	if len(w.removed) > 0 {
		parts = append(parts, fmt.Sprintf("removing %q", w.removed))
	}
	if len(w.absent) > 0 {
		parts = append(parts, fmt.Sprintf("without %q", w.absent))
	}
	return wording.A(w.t.Short) + " response " + strings.Join(parts, ", ")
}
