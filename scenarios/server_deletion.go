package scenarios

import (
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#deleting-resources, #knowing-when-a-requested-resource-does-not-exist
var deletionScenarios = []*engine.Scenario{
	{
		ID:           "server/deletion/sotw-omission",
		Title:        "SotW: a deleted listener or cluster is omitted from the next full-state response",
		Requirements: []string{"DEL-7", "GRP-1"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(fx(LDS, CDS), targets.NeedLegacyWildcard),
		Run: srv(func(s *S) {
			for _, t := range []wire.Type{LDS, CDS} {
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				s.Wildcard(t)
				s.wildcardSet(t, a, b)
				s.Delete(t, b)
				// On a server shared with other pairs, their changes push
				// full-state responses to this wildcard stream too, some
				// of them produced before the deletion: wait for the one
				// without b, checking that a stays in every one.
				s.awaitWhere(t, fmt.Sprintf("a %s response without %q", t.Short, b), func(r *fakeclient.Response) bool {
					require.True(s, r.Has(a), "%s response (nonce %q) dropped %q, which was not deleted", t.Short, r.Nonce, a)
					return !r.Has(b)
				})
			}
		}),
	},
	{
		ID:           "server/deletion/delta-removed-every-type",
		Title:        "Delta: deleting a subscribed resource of any type lists it in removed_resources",
		Requirements: []string{"DEL-1"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        fx(),
		Run: srv(func(s *S) {
			for _, t := range s.Types() {
				a := s.Set(t, "gone", 1)
				s.Subscribe(t, a)
				s.Ack(t, s.AwaitResource(t, a))
				s.Delete(t, a)
				s.AwaitRemoved(t, a)
			}
		}),
	},
	{
		ID:           "server/grouping/full-state-lds-cds",
		Title:        "SotW: after one listener or cluster changes, the response still carries all of them",
		Requirements: []string{"GRP-1"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(fx(LDS, CDS), targets.NeedLegacyWildcard),
		Run: srv(func(s *S) {
			for _, t := range []wire.Type{LDS, CDS} {
				a, b, c := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "c", 1)
				s.Wildcard(t)
				s.wildcardSet(t, a, b, c)
				s.Set(t, "b", 2)
				// Every full-state response holds all three, the one with
				// b's change and any other pair's push before it (a
				// shared server sends those to wildcard streams too).
				s.AwaitRevisionChecking(t, b, 2, func(r *fakeclient.Response) { s.RequireOwnExactly(r, a, b, c) })
			}
		}),
	},
	{
		ID:           "server/duplicates/no-duplicate-names",
		Title:        "No response carries two resources with the same name",
		Requirements: []string{"DUP-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fx(EDS, CDS),
		Run: srv(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			c := s.Set(CDS, "c", 1)
			s.Subscribe(EDS, a, b)
			s.AwaitAll(EDS, a, b)
			s.Subscribe(CDS, c)
			s.Ack(CDS, s.AwaitResource(CDS, c))
			s.Set(EDS, "a", 2)
			s.AwaitRevision(EDS, a, 2)
			// The check itself is the global DUP-1 invariant, applied to
			// every response above (and of every other scenario).
		}),
	},
}

// xds_protocol#knowing-when-a-requested-resource-does-not-exist
var missingScenarios = []*engine.Scenario{
	{
		ID:           "server/missing/delta-reported-removed",
		Title:        "Delta: subscribing to a resource that does not exist gets it in removed_resources",
		Requirements: []string{"DNE-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        []engine.Need{targets.NeedType(EDS)},
		Run: srv(func(s *S) {
			nope := s.Name("does-not-exist")
			s.Subscribe(EDS, nope)
			s.AwaitRemoved(EDS, nope)
		}),
	},
	{
		ID:           "server/missing/pushed-when-created",
		Title:        "A subscription to a missing resource is remembered and the resource pushed once created",
		Requirements: []string{"DNE-3"},
		Level:        results.Must,
		Variants:     allVariants,
		// It subscribes before the resource exists, so it must know the
		// name the server will serve.
		Needs: with(fx(EDS), targets.NeedChosenNames),
		Run: srv(func(s *S) {
			late, bar := s.Name("late"), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, late)
			if s.Variant.IsDelta() {
				s.Ack(EDS, s.AwaitRemoved(EDS, late)) // DNE-5
			}
			s.Barrier(EDS, bar) // the subscription to the missing name is in place
			s.Set(EDS, "late", 1)
			s.RequireResource(EDS, s.AwaitResource(EDS, late), late, 1)
		}),
	},
}

// xds_protocol#unsubscribing-from-resources
var unsubscribeScenarios = []*engine.Scenario{
	{
		ID:           "server/unsubscribe/no-updates-after",
		Title:        "After a resource is unsubscribed its changes are no longer sent",
		Requirements: []string{"UNSUB-2"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, b, bar := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a, b)
			s.AwaitAll(EDS, a, b)
			s.Unsubscribe(EDS, b)
			s.Barrier(EDS, bar)
			s.Set(EDS, "b", 2)
			s.ExpectNoneCarrying("b was unsubscribed", EDS, b)
		}),
	},
	{
		ID:           "server/unsubscribe/phantom-harmless",
		Title:        "Delta: unsubscribing a name never subscribed changes nothing",
		Requirements: []string{"UNSUB-4"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, bar := s.Set(EDS, "a", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Unsubscribe(EDS, s.Name("never-subscribed"))
			s.Barrier(EDS, bar)
			s.Set(EDS, "a", 2)
			// The stream stays open: the new revision arrives on it.
			s.AwaitRevision(EDS, a, 2)
		}),
	},
}
