package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// wildcardSet collects the wildcard answer that holds names, and ACKs it:
// in delta as many responses as the server splits it into; in SotW the
// first full-state response (GRP-1) holding them all. A server may apply
// the fixture's changes after SetResource returned (docs/fixture-api.md),
// so SotW responses built before the last change are read and ACKed on the
// way; each must still be a full state: a name it delivered once stays in
// every later response.
func (s *S) wildcardSet(t wire.Type, names ...string) {
	if s.Variant.IsDelta() {
		// Delta sends each resource once: wait for those not yet received.
		known := s.C.Known(t)
		var missing []string
		for _, n := range names {
			if _, ok := known[n]; !ok {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			s.AwaitAll(t, missing...)
		}
		return
	}
	delivered := map[string]bool{}
	full := s.Checking("GRP-1")
	r := s.awaitWhere(t, fmt.Sprintf("%s wildcard response holding %q", wording.A(t.Short), names), func(r *fakeclient.Response) bool {
		own := s.Own(r)
		for name := range delivered {
			require.Contains(full, own, name, "%s wildcard response (nonce %q) must hold every %s resource: it dropped one it had sent", t.Short, r.Nonce, t.Short)
		}
		for _, name := range own {
			delivered[name] = true
		}
		return isSubset(names, own)
	})
	s.Ack(t, r)
}

// isSubset says whether every one of want is in have.
func isSubset(want, have []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// wildcardTypes are the types a client may subscribe to by wildcard
// (Listener and Cluster).
var wildcardTypes = []wire.Type{LDS, CDS}

// wildcardMode is one way of holding a wildcard subscription: the legacy
// one (a first request naming nothing, WILD-2) or the explicit "*"
// (WILD-1). The scenarios about what a wildcard delivers run in both.
type wildcardMode struct {
	name      string // in scenario IDs
	words     string // in titles
	rule      string
	need      engine.Need
	subscribe func(s *S, t wire.Type)
}

var wildcardModes = []wildcardMode{
	{"legacy", "A first request naming nothing", "WILD-2", targets.NeedLegacyWildcard, func(s *S, t wire.Type) { s.Wildcard(t) }},
	{"star", "Subscribing to \"*\"", "WILD-1", targets.NeedExplicitWildcard, func(s *S, t wire.Type) { s.Subscribe(t, "*") }},
}

// wildcardDelivery generates, for each mode, the scenarios about what a
// wildcard subscription delivers: everything there is when it starts, and
// what is created afterwards.
func wildcardDelivery() []*engine.Scenario {
	var out []*engine.Scenario
	for _, m := range wildcardModes {
		out = append(out, &engine.Scenario{
			ID:           "server/wildcard/" + m.name + "-sends-all",
			Title:        m.words + " subscribes to every listener and every cluster",
			Requirements: []string{m.rule},
			Level:        results.Should,
			Variants:     allVariants,
			Needs:        with(Fixture(), m.need),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(wildcardTypes...) {
					a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
					m.subscribe(s, t)
					s.Checking(m.rule).wildcardSet(t, a, b)
				}
			}),
		}, &engine.Scenario{
			ID:           "server/wildcard/" + m.name + "-pushes-created",
			Title:        m.words + " also covers a resource created after the subscription",
			Requirements: []string{m.rule},
			Level:        results.Should,
			Variants:     allVariants,
			Needs:        with(Fixture(), m.need),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(wildcardTypes...) {
					a := s.Set(t, "a", 1)
					m.subscribe(s, t)
					s.wildcardSet(t, a)
					if s.Variant.IsADS() {
						// The ACK is read before the creation: a request of
						// another type after it on the one stream is
						// answered first. (A wildcard the server ended at
						// an ACK would otherwise pass whenever the push
						// beat the ACK, which then came stale.)
						// Lower case: servers that take names as service names
						// (Consul) refuse capitals.
						s.Barrier(EDS, s.Set(EDS, "barrier-"+strings.ToLower(t.Short), 1))
					}
					late := s.Set(t, "late", 1)
					s.Checking(m.rule).wildcardSet(t, a, late)
				}
			}),
		})
	}
	return out
}

// xds_protocol#how-the-client-specifies-what-resources-to-return (wildcard)
var wildcardScenarios = append(slices.Concat(wildcardDelivery(), unsubscribeOverlapFamily()), []*engine.Scenario{
	{
		ID:           "server/wildcard/star-plus-names",
		Title:        "Adding \"*\" to explicit names keeps the names and adds the wildcard",
		Requirements: []string{"WILD-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS), targets.NeedExplicitWildcard),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a)
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Subscribe(CDS, "*")
			s.Checking("WILD-3").AwaitRevision(CDS, b, 1)
		}),
	},
	{
		ID:           "server/wildcard/drop-star-keeps-names",
		Title:        "Dropping \"*\" ends the wildcard but keeps the explicit names (delta: still held, so a deletion is reported)",
		Requirements: []string{"WILD-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS), targets.NeedExplicitWildcard),
		Run: ServerScript(func(s *S) {
			a, b, bar := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1), s.Set(CDS, "barrier", 1)
			s.Subscribe(CDS, "*", a)
			s.wildcardSet(CDS, a, b, bar)
			s.Unsubscribe(CDS, "*")
			// In delta the client holds bar from the wildcard, so the
			// barrier rests on DELTA-3 (a subscribe is answered even with
			// what the client holds), not on WILD-4: a server that breaks
			// it blocks the pair by DELTA-3.
			s.Barrier(CDS, bar)
			if s.Variant.IsDelta() {
				// The name kept is still subscribed and held: its deletion
				// is reported (as DEL-1 has it for any name), and its
				// re-creation below pushed. It comes first: a change of b
				// would wake a server that forgot a into sending it again,
				// and so remember it.
				s.Delete(CDS, a)
				s.Ack(CDS, s.Checking("WILD-4").AwaitRemoved(CDS, a))
			}
			// b, held only through the wildcard, is dropped with it: neither
			// its deletion (delta: the client no longer holds it) nor its
			// re-creation is sent.
			s.NeverCarrying("b is no longer covered by a wildcard", CDS, b)
			s.Delete(CDS, b)
			v := s.Checking("WILD-4")
			v.pushed(CDS, "a", a, 2) // the deletion of b is taken in before its re-creation
			s.Set(CDS, "b", 2)
			v.pushed(CDS, "a", a, 3)
		}),
	},
	{
		ID:           "server/wildcard/empty-after-names-not-wildcard",
		Title:        "Unsubscribing the last name after explicit names is not a wildcard",
		Requirements: []string{"WILD-5", "RES-6"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a)
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Unsubscribe(CDS, a)
			// A change to b gives a server that took the empty list for
			// a wildcard something to push (the ACK above means nothing
			// is pending for an unchanged state); a, just dropped, must
			// not come back either.
			s.Set(CDS, "b", 2)
			s.NeverCarrying("the client subscribes to no cluster at all", CDS, a, b)
		}),
	},
	{
		ID:           "server/wildcard/delta-state-machine",
		Title:        "Delta: legacy wildcard, plus a name, minus \"*\", minus the name evolve as specified",
		Requirements: []string{"WILD-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(Fixture(CDS), targets.NeedLegacyWildcard, targets.NeedExplicitWildcard),
		Run: ServerScript(func(s *S) {
			w, a, bar := s.Set(CDS, "w", 1), s.Set(CDS, "a", 1), s.Set(CDS, "barrier", 1)
			s.Wildcard(CDS) // step 1: legacy wildcard
			s.AwaitAll(CDS, w, a, bar)
			s.Subscribe(CDS, a) // step 2: wildcard plus a
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Set(CDS, "w", 2)
			s.Ack(CDS, s.Checking("WILD-6").AwaitRevision(CDS, w, 2))
			s.Unsubscribe(CDS, "*") // step 3: a only
			// The client holds bar from the wildcard, so the barrier rests
			// on DELTA-3 (a subscribe is answered even with what the client
			// holds), which this scenario does not check: a server that
			// breaks it blocks the pair by DELTA-3, never fails WILD-6.
			s.Barrier(CDS, bar)
			s.Set(CDS, "w", 3)
			s.NeverCarrying("after unsubscribing \"*\" only a and the barrier are subscribed", CDS, w)
			s.Set(CDS, "a", 2)
			s.Ack(CDS, s.Checking("WILD-6").AwaitRevision(CDS, a, 2))
			s.Unsubscribe(CDS, a, bar) // step 4: nothing, not a wildcard
			s.NeverCarrying("unsubscribing the last names is not a wildcard", CDS, a)
			s.Barrier(CDS, bar) // the unsubscribe has been processed
			s.Set(CDS, "a", 3)
			s.Set(CDS, "w", 4)
		}),
	},
	{
		ID:           "server/wildcard/named-subscription",
		Title:        "Listeners and clusters subscribed by name are served, and only those",
		Requirements: []string{"WILD-8"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(wildcardTypes...) {
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				s.Set(t, "c", 1) // exists, not subscribed
				s.Subscribe(t, a, b)
				r := s.Checking("WILD-8").AwaitAll(t, a, b)
				if !s.Variant.IsDelta() {
					// SotW full state covers only the subscribed names.
					s.Checking("WILD-8").RequireOwnExactly(r, a, b)
				}
			}
		}),
	},
	{
		ID:           "server/wildcard/member-stays-after-unsubscribe",
		Title:        "Dropping an explicit name the wildcard also covers keeps the resource delivered",
		Requirements: []string{"WILD-9"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS), targets.NeedExplicitWildcard),
		Run: ServerScript(func(s *S) {
			a, bar := s.Set(CDS, "a", 1), s.Set(CDS, "barrier", 1)
			s.Subscribe(CDS, "*", a)
			s.wildcardSet(CDS, a, bar)
			s.Unsubscribe(CDS, a)
			// In delta the client holds bar from the wildcard, so the
			// barrier rests on DELTA-3, not on WILD-9: a server that breaks
			// it blocks the pair by DELTA-3.
			s.Barrier(CDS, bar)
			s.Set(CDS, "a", 2)
			s.Checking("WILD-9").AwaitRevision(CDS, a, 2)
		}),
	},
}...)

// unsubscribeOverlapFamily generates UNSUB-6's two cases: a delta client
// holding "*" and a name unsubscribes the name, and the server tells it
// whether it keeps the resource: in resources if the wildcard covers it,
// in removed_resources if not. A name no resource has is outside the
// wildcard's set; its subscription is answered with its removal first
// (DNE-5), which the step reads before the unsubscribe.
func unsubscribeOverlapFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, inside := range []bool{true, false} {
		id, words := "delta-unsubscribe-overlap", "a name the wildcard covers resends it in resources"
		if !inside {
			id, words = "delta-unsubscribe-outside", "a name outside the wildcard's set reports it in removed_resources"
		}
		out = append(out, &engine.Scenario{
			ID:           "server/wildcard/" + id,
			Title:        "Delta: unsubscribing, beside \"*\", " + words,
			Requirements: []string{"UNSUB-6"},
			Level:        results.Must,
			Variants:     delta,
			Needs:        with(Fixture(CDS), targets.NeedExplicitWildcard),
			Run: ServerScript(func(s *S) {
				a := s.Set(CDS, "a", 1)
				s.Subscribe(CDS, "*", a)
				s.AwaitAll(CDS, a)
				if inside {
					s.Unsubscribe(CDS, a)
					s.Checking("UNSUB-6").AwaitRevision(CDS, a, 1)
					return
				}
				outside := s.Name("outside")
				s.Subscribe(CDS, outside)
				s.expecting(CDS, "DNE-5") // the answer a missing name is owed
				s.Ack(CDS, s.precondition("DNE-5").AwaitRemoved(CDS, outside))
				s.Unsubscribe(CDS, outside)
				s.Checking("UNSUB-6").AwaitRemoved(CDS, outside)
			}),
		})
	}
	return out
}
