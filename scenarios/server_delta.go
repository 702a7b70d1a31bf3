package scenarios

import (
	"fmt"
	"slices"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#incremental-xds
var deltaScenarios = append([]*engine.Scenario{
	{
		ID:           "server/delta/subscribe-always-resends",
		Title:        "Delta: subscribing again to a resource the client has resends it",
		Requirements: []string{"DELTA-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Subscribe(EDS, a)
			s.Checking("DELTA-3").AwaitRevision(EDS, a, 1)
		}),
	},
	{
		ID:           "server/delta/resubscribe-resends",
		Title:        "Delta: a resource unsubscribed and subscribed again is sent again",
		Requirements: []string{"DELTA-3", "RES-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Unsubscribe(EDS, a)
			s.Subscribe(EDS, a)
			s.Checking("DELTA-3").AwaitRevision(EDS, a, 1)
		}),
	},
	{
		ID:           "server/delta/empty-ack-keeps-subscriptions",
		Title:        "Delta: ACKs with empty lists change nothing; tracked resources keep being updated",
		Requirements: []string{"DELTA-2", "DELTA-4"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b, bar := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1), s.Set(EDS, "barrier", 1)
			s.Subscribe(EDS, a, b)
			r := s.AwaitAll(EDS, a, b) // ACKed with empty lists
			s.Ack(EDS, r)
			s.Barrier(EDS, bar) // the empty ACKs have been processed
			v := s.Checking("DELTA-2")
			s.Set(EDS, "a", 2)
			s.Ack(EDS, v.AwaitRevision(EDS, a, 2))
			s.Set(EDS, "b", 2)
			v.AwaitRevision(EDS, b, 2)
		}),
	},
	{
		ID:           "server/delta/push-only-changed",
		Title:        "Delta: a push after one resource changed carries that resource, not the unchanged ones",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a, b)
			s.AwaitAll(EDS, a, b)
			s.NeverCarrying("only a changed: b must not be sent again", EDS, b)
			s.Set(EDS, "a", 2)
			s.AwaitRevision(EDS, a, 2)
		}),
	},
	{
		ID:           "server/delta/reconnect-changed-resent",
		Title:        "Delta reconnect: a resource whose version differs from initial_resource_versions is sent",
		Requirements: []string{"DELTA-3", "DELTA-8"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			_, b := s.reconnectWhileBChanges()
			s.Checking("DELTA-3").AwaitRevision(EDS, b, 2)
		}),
	},
	{
		ID:           "server/delta/reconnect-unchanged-not-resent",
		Title:        "Delta reconnect: resources listed at their current version are not sent again",
		Requirements: []string{"DELTA-8"},
		Level:        results.May,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.reconnectWhileBChanges()
			const why = "a is listed in initial_resource_versions at its current version"
			s.NeverCarrying(why, EDS, a)
			s.AwaitRevision(EDS, b, 2)
		}),
	},
	{
		ID:           "server/delta/reconnect-deleted-reported",
		Title:        "Delta reconnect: a wildcard resource listed in initial_resource_versions but deleted is reported removed",
		Requirements: []string{"DELTA-8"},
		Level:        results.May,
		Variants:     delta,
		Needs:        with(Fixture(CDS), targets.NeedLegacyWildcard),
		Run: ServerScript(func(s *S) {
			a, gone := s.Set(CDS, "a", 1), s.Set(CDS, "gone", 1)
			s.Wildcard(CDS)
			s.AwaitAll(CDS, a, gone)
			known := s.C.Known(CDS)
			s.C.Reconnect(CDS)
			s.Delete(CDS, gone)
			s.resubscribe(CDS, known) // legacy wildcard again, with what the client knows
			s.Checking("DELTA-8").AwaitRemoved(CDS, gone)
		}),
	},
	{
		ID:           "server/reconnect/sotw-new-names-after-reconnect",
		Title:        "SotW reconnect at the current version: newly named resources are still sent",
		Requirements: []string{"RES-4", "VER-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.C.Reconnect(EDS)
			s.Subscribe(EDS, b) // new stream: node, last ACKed version, empty nonce, names {a, b}
			s.Checking("RES-4").AwaitRevision(EDS, b, 1)
		}),
	},
	{
		ID:           "server/delta/subscribe-by-alias",
		Title:        "Delta: a resource subscribed to by one of its aliases is sent, kept up to date, and dropped by the alias",
		Requirements: []string{"DELTA-10"},
		Level:        results.Should,
		Variants:     delta,
		Needs:        with(Fixture(VHDS), targets.NeedAliases),
		Run: ServerScript(func(s *S) {
			// VHDS is where aliases are used: <route configuration>/<domain>.
			alias := wire.VirtualHostName(s.Name("routes"), "www.example.com")
			vh := s.SetWith(VHDS, "vh", 1, fixture.SetRequest{Aliases: []string{alias}})
			bar := s.Set(VHDS, "barrier", 1)
			v := s.Checking("DELTA-10")
			s.Subscribe(VHDS, alias)
			r := v.AwaitRevision(VHDS, vh, 1)
			require.Contains(v, r.AliasesOf(vh), alias, "the response names the resource and lists its aliases")
			s.Ack(VHDS, r)
			s.SetWith(VHDS, "vh", 2, fixture.SetRequest{Aliases: []string{alias}})
			s.Ack(VHDS, v.AwaitRevision(VHDS, vh, 2))
			s.Unsubscribe(VHDS, alias)
			s.Barrier(VHDS, bar)
			v.NeverCarrying("the client unsubscribed the alias", VHDS, vh)
			s.SetWith(VHDS, "vh", 3, fixture.SetRequest{Aliases: []string{alias}})
		}),
	},
}, slices.Concat(reconnectFamily(), reconnectHeldFamily())...)

// reconnectHeldFamily generates, for each subscription kind, a delta
// reconnect whose first request lists in initial_resource_versions what
// the client holds, all at the current version. A server may skip those
// (DELTA-8), but they are still what the client holds: a deletion of one
// is reported (DEL-1). A server that takes the list only to decide what to
// skip, and forgets it then, no longer knows the client holds them.
func reconnectHeldFamily() []*engine.Scenario {
	var out []*engine.Scenario
	for _, k := range subscriptionKinds {
		out = append(out, &engine.Scenario{
			ID:           "server/reconnect/delta-" + k.name + "-held-tracked",
			Title:        fmt.Sprintf("Delta reconnect: resources %s that initial_resource_versions lists at their current version need not be sent again, and a deletion of one is reported", k.words),
			Requirements: []string{"DEL-1", "DELTA-8"},
			Level:        results.Must,
			Variants:     delta,
			Needs:        with(Fixture(), k.needs...),
			Run: ServerScript(func(s *S) {
				types := s.TypesOf(namedTypes...)
				if k.name == "wildcard" {
					types = s.TypesOf(wildcardTypes...)
				}
				for _, t := range types {
					a, gone := s.Set(t, "a", 1), s.Set(t, "gone", 1)
					k.subscribe(s, t, a, gone)
					known := s.C.Known(t)
					s.C.Reconnect(t)
					var names []string // a legacy wildcard again
					if k.name == "named" {
						names = []string{a, gone}
					}
					s.resubscribe(t, known, names...)
					s.Checking("DELTA-8").NeverCarrying(fmt.Sprintf("%s %s is listed in initial_resource_versions at its current version", t.Short, a), t, a)
					// On ADS the first request is taken in before the
					// deletion; on a per-type stream either order passes a
					// correct server (a deletion before it is the first
					// answer's, DELTA-8).
					s.adsBarrier(t)
					s.Delete(t, gone)
					s.Ack(t, s.Checking("DEL-1").AwaitRemoved(t, gone))
				}
			}),
		})
	}
	return out
}

// reconnectWhileBChanges subscribes EDS a and b, reconnects, moves b to
// revision 2 while the client is away, and resubscribes both with the
// versions the client holds: a is current, b is not.
func (s *S) reconnectWhileBChanges() (a, b string) {
	a, b = s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
	s.Subscribe(EDS, a, b)
	s.AwaitAll(EDS, a, b)
	known := s.C.Known(EDS)
	s.C.Reconnect(EDS)
	s.Set(EDS, "b", 2)
	s.resubscribe(EDS, known, a, b)
	return a, b
}

// resubscribe sends the first delta request of a reconnected stream: the
// names again, with the versions the client knows.
func (s *S) resubscribe(t wire.Type, known map[string]string, names ...string) {
	req := s.C.DeltaRequest(t)
	req.ResourceNamesSubscribe = names
	req.InitialResourceVersions = known
	s.expecting(t, "DELTA-3")
	s.must(t, s.C.SendDelta(t, req))
}
