package scenarios

import (
	"fmt"
	"maps"
	"slices"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Dynamic parameters (xRFC TP2): the client subscribes through
// resource_locators, each carrying its dynamic parameters, and the
// harness, as the server, answers with variants wrapped in Resource and
// named by resource_name with their constraints. The scenarios build the
// constraints from the parameters the client actually sent, so any
// client that claims the feature can be held to them, whatever it was
// configured with.

// takesParams is the need of every dynamic-parameter scenario.
var takesParams = targets.NeedClientFeature(targets.ClientFeatureDynamicParameters)

// dynParams are the parameters the reference client is launched with:
// two keys, so that one can go unconstrained (DYN-7).
var dynParams = map[string]string{"xdsconform.env": "prod", "xdsconform.region": "eu"}

// locating adapts a dynamic-parameter body to the engine: the client is
// asked to send dynParams.
func locating(body func(c *C)) func(*engine.T) {
	return func(t *engine.T) {
		body(NewCWith(t, func(s *targets.LaunchSpec) { s.DynamicParameters = dynParams }))
	}
}

// Located returns the next request of t that subscribes name through a
// resource locator, and that locator, within the expect timeout. A
// client that asks for name by resource_names instead was not configured
// with dynamic parameters: the pair errors, since the rules here are only
// about clients that send them.
//
// The subscription is a precondition of the scenarios about what the
// client does with the variants: a client that never asks for name (the
// listener it was pointed at, say) blocks the pair by RES-1.
func (c *C) Located(t wire.Type, name string) (*fakeserver.Request, *discovery.ResourceLocator) {
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	c = c.precondition("RES-1")
	for {
		r := c.Expect(t)
		for _, l := range r.Locators() {
			if l.GetName() == name {
				return r, l
			}
		}
		if slices.Contains(r.Names(), name) {
			c.Abortf("%s asks for %s %q by resource_names, not resource_locators: the client claims dynamic parameters but was not configured to send any", r, t.Short, name)
		}
		if deadline.Passed() {
			c.Fatalf("the client should subscribe %s %q through resource_locators; its last %s request, %s, does not", t.Short, name, t.Short, r)
		}
	}
}

// RespondVariant sends res as the variant with constraints dc (nil: none),
// in a Resource named by resource_name, in a response of t at version, and
// returns the nonce.
func (c *C) RespondVariant(t wire.Type, version string, res proto.Message, dc *discovery.DynamicParameterConstraints) string {
	w := &discovery.Resource{
		ResourceName: &discovery.ResourceName{Name: wire.NameOf(res), DynamicParameterConstraints: dc},
		Resource:     mustAny(c, res),
	}
	n, err := c.Stream(t).RespondWrapped(c.Context(), t, version, []*discovery.Resource{w}, nil)
	if err != nil {
		c.fail("sending %s variant: %v", wording.A(t.Short), err)
	}
	return n
}

// twoParams are two of the parameters of locator l, sorted by key; the
// pair errors when it carries fewer, since the constraint table needs one
// constrained key and one left free.
func (c *C) twoParams(l *discovery.ResourceLocator) (k1, v1, k2, v2 string) {
	p := l.GetDynamicParameters()
	keys := slices.Sorted(maps.Keys(p))
	if len(keys) < 2 {
		c.Abortf("the client sends dynamic parameters %v: the scenario needs at least two", p)
	}
	return keys[0], p[keys[0]], keys[1], p[keys[1]]
}

// Constraint builders, in the spec's own terms (DynamicParameterConstraints).
func exactly(key, value string) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
		Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
			ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Value{Value: value}}}}
}

func present(key string) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
		Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
			ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Exists_{Exists: &discovery.DynamicParameterConstraints_SingleConstraint_Exists{}}}}}
}

func not(x *discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_NotConstraints{NotConstraints: x}}
}

func allOf(xs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_AndConstraints{
		AndConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: xs}}}
}

func anyOf(xs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_OrConstraints{
		OrConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: xs}}}
}

// absentKey is a parameter key no client sends.
const absentKey = "xdsconform.absent"

// TP2 §Transport Protocol Changes, §Dynamic Parameters, §Where Dynamic
// Parameter Matching is Performed, §Configuring Dynamic Parameters;
// DiscoveryRequest.resource_locators; Resource.metadata.
var clientDynamicScenarios = []*engine.Scenario{
	{
		ID:           "client/dynamic/wrapped-variant-accepted",
		Title:        "A client subscribing through resource_locators takes a variant wrapped in Resource and named by resource_name",
		Requirements: []string{"DYN-1"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(observed, takesParams),
		Run: locating(func(c *C) {
			_, l := c.Located(LDS, c.L)
			k1, v1, _, _ := c.twoParams(l)
			v := c.Checking("DYN-1")
			v.ExpectAck(LDS, c.RespondVariant(LDS, "1", c.Hop(LDS, 1), exactly(k1, v1)), "1")
			v.AwaitAcked(LDS, c.L, "1")
		}),
	},
	{
		ID:           "client/dynamic/constraint-matching",
		Title:        "Variants whose constraints match the client's parameters (exact, exists, not, and, or, unconstrained keys) are accepted",
		Requirements: []string{"DYN-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(observed, takesParams),
		Run: locating(func(c *C) {
			_, l := c.Located(LDS, c.L)
			k1, v1, k2, v2 := c.twoParams(l)
			other := v1 + "-other"
			v := c.Checking("DYN-7")
			for i, row := range []struct {
				what string
				dc   *discovery.DynamicParameterConstraints
			}{
				{fmt.Sprintf("%s=%s, %s left unconstrained", k1, v1, k2), exactly(k1, v1)},
				{fmt.Sprintf("%s exists", k2), present(k2)},
				{fmt.Sprintf("not %s=%s", k1, other), not(exactly(k1, other))},
				{fmt.Sprintf("not %s exists", absentKey), not(present(absentKey))},
				{fmt.Sprintf("%s=%s and %s exists", k1, v1, k2), allOf(exactly(k1, v1), present(k2))},
				{fmt.Sprintf("%s=%s or %s=%s", k1, other, k2, v2), anyOf(exactly(k1, other), exactly(k2, v2))},
				// No constraint set at all: it mentions no parameter, so
				// none prevents the match.
				{"empty constraints (no type set)", &discovery.DynamicParameterConstraints{}},
			} {
				version := fmt.Sprint(i + 1)
				n := c.RespondVariant(LDS, version, c.Hop(LDS, i+1), row.dc)
				if r := c.expectReply(LDS, n); r.ErrorDetail() != nil {
					v.Fatalf("the variant with constraints %s matches the parameters %v the client sent, but %s NACKs it: %q", row.what, l.GetDynamicParameters(), r, r.ErrorDetail().GetMessage())
				}
				v.AwaitAcked(LDS, c.L, version)
			}
		}),
	},
	{
		ID:           "client/dynamic/mismatch-checked",
		Title:        "A variant whose constraints do not match the parameters sent is rejected by a client that checks",
		Requirements: []string{"DYN-10"},
		Level:        results.May,
		Variants:     allVariants,
		Needs:        with(observed, takesParams),
		Run: locating(func(c *C) {
			_, l := c.Located(LDS, c.L)
			k1, v1, k2, v2 := c.twoParams(l)
			v := c.Checking("DYN-10")
			v.ExpectNack(LDS, c.RespondVariant(LDS, "1", c.Hop(LDS, 1), exactly(k1, v1+"-other")))
			// A client that checks checks every form: an "and" with one
			// side false, an "or" with both sides false.
			v.ExpectNack(LDS, c.RespondVariant(LDS, "2", c.Hop(LDS, 2), allOf(exactly(k1, v1), exactly(k2, v2+"-other"))))
			v.ExpectNack(LDS, c.RespondVariant(LDS, "3", c.Hop(LDS, 3), anyOf(exactly(k1, v1+"-other"), exactly(k2, v2+"-other"))))
		}),
	},
	{
		ID:           "client/dynamic/stable-parameters",
		Title:        "Every subscription of the chain carries the same dynamic parameters",
		Requirements: []string{"DYN-11"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        []engine.Need{takesParams},
		Run: locating(func(c *C) {
			var first *discovery.ResourceLocator
			v := c.Checking("DYN-11")
			for _, hop := range c.hops(1) {
				r, _ := c.Located(hop.t, hop.name)
				for _, l := range r.Locators() {
					if first == nil {
						first = l
					}
					if !fakeserver.SameParameters(first, l) {
						v.Fatalf("%s subscribes %s %q with dynamic parameters %v, but %s %q was subscribed with %v", r, hop.t.Short, l.GetName(), l.GetDynamicParameters(), LDS.Short, first.GetName(), first.GetDynamicParameters())
					}
				}
				c.ExpectAck(hop.t, c.RespondVariant(hop.t, "1", hop.res, nil), "1")
			}
		}),
	},
	{
		ID:    "client/dynamic/variant-removed-by-resource-name",
		Title: "A delta client drops a variant removed through removed_resource_names, with its constraints",
		// LOC-2 (added): a variant sent with constraints is removed
		// through removed_resource_names (the server's side, DYN-5), a
		// removal as removed_resources is (DEL-2).
		Requirements: []string{"LOC-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(observed, takesParams),
		Run: locating(func(c *C) {
			_, l := c.Located(LDS, c.L)
			k1, v1, _, _ := c.twoParams(l)
			dc := exactly(k1, v1)
			c.precondition(chainAckRule).ExpectAck(LDS, c.RespondVariant(LDS, "1", c.Hop(LDS, 1), dc), "1")
			c.AwaitAcked(LDS, c.L, "1")
			nonce := c.Stream(LDS).NewNonce()
			c.Send(LDS, &discovery.DeltaDiscoveryResponse{TypeUrl: LDS.URL, Nonce: nonce, SystemVersionInfo: "2",
				RemovedResourceNames: []*discovery.ResourceName{{Name: c.L, DynamicParameterConstraints: dc}}})
			c.ExpectAck(LDS, nonce, "2")
			c.Checking("LOC-2").AwaitGone(LDS, c.L)
		}),
	},
	{
		ID:    "client/dynamic/locator-unsubscribed",
		Title: "A subscription made through a locator is ended with that locator, its parameters unchanged",
		// LOC-1 (added): delta resource_locators_unsubscribe with the
		// parameters subscribed with; SotW a request leaving it out.
		Requirements: []string{"LOC-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        []engine.Need{takesParams},
		Run: locating(func(c *C) {
			_, _ = c.Located(LDS, c.L)
			c.precondition(chainAckRule).ExpectAck(LDS, c.RespondVariant(LDS, "1", c.Hop(LDS, 1), nil), "1")
			_, route := c.Located(RDS, c.R)
			c.precondition(chainAckRule).ExpectAck(RDS, c.RespondVariant(RDS, "1", c.Hop(RDS, 1), nil), "1")
			// The listener names another route: the client loses interest
			// in the first.
			other := c.Extra("route-2")
			c.precondition(chainAckRule).ExpectAck(LDS, c.RespondVariant(LDS, "2", wire.ClientListener(c.L, other, 2), nil), "2")
			c.Checking("LOC-1").endsLocator(RDS, route)
		}),
	},
	{
		ID:           "client/wrapper/metadata-tolerated",
		Title:        "A resource whose Resource wrapper carries metadata is accepted",
		Requirements: []string{"CACHE-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			if !c.Variant.IsDelta() {
				c.requireResourceInSotW() // delta resources are always wrapped
			}
			md := &core.Metadata{FilterMetadata: map[string]*structpb.Struct{
				"xdsconform.trace": {Fields: map[string]*structpb.Value{"trace_id": structpb.NewStringValue("4bf92f3577b34da6")}},
			}}
			w := &discovery.Resource{Name: c.CL, Resource: mustAny(c, c.Hop(CDS, 2)), Metadata: md}
			n, err := c.Stream(CDS).RespondWrapped(c.Context(), CDS, "2", []*discovery.Resource{w}, nil)
			if err != nil {
				c.fail("sending a CDS response with metadata: %v", err)
			}
			v := c.Checking("CACHE-2")
			v.ExpectAck(CDS, n, "2")
			if c.Observable() {
				v.AwaitAcked(CDS, c.CL, "2")
			}
		}),
	},
}

// endsLocator reads the requests of t until one ends the
// subscription the client made through locator l, and checks that it ends
// it with l (LOC-1): on delta l in resource_locators_unsubscribe, with its
// parameters; on SotW a request that leaves l out of resource_locators and
// does not name it in resource_names either. That the client drops the
// subscription at all is DEL-6, a MAY: a client that keeps it (its status
// view still lists it, or no request drops it) blocks the pair by DEL-6.
func (c *C) endsLocator(t wire.Type, l *discovery.ResourceLocator) {
	name := l.GetName()
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	for {
		r, err := c.next(t)
		if err != nil {
			c.precondition("DEL-6").Fatalf("the client should come to drop %s %q, which its listener no longer names, so that how it ends a subscription made through a locator can be seen; no %s request drops it (%v)", t.Short, name, t.Short, err)
		}
		if d := r.Delta; d != nil {
			if slices.Contains(d.GetResourceNamesUnsubscribe(), name) {
				c.Fatalf("%s unsubscribes %s %q by resource_names_unsubscribe, but it was subscribed through a locator with dynamic parameters %v: resource_locators_unsubscribe ends it", r, t.Short, name, l.GetDynamicParameters())
			}
			for _, u := range d.GetResourceLocatorsUnsubscribe() {
				if u.GetName() != name {
					continue
				}
				if !fakeserver.SameParameters(l, u) {
					c.Fatalf("%s unsubscribes %s %q through a locator with dynamic parameters %v, but it was subscribed with %v: the same locator ends it", r, t.Short, name, u.GetDynamicParameters(), l.GetDynamicParameters())
				}
				return
			}
		} else {
			if !slices.Contains(r.LocatorNames(), name) {
				if slices.Contains(r.Names(), name) {
					c.Fatalf("%s leaves %s %q out of resource_locators but names it in resource_names: a subscription made through a locator ends by leaving the locator out", r, t.Short, name)
				}
				return
			}
			if c.Observable() && !c.lists(t, name) {
				c.Fatalf("%s still carries the locator of %s %q, which the client's status view no longer lists: it lost interest, and a SotW request ends a locator subscription by leaving the locator out", r, t.Short, name)
			}
		}
		if deadline.Passed() {
			c.precondition("DEL-6").Fatalf("the client should come to drop %s %q, which its listener no longer names, so that how it ends a subscription made through a locator can be seen; its last %s request, %s, does not", t.Short, name, t.Short, r)
		}
	}
}

// lists reports whether the client's status view lists resource (t,
// name), in any state; a view that cannot be read lists it, so nothing is
// concluded from it.
func (c *C) lists(t wire.Type, name string) bool {
	ctx, cancel := c.untilExit()
	defer cancel()
	rs, err := c.observe(ctx, c.Timeouts.Expect)
	if err != nil {
		return true
	}
	_, ok := observer.Find(rs, t.URL, name)
	return ok
}
