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

// subscriptionKind is how the client of a table-driven scenario holds the
// resources the scenario is about: by name, or through a (legacy)
// wildcard. Deletion and full state are checked in both, since a server
// may treat them in different code paths.
type subscriptionKind struct {
	name  string // in scenario IDs
	words string // in titles
	needs []engine.Need
	// keeps is the rule by which a deleted resource re-created later
	// reaches the client again: the subscription to a name outlives its
	// resource (DNE-3), a wildcard covers whatever exists (WILD-2).
	keeps string
	// subscribe subscribes to every one of names of t (which exist) and
	// collects what the server sends for them.
	subscribe func(s *S, t wire.Type, names ...string)
}

var subscriptionKinds = []subscriptionKind{
	{"named", "subscribed by name", nil, "DNE-3", func(s *S, t wire.Type, names ...string) {
		s.Subscribe(t, names...)
		s.AwaitAll(t, names...)
	}},
	{"wildcard", "under a wildcard", []engine.Need{targets.NeedLegacyWildcard}, "WILD-2", func(s *S, t wire.Type, names ...string) {
		s.Wildcard(t)
		s.wildcardSet(t, names...)
	}},
}

// deletionScenarios generate, for each subscription kind, how a deletion
// reaches the client: by omission from the next full state in SotW
// (DEL-7, for Listener and Cluster, the only types whose SotW responses
// are full states), in removed_resources in delta (DEL-1, every type).
func deletionFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range subscriptionKinds {
		out = append(out, &engine.Scenario{
			ID:           "server/deletion/sotw-" + k.name + "-omitted",
			Title:        fmt.Sprintf("SotW: a deleted listener or cluster %s is left out of the next full state, under a new version, the rest kept, and comes back re-created as it was", k.words),
			Requirements: []string{"DEL-7", "GRP-1", "VER-1", k.keeps},
			Level:        results.Must,
			Variants:     sotw,
			Needs:        with(Fixture(), k.needs...),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(wildcardTypes...) {
					a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
					k.subscribe(s, t, a, b)
					held := s.C.AckedVersion(t)
					s.Delete(t, b)
					// Other pairs' changes on a shared server push full
					// states to a wildcard stream too, some produced
					// before the deletion: wait for the one without b,
					// checking that a stays in every one.
					full := s.Checking("GRP-1")
					gone := s.Checking("DEL-7").awaitWhere(t, fmt.Sprintf("%s response without %q", wording.A(t.Short), b), func(r *fakeclient.Response) bool {
						require.True(full, r.Has(a), "%s response (nonce %q) dropped %q, which was not deleted", t.Short, r.Nonce, a)
						return !r.Has(b)
					})
					// A deletion is a change of the type (VER-1): the full
					// state without b is not the one the client holds.
					if gone.Version == held {
						s.Checking("VER-1").Errorf("%s response (nonce %q) leaves out the deleted %q under version_info %q, the version of the full state the client holds with it", t.Short, gone.Nonce, b, held)
					}
					s.Ack(t, gone)
					// Re-created as it was: what the server sent before the
					// deletion is no copy the client still holds.
					s.Set(t, "b", 1)
					s.Checking(k.keeps).AwaitRevision(t, b, 1)
				}
			}),
		}, &engine.Scenario{
			ID:           "server/deletion/delta-" + k.name + "-removed",
			Title:        fmt.Sprintf("Delta: deleting a resource %s lists it in removed_resources, once; re-created, it is pushed again", k.words),
			Requirements: []string{"DEL-1", k.keeps, "UPD-1"},
			Level:        results.Must,
			Variants:     delta,
			Needs:        with(Fixture(), k.needs...),
			Run: ServerScript(func(s *S) {
				types := s.Types() // every type can be deleted by name
				if k.name == "wildcard" {
					types = s.TypesOf(wildcardTypes...)
				}
				for _, t := range types {
					a, gone := s.Set(t, "a", 1), s.Set(t, "gone", 1)
					k.subscribe(s, t, a, gone)
					// On ADS, the ACK of what was sent and a request after it
					// are taken in before the deletion: a server that
					// forgets, at a later request, what the client holds
					// outside its explicit names no longer knows to report
					// it. (On a per-type stream a request of t would rest on
					// DELTA-3, which a wildcard stream cannot do without.)
					s.adsBarrier(t)
					s.Delete(t, gone)
					s.Ack(t, s.Checking("DEL-1").AwaitRemoved(t, gone))
					// Reported once: the next change, of a, does not
					// report it again (nothing changed for it since).
					s.forbidOn(s.C, fakeclient.Watch{Rule: "UPD-1", Why: fmt.Sprintf("%s %s was reported removed already and not re-created since", t.Short, gone), Types: []wire.Type{t},
						Match: func(r *fakeclient.Response) bool { return r.HasRemoved(gone) }})
					s.pushed(t, "a", a, 2)
					s.Set(t, "gone", 2)
					// ACKed: the next type's barrier may be of this type, and
					// a server may hold a response until the one before it is
					// answered (Consul does).
					s.Ack(t, s.Checking(k.keeps).AwaitRevision(t, gone, 2))
				}
			}),
		}, &engine.Scenario{
			ID:           "server/grouping/full-state-" + k.name,
			Title:        fmt.Sprintf("SotW: after one listener or cluster %s changes, the response still carries all of them", k.words),
			Requirements: []string{"GRP-1"},
			Level:        results.Must,
			Variants:     sotw,
			Needs:        with(Fixture(), k.needs...),
			Run: ServerScript(func(s *S) {
				for _, t := range s.TypesOf(wildcardTypes...) {
					a, b, c := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "c", 1)
					k.subscribe(s, t, a, b, c)
					s.Set(t, "b", 2)
					// Every full-state response holds all three, the one
					// with b's change and any other pair's push before it
					// (a shared server sends those to wildcard streams too).
					full := s.Checking("GRP-1")
					s.AwaitRevisionChecking(t, b, 2, func(r *fakeclient.Response) { full.RequireOwnExactly(r, a, b, c) })
				}
			}),
		})
	}
	return out
}

// xds_protocol#deleting-resources, #grouping-resources-into-responses, #duplicate-resource-names
var deletionScenarios = append(deletionFamily(), []*engine.Scenario{
	{
		ID:           "server/grouping/replaced-whole",
		Title:        "An update replaces the whole resource: nothing of the previous revision is merged into it",
		Requirements: []string{"GRP-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(EDS, CDS) {
				a := s.Set(t, "a", 1)
				s.Subscribe(t, a)
				s.ExpectAcked(t)
				s.Set(t, "a", 2)
				// AwaitRevision compares whole messages: revision 2 with
				// anything of revision 1 left in it is not revision 2.
				s.Checking("GRP-4").AwaitRevision(t, a, 2)
			}
		}),
	},
	{
		ID:           "server/grouping/partial-other-types",
		Title:        "SotW: a push of endpoints or routes may carry only what changed",
		Requirements: []string{"GRP-2"},
		Level:        results.May,
		Variants:     sotw,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(RDS, EDS) {
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				s.Subscribe(t, a, b)
				s.AwaitAll(t, a, b)
				s.Checking("GRP-2").NeverCarrying("only a changed: b need not be sent again", t, b)
				s.Set(t, "a", 2)
				s.AwaitRevision(t, a, 2)
			}
		}),
	},
	{
		ID:           "server/duplicates/no-duplicate-names",
		Title:        "No response carries two resources with the same name",
		Requirements: []string{"DUP-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(EDS, CDS),
		Run: ServerScript(func(s *S) {
			unique := func(r *fakeclient.Response) {
				names := r.Names()
				slices.Sort(names)
				require.Equal(s.Checking("DUP-1"), slices.Compact(slices.Clone(names)), names, "response %q names a resource twice", r.Nonce)
			}
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			c := s.Set(CDS, "c", 1)
			s.Subscribe(EDS, a, b)
			unique(s.AwaitAll(EDS, a, b))
			s.Subscribe(CDS, c)
			r := s.AwaitResource(CDS, c)
			unique(r)
			s.Ack(CDS, r)
			s.Set(EDS, "a", 2)
			s.AwaitRevisionChecking(EDS, a, 2, unique)
		}),
	},
}...)

// xds_protocol#knowing-when-a-requested-resource-does-not-exist
var missingScenarios = append([]*engine.Scenario{
	{
		ID:           "server/missing/delta-reported-removed",
		Title:        "Delta: subscribing to a resource that does not exist gets it in removed_resources",
		Requirements: []string{"DNE-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        []engine.Need{targets.NeedType(EDS)},
		Run: ServerScript(func(s *S) {
			nope := s.Name("does-not-exist")
			s.Subscribe(EDS, nope)
			s.Checking("DNE-5").AwaitRemoved(EDS, nope)
		}),
	},
}, missingFamily()...)

// xds_protocol#unsubscribing-from-resources
var unsubscribeScenarios = append(slices.Concat(unsubscribeFamily(), unsubscribeListFamily()), []*engine.Scenario{
	{
		ID:           "server/unsubscribe/phantom-harmless",
		Title:        "Delta: unsubscribing a name never subscribed changes nothing",
		Requirements: []string{"UNSUB-4"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, bar := s.Set(EDS, "a", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			v := s.Checking("UNSUB-4")
			v.Unsubscribe(EDS, s.Name("never-subscribed"))
			s.EndingBreaks(EDS, "UNSUB-4")
			v.Barrier(EDS, bar)
			v.Set(EDS, "a", 2)
			// The stream stays open: the new revision arrives on it.
			v.AwaitRevision(EDS, a, 2)
		}),
	},
}...)

// heldBarrier makes sure the server took in every request sent so far on
// the stream of t, on which the client holds bar already (a wildcard
// delivered it), before the scenario changes server state. On ADS it
// subscribes to a fresh resource of another type, whose answer rests on
// RES-2 or DELTA-3 for a name never subscribed; on a per-type stream only a
// request of t can show it, and Barrier's answer then rests on DELTA-3's
// resend of what the client holds.
func (s *S) heldBarrier(t wire.Type, bar string) {
	if !s.adsBarrier(t) {
		s.Barrier(t, bar)
	}
}

// adsBarrier is heldBarrier where the barrier only makes a step see more,
// never decides it: on a per-type stream it does nothing (false).
func (s *S) adsBarrier(t wire.Type) bool {
	if !s.Variant.IsADS() {
		return false
	}
	other := EDS
	if t.URL == EDS.URL {
		other = CDS
	}
	s.Barrier(other, s.Set(other, "barrier-for-"+strings.ToLower(t.Short), 1))
	return true
}
