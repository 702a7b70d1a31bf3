package scenarios

import (
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Per-resource errors (xRFC TP3): a server reports why it cannot provide
// a subscribed resource in resource_errors.

// SetError puts resource base (made unique to the pair) in error code
// through the fixture, and returns the name the server reports it under.
func (s *S) SetError(t wire.Type, base string, code codes.Code) string {
	return s.setErrorOn(t, s.Name(base), code)
}

// setErrorOn is SetError for a name used as written (an xdstp glob URL,
// say).
func (s *S) setErrorOn(t wire.Type, name string, code codes.Code) string {
	r := fixture.SetRequest{Type: t, Name: name, Error: &fixturepb.ResourceError{Code: int32(code), Message: "xdsconform: " + code.String() + " on purpose"}}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	served, err := s.target.Fixture.SetWith(ctx, s.NodeID, r)
	if err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, false)
	s.served[served.Name] = true
	return served.Name
}

// AwaitError reads responses of t until one reports an error for name,
// ACKing each one before it, and returns it. A server that claims
// resource errors but never reports one has not used ERR-1 (MAY), so a
// wait that ends without one is filed under it unless the step names
// another rule.
func (s *S) AwaitError(t wire.Type, name string) *fakeclient.Response {
	v := s.Checking(s.ruleOr("ERR-1"))
	return v.awaitWhere(t, fmt.Sprintf("%s response reporting an error for %q in resource_errors", wording.A(t.Short), name), func(r *fakeclient.Response) bool {
		return r.ErrorFor(name) != nil
	})
}

// TP3 §Protocol Behavior; DP DiscoveryResponse.resource_errors,
// DeltaDiscoveryResponse.resource_errors.
var errorScenarios = append(errorResubscribed(), []*engine.Scenario{
	{
		ID:           "server/errors/reported",
		Title:        "A subscribed resource the server cannot provide is reported in resource_errors with its status",
		Requirements: []string{"ERR-1"},
		Level:        results.May,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			b := s.SetError(EDS, "b", codes.PermissionDenied)
			s.Subscribe(EDS, a, b)
			r := s.AwaitError(EDS, b)
			e := r.ErrorFor(b)
			if got := codes.Code(e.GetErrorDetail().GetCode()); got != codes.PermissionDenied {
				s.Checking("ERR-1").Errorf("response %q reports %q with code %v; the server was told to refuse it with %v", r.Nonce, b, got, codes.PermissionDenied)
			}
		}),
	},
	{
		ID:    "server/errors/others-supplied",
		Title: "A request naming resources on either side of one in error gets each of them, whatever the order of the names",
		// RES-2: every requested resource that exists is supplied; one in
		// error, reported (ERR-1) or not, takes nothing from the others.
		// The names sort before and after it, so a server that stops at
		// the error in the order it writes the names is seen.
		Requirements: []string{"RES-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a, z := s.Set(EDS, "a", 1), s.Set(EDS, "z", 1)
			m := s.SetError(EDS, "m", codes.PermissionDenied)
			s.Subscribe(EDS, z, m, a)
			s.Checking("RES-2").AwaitAll(EDS, a, z)
		}),
	},
	{
		ID:           "server/errors/disjoint",
		Title:        "A resource that goes into error is reported in resource_errors and not also sent in resources",
		Requirements: []string{"ERR-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			s.Ack(EDS, s.AwaitRevision(EDS, a, 1))
			s.SetError(EDS, "a", codes.Unavailable)
			r := s.AwaitError(EDS, a)
			if r.Has(a) {
				s.Checking("ERR-2").Errorf("response %q carries %q both in resources and in resource_errors (%v)", r.Nonce, a, r.ErrorFor(a).GetErrorDetail())
			}
		}),
	},
	{
		ID:           "server/errors/full-state-kept",
		Title:        "SotW: a Cluster response reporting an error for one cluster still carries the others",
		Requirements: []string{"ERR-3"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(Fixture(CDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a, b)
			s.AwaitAll(CDS, a, b)
			s.SetError(CDS, "b", codes.PermissionDenied)
			v := s.Checking("ERR-3")
			// Every response on the way is a full state: an older client
			// that ignores resource_errors deletes what it lacks.
			v.awaitWhere(CDS, fmt.Sprintf("a Cluster response reporting an error for %q", b), func(r *fakeclient.Response) bool {
				if !r.Has(a) {
					v.Fatalf("Cluster response %q (version %q) lacks %q, which still exists: a client that ignores resource_errors (errors %q) deletes it", r.Nonce, r.Version, a, r.ErrorNames())
				}
				return r.ErrorFor(b) != nil
			})
		}),
	},
	{
		ID:           "server/errors/unchanged-error-not-pushed",
		Title:        "A change elsewhere makes no response of a type whose only news would be an error already reported",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS, EDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			b := s.SetError(CDS, "b", codes.PermissionDenied)
			s.Subscribe(CDS, a, b)
			s.Ack(CDS, s.AwaitError(CDS, b))
			// Endpoints nobody subscribed to: nothing of the clusters,
			// nor of b's error, changed.
			s.Set(EDS, "elsewhere", 1)
			s.Checking("UPD-1").Never("only an endpoints resource no one subscribed to was set; no cluster and no error changed", CDS)
		}),
	},
	{
		ID:           "server/errors/not-repeated",
		Title:        "An error already reported is not repeated with every later Cluster response: after an update, or a request adding a name",
		Requirements: []string{"ERR-4"},
		Level:        results.May,
		// Delta too: a server that does not note the error as held
		// pushes it again at every change of the type.
		Variants: allVariants,
		Needs:    with(Fixture(CDS), targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			b := s.SetError(CDS, "b", codes.PermissionDenied)
			s.Subscribe(CDS, a, b)
			s.Ack(CDS, s.AwaitError(CDS, b))
			for _, next := range []struct {
				what string
				make func() *fakeclient.Response
			}{
				{"an update of " + a, func() *fakeclient.Response { s.Set(CDS, "a", 2); return s.AwaitRevision(CDS, a, 2) }},
				// A request that restates b among its names changes the
				// subscription, not b's.
				{"a request adding a name", func() *fakeclient.Response {
					c := s.Set(CDS, "c", 1)
					s.Subscribe(CDS, c)
					return s.AwaitResource(CDS, c)
				}},
			} {
				r := next.make()
				if r.ErrorFor(b) != nil {
					// The client remembers the error (ERR-5); saying it
					// again is allowed, only not needed.
					s.Checking("ERR-4").Errorf("response %q, after %s, repeats the error for %q already reported", r.Nonce, next.what, b)
				}
				s.Ack(CDS, r)
			}
		}),
	},
}...)

// TP3 §Wildcard Subscriptions and Glob Collections: an error for a
// resource a wildcard or glob covers is named with the resource's name, an
// error for a glob collection as a whole with the glob's URL (ERR-11).
var errorWildcardScenarios = []*engine.Scenario{
	{
		ID:           "server/errors/glob-named",
		Title:        "An error for a glob collection as a whole is reported under the glob's URL",
		Requirements: []string{"ERR-11"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedGlobCollections, targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			s.SetX(LDS, s.XName(LDS, "pool/a").String(), 1)
			glob := s.setErrorOn(LDS, s.XName(LDS, "pool/*").String(), codes.PermissionDenied)
			s.Subscribe(LDS, glob)
			s.Checking("ERR-11").AwaitError(LDS, glob)
		}),
	},
	{
		ID:           "server/errors/wildcard-member-named",
		Title:        "An error for a resource a legacy wildcard subscription covers is named with the resource's own name",
		Requirements: []string{"ERR-11"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS), targets.NeedLegacyWildcard, targets.NeedResourceErrors),
		Run: ServerScript(func(s *S) {
			s.Set(CDS, "a", 1)
			b := s.SetError(CDS, "b", codes.PermissionDenied)
			s.Wildcard(CDS)
			v := s.Checking("ERR-11")
			var unnamed []string
			v.awaitExplaining(CDS, fmt.Sprintf("a Cluster response reporting an error for %q by its name", b), func(r *fakeclient.Response) bool {
				for _, e := range r.Errors {
					if n := e.GetResourceName().GetName(); n == "" || n == "*" {
						unnamed = append(unnamed, fmt.Sprintf("response %q reports %v under the name %q", r.Nonce, e.GetErrorDetail(), n))
					}
				}
				return r.ErrorFor(b) != nil
			}, func() string {
				if len(unnamed) > 0 {
					return fmt.Sprintf("a legacy wildcard has no name to report errors under, yet %s", unnamed[0])
				}
				return ""
			})
			if len(unnamed) > 0 {
				v.Errorf("a legacy wildcard has no name to report errors under, yet %s", unnamed[0])
			}
		}),
	},
}

// errorResubscription is one way of subscribing a resource, for the
// table of errorResubscribed: by name, or through a locator with dynamic
// parameters (a SotW server keeps those on a path of its own).
type errorResubscription struct {
	id, how     string
	needs       []engine.Need // beyond resource errors
	subscribe   func(s *S, name string)
	unsubscribe func(s *S, name string)
}

var errorResubscriptions = []errorResubscription{
	{"named", "by name", nil, func(s *S, n string) { s.Subscribe(EDS, n) }, func(s *S, n string) { s.Unsubscribe(EDS, n) }},
	{"located", "through a locator", []engine.Need{targets.NeedDynamicParameters},
		func(s *S, n string) { s.SubscribeLocator(EDS, n, params{"env": "prod"}) },
		func(s *S, n string) {
			s.must(EDS, s.C.UnsubscribeLocators(EDS, fakeclient.Locator(n, params{"env": "prod"})))
		}},
}

// errorResubscribed generates, for each way of subscribing, the scenario
// of a resource in error dropped and subscribed again: its error is
// reported again. ERR-4 lets a server say an error once because the
// client remembers it (ERR-5); a client that dropped the resource forgot
// it, and a name requested anew is answered (RES-4; delta DELTA-3), its
// answer being the error. Either another name stays subscribed, or the
// resource is the only one, so that on SotW its drop is an empty request
// (RES-6: after names, a subscription to nothing), a path of its own.
func errorResubscribed() []*engine.Scenario {
	var out []*engine.Scenario
	for _, w := range errorResubscriptions {
		for _, alone := range []bool{false, true} {
			needs := with(with(Fixture(EDS), targets.NeedResourceErrors), w.needs...)
			id, title := "server/errors/resubscribed-"+w.id, fmt.Sprintf("A resource in error, subscribed %s, dropped and subscribed again, has its error reported again", w.how)
			if alone {
				id, title = id+"-alone", fmt.Sprintf("A resource in error, the only one subscribed (%s), dropped and subscribed again, has its error reported again", w.how)
			}
			out = append(out, &engine.Scenario{
				ID:           id,
				Title:        title,
				Requirements: []string{"RES-4", "DELTA-3"},
				Level:        results.Must,
				Variants:     allVariants,
				Needs:        needs,
				Run: ServerScript(func(s *S) {
					// Otherwise b stays subscribed by name, so every
					// request names something.
					a := s.SetError(EDS, "a", codes.PermissionDenied)
					if !alone {
						b := s.Set(EDS, "b", 1)
						s.Subscribe(EDS, b)
						s.Ack(EDS, s.AwaitResource(EDS, b))
					}
					w.subscribe(s, a)
					s.Ack(EDS, s.precondition("ERR-1").AwaitError(EDS, a))
					w.unsubscribe(s, a)
					w.subscribe(s, a)
					s.Checking(s.subscribeRule(EDS, []string{a})).AwaitError(EDS, a)
				}),
			})
		}
	}
	return out
}
