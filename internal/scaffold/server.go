package scaffold

import (
	"fmt"
	"slices"

	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
	"github.com/xdsconform/xdsconform/wire"
)

// neverSent is the literal nonce a scaffold writes for a request whose
// response_nonce names no response of the transcript: a nonce no server
// sent, never the recorded one, which another server may well send.
const neverSent = "xdsconform-never-sent"

// typeState is what a server-role scaffold knows of one type as it reads
// the transcript.
type typeState struct {
	started  bool
	wildcard bool
	// names are the base names subscribed.
	names []string
	// asked is every base name the client ever subscribed to, in order:
	// what a response breaking the silence after an unsubscription of
	// them all would carry.
	asked []string
	// latest is the nonce of the latest response of the type on its
	// current stream.
	latest string
	// pending is the index of the step (a subscription) whose answer has
	// not come yet: the fixture changes that answer needs go before it.
	// -1: none.
	pending int
	// full is the last full state of a SotW listener or cluster response,
	// in base names.
	full []string
}

// revision is what the fixture was last told of one resource.
type revision struct {
	fingerprint string
	rev         int
	exists      bool
}

// serverBuild is a server-role scaffold in progress.
type serverBuild struct {
	*builder
	steps    []scenariofile.ServerStep
	types    map[string]*typeState
	order    []string // type URLs in order of first use
	revs     map[string]*revision
	labels   map[string]string // type URL + nonce → label
	dropped  map[string]bool   // labels of responses left out (another pair's)
	streams  map[string]string // stream key → stream name
	nlabels  int
	expected map[string]bool // labels an expect step defines
}

func (b *builder) server(msgs []message) []scenariofile.ServerStep {
	s := &serverBuild{builder: b, types: map[string]*typeState{}, revs: map[string]*revision{},
		labels: map[string]string{}, dropped: map[string]bool{}, streams: map[string]string{}, expected: map[string]bool{}}
	b.note("The server's resources are set through the fixture, which builds each revision's content itself (docs/fixture-api.md): " +
		"a resource whose recorded content changed is set at the next revision, so the file checks which resources come, when, and that each is " +
		"the revision set, not the recorded bytes.")
	b.note("Nonces and versions are references to the responses they came from ($LABEL.nonce); a nonce no recorded response carries becomes %q.", neverSent)
	if b.prefix != "" {
		b.note("Resource names are base names: the pair's prefix (%s) is taken off, and each run makes them unique to its pair again.", b.prefix)
	}
	for _, m := range msgs {
		t, ok := typeOf(m.typeURL)
		if !ok {
			b.note("Messages of type %q were left out: a scaffold replays the eight xDS resource types.", m.typeURL)
			continue
		}
		if m.request {
			s.request(t, m)
		} else {
			s.response(t, m)
		}
	}
	for _, url := range s.order {
		st := s.types[url]
		if st.pending >= 0 {
			t, _ := wire.TypeByURL(url)
			// A response carrying none of the names subscribed (an empty
			// SotW answer about a resource that does not exist, say)
			// tells the client nothing new, so only one carrying a name
			// breaks the silence recorded.
			q := &scenariofile.QuietStep{Type: t.Short, Names: slices.Clone(st.names),
				Why: "the recorded server sent no " + t.Short + " response to the last " + t.Short + " request"}
			if len(q.Names) == 0 {
				// The last request dropped every name (grpc-go does as it
				// shuts down). An empty answer, or one to an earlier
				// request that is still unread, tells the client nothing:
				// only a response carrying a name it once asked for
				// breaks the silence.
				q.Names = slices.Clone(st.asked)
			}
			if st.wildcard {
				q.Names = nil
			}
			if sub := s.steps[st.pending].Subscribe; sub != nil && !s.variant.IsDelta() && sub.Nonce != "" {
				// A SotW request with a stale nonce is one a server
				// ignores (NONCE-7): the silence is that rule's.
				q.Rule, q.Why = "NONCE-7", "the request's nonce is stale, and the recorded server ignored it"
			}
			s.steps = append(s.steps, scenariofile.ServerStep{Quiet: q})
		}
	}
	return s.mergeAcks()
}

func (s *serverBuild) state(t wire.Type) *typeState {
	st, ok := s.types[t.URL]
	if !ok {
		st = &typeState{pending: -1}
		s.types[t.URL] = st
		s.order = append(s.order, t.URL)
	}
	return st
}

// streamKey is what one stream carries: every type on ADS, one per type
// otherwise.
func (s *serverBuild) streamKey(t wire.Type) string {
	if s.variant.IsADS() {
		return "ads"
	}
	return t.URL
}

func (s *serverBuild) add(step scenariofile.ServerStep) int {
	s.steps = append(s.steps, step)
	return len(s.steps) - 1
}

// insert puts steps at index at, keeping the pending indexes at or after
// it pointing at their steps.
func (s *serverBuild) insert(at int, steps []scenariofile.ServerStep) {
	if len(steps) == 0 {
		return
	}
	if at < 0 || at > len(s.steps) {
		at = len(s.steps)
	}
	s.steps = slices.Insert(s.steps, at, steps...)
	for _, st := range s.types {
		if st.pending >= at {
			st.pending += len(steps)
		}
	}
}

func (s *serverBuild) request(t wire.Type, m message) {
	st := s.state(t)
	key := s.streamKey(t)
	if prev, ok := s.streams[key]; ok && prev != m.stream {
		// A new stream: the client reconnected. On ADS that resets every
		// type it carried, as fakeclient.Reconnect does.
		s.add(scenariofile.ServerStep{Reconnect: &scenariofile.TypeStep{Type: t.Short}})
		for url, other := range s.types {
			u, _ := wire.TypeByURL(url)
			if s.streamKey(u) == key {
				other.started, other.latest = false, ""
				if s.variant.IsDelta() {
					other.names = nil
				}
			}
		}
	}
	s.streams[key] = m.stream
	label := s.labels[t.URL+"\x00"+m.nonce]
	if m.nonce != "" && label != "" && s.dropped[label] {
		// The answer to a response left out: an ACK of it is left out
		// too; a request that also changes the subscription is kept, as
		// if it carried the latest nonce.
		if m.hasError || s.variant.IsDelta() && len(m.names)+len(m.unsubscribed) == 0 ||
			!s.variant.IsDelta() && st.started && len(without(s.bases(m.names), st.names))+len(without(st.names, s.bases(m.names))) == 0 {
			return
		}
		label, m.nonce = "", st.latest
	}
	if m.hasError {
		if label == "" {
			s.note("A NACK of a response the transcript does not hold was left out.")
			return
		}
		code, msg := m.errCode, m.errMessage
		s.add(scenariofile.ServerStep{Nack: &scenariofile.NackStep{Of: label, Code: &code, Message: &msg}})
		return
	}
	if m.initialVersions {
		s.note("A delta request listed the resources the client held (initial_resource_versions); the harness's client lists none on a new stream, so the file subscribes afresh.")
	}
	names, unsubs := s.bases(m.names), s.bases(m.unsubscribed)
	if !st.started {
		st.started = true
		if len(names) == 0 && len(unsubs) == 0 && t.Wildcard {
			st.wildcard = true
			st.pending = s.add(scenariofile.ServerStep{Wildcard: &scenariofile.WildcardStep{Type: t.Short}})
			st.names = nil
			return
		}
	}
	var added, removed []string
	if s.variant.IsDelta() {
		added, removed = names, unsubs
	} else {
		added = without(names, st.names)
		removed = without(st.names, names)
	}
	if len(removed) > 0 {
		s.add(scenariofile.ServerStep{Unsubscribe: &scenariofile.UnsubscribeStep{Type: t.Short, Names: removed}})
	}
	nonce := ""
	if m.nonce != "" && m.nonce != st.latest {
		// Not the latest nonce of the type: stale, or never sent.
		nonce = neverSent
		if label != "" {
			nonce = "$" + label + ".nonce"
		}
	}
	switch {
	case len(added) > 0:
		st.pending = s.add(scenariofile.ServerStep{Subscribe: &scenariofile.SubscribeStep{Type: t.Short, Names: added, Nonce: nonce}})
	case len(removed) > 0:
	case m.nonce != "" && label != "":
		s.add(scenariofile.ServerStep{Ack: &scenariofile.AckStep{Of: label}})
	default:
		// The same subscription again, with no nonce or one no response
		// carries.
		st.pending = s.add(scenariofile.ServerStep{Subscribe: &scenariofile.SubscribeStep{Type: t.Short, Nonce: nonce}})
	}
	if slices.Contains(added, "*") {
		st.wildcard = true
	}
	st.asked = append(st.asked, without(added, st.asked)...)
	if s.variant.IsDelta() {
		st.names = append(without(st.names, unsubs), without(names, st.names)...)
	} else {
		st.names = names
	}
}

// without is the names of a not in b, in a's order.
func without(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

func (s *serverBuild) response(t wire.Type, m message) {
	st := s.state(t)
	s.nlabels++
	label := fmt.Sprintf("r%d", s.nlabels)
	s.labels[t.URL+"\x00"+m.nonce] = label
	st.latest = m.nonce

	var own []string
	ownNames := map[string]string{} // base → name
	for _, n := range m.names {
		if base, ok := s.base(n); ok && !slices.Contains(own, base) {
			own = append(own, base)
			ownNames[base] = n
		}
	}
	removed := s.bases(m.removed)
	if len(own) == 0 && len(removed) == 0 && len(m.names) > 0 {
		// Only other pairs' resources: a push a shared server made for
		// them, which says nothing of this pair.
		s.dropped[label] = true
		s.note("Responses carrying only other pairs' resources (a wildcard on a shared server) were left out.")
		return
	}
	var changes []scenariofile.ServerStep
	resources := map[string]int{}
	for _, base := range own {
		r := s.revs[t.URL+"\x00"+base]
		if r == nil {
			r = &revision{}
			s.revs[t.URL+"\x00"+base] = r
		}
		fp := m.contents[ownNames[base]]
		if !r.exists || r.fingerprint != fp {
			r.rev++
			r.exists, r.fingerprint = true, fp
			changes = append(changes, scenariofile.ServerStep{Set: &scenariofile.SetStep{Type: t.Short, Name: base, Revision: r.rev}})
		}
		resources[base] = r.rev
	}
	var absent []string
	if s.variant.IsDelta() {
		for _, base := range removed {
			if r := s.revs[t.URL+"\x00"+base]; r != nil && r.exists {
				r.exists = false
				changes = append(changes, scenariofile.ServerStep{Delete: &scenariofile.DeleteStep{Type: t.Short, Name: base}})
			}
		}
	} else if t.Wildcard {
		// A SotW listener or cluster response is the full state: a
		// resource of the last one, still subscribed, that it leaves out
		// was deleted.
		for _, base := range st.full {
			r := s.revs[t.URL+"\x00"+base]
			if !slices.Contains(own, base) && (st.wildcard || slices.Contains(st.names, base)) && r != nil && r.exists {
				r.exists = false
				absent = append(absent, base)
				changes = append(changes, scenariofile.ServerStep{Delete: &scenariofile.DeleteStep{Type: t.Short, Name: base}})
			}
		}
		st.full = own
	}
	if st.pending < 0 && len(changes) > 0 && len(s.steps) > 0 {
		// A push after a request that gets no answer (a NACK, an
		// unsubscribe): the fixture change must not overtake the request,
		// so the server is given the quiet window to take it in first.
		if last := s.steps[len(s.steps)-1]; last.Nack != nil || last.Unsubscribe != nil {
			changes = append([]scenariofile.ServerStep{{Settle: &scenariofile.TypeStep{Type: t.Short}}}, changes...)
			s.note("A fixture change that follows a NACK or an unsubscribe comes after a settle step, which gives the server the quiet window to take the request in: a request that gets no answer could otherwise be overtaken by the change.")
		}
	}
	s.insert(st.pending, changes)
	st.pending = -1
	exp := &scenariofile.ExpectStep{Type: t.Short, As: label, Resources: resources, Absent: absent}
	if s.variant.IsDelta() {
		exp.Removed = removed
	} else if t.Wildcard && len(own) > 0 {
		exp.Exactly = true
	}
	if len(resources) == 0 {
		exp.Resources = nil
	}
	s.expected[label] = true
	s.checking++
	s.add(scenariofile.ServerStep{Expect: exp})
}

// mergeAcks writes an expect step followed at once by the ACK of what it
// awaited as one step (ack: true), and drops the labels nothing refers to.
func (s *serverBuild) mergeAcks() []scenariofile.ServerStep {
	var out []scenariofile.ServerStep
	for i := 0; i < len(s.steps); i++ {
		st := s.steps[i]
		if st.Expect != nil && i+1 < len(s.steps) && s.steps[i+1].Ack != nil && s.steps[i+1].Ack.Of == st.Expect.As {
			e := *st.Expect
			e.Ack = true
			st.Expect = &e
			i++
		}
		out = append(out, st)
	}
	used := map[string]bool{}
	for _, st := range out {
		switch {
		case st.Ack != nil:
			used[st.Ack.Of] = true
		case st.Nack != nil:
			used[st.Nack.Of] = true
		case st.Subscribe != nil && len(st.Subscribe.Nonce) > 1 && st.Subscribe.Nonce[0] == '$':
			label, _, _ := cutRef(st.Subscribe.Nonce)
			used[label] = true
		}
	}
	for i, st := range out {
		if st.Expect != nil && !used[st.Expect.As] {
			e := *st.Expect
			e.As = ""
			out[i].Expect = &e
		}
	}
	return out
}

// cutRef splits "$LABEL.FIELD".
func cutRef(ref string) (label, field string, ok bool) {
	for i := len(ref) - 1; i > 0; i-- {
		if ref[i] == '.' {
			return ref[1:i], ref[i+1:], true
		}
	}
	return "", "", false
}
