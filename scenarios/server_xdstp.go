package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xAuthority is the authority of the xdstp names the scenarios set; the
// server is that authority's management server.
const xAuthority = "xdsconform.test"

// xOtherAuthority is a second authority of the same server, for the
// scenarios that put names of two authorities on one stream.
const xOtherAuthority = "other.xdsconform.test"

// xneeds are the needs of a scenario that sets and subscribes xdstp
// names of types: the names must be served as chosen (a server that
// generates names serves its own, not xdstp ones).
func xneeds(types ...wire.Type) []engine.Need {
	return with(Fixture(types...), targets.NeedChosenNames, targets.NeedXdstp)
}

// XName is the xdstp name of type t for this pair: authority xAuthority,
// id path made unique to the pair, and the context parameters given as
// key, value pairs. Its String is canonical (parameters sorted).
func (s *S) XName(t wire.Type, path string, params ...string) xdstp.Name {
	n := xdstp.Name{Authority: xAuthority, Type: strings.TrimPrefix(t.URL, xdstp.TypePrefix), ID: s.Name(path)}
	if len(params) > 0 {
		n.Params = map[string]string{}
		for i := 0; i+1 < len(params); i += 2 {
			n.Params[params[i]] = params[i+1]
		}
	}
	return n
}

// SetX sets revision rev of a resource of type t under the xdstp name
// name, exactly as written, and returns it.
func (s *S) SetX(t wire.Type, name string, rev int) string {
	return s.setX(fixture.SetRequest{Type: t, Name: name, Resource: wire.BuildAny(t, name, rev)}, rev)
}

// setX sets r (its Type and Name filled in) and notes it; rev is the
// revision its content is, 0 for a redirect.
func (s *S) setX(r fixture.SetRequest, rev int) string {
	ctx, cancel := s.fixtureContext()
	defer cancel()
	var served fixture.Served
	var err error
	if r.Redirect == "" {
		served, err = s.target.Fixture.Set(ctx, s.NodeID, r.Type, r.Name, r.Resource)
	} else {
		served, err = s.target.Fixture.SetWith(ctx, s.NodeID, r)
	}
	if err != nil {
		s.Abortf("%v", err)
	}
	s.changed(r.Type, false)
	if rev > 0 {
		s.record(r.Type, r.Name, rev, served)
	}
	s.served[served.Name] = true
	return served.Name
}

// checkDelivered checks every name r delivers as a resource against the
// rules for delivered names: the xdstp scheme, never udpa (XDSTP-1); the
// type segment of r's type (XDSTP-2); no context parameter in xds.*
// (XDSTP-6); a name, not a locator: no directive, no glob (XDSTP-10).
// Each failure is filed under its rule; it reports whether all held.
func (s *S) checkDelivered(r *fakeclient.Response) bool {
	ok := true
	bad := func(rule, format string, args ...any) {
		s.Checking(rule).Errorf(format, args...)
		ok = false
	}
	for _, name := range r.Names() {
		if strings.HasPrefix(name, "udpa:") {
			bad("XDSTP-1", "%s response (nonce %q) names a resource %q: the udpa:// scheme was renamed xdstp://", shortType(r.TypeURL), r.Nonce, name)
			continue
		}
		if !xdstp.Is(name) {
			continue
		}
		n, err := xdstp.Parse(name)
		if err != nil {
			bad("XDSTP-1", "%s response (nonce %q) names a resource %q, which is no xdstp name: %v", shortType(r.TypeURL), r.Nonce, name, err)
			continue
		}
		if n.TypeURL() != r.TypeURL {
			bad("XDSTP-2", "%s response (nonce %q) carries %q, whose type segment %q is not the response's type", shortType(r.TypeURL), r.Nonce, name, n.Type)
		}
		if keys := n.ReservedParams(); len(keys) > 0 {
			bad("XDSTP-6", "%s response (nonce %q) carries %q, with context parameters %q in the xds.* namespace reserved for clients", shortType(r.TypeURL), r.Nonce, name, keys)
		}
		if !n.IsURN() {
			bad("XDSTP-10", "%s response (nonce %q) carries %q: a delivered name has no directive and no glob", shortType(r.TypeURL), r.Nonce, name)
		}
	}
	return ok
}

// sameResource reports whether name has the authority, type and id of n,
// whatever its context parameters.
func sameResource(name string, n xdstp.Name) bool {
	got, err := xdstp.Parse(name)
	return err == nil && got.Authority == n.Authority && got.Type == n.Type && got.ID == n.ID
}

// AwaitX reads responses of t, checking the names each delivers
// (checkDelivered), until one carries the resource subscribed as sub,
// and returns it with the name it came under, which must be sub's:
// the same context parameters, in any order (XDSTP-4). A delta
// response reporting sub removed ends the wait: the server does not
// have what was set.
func (s *S) AwaitX(t wire.Type, sub string) (*fakeclient.Response, string) {
	want := xdstp.MustParse(sub)
	var got string
	r := s.awaitWhere(t, fmt.Sprintf("%s response carrying %s", wording.A(t.Short), sub), func(r *fakeclient.Response) bool {
		if !s.checkDelivered(r) {
			s.FailNow()
		}
		if r.HasRemoved(sub) {
			s.Fatalf("%s response (nonce %q) reports %q removed, but the fixture set it", t.Short, r.Nonce, sub)
		}
		for _, n := range r.Names() {
			if sameResource(n, want) {
				got = n
				return true
			}
		}
		return false
	})
	if !xdstp.Same(got, sub) {
		s.Checking("XDSTP-4").Fatalf("%s response (nonce %q) delivers %q as %q: the context parameters subscribed must be echoed", t.Short, r.Nonce, sub, got)
	}
	return r, got
}

// requireXRevision fails unless r carries, under name, revision rev of
// the resource set as set: the same content, its name aside, since the
// server names it as subscribed.
func (s *S) requireXRevision(t wire.Type, r *fakeclient.Response, name, set string, rev int) {
	got := r.Get(name)
	if fields, ok := s.revisions[revisionKey{t.URL, set, rev}]; ok {
		if why := revisionMismatch(got, fields); why != "" {
			s.Fatalf("%s %q is not revision %d of %q: %s", t.Short, name, rev, set, why)
		}
		return
	}
	a, err := anypb.New(got)
	if err == nil {
		a, err = wire.Renamed(a, set)
	}
	var m proto.Message
	if err == nil {
		m, err = a.UnmarshalNew()
	}
	if err != nil {
		s.Fatalf("%s response (nonce %q) carries %q, which does not decode as %s: %v", t.Short, r.Nonce, name, wording.A(t.Short), err)
	}
	requireSameMessage(s, wire.Build(t, set, rev), m, "%s %q is not revision %d of %q", t.Short, name, rev, set)
}

// xTypes are the types the xdstp scenarios name resources of: one
// wildcard type, whose SotW responses are full states, and two that are
// not.
var xTypes = []wire.Type{LDS, CDS, EDS}

// TP1 §URI-based xDS resource names, §Discovery request and responses
var xdstpScenarios = []*engine.Scenario{
	{
		ID:           "server/xdstp/singleton-served",
		Title:        "An xdstp name is served on SotW and delta, under the name subscribed",
		Requirements: []string{"XDSTP-18", "XDSTP-1", "XDSTP-4", "XDSTP-6", "XDSTP-10"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(xTypes...) {
				name := s.XName(t, "team-a/web", "env", "prod").String()
				s.SetX(t, name, 1)
				s.Subscribe(t, name)
				r, got := s.Checking("XDSTP-18").AwaitX(t, name)
				s.requireXRevision(t, r, got, name, 1)
				s.Ack(t, r)
			}
		}),
	},
	{
		ID:           "server/xdstp/type-segment-matches",
		Title:        "An xdstp name whose type segment is another type's is not served on this type's stream",
		Requirements: []string{"XDSTP-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(CDS),
		Run: ServerScript(func(s *S) {
			bar := s.Set(CDS, "barrier", 1)
			s.SetX(CDS, s.XName(CDS, "svc").String(), 1)
			// The same authority, id and parameters, typed Listener.
			wrong := s.XName(LDS, "svc").String()
			s.Subscribe(CDS, wrong, bar)
			v := s.Checking("XDSTP-2")
			// The barrier is delivered in the answer to the first request
			// (RES-2), a precondition: only what comes with it is checked.
			r := s.awaitWhere(CDS, fmt.Sprintf("a CDS response carrying %q", bar), func(r *fakeclient.Response) bool {
				if !v.checkDelivered(r) {
					v.FailNow()
				}
				if r.Has(wrong) {
					v.Fatalf("CDS response (nonce %q) serves %q, an xdstp name of type Listener", r.Nonce, wrong)
				}
				return r.Has(bar)
			})
			s.Ack(CDS, r)
			s.forbidOn(s.C, fakeclient.Watch{Rule: "XDSTP-2", Why: "a Listener-typed xdstp name is served on a Cluster stream", Types: []wire.Type{CDS},
				Match: func(r *fakeclient.Response) bool { return r.Has(wrong) }})
		}),
	},
	{
		ID:           "server/xdstp/context-parameter-order",
		Title:        "Context parameters in another order than set name the same resource",
		Requirements: []string{"XDSTP-3", "XDSTP-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(CDS),
		Run: ServerScript(func(s *S) {
			for i, tc := range []struct{ set, sub string }{
				{"?a=1&b=2", "?b=2&a=1"},
				{"?z=9&y=8&x=7", "?x=7&z=9&y=8"},
			} {
				base := s.XName(CDS, "ordered"+strings.NewReplacer("?", "-", "&", "-", "=", "").Replace(tc.set))
				set, sub := base.String()+tc.set, base.String()+tc.sub
				s.SetX(CDS, set, 1)
				names := []string{sub}
				if i == 0 {
					// The first request names, before it, an xdstp name
					// that matches nothing and an opaque one: the match
					// of each name is its own (a delta request keeps
					// this order).
					names = []string{s.XName(CDS, "matches-nothing").String(), s.Set(CDS, "opaque", 1), sub}
				}
				s.Subscribe(CDS, names...)
				r, got := s.Checking("XDSTP-3").AwaitX(CDS, sub)
				s.requireXRevision(CDS, r, got, set, 1)
				s.Ack(CDS, r)
			}
		}),
	},
	{
		ID:           "server/xdstp/context-parameters-exact",
		Title:        "A resource matches only a subscription with exactly its context parameters, and its own id",
		Requirements: []string{"XDSTP-5", "XDSTP-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(CDS),
		Run: ServerScript(func(s *S) {
			bar := s.Set(CDS, "barrier", 1)
			set := s.XName(CDS, "exact", "some", "thing")
			s.SetX(CDS, set.String(), 1)
			// What the fixture holds is none of these: XDSTP-5 for
			// the parameters; XDSTP-3 for another id with the same
			// authority, type and parameters (names match component by
			// component).
			type other struct{ name, rule string }
			var others []other
			for _, params := range []map[string]string{
				nil,                             // fewer parameters
				{"some": "thing", "extra": "1"}, // more
				{"some": "other"},               // another value
				{"Some": "thing"},               // another key
			} {
				others = append(others, other{set.WithParams(params).String(), "XDSTP-5"})
			}
			others = append(others, other{s.XName(CDS, "exact-other", "some", "thing").String(), "XDSTP-3"})
			names := []string{bar}
			for _, o := range others {
				names = append(names, o.name)
			}
			s.Subscribe(CDS, names...)
			served := func(r *fakeclient.Response) *other {
				for i, o := range others {
					if r.Has(o.name) {
						return &others[i]
					}
				}
				return nil
			}
			// The barrier is delivered in the answer to the first request
			// (RES-2), a precondition: only what comes with it is checked.
			r := s.awaitWhere(CDS, fmt.Sprintf("a CDS response carrying %q", bar), func(r *fakeclient.Response) bool {
				if o := served(r); o != nil {
					s.Checking(o.rule).Fatalf("%s response (nonce %q) serves %q, but the fixture set only %q", CDS.Short, r.Nonce, o.name, set.String())
				}
				return r.Has(bar)
			})
			s.Ack(CDS, r)
			for _, rule := range []string{"XDSTP-5", "XDSTP-3"} {
				s.forbidOn(s.C, fakeclient.Watch{Rule: rule, Why: "only " + set.String() + " exists", Types: []wire.Type{CDS},
					Match: func(r *fakeclient.Response) bool {
						o := served(r)
						return o != nil && o.rule == rule
					}})
			}
		}),
	},
	{
		ID:           "server/xdstp/no-reserved-values",
		Title:        "Delivered xdstp names have no context-parameter value starting with a non-alphanumeric character",
		Requirements: []string{"XDSTP-7"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        xneeds(CDS),
		Run: ServerScript(func(s *S) {
			name := s.XName(CDS, "values", "env", "prod").String()
			s.SetX(CDS, name, 1)
			s.Subscribe(CDS, name)
			v := s.Checking("XDSTP-7")
			r := v.awaitWhere(CDS, fmt.Sprintf("a CDS response carrying %s", name), func(r *fakeclient.Response) bool {
				for _, n := range r.Names() {
					if p, err := xdstp.Parse(n); err == nil && len(p.ReservedValues()) > 0 {
						v.Fatalf("CDS response (nonce %q) carries %q: the values of %q start with a character TP1 reserves", r.Nonce, n, p.ReservedValues())
					}
				}
				return slices.ContainsFunc(r.Names(), func(n string) bool { return xdstp.Same(n, name) })
			})
			s.Ack(CDS, r)
		}),
	},
	{
		ID:           "server/xdstp/opaque-names-beside",
		Title:        "Opaque names keep working next to xdstp names, on one stream and in one request",
		Requirements: []string{"XDSTP-19"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(EDS),
		Run: ServerScript(func(s *S) {
			opaque := s.Set(EDS, "legacy", 1)
			x := s.XName(EDS, "federated").String()
			s.SetX(EDS, x, 1)
			s.Subscribe(EDS, opaque, x)
			seen := map[string]bool{}
			v := s.Checking("XDSTP-19")
			r := v.awaitWhere(EDS, fmt.Sprintf("EDS responses carrying %q and %q", opaque, x), func(r *fakeclient.Response) bool {
				for _, n := range []string{opaque, x} {
					if r.HasRemoved(n) {
						v.Fatalf("EDS response (nonce %q) reports %q removed, but the fixture set it", r.Nonce, n)
					}
					if r.Has(n) {
						seen[n] = true
					}
				}
				return len(seen) == 2
			})
			s.Ack(EDS, r)
		}),
	},
	{
		ID:           "server/xdstp/same-content-for-every-node",
		Title:        "An xdstp name at one version has the same content for clients of different nodes",
		Requirements: []string{"XDSTP-17"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(CDS),
		Run: ServerScript(func(s *S) {
			name := s.XName(CDS, "shared", "env", "prod").String()
			s.SetX(CDS, name, 1)
			s.Subscribe(CDS, name)
			r1, _ := s.AwaitX(CDS, name)
			s.Ack(CDS, r1)
			// A second client whose node differs: it advertises a client
			// feature the first does not.
			other := connectWith(s.T, s.target, fakeclient.Options{ClientFeatures: []string{"xdsconform.test.other-node"}})
			s.must(CDS, other.Subscribe(CDS, name))
			v := s.Checking("XDSTP-17")
			r2 := v.awaitOn(other, CDS, name)
			// The version of the resource: its own in delta (VER-7), the
			// type's in SotW.
			v1, v2 := r1.Version, r2.Version
			if s.Variant.IsDelta() {
				v1, v2 = r1.ResourceVersion(name), r2.ResourceVersion(name)
			}
			same := v1 == v2
			if same && !proto.Equal(r1.Get(name), r2.Get(name)) {
				v.Errorf("%q at version %q differs between two clients of different nodes (responses %q and %q): a name at a version has one content", name, v1, r1.Nonce, r2.Nonce)
			}
			if !same {
				s.Logf("the two clients got %q at different versions; nothing to compare", name)
			}
		}),
	},
	{
		ID:    "server/xdstp/authorities-on-one-stream",
		Title: "Names of two authorities that differ in nothing else, on one stream, are two resources: each served, updated and removed on its own",
		// XDSTP-3: names are the same resource only if every component
		// matches, the authority among them; DEL-1 and GRP-1 say how the
		// one deleted leaves (delta: removed_resources; SotW: the Cluster
		// full state without it).
		Requirements: []string{"XDSTP-3", "DEL-1", "GRP-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xneeds(CDS, EDS),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(CDS, EDS) {
				a := s.XName(t, "svc", "env", "prod")
				b := a
				b.Authority = xOtherAuthority
				an, bn := a.String(), b.String()
				s.SetX(t, an, 1)
				s.SetX(t, bn, 2)
				s.Subscribe(t, an, bn)
				v := s.Checking("XDSTP-3")
				// Each with its own content, in one response or two.
				seen := map[string]bool{}
				r := v.awaitWhere(t, fmt.Sprintf("%s responses carrying %s and %s", t.Short, an, bn), func(r *fakeclient.Response) bool {
					if !v.checkDelivered(r) {
						v.FailNow()
					}
					for _, x := range []struct {
						name string
						rev  int
					}{{an, 1}, {bn, 2}} {
						if r.Has(x.name) {
							v.requireXRevision(t, r, x.name, x.name, x.rev)
							seen[x.name] = true
						}
					}
					return len(seen) == 2
				})
				s.Ack(t, r)
				// a changes; b, wherever it comes, stays as it was.
				s.SetX(t, an, 3)
				r = v.awaitWhere(t, fmt.Sprintf("%s response carrying revision 3 of %s", t.Short, an), func(r *fakeclient.Response) bool {
					if r.Has(bn) {
						v.requireXRevision(t, r, bn, bn, 2)
					}
					ok, _ := s.isRevision(t, an, 3, r.Get(an))
					return r.Has(an) && ok
				})
				s.Ack(t, r)
				if !s.Variant.IsDelta() && !t.Wildcard {
					continue // a SotW EDS response says nothing of deletions (DEL-5)
				}
				// a is deleted; b stays.
				s.Delete(t, an)
				gone := func(r *fakeclient.Response) bool {
					if s.Variant.IsDelta() {
						return r.HasRemoved(an)
					}
					return !r.Has(an)
				}
				how := "GRP-1" // the Cluster full state without it
				if s.Variant.IsDelta() {
					how = "DEL-1"
				}
				r = s.Checking(how).awaitWhere(t, fmt.Sprintf("%s response saying %s is gone", t.Short, an), func(r *fakeclient.Response) bool {
					if r.HasRemoved(bn) || (!s.Variant.IsDelta() && gone(r) && !r.Has(bn)) {
						v.Fatalf("%s response (nonce %q) deletes %s with %s: they differ in their authority, so they are two resources", t.Short, r.Nonce, bn, an)
					}
					return gone(r)
				})
				s.Ack(t, r)
				if s.Variant.IsDelta() {
					s.forbidOn(s.C, fakeclient.Watch{Rule: "XDSTP-3", Why: bn + " differs from the deleted " + an + " in its authority: it is another resource, which stays", Types: []wire.Type{t},
						Match: func(r *fakeclient.Response) bool { return r.HasRemoved(bn) }})
				}
			}
		}),
	},
	{
		ID:           "server/redirect/locator",
		Title:        "A redirect is a resource whose payload is the ResourceLocator of its target",
		Requirements: []string{"REDIR-1"},
		Level:        results.May,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedRedirects),
		Run: ServerScript(func(s *S) {
			name := s.XName(LDS, "moved").String()
			target := "xdstp://elsewhere.test/envoy.config.listener.v3.Listener/" + s.Name("new-home") + "?env=prod"
			s.setX(fixture.SetRequest{Type: LDS, Name: name, Redirect: target}, 0)
			s.Subscribe(LDS, name)
			got := s.Checking("REDIR-1").awaitRedirect(LDS, name)
			if got.Resource() != xdstp.MustParse(target).Resource() {
				s.Checking("REDIR-1").Errorf("%q redirects to %q, but the fixture set a redirect to %q", name, got.String(), target)
			}
		}),
	},
	{
		ID:           "server/redirect/directives",
		Title:        "A redirect's locator keeps its directives, each once, their values decoded",
		Requirements: []string{"XDSTP-9", "REDIR-1"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(xneeds(LDS), targets.NeedRedirects),
		Run: ServerScript(func(s *S) {
			name := s.XName(LDS, "moved-alt").String()
			alt := "xdstp://third.test/envoy.config.listener.v3.Listener/" + s.Name("a,b")
			target := "xdstp://elsewhere.test/envoy.config.listener.v3.Listener/" + s.Name("new-home") + "#alt=" + strings.ReplaceAll(alt, ",", "%2C")
			s.setX(fixture.SetRequest{Type: LDS, Name: name, Redirect: target}, 0)
			s.Subscribe(LDS, name)
			got := s.Checking("XDSTP-9").awaitRedirect(LDS, name)
			if v, ok := got.Directive(xdstp.DirectiveAlt); !ok || !xdstp.Same(v, alt) {
				s.Checking("XDSTP-9").Errorf("%q redirects to %q: want the alt directive %q, decoded", name, got.String(), alt)
			}
		}),
	},
}

// awaitRedirect reads delta responses of t until one carries name, which
// must be a redirect: its payload a ResourceLocator that reads as an
// xdstp locator, each directive at most once (XDSTP-9). It returns the
// locator.
func (s *S) awaitRedirect(t wire.Type, name string) xdstp.Name {
	r := s.awaitWhere(t, fmt.Sprintf("%s response carrying the redirect %q", wording.A(t.Short), name), func(r *fakeclient.Response) bool {
		if r.HasRemoved(name) {
			s.Fatalf("%s response (nonce %q) reports %q removed, but the fixture set a redirect", t.Short, r.Nonce, name)
		}
		return r.Has(name)
	})
	s.Ack(t, r)
	res := r.Find(name)
	l, ok := res.Message.(*xdscore.ResourceLocator)
	if !ok {
		s.Fatalf("%s response (nonce %q) carries %q as %q, not as a redirect (%s)", t.Short, r.Nonce, name, res.Any.GetTypeUrl(), xdstp.LocatorTypeURL)
	}
	n, err := xdstp.FromLocator(l)
	if err != nil {
		s.Checking("XDSTP-9").Fatalf("%s response (nonce %q) redirects %q with a bad locator: %v", t.Short, r.Nonce, name, err)
	}
	return n
}

// awaitOn reads responses of t on client c, another client than the
// scenario's own, until one carries name, ACKing each, within one expect
// timeout, and returns it.
func (s *S) awaitOn(c *fakeclient.Client, t wire.Type, name string) *fakeclient.Response {
	start := time.Now()
	deadline := start.Add(s.Timeouts.Expect)
	for passed := 0; ; passed++ {
		r, err := c.ExpectWithin(t, max(time.Until(deadline), 0))
		if err != nil {
			s.failAs(s.awaitRule(t), err, "the second client expected %s response carrying %q: %s", wording.A(t.Short), name, waitEnded(err, t.Short+" response", start, passed))
		}
		s.must(t, c.Ack(t, r))
		if r.Has(name) {
			return r
		}
	}
}

// reversedParams is n written with its context parameters in reverse
// order of key: unsorted, the same name (XDSTP-3).
func reversedParams(n xdstp.Name) string {
	keys := slices.Sorted(maps.Keys(n.Params))
	slices.Reverse(keys)
	kv := make([]string, len(keys))
	for i, k := range keys {
		kv[i] = k + "=" + n.Params[k]
	}
	bare := n
	bare.Params = nil
	return bare.String() + "?" + strings.Join(kv, "&")
}

// orderPath is a path after the subscription that carries a subscribed
// xdstp name: the variants it exists in, the rules its step checks when
// the name is written as subscribed (the first is the scenario's
// headline), and the step. run gets the view v of the rule the step is
// filed under (XDSTP-3 for the name written otherwise), the name as set
// and subscribed (sorted), and as the path writes it.
type orderPath struct {
	path, what string
	variants   []wire.Variant
	rules      []string
	run        func(s, v *S, sorted, written string)
}

// orderPaths are the paths of the parameter-order scenarios (see
// orderScenarios). A delta request names a subscribed resource only in
// its unsubscribe list; a SotW request names them all in every ACK and
// NACK (RES-1); the server writes the name in a delta removal, and
// leaves it out of a SotW Cluster full state.
var orderPaths = []orderPath{
	{"unsubscribe", "a delta unsubscription", delta, []string{"UNSUB-2"}, func(s, v *S, sorted, written string) {
		s.SetX(CDS, sorted, 1)
		s.Subscribe(CDS, sorted)
		r, _ := s.AwaitX(CDS, sorted)
		s.Ack(CDS, r)
		s.Unsubscribe(CDS, written)
		s.Barrier(CDS, s.Set(CDS, "barrier", 1))
		s.SetX(CDS, sorted, 2)
		v.NeverCarrying(sorted+" was unsubscribed as "+written, CDS, sorted, written)
	}},
	{"removal", "a removal (delta removed_resources, SotW full state)", allVariants, []string{"DEL-1", "GRP-1", "XDSTP-4"}, func(s, v *S, sorted, written string) {
		s.SetX(CDS, sorted, 1)
		s.Subscribe(CDS, written)
		r, _ := s.AwaitX(CDS, written)
		s.Ack(CDS, r)
		s.Delete(CDS, sorted)
		if !s.Variant.IsDelta() {
			if v.rule == "DEL-1" {
				v = s.Checking("GRP-1") // the Cluster full state without it
			}
			s.Ack(CDS, v.awaitWhere(CDS, fmt.Sprintf("a Cluster full state without %s, which was deleted", written), func(r *fakeclient.Response) bool {
				return !slices.ContainsFunc(r.Names(), func(n string) bool { return xdstp.Same(n, written) })
			}))
			return
		}
		want := xdstp.MustParse(written)
		s.Ack(CDS, v.awaitWhere(CDS, fmt.Sprintf("a CDS response removing %s", written), func(r *fakeclient.Response) bool {
			for _, n := range r.Removed {
				switch {
				case xdstp.Same(n, written):
					return true
				case sameResource(n, want):
					s.Checking("XDSTP-4").Fatalf("CDS response (nonce %q) removes %s as %q: a removal names the resource with the context parameters subscribed", r.Nonce, written, n)
				}
			}
			return false
		}))
	}},
	{"ack", "a SotW ACK", sotw, []string{"UPD-3", "UPD-1"}, func(s, v *S, sorted, written string) {
		s.answerRespelled(v, sorted, written, (*S).Ack, "UPD-1", "the ACK names "+sorted+" as "+written+", the same resource: nothing changed")
	}},
	{"nack", "a SotW NACK", sotw, []string{"ACK-9", "ACK-5"}, func(s, v *S, sorted, written string) {
		s.answerRespelled(v, sorted, written, (*S).Nack, "ACK-5", "the NACK names "+sorted+" as "+written+", the same resource: the rejected version must not come again")
	}},
}

// answerRespelled subscribes to the cluster sorted, answers its response
// (answer: ACK or NACK) with the name written otherwise, checks under
// rule that the answer provokes no response carrying it (why), then that
// the next revision still reaches the stream, checked by v.
func (s *S) answerRespelled(v *S, sorted, written string, answer func(*S, wire.Type, *fakeclient.Response), rule, why string) {
	s.SetX(CDS, sorted, 1)
	s.Subscribe(CDS, sorted)
	r, _ := s.AwaitX(CDS, sorted)
	s.C.Respell(CDS, sorted, written)
	answer(s, CDS, r)
	s.Checking(rule).QuietCarrying(why, CDS, sorted, written)
	s.SetX(CDS, sorted, 2)
	r, got := v.AwaitX(CDS, written)
	v.requireXRevision(CDS, r, got, sorted, 2)
}

// orderScenarios are XDSTP-3 on the paths after the subscription
// (server/xdstp/context-parameter-order checks the subscription): a
// table of paths × the name written as subscribed (sorted) or with its
// context parameters in another order. The first scenario of a path
// checks the path's own rules with an xdstp name; the second, whose
// headline is XDSTP-3, the same with the name written otherwise. Each is
// a scenario of its own, so that their quiet windows run side by side.
func orderScenarios() []*engine.Scenario {
	var out []*engine.Scenario
	for _, p := range orderPaths {
		for _, reorder := range []bool{false, true} {
			id, title, rules := "server/xdstp/parameters-sorted-"+p.path, "An xdstp name written as subscribed, on "+p.what, p.rules
			if reorder {
				id, title = "server/xdstp/parameters-reordered-"+p.path, "An xdstp name written with its context parameters in another order is the subscribed one on "+p.what
				rules = append([]string{"XDSTP-3"}, p.rules...)
			}
			out = append(out, &engine.Scenario{
				ID:           id,
				Title:        title,
				Requirements: rules,
				Level:        engine.LevelOf(rules[0], results.Must),
				Variants:     p.variants,
				Needs:        xneeds(CDS),
				Run: ServerScript(func(s *S) {
					set := s.XName(CDS, "ordered", "zone", "z1", "env", "prod")
					sorted, written, v := set.String(), set.String(), s.Checking(p.rules[0])
					if reorder {
						written, v = reversedParams(set), s.Checking("XDSTP-3")
					}
					p.run(s, v, sorted, written)
				}),
			})
		}
	}
	return out
}
