package scenarios

import (
	"fmt"
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
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
func (s *S) wildcardSet(t wire.Type, names ...string) *fakeclient.Response {
	if s.Variant.IsDelta() {
		return s.AwaitAll(t, names...)
	}
	delivered := map[string]bool{}
	r := s.awaitWhere(t, fmt.Sprintf("a %s wildcard response holding %q", t.Short, names), func(r *fakeclient.Response) bool {
		own := s.Own(r)
		for name := range delivered {
			require.Contains(s, own, name, "%s wildcard response (nonce %q) must hold every %s resource: it dropped one it had sent", t.Short, r.Nonce, t.Short)
		}
		for _, name := range own {
			delivered[name] = true
		}
		return isSubset(names, own)
	})
	s.Ack(t, r)
	return r
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

// xds_protocol#how-the-client-specifies-what-resources-to-return (wildcard)
var wildcardScenarios = []*engine.Scenario{
	{
		ID:           "server/wildcard/legacy-empty-first-request",
		Title:        "A first request naming nothing is a wildcard subscription for CDS",
		Requirements: []string{"WILD-2"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(fx(CDS), targets.NeedLegacyWildcard),
		Run: srv(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Wildcard(CDS)
			s.wildcardSet(CDS, a, b)
		}),
	},
	{
		ID:           "server/wildcard/explicit-star",
		Title:        "Subscribing to \"*\" is a wildcard subscription for CDS",
		Requirements: []string{"WILD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(fx(CDS), targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, "*")
			s.wildcardSet(CDS, a, b)
		}),
	},
	{
		ID:           "server/wildcard/star-plus-names",
		Title:        "Adding \"*\" to explicit names keeps the names and adds the wildcard",
		Requirements: []string{"WILD-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(fx(CDS), targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a)
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Subscribe(CDS, "*")
			s.RequireResource(CDS, s.AwaitResource(CDS, b), b, 1)
		}),
	},
	{
		ID:           "server/wildcard/drop-star-keeps-names",
		Title:        "Dropping \"*\" ends the wildcard but keeps the explicit names",
		Requirements: []string{"WILD-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(fx(CDS), targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			a, b, bar := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1), s.Set(CDS, "barrier", 1)
			s.Subscribe(CDS, "*", a)
			s.wildcardSet(CDS, a, b, bar)
			s.Unsubscribe(CDS, "*")
			s.Barrier(CDS, bar)
			s.Set(CDS, "b", 2)
			s.ExpectNoneCarrying("b is no longer covered by a wildcard", CDS, b)
			s.Set(CDS, "a", 2)
			s.AwaitRevision(CDS, a, 2)
		}),
	},
	{
		ID:           "server/wildcard/empty-after-names-not-wildcard",
		Title:        "Unsubscribing the last name after explicit names is not a wildcard",
		Requirements: []string{"WILD-5", "RES-6"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fx(CDS),
		Run: srv(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a)
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Unsubscribe(CDS, a)
			// A change to b gives a server that took the empty list for
			// a wildcard something to push (the ACK above means nothing
			// is pending for an unchanged state); a, just dropped, must
			// not come back either.
			s.Set(CDS, "b", 2)
			s.ExpectNoneCarrying("the client subscribes to no cluster at all", CDS, a, b)
		}),
	},
	{
		ID:           "server/wildcard/delta-state-machine",
		Title:        "Delta: legacy wildcard, plus a name, minus \"*\", minus the name evolve as specified",
		Requirements: []string{"WILD-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(fx(CDS), targets.NeedLegacyWildcard, targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			w, a, bar := s.Set(CDS, "w", 1), s.Set(CDS, "a", 1), s.Set(CDS, "barrier", 1)
			s.Wildcard(CDS) // step 1: legacy wildcard
			s.AwaitAll(CDS, w, a, bar)
			s.Subscribe(CDS, a) // step 2: wildcard plus a
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Set(CDS, "w", 2)
			s.Ack(CDS, s.AwaitResource(CDS, w))
			s.Unsubscribe(CDS, "*") // step 3: a only
			s.Barrier(CDS, bar)
			s.Set(CDS, "w", 3)
			s.ExpectNoneCarrying("after unsubscribing \"*\" only a is subscribed", CDS, w)
			s.Set(CDS, "a", 2)
			s.Ack(CDS, s.AwaitResource(CDS, a))
			s.Unsubscribe(CDS, a, bar) // step 4: nothing, not a wildcard
			s.ExpectNoneCarrying("unsubscribing the last names is not a wildcard", CDS, a, w)
			s.Barrier(CDS, bar)
			s.Set(CDS, "a", 3)
			s.Set(CDS, "w", 4)
			s.ExpectNoneCarrying("after unsubscribing a nothing is subscribed", CDS, a, w)
		}),
	},
	{
		ID:           "server/wildcard/named-subscription",
		Title:        "Clusters subscribed by name are served and their deletion is signalled",
		Requirements: []string{"WILD-8", "DEL-1", "DEL-7"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(CDS),
		Run: srv(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a, b)
			s.AwaitAll(CDS, a, b)
			s.Delete(CDS, b)
			if s.Variant.IsDelta() {
				s.AwaitRemoved(CDS, b)
				return
			}
			s.RequireOwnExactly(s.Expect(CDS), a)
		}),
	},
	{
		ID:           "server/wildcard/member-stays-after-unsubscribe",
		Title:        "Dropping an explicit name the wildcard also covers keeps the resource delivered",
		Requirements: []string{"WILD-9"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(fx(CDS), targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			a, bar := s.Set(CDS, "a", 1), s.Set(CDS, "barrier", 1)
			s.Subscribe(CDS, "*", a)
			s.wildcardSet(CDS, a, bar)
			s.Unsubscribe(CDS, a)
			s.Barrier(CDS, bar)
			s.Set(CDS, "a", 2)
			s.AwaitRevision(CDS, a, 2)
		}),
	},
	{
		ID:           "server/wildcard/delta-unsubscribe-overlap",
		Title:        "Delta: unsubscribing a name the wildcard covers resends it in resources",
		Requirements: []string{"UNSUB-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(fx(CDS), targets.NeedExplicitWildcard),
		Run: srv(func(s *S) {
			a := s.Set(CDS, "a", 1)
			s.Subscribe(CDS, "*", a)
			s.AwaitAll(CDS, a)
			s.Unsubscribe(CDS, a)
			s.RequireResource(CDS, s.AwaitResource(CDS, a), a, 1)
		}),
	},
}
