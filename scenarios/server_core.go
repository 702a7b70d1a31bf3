package scenarios

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// The families of this file span the core dimensions of
// docs/state-space.md on the server side: the event that follows an
// unsubscribe, requests that carry two meanings at once, a response that
// covers part of what was asked, the requests that follow a NACK, and a
// reconnect while names are still pending. Each loops over the four types
// a client names (namedTypes): a server may keep a type's subscriptions
// in code of its own.

// rejected is the error_detail of the NACKs these scenarios send.
var rejected = &status.Status{Code: 3, Message: "xdsconform: rejected on purpose by the scenario"}

// pushed moves base of t to revision rev and waits for its push, which
// it ACKs: a change the stream subscribes to, pushed after the changes
// before it, shows the server took those in (they come in the same push
// or earlier), so a must-not-happen watch set before them has seen what
// they provoked by then.
func (s *S) pushed(t wire.Type, base, name string, rev int) {
	s.Set(t, base, rev)
	s.Ack(t, s.AwaitRevision(t, name, rev))
}

// awaitUnacked reads responses of t until names have all been carried,
// ACKing each response but the last, which it returns: the one a scenario
// answers in a way of its own (a NACK, an ACK that changes names).
func (s *S) awaitUnacked(t wire.Type, names ...string) *fakeclient.Response {
	missing := map[string]bool{}
	for _, n := range names {
		missing[n] = true
	}
	return s.awaitWhere(t, fmt.Sprintf("%s responses carrying %q", t.Short, names), func(r *fakeclient.Response) bool {
		for _, n := range r.Names() {
			delete(missing, n)
		}
		return len(missing) == 0
	})
}

// unsubscribeEvent is one row of the table of what may happen to a
// resource after a client unsubscribed from it: each must stay silent on
// the stream (UNSUB-2). A server that keeps its push bookkeeping in more
// than one place (what it sent, what the client holds, what it waits to
// see created) may forget the unsubscribe in one of them only.
type unsubscribeEvent struct {
	id, words string
	variants  []wire.Variant
	why       string // why the event is limited to variants, "" for all
	// happen makes the event happen to b of t; a is a resource the stream
	// still subscribes to, pushed after each change (see pushed).
	happen func(s *S, t wire.Type, a, b string)
}

var unsubscribeEvents = []unsubscribeEvent{
	{"no-updates-after", "an update", allVariants, "", func(s *S, t wire.Type, a, _ string) {
		s.Set(t, "b", 2)
		s.pushed(t, "a", a, 2)
	}},
	// A SotW deletion is told by leaving the resource out of a full state
	// (or, outside Listener and Cluster, by nothing): no SotW response can
	// carry it, so only delta's removed_resources can break the rule.
	{"no-removal-after", "a deletion", delta, "only delta's removed_resources can name a deleted resource", func(s *S, t wire.Type, a, b string) {
		s.Delete(t, b)
		s.pushed(t, "a", a, 2)
	}},
	{"no-recreation-after", "a deletion and a re-creation", allVariants, "", func(s *S, t wire.Type, a, b string) {
		s.Delete(t, b)
		s.pushed(t, "a", a, 2) // the deletion is taken in before the re-creation
		s.Set(t, "b", 2)
		s.pushed(t, "a", a, 3)
	}},
}

// unsubscribeFamily is the table of unsubscribeEvents: subscribe a and b
// of every type, unsubscribe b, then the event; b must never come again.
func unsubscribeFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, e := range unsubscribeEvents {
		out = append(out, &engine.Scenario{
			ID:           "server/unsubscribe/" + e.id,
			Title:        fmt.Sprintf("After a resource is unsubscribed, %s of it is not sent to the client", e.words),
			Requirements: []string{"UNSUB-2"},
			Level:        results.Should,
			Variants:     e.variants,
			Needs:        Fixture(),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(namedTypes...) {
					a, b, bar := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "barrier", 1)
					s.Subscribe(t, a, b)
					s.AwaitAll(t, a, b)
					s.Unsubscribe(t, b)
					s.Barrier(t, bar) // the unsubscribe is taken in
					s.NeverCarrying(fmt.Sprintf("%s %s was unsubscribed before %s of it", t.Short, b, e.words), t, b)
					e.happen(s, t, a, b)
				}
			}),
		})
	}
	return out
}

// unsubscribeCompany is one row of the table of what a delta unsubscribe
// lists before the name it drops: another name dropped with it, a name
// never subscribed (UNSUB-4: harmless), "*" (WILD-4: ends the wildcard) or
// a glob collection. Whatever comes first in resource_names_unsubscribe,
// every name listed is dropped: a server that stops at the first, or
// handles the first kind specially and skips the rest, keeps pushing the
// name after it (UNSUB-2). SotW has no list to stop in: a request names
// what stays subscribed.
type unsubscribeCompany struct {
	id, words string
	rule      string // the rule of the name listed first
	needs     []engine.Need
	types     []wire.Type
	// first subscribes, on t, to what the row lists first and returns the
	// names to list before b, the resources that unsubscribing them drops
	// (whose changes must stay silent too), and a change to those. bar is
	// the barrier of t, which exists and is not subscribed by name.
	first func(s *S, t wire.Type, bar string) (listed, dropped []string, change func())
}

var unsubscribeCompanies = []unsubscribeCompany{
	{"after-another", "another name dropped in the same request", "UNSUB-2", nil, namedTypes, func(s *S, t wire.Type, _ string) ([]string, []string, func()) {
		c := s.Set(t, "c", 1)
		s.Subscribe(t, c)
		s.AwaitAll(t, c)
		return []string{c}, []string{c}, func() { s.Set(t, "c", 2) }
	}},
	{"after-phantom", "a name never subscribed", "UNSUB-4", nil, namedTypes, func(s *S, _ wire.Type, _ string) ([]string, []string, func()) {
		return []string{s.Name("never-subscribed")}, nil, func() {}
	}},
	{"after-star", "\"*\"", "WILD-4", []engine.Need{targets.NeedExplicitWildcard}, wildcardTypes, func(s *S, t wire.Type, bar string) ([]string, []string, func()) {
		s.Subscribe(t, "*")
		s.wildcardSet(t, bar) // a and b are held already
		return []string{"*"}, nil, func() {}
	}},
	{"after-glob", "a glob collection", "COLL-4", []engine.Need{targets.NeedChosenNames, targets.NeedXdstp, targets.NeedGlobCollections}, []wire.Type{LDS}, func(s *S, t wire.Type, _ string) ([]string, []string, func()) {
		m := s.XName(t, "dropped/m").String()
		s.SetX(t, m, 1)
		glob := s.XName(t, "dropped/*").String()
		s.Subscribe(t, glob)
		s.awaitMembers([]string{glob}, []string{m}, nil)
		return []string{glob}, []string{m}, func() { s.SetX(t, m, 2) }
	}},
}

// unsubscribeListFamily is the table of unsubscribeCompanies, for every
// type the row applies to: subscribe a and b, then unsubscribe what the
// row lists first and b in one request; b must never come again.
func unsubscribeListFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range unsubscribeCompanies {
		out = append(out, &engine.Scenario{
			ID:           "server/unsubscribe/listed-" + k.id,
			Title:        fmt.Sprintf("Delta: a name listed in resource_names_unsubscribe after %s is dropped too", k.words),
			Requirements: []string{"UNSUB-2", k.rule},
			Level:        results.Should,
			Variants:     delta,
			Needs:        with(Fixture(k.types...), k.needs...),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(k.types...) {
					a, b, bar := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "barrier", 1)
					s.Subscribe(t, a, b)
					s.AwaitAll(t, a, b)
					listed, dropped, change := k.first(s, t, bar)
					s.Unsubscribe(t, append(listed, b)...)
					s.heldBarrier(t, bar) // the unsubscribe is taken in
					v := s.Checking("UNSUB-2")
					v.NeverCarrying(fmt.Sprintf("%s %s was unsubscribed, after %q in the same request", t.Short, b, listed), t, b)
					if len(dropped) > 0 {
						v.NeverCarrying(fmt.Sprintf("%s %q were dropped by unsubscribing %q", t.Short, dropped, listed), t, dropped...)
					}
					s.Set(t, "b", 2)
					change()
					s.pushed(t, "a", a, 2)
				}
			}),
		})
	}
	return out
}

// combinedRequest is one row of the table of requests that carry two
// meanings at once: the reply to the latest response (an ACK or a NACK)
// and a change of the subscription (a name added, or one name swapped for
// another). A server must honour both: the reply is not taken for the
// whole request, and the change is not taken for a request of everything
// again.
//
// A name dropped alone would show its mistake only until the next
// request, which in SotW restates the names without it: only a quiet
// window could tell, and a barrier would hide it. Swapped for another, the
// name added is served once the server took the request in, which is the
// barrier, and the dropped one must not come after it.
type combinedRequest struct {
	id, words string
	nack      bool // the reply is a NACK, else an ACK
	swaps     bool // the change swaps b for c, else adds b
}

var combinedRequests = []combinedRequest{
	{"ack-adds", "An ACK that also adds a name: the new name is served", false, false},
	{"ack-swaps", "An ACK that also swaps a name for another: the new one is served, the dropped one no longer sent", false, true},
	{"nack-adds", "A NACK that also adds a name: the new name is served, and what was rejected is not sent again", true, false},
	{"nack-swaps", "A NACK that also swaps a name for another: the new one is served, the dropped one no longer sent, and the stream stays usable", true, true},
}

// combinedFamily is the table of combinedRequests, each in every variant
// and for every type the client names.
func combinedFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range combinedRequests {
		// RES-4 in SotW, DELTA-3 in delta: the names a request adds are
		// sent. After a NACK, the rejected content is not (ACK-5 in SotW,
		// UPD-1 in delta), and the next version is pushed (ACK-9).
		rules, level := []string{"RES-4", "DELTA-3"}, results.Must
		switch {
		case k.swaps && k.nack:
			rules, level = []string{"UNSUB-2", "RES-4", "DELTA-3", "ACK-9"}, results.Should
		case k.swaps:
			rules, level = []string{"UNSUB-2", "RES-4", "DELTA-3"}, results.Should
		case k.nack:
			rules = append(rules, "ACK-5", "UPD-1")
		}
		out = append(out, &engine.Scenario{
			ID:           "server/combined/" + k.id,
			Title:        k.words,
			Requirements: rules,
			Level:        level,
			Variants:     allVariants,
			Needs:        Fixture(),
			Run:          ServerScript(func(s *S) { combined(s, k) }),
		})
	}
	return out
}

// combined is the body of a combinedRequest scenario: for every type a
// client names, subscribe to a (and b, to swap it), then answer the
// response with the reply that changes the subscription.
func combined(s *S, k combinedRequest) {
	added, resend := "RES-4", "ACK-5"
	if s.Variant.IsDelta() {
		added, resend = "DELTA-3", "UPD-1"
	}
	var detail *status.Status
	if k.nack {
		detail = rejected
	}
	for _, t := range s.TypesOf(namedTypes...) {
		a, b, c := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "c", 1)
		if !k.swaps {
			s.Subscribe(t, a)
			s.ReplyChanging(t, s.awaitUnacked(t, a), detail, []string{b}, nil)
			// A full state (SotW Listener and Cluster) carries every
			// resource subscribed, the rejected one too (GRP-1).
			if detail != nil && (s.Variant.IsDelta() || !t.Wildcard) {
				s.Checking(resend).NeverCarrying(fmt.Sprintf("%s %s was rejected by a NACK and has not changed since; only the name the NACK adds is owed", t.Short, a), t, a)
			}
			s.Checking(added).AwaitRevision(t, b, 1)
			continue
		}
		s.Subscribe(t, a, b)
		s.ReplyChanging(t, s.awaitUnacked(t, a, b), detail, []string{c}, []string{b})
		// A full state sent for c already has to leave b out.
		s.Checking("UNSUB-2").NeverCarrying(fmt.Sprintf("%s %s was dropped by the request that answered the response carrying it", t.Short, b), t, b)
		s.Ack(t, s.Checking(added).AwaitRevision(t, c, 1))
		s.Set(t, "b", 2)
		if k.nack {
			// After a NACK too, the next version is pushed on the stream.
			s.Checking("ACK-9").pushed(t, "a", a, 2)
		} else {
			s.pushed(t, "a", a, 2)
		}
	}
}

// nackScenariosCore are the scenarios about the requests that follow a
// NACK (the NACK itself: server/nack/no-resend-loop and
// new-version-after-nack).
var nackScenariosCore = []*engine.Scenario{
	{
		ID:           "server/nack/hint-after-nack",
		Title:        "SotW: after a NACK, a request at the version last accepted that adds a name is a hint update: the name is served, and what was rejected is not sent again",
		Requirements: []string{"HINT-2", "ACK-5"},
		Level:        results.Must,
		// Delta requests carry no version: a delta server has no version
		// to misjudge, and a delta subscription is server/combined's.
		Variants: sotw,
		Needs:    Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(namedTypes...) {
				s.AddedNamesServed(t) // after no NACK
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				s.Subscribe(t, a)
				s.Ack(t, s.AwaitRevision(t, a, 1))
				s.Set(t, "a", 2)
				s.Nack(t, s.AwaitRevision(t, a, 2)) // version 1 kept (ACK-3)
				if !t.Wildcard {                    // a full state carries a, rejected or not (GRP-1)
					s.Checking("ACK-5").NeverCarrying(fmt.Sprintf("%s %s at revision 2 was rejected by a NACK and has not changed since", t.Short, a), t, a)
				}
				// Version 1, the NACKed response's nonce, names {a, b},
				// no error_detail: the version alone makes it look like
				// another NACK to a server that detects NACKs by version.
				s.Subscribe(t, b)
				s.Checking("HINT-2").AwaitRevision(t, b, 1)
			}
		}),
	},
}

// pendingKind is one row of the table of subscriptions to a name that
// does not exist yet (a pending name): alone in its request, or beside a
// name that exists, so that the response covers part of what was asked
// and the client ACKs it. Either way the server sends the name once it is
// created (DNE-3).
type pendingKind struct {
	id, words string
	// beside says a name that exists is asked for in the same request.
	beside bool
}

var pendingKinds = []pendingKind{
	{"pushed-when-created", "A subscription to a missing resource is remembered and the resource pushed once created", false},
	{"rest-pushed-when-created", "A response that covers part of a request, ACKed, leaves the rest subscribed: each is pushed once created", true},
}

// missingFamily is the table of pendingKinds.
func missingFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range pendingKinds {
		needs := Fixture(EDS)
		if k.beside {
			needs = Fixture()
		}
		out = append(out, &engine.Scenario{
			ID:           "server/missing/" + k.id,
			Title:        k.words,
			Requirements: []string{"DNE-3"},
			Level:        results.Must,
			Variants:     allVariants,
			// It subscribes before the resource exists, so it must know
			// the name the server will serve.
			Needs: with(needs, targets.NeedChosenNames),
			Run: ServerScript(func(s *S) {
				if !k.beside {
					pendingAlone(s)
					return
				}
				for _, t := range s.TypesOf(namedTypes...) {
					a, late, bar := s.Set(t, "a", 1), s.Name("late"), s.Set(t, "barrier", 1)
					s.Subscribe(t, a, late)
					s.AwaitAll(t, a) // the ACK names both (RES-1); delta may list late removed (DNE-5)
					s.Barrier(t, bar)
					s.Set(t, "late", 1)
					s.Checking("DNE-3").AwaitRevision(t, late, 1)
				}
			}),
		})
	}
	return out
}

// pendingAlone subscribes to a missing endpoints name alone, and expects
// it pushed once created (delta: reported removed first, DNE-5).
func pendingAlone(s *S) {
	late, bar := s.Name("late"), s.Set(EDS, "barrier", 1)
	s.Subscribe(EDS, late)
	if s.Variant.IsDelta() {
		s.Ack(EDS, s.Checking("DNE-5").AwaitRemoved(EDS, late))
	}
	s.Barrier(EDS, bar) // the subscription to the missing name is in place
	s.Set(EDS, "late", 1)
	s.Checking("DNE-3").AwaitRevision(EDS, late, 1)
}

// reconnectPending is one row of the table of reconnects while a name is
// still pending: the client asked for it, and it did not exist. On the
// new stream the client asks again for everything (SotW: at the version
// last accepted; delta: with initial_resource_versions listing what it
// holds, which leaves the pending name out), and the server sends the
// name once it exists.
type reconnectPending struct {
	id, words string
	rules     []string
	variants  []wire.Variant
	// away says the name is created while the client is away, else after
	// it has reconnected.
	away bool
}

var reconnectPendings = []reconnectPending{
	{"pending-pushed-when-created", "After a reconnect, a name the client still waited for is pushed once created",
		[]string{"DNE-3"}, allVariants, false},
	// A SotW reconnect names everything afresh, at an older version, so a
	// resource created meanwhile is the first answer of a stream
	// (server/resources/requested-supplied); delta's first request lists
	// initial_resource_versions, which leave the pending name out.
	{"pending-created-while-away", "Delta: a name the client waited for, created while it was away, is sent when it reconnects although initial_resource_versions does not list it",
		[]string{"DELTA-3", "DELTA-8"}, delta, true},
}

// reconnectFamily is the table of reconnectPendings.
func reconnectFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range reconnectPendings {
		out = append(out, &engine.Scenario{
			ID:           "server/reconnect/" + k.id,
			Title:        k.words,
			Requirements: k.rules,
			Level:        results.Must,
			Variants:     k.variants,
			Needs:        with(Fixture(), targets.NeedChosenNames),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(namedTypes...) {
					a, late, bar := s.Set(t, "a", 1), s.Name("late"), s.Set(t, "barrier", 1)
					s.Subscribe(t, a, late)
					s.AwaitAll(t, a)
					known := s.C.Known(t)
					s.C.Reconnect(t)
					if k.away {
						s.Set(t, "late", 1)
					}
					s.resubscribeAll(t, known, a, late)
					if !k.away {
						s.Barrier(t, bar) // the new stream's subscription is in place
						s.Set(t, "late", 1)
					}
					s.Checking(k.rules[0]).AwaitRevision(t, late, 1)
				}
			}),
		})
	}
	return out
}

// resubscribeAll sends the first request of t on a reconnected stream:
// SotW, the names the client asked for before at the version it last
// accepted (RECONN-3); delta, names with the versions the client holds
// (DELTA-6, DELTA-7).
func (s *S) resubscribeAll(t wire.Type, known map[string]string, names ...string) {
	if s.Variant.IsDelta() {
		s.resubscribe(t, known, names...)
		return
	}
	if got := s.C.Names(t); !sameSet(got, names) {
		s.Abortf("scenario bug: the client's %s names after the reconnect are %q, not %q", t.Short, got, names)
	}
	s.Subscribe(t) // the names kept across the reconnect, whole (RES-1)
}
