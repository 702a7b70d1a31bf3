package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Dynamic parameters (xRFC TP2): a server holds variants of a resource,
// each with DynamicParameterConstraints, and serves a subscription the
// variant its dynamic parameters match.

// The constraints of the two variants most scenarios set: env=prod and
// env=test, at revisions 1 and 2.
var (
	envProd = wire.Exact("env", "prod")
	envTest = wire.Exact("env", "test")
)

// params is a set of dynamic parameters, as a locator carries them.
type params = map[string]string

// SetVariant creates or replaces the variant of resource base (made unique
// to the pair) that has constraints c, at revision rev, and returns the
// name the server serves.
func (s *S) SetVariant(t wire.Type, base string, rev int, c *discovery.DynamicParameterConstraints) string {
	name := s.Name(base)
	r := fixture.SetRequest{Type: t, Name: name, Resource: wire.BuildAny(t, name, rev), Constraints: c}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	served, err := s.target.Fixture.SetWith(ctx, s.NodeID, r)
	if err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, false)
	s.record(t, name, rev, served)
	return served.Name
}

// DeleteVariant deletes the variant of the served resource name that has
// constraints c.
func (s *S) DeleteVariant(t wire.Type, name string, c *discovery.DynamicParameterConstraints) {
	ctx, cancel := s.fixtureContext()
	defer cancel()
	if err := s.target.Fixture.DeleteWith(ctx, s.NodeID, fixture.DeleteRequest{Type: t, Name: name, Constraints: c}); err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, true)
}

// SubscribeLocator subscribes name of type t by resource locator, with
// dynamic parameters p.
func (s *S) SubscribeLocator(t wire.Type, name string, p params) {
	s.expecting(t, s.subscribeRule(t, []string{name}))
	s.must(t, s.C.SubscribeLocators(t, fakeclient.Locator(name, p)))
}

// prodAndTest sets the two variants of EDS a, env=prod at revision 1 and
// env=test at revision 2, and returns its served name.
func (s *S) prodAndTest() string {
	a := s.SetVariant(EDS, "a", 1, envProd)
	s.SetVariant(EDS, "a", 2, envTest)
	return a
}

// requireVariant fails unless r carries name at revision rev with
// constraints want in its resource_name (DYN-3).
func (s *S) requireVariant(t wire.Type, r *fakeclient.Response, name string, rev int, want *discovery.DynamicParameterConstraints) {
	s.RequireResource(t, r, name, rev)
	got := r.ConstraintsOf(name)
	if wire.ConstraintsKey(got) != wire.ConstraintsKey(want) {
		s.Checking("DYN-3").Errorf("%s response (nonce %q) serves the variant of %q with constraints %s, but gives it constraints %s in resource_name",
			t.Short, r.Nonce, name, wire.ConstraintsString(want), wire.ConstraintsString(got))
	}
}

// paramWords renders dynamic parameters for a report, sorted.
func paramWords(p params) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(p)) {
		kv = append(kv, k+"="+p[k])
	}
	return "{" + strings.Join(kv, ", ") + "}"
}

// matchRow is one row of the DYN-7 table: the variants of a resource,
// each at its own revision (the first at 1, the next at 2, ...), the
// parameters a subscription carries, and the revision it must get.
type matchRow struct {
	why      string
	variants []*discovery.DynamicParameterConstraints
	params   params
	want     int
}

// canary and notCanary are a default variant for clients without the
// key and one for those with it (TP2 §Dynamic Parameters).
var (
	canary    = wire.Exists("canary")
	notCanary = wire.Not(wire.Exists("canary"))
	prodV2    = wire.And(envProd, wire.Exact("version", "v2"))
	testOrDev = wire.Or(envTest, wire.Exact("env", "dev"))
)

// matchTable is DYN-7 in rows: exact values, exists, not, and, or, and
// parameters the constraints do not mention. Each variant set appears
// with two parameter sets that pick different variants, so a server that
// serves one variant to everyone fails a row.
var matchTable = []matchRow{
	{"an exact value, with a parameter no constraint mentions", []*discovery.DynamicParameterConstraints{envProd, envTest}, params{"env": "test", "zone": "eu"}, 2},
	{"an exact value", []*discovery.DynamicParameterConstraints{envProd, envTest}, params{"env": "prod"}, 1},
	{"exists", []*discovery.DynamicParameterConstraints{canary, notCanary}, params{"canary": "any-value"}, 1},
	{"not exists, for a client without the key", []*discovery.DynamicParameterConstraints{canary, notCanary}, params{}, 2},
	{"and", []*discovery.DynamicParameterConstraints{prodV2, testOrDev}, params{"env": "prod", "version": "v2"}, 1},
	{"or", []*discovery.DynamicParameterConstraints{prodV2, testOrDev}, params{"env": "dev"}, 2},
}

// TP2 §Dynamic Parameters; DP DiscoveryRequest.resource_locators,
// DynamicParameterConstraints, Resource.resource_name,
// DeltaDiscoveryResponse.removed_resource_names.
var dynamicScenarios = []*engine.Scenario{
	{
		ID:           "server/dynamic/mixed-subscriptions",
		Title:        "One request subscribes one resource by name and another by locator with dynamic parameters; both are served",
		Requirements: []string{"DYN-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			foo := s.Set(EDS, "foo", 1)
			bar := s.SetVariant(EDS, "bar", 2, envProd)
			s.SetVariant(EDS, "bar", 3, envTest)
			// "It is legal for a request to have some resources listed
			// in resource_names and others in resource_locators."
			s.expecting(EDS, "DYN-2")
			s.subscribeMixed(EDS, foo, fakeclient.Locator(bar, params{"env": "prod"}))
			v := s.Checking("DYN-2")
			r := v.AwaitAll(EDS, foo, bar)
			if got := r.Get(bar); got != nil {
				if ok, why := s.isRevision(EDS, bar, 2, got); !ok {
					v.Errorf("%q subscribed with {env=prod} is not its env=prod variant (revision 2): %s", bar, why)
				}
			}
		}),
	},
	{
		ID:           "server/dynamic/variant-carries-constraints",
		Title:        "The variant served goes by resource_name, with its constraints, and not also by name",
		Requirements: []string{"DYN-3", "DYN-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			a := s.prodAndTest()
			s.SubscribeLocator(EDS, a, params{"env": "prod"})
			r := s.Checking("DYN-3").AwaitResource(EDS, a)
			if res := r.Find(a); res.NamedTwice {
				s.Checking("DYN-4").Errorf("%s response (nonce %q) sets both name and resource_name on %q", EDS.Short, r.Nonce, a)
			}
			s.Checking("DYN-3").requireVariant(EDS, r, a, 1, envProd)
		}),
	},
	{
		ID:    "server/dynamic/sotw-by-name-bare",
		Title: "SotW: a variant served to a client that subscribed by name, without locators or resource-in-sotw, comes bare, not in a Resource wrapper",
		// TTL-5: wrappers only for clients that can take them; a client
		// that subscribed by locator can (DYN-1), one by name alone
		// cannot. The variant matches a client without parameters.
		Requirements: []string{"TTL-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			a := s.SetVariant(EDS, "a", 1, wire.Not(wire.Exists("env")))
			s.Subscribe(EDS, a)
			r := s.precondition("DYN-7").AwaitResource(EDS, a)
			if r.Wrapped(a) {
				s.Checking("TTL-5").Errorf("%q comes wrapped in a Resource (response %q), but the client subscribed by name and did not advertise %s", a, r.Nonce, wire.FeatureResourceInSotW)
			}
		}),
	},
	{
		ID:           "server/dynamic/matching",
		Title:        "Each subscription gets the variant its dynamic parameters match: exact, exists, not, and, or, extra keys",
		Requirements: []string{"DYN-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			v := s.Checking("DYN-7")
			for i, row := range matchTable {
				base := fmt.Sprintf("m%d", i)
				var name string
				for j, c := range row.variants {
					name = s.SetVariant(EDS, base, j+1, c)
				}
				// A client of its own per row: a client sends the same
				// parameters with every subscription (DYN-11).
				rc := *v
				rc.C = s.Another()
				rc.SubscribeLocator(EDS, name, row.params)
				r := rc.AwaitResource(EDS, name)
				if ok, why := s.isRevision(EDS, name, row.want, r.Get(name)); !ok {
					v.Errorf("%s: subscribed with %s, %q must be the variant with constraints %s (revision %d), and is not (%s; it came with constraints %s)",
						row.why, paramWords(row.params), name, wire.ConstraintsString(row.variants[row.want-1]), row.want, why, wire.ConstraintsString(r.ConstraintsOf(name)))
				}
			}
		}),
	},
	{
		ID:           "server/dynamic/no-match-is-missing",
		Title:        "A subscription no variant matches is answered as for a resource that does not exist",
		Requirements: []string{"DYN-8"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(CDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			// Clusters, subscribed together with an existing one, b: the
			// SotW response that carries b is the full state (GRP-1), so
			// a missing from it is missing; delta reports a in
			// removed_resources (DNE-5).
			b := s.Set(CDS, "b", 1)
			a := s.SetVariant(CDS, "a", 1, envProd)
			s.SetVariant(CDS, "a", 2, envTest)
			s.subscribeMixed(CDS, b, fakeclient.Locator(a, params{"env": "qa"}))
			v := s.Checking("DYN-8")
			served := func(r *fakeclient.Response) {
				if r.Has(a) {
					v.Fatalf("%q was subscribed with {env=qa}, which neither env=prod nor env=test matches, yet response %q serves it (constraints %s)", a, r.Nonce, wire.ConstraintsString(r.ConstraintsOf(a)))
				}
			}
			r := v.AwaitRevisionChecking(CDS, b, 1, served)
			if s.Variant.IsDelta() && !r.HasRemoved(a) {
				s.Ack(CDS, r)
				v.awaitWhere(CDS, fmt.Sprintf("a Cluster response listing %q, which no variant matches, as removed (DNE-5)", a), func(r *fakeclient.Response) bool {
					served(r)
					return r.HasRemoved(a)
				})
			}
		}),
	},
	{
		ID:           "server/dynamic/variant-removal",
		Title:        "Deleting another variant leaves the client's alone; deleting its own is a removal by resource name and constraints",
		Requirements: []string{"DYN-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			a := s.prodAndTest()
			s.SubscribeLocator(EDS, a, params{"env": "prod"})
			s.Ack(EDS, s.AwaitRevision(EDS, a, 1))
			v := s.Checking("DYN-5")
			s.DeleteVariant(EDS, a, envTest)
			v.QuietCarrying("only the env=test variant was deleted; the client holds env=prod", EDS, a)
			s.DeleteVariant(EDS, a, envProd)
			r := v.AwaitRemoved(EDS, a)
			got := r.RemovedVariant(a)
			if got == nil {
				v.Fatalf("response %q removes %q, which was sent with constraints, in removed_resources (%q) instead of removed_resource_names", r.Nonce, a, r.Removed)
			}
			if wire.ConstraintsKey(got.GetDynamicParameterConstraints()) != wire.ConstraintsKey(envProd) {
				v.Errorf("response %q removes %q with constraints %s; the variant the client holds has %s", r.Nonce, a, wire.ConstraintsString(got.GetDynamicParameterConstraints()), wire.ConstraintsString(envProd))
			}
		}),
	},
	{
		ID:           "server/dynamic/atomic-variant-change",
		Title:        "Splitting a variant: the old one's removal and its replacement come in one response",
		Requirements: []string{"DYN-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters, targets.NeedBatch),
		Run: ServerScript(func(s *S) {
			a := s.SetVariant(EDS, "a", 1, envProd)
			// The client already sends version, which env=prod does not
			// constrain (DYN-7), so it holds env=prod until the split.
			s.SubscribeLocator(EDS, a, params{"env": "prod", "version": "v1"})
			s.Ack(EDS, s.AwaitRevision(EDS, a, 1))
			v1, v2 := wire.And(envProd, wire.Exact("version", "v1")), wire.And(envProd, wire.Exact("version", "v2"))
			s.applyVariants(EDS,
				fixture.DeleteRequest{Type: EDS, Name: a, Constraints: envProd},
				variantSet{"a", 2, v1}, variantSet{"a", 3, v2})
			v := s.Checking("DYN-6")
			r := v.AwaitRevisionChecking(EDS, a, 2, func(r *fakeclient.Response) {
				if r.HasRemoved(a) && !r.Has(a) {
					v.Fatalf("response %q removes %q (%s) without its replacement: the split of a variant is one change, sent in one response", r.Nonce, a, wire.ConstraintsString(r.RemovedVariant(a).GetDynamicParameterConstraints()))
				}
			})
			s.requireVariant(EDS, r, a, 2, v1)
			if got := r.RemovedVariant(a); got == nil || wire.ConstraintsKey(got.GetDynamicParameterConstraints()) != wire.ConstraintsKey(envProd) {
				v.Errorf("response %q brings the env=prod,version=v1 variant of %q but does not remove the env=prod variant it replaces (removed_resource_names %v)", r.Nonce, a, r.RemovedNames)
			}
		}),
	},
	{
		ID:    "server/dynamic/locator-unsubscribed",
		Title: "A subscription made through a locator ends with that locator: its variant's updates stop",
		// LOC-1 (added): delta resource_locators_unsubscribe, SotW a
		// request leaving the locator out.
		Requirements: []string{"LOC-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			a := s.prodAndTest()
			bar := s.Set(EDS, "barrier", 1)
			prod := params{"env": "prod"}
			s.SubscribeLocator(EDS, a, prod)
			s.Ack(EDS, s.AwaitRevision(EDS, a, 1))
			s.must(EDS, s.C.UnsubscribeLocators(EDS, fakeclient.Locator(a, prod)))
			// Answered after the unsubscription: the server has read it.
			s.Barrier(EDS, bar)
			s.SetVariant(EDS, "a", 3, envProd)
			s.Checking("LOC-1").NeverCarrying(a+" was unsubscribed through the locator it was subscribed with", EDS, a)
		}),
	},
	{
		ID:    "server/dynamic/parameters-changed",
		Title: "A subscription whose dynamic parameters change gets the variant the new ones match: the locator again with others, or the name without any",
		// DYN-7: the variant served is the one whose constraints the
		// subscription's parameters match; a name subscribed by
		// resource_names has none (DYN-2), so a variant for clients
		// without the key matches it. A SotW request that restates the
		// same names with other parameters changes the subscription all
		// the same (RES-1: every request restates it whole).
		Requirements: []string{"DYN-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedDynamicParameters),
		Run: ServerScript(func(s *S) {
			v := s.Checking("DYN-7")
			for i, row := range []struct {
				why    string
				change func(s *S, name string)
			}{
				{"its locator without the key", func(s *S, name string) { s.SubscribeLocator(EDS, name, params{}) }},
				{"resource_names instead of its locator", func(s *S, name string) { s.subscribeByName(EDS, name) }},
			} {
				name := s.SetVariant(EDS, fmt.Sprintf("p%d", i), 1, canary)
				s.SetVariant(EDS, fmt.Sprintf("p%d", i), 2, notCanary)
				// A client of its own per row (DYN-11: a client's
				// parameters are its own).
				rc := *s
				rc.C = s.Another()
				rc.SubscribeLocator(EDS, name, params{"canary": "yes"})
				rc.Ack(EDS, rc.AwaitRevision(EDS, name, 1))
				row.change(&rc, name)
				vc := *v
				vc.C = rc.C
				r := vc.awaitWhere(EDS, fmt.Sprintf("%s, after a request naming it by %s, as its %s variant (revision 2)", name, row.why, wire.ConstraintsString(notCanary)), func(r *fakeclient.Response) bool {
					got := r.Get(name)
					if got == nil {
						return false
					}
					ok, _ := s.isRevision(EDS, name, 2, got)
					return ok
				})
				rc.Ack(EDS, r)
			}
		}),
	},
}

// subscribeByName subscribes name of type t by resource_names alone: in
// delta resource_names_subscribe; in SotW a request restating the names
// with name among them and its locator left out.
func (s *S) subscribeByName(t wire.Type, name string) {
	s.expecting(t, s.subscribeRule(t, []string{name}))
	if s.Variant.IsDelta() {
		req := s.C.DeltaRequest(t)
		req.ResourceNamesSubscribe = []string{name}
		s.must(t, s.C.SendDelta(t, req))
		return
	}
	names := s.C.Names(t)
	if !slices.Contains(names, name) {
		names = append(names, name)
	}
	req := s.C.SotWRequest(t, names)
	req.ResourceLocators = slices.DeleteFunc(req.ResourceLocators, func(l *discovery.ResourceLocator) bool { return l.GetName() == name })
	s.must(t, s.C.SendSotW(t, req))
}

// subscribeMixed sends one request that subscribes name of type t by
// resource_names and loc by resource_locators ("It is legal for a request
// to have some resources listed in resource_names and others in
// resource_locators", DYN-2).
func (s *S) subscribeMixed(t wire.Type, name string, loc *discovery.ResourceLocator) {
	locs := []*discovery.ResourceLocator{loc}
	if s.Variant.IsDelta() {
		req := s.C.DeltaRequest(t)
		req.ResourceNamesSubscribe = []string{name}
		req.ResourceLocatorsSubscribe = locs
		s.must(t, s.C.SendDelta(t, req))
		return
	}
	req := s.C.SotWRequest(t, []string{name})
	req.ResourceLocators = locs
	s.must(t, s.C.SendSotW(t, req))
}

// variantSet is a variant to set in a batch (applyVariants).
type variantSet struct {
	base        string
	rev         int
	constraints *discovery.DynamicParameterConstraints
}

// applyVariants deletes dels and sets sets, in one fixture batch (feature
// "batch"), so the server sees one change.
func (s *S) applyVariants(t wire.Type, del fixture.DeleteRequest, sets ...variantSet) {
	changes := []fixture.Change{{Delete: &del}}
	for _, v := range sets {
		name := s.Name(v.base)
		changes = append(changes, fixture.SetChange(fixture.SetRequest{Type: t, Name: name, Resource: wire.BuildAny(t, name, v.rev), Constraints: v.constraints}))
	}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	served, err := s.target.Fixture.Apply(ctx, s.NodeID, changes)
	if err != nil {
		s.Abortf("%v", err)
	}
	s.changed(t, false)
	for i, v := range sets {
		s.record(t, s.Name(v.base), v.rev, served[i])
	}
}
