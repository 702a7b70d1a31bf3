package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// The make-before-break scenarios play an Envoy on ADS: wildcard
// listeners and clusters, routes and endpoints by name, some asked for
// before they exist. The fixture applies a change as one batch (feature
// "batch"), and the scenario records in which order the responses that
// carry it arrive on the stream.

// consistencyNeeds are what the make-before-break scenarios need.
// They subscribe to names before they exist, so the server must serve the
// names the harness chooses.
var consistencyNeeds = with(Fixture(LDS, RDS, CDS, EDS), targets.NeedBatch, targets.NeedLegacyWildcard, targets.NeedChosenNames)

// event names one response the change must bring: the first response of
// its type that matches.
type event struct {
	name  string
	t     wire.Type
	match func(*fakeclient.Response) bool
}

// carries matches a response that carries name with exactly want.
func carriesExactly(name string, want proto.Message) func(*fakeclient.Response) bool {
	return func(r *fakeclient.Response) bool { return proto.Equal(r.Get(name), want) }
}

// lacks matches a response that no longer has name: a full state without
// it (SotW) or a removal (delta).
func lacks(name string) func(*fakeclient.Response) bool {
	return func(r *fakeclient.Response) bool {
		if r.Delta != nil {
			return r.HasRemoved(name)
		}
		return !r.Has(name)
	}
}

// arrivals reads every response of the events' types in arrival order,
// ACKing each, until each event has happened, and returns when each did
// (the response's sequence number).
func (s *S) arrivals(events ...event) map[string]int {
	seen := map[string]int{}
	types := map[string]wire.Type{}
	for _, e := range events {
		types[e.t.URL] = e.t
	}
	ts := slices.Collect(maps.Values(types))
	start := time.Now()
	deadline := start.Add(s.Timeouts.Expect)
	for read := 0; len(seen) < len(events); read++ {
		r, err := s.C.ExpectAnyWithin(time.Until(deadline), ts...)
		if err != nil {
			var missing []string
			var first wire.Type // the type of the first event missing, whose wait broke its rule
			for _, e := range events {
				if seen[e.name] == 0 {
					if missing == nil {
						first = e.t
					}
					missing = append(missing, e.name)
				}
			}
			s.failAs(s.awaitRule(first), err, "the change was not all delivered: no response for %q: %s", missing, waitEnded(err, "response", start, read))
		}
		for _, e := range events {
			if seen[e.name] == 0 && e.t.URL == r.TypeURL && e.match(r) {
				seen[e.name] = r.Seq
			}
		}
		t, _ := wire.TypeByURL(r.TypeURL)
		s.Ack(t, r)
	}
	return seen
}

// before fails rule unless event first arrived before then.
func (s *S) before(rule string, seen map[string]int, first, then string) {
	if seen[first] >= seen[then] {
		s.Checking(rule).Errorf("%s must come before %s: it came %s", first, then, order(seen[first], seen[then]))
	}
}

func order(a, b int) string {
	if a == b {
		return "in the same response"
	}
	return fmt.Sprintf("after it (response #%d, the other #%d)", a, b)
}

// xds_protocol#eventual-consistency-considerations
var consistencyScenarios = []*engine.Scenario{
	{
		ID:           "server/consistency/cluster-swap",
		Title:        "ADS: a route moved to a new cluster comes after the cluster and its endpoints, and the old cluster goes after it, each under a new version",
		Requirements: []string{"CONS-1", "CONS-2", "CONS-4", "CONS-6", "VER-1"},
		Level:        results.Should,
		Variants:     ads,
		Needs:        consistencyNeeds,
		Run: ServerScript(func(s *S) {
			x, y, r, l := s.Name("x"), s.Name("y"), s.Name("r"), s.Name("l")
			s.Apply(
				// z stays as it is throughout: the full states of the
				// swap carry it once each (DUP-1, checked on every
				// response).
				Change{Type: CDS, Base: "z", Message: wire.ClientCluster(s.Name("z"), 1)},
				Change{Type: CDS, Base: "x", Message: wire.ClientCluster(x, 1)},
				Change{Type: EDS, Base: "x", Message: wire.ClientEndpoints(x, 1)},
				Change{Type: RDS, Base: "r", Message: wire.ClientRoute(r, x, 1)},
				Change{Type: LDS, Base: "l", Message: wire.ClientListener(l, r, 1)},
			)
			// Routes and endpoints first, y before it exists: a server
			// that pushes in the order of subscription shows.
			s.Subscribe(RDS, r)
			s.Subscribe(EDS, x, y)
			s.Wildcard(LDS)
			s.Wildcard(CDS)
			s.arrivals(
				event{"the route", RDS, func(rr *fakeclient.Response) bool { return rr.Has(r) }},
				event{"x's endpoints", EDS, func(rr *fakeclient.Response) bool { return rr.Has(x) }},
				event{"the listener", LDS, func(rr *fakeclient.Response) bool { return rr.Has(l) }},
				event{"cluster x", CDS, func(rr *fakeclient.Response) bool { return rr.Has(x) }},
			)
			// A batch is a change of every type it touches (VER-1): on
			// SotW each response it brings carries a new version_info.
			held := map[string]string{CDS.URL: s.C.AckedVersion(CDS), RDS.URL: s.C.AckedVersion(RDS)}
			newVersion := func(match func(*fakeclient.Response) bool) func(*fakeclient.Response) bool {
				return func(rr *fakeclient.Response) bool {
					if !match(rr) {
						return false
					}
					if !s.Variant.IsDelta() && rr.Version == held[rr.TypeURL] {
						s.Checking("VER-1").Errorf("response %q brings the batch's change under version_info %q, the version the client already held", rr.Nonce, rr.Version)
					}
					return true
				}
			}
			s.Apply(
				Change{Type: CDS, Base: "y", Message: wire.ClientCluster(y, 1)},
				Change{Type: EDS, Base: "y", Message: wire.ClientEndpoints(y, 1)},
				Change{Type: RDS, Base: "r", Message: wire.ClientRoute(r, y, 2)},
				Change{Type: CDS, Base: x, Delete: true},
				Change{Type: EDS, Base: x, Delete: true},
			)
			seen := s.arrivals(
				event{"cluster y", CDS, newVersion(func(rr *fakeclient.Response) bool { return rr.Has(y) })},
				event{"y's endpoints", EDS, func(rr *fakeclient.Response) bool { return rr.Has(y) }},
				event{"the route to y", RDS, newVersion(carriesExactly(r, wire.ClientRoute(r, y, 2)))},
				event{"cluster x gone", CDS, lacks(x)},
			)
			s.before("CONS-1", seen, "cluster y", "the route to y")
			s.before("CONS-2", seen, "cluster y", "y's endpoints")
			s.before("CONS-4", seen, "y's endpoints", "the route to y")
			s.before("CONS-6", seen, "the route to y", "cluster x gone")
		}),
	},
	{
		ID:           "server/consistency/new-listener",
		Title:        "ADS: a new listener comes after the cluster and endpoints it uses, and its routes after it",
		Requirements: []string{"CONS-3", "CONS-4"},
		Level:        results.Should,
		Variants:     ads,
		Needs:        consistencyNeeds,
		Run: ServerScript(func(s *S) {
			z, r, l := s.Name("z"), s.Name("r"), s.Name("l")
			seed := s.Apply(
				Change{Type: CDS, Base: "seed", Rev: 1},
				Change{Type: LDS, Base: "seed", Rev: 1},
			)
			// Listeners asked for before endpoints and clusters: a server
			// that pushes in the order of the subscriptions shows.
			s.Subscribe(RDS, r)
			s.Wildcard(LDS)
			s.Subscribe(EDS, z)
			s.Wildcard(CDS)
			s.wildcardSet(LDS, seed[1])
			s.wildcardSet(CDS, seed[0])
			s.Apply(
				Change{Type: CDS, Base: "z", Message: wire.ClientCluster(z, 1)},
				Change{Type: EDS, Base: "z", Message: wire.ClientEndpoints(z, 1)},
				Change{Type: RDS, Base: "r", Message: wire.ClientRoute(r, z, 1)},
				Change{Type: LDS, Base: "l", Message: wire.ClientListener(l, r, 1)},
			)
			seen := s.arrivals(
				event{"cluster z", CDS, func(rr *fakeclient.Response) bool { return rr.Has(z) }},
				event{"z's endpoints", EDS, func(rr *fakeclient.Response) bool { return rr.Has(z) }},
				event{"the listener", LDS, func(rr *fakeclient.Response) bool { return rr.Has(l) }},
				event{"the route", RDS, func(rr *fakeclient.Response) bool { return rr.Has(r) }},
			)
			s.before("CONS-3", seen, "cluster z", "the listener")
			s.before("CONS-3", seen, "z's endpoints", "the listener")
			s.before("CONS-4", seen, "the listener", "the route")
			s.before("CONS-4", seen, "z's endpoints", "the route")
		}),
	},
	{
		ID:           "server/consistency/virtual-hosts-after-routes",
		Title:        "Delta ADS: new virtual hosts come after the route configuration they belong to",
		Requirements: []string{"CONS-5"},
		Level:        results.Should,
		Variants:     []wire.Variant{wire.DeltaADS},
		Needs:        with(Fixture(RDS, VHDS), targets.NeedBatch, targets.NeedChosenNames),
		Run: ServerScript(func(s *S) {
			r, vh, seed := s.Name("r"), s.Name("r/vh"), s.Set(RDS, "seed", 1)
			s.Subscribe(VHDS, vh) // neither exists yet
			s.Subscribe(RDS, r)
			s.Barrier(RDS, seed) // both subscriptions are in place
			s.Apply(
				Change{Type: RDS, Base: "r", Rev: 1},
				Change{Type: VHDS, Base: "r/vh", Rev: 1},
			)
			seen := s.arrivals(
				event{"the route configuration", RDS, func(rr *fakeclient.Response) bool { return rr.Has(r) }},
				event{"the virtual host", VHDS, func(rr *fakeclient.Response) bool { return rr.Has(vh) }},
			)
			s.before("CONS-5", seen, "the route configuration", "the virtual host")
		}),
	},
}
