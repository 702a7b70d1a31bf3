package refclient

import (
	"fmt"
	"maps"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/wire"
)

// driftKey is the parameter the parameters-drift fault adds to the
// subscriptions of clusters and endpoints.
const driftKey = "xdsconform.drift"

// locating reports whether the client subscribes through resource_locators
// with dynamic parameters (xRFC TP2): when it was given some.
func (c *Client) locating() bool { return c.cfg.DynamicParameters != nil }

// params are the dynamic parameters the client sends with every
// subscription of type u: the same for every one (DYN-11).
func (c *Client) params(u string) map[string]string {
	p := c.cfg.DynamicParameters
	if c.fault(FaultParametersDrift) && (u == wire.Cluster.URL || u == wire.Endpoint.URL) {
		p = maps.Clone(p) // DYN-11 broken
		p[driftKey] = "1"
	}
	return p
}

// locators are names as resource locators with the type's parameters.
func (c *Client) locators(u string, names []string) []*discovery.ResourceLocator {
	if len(names) == 0 {
		return nil
	}
	out := make([]*discovery.ResourceLocator, len(names))
	for i, n := range names {
		out[i] = &discovery.ResourceLocator{Name: n, DynamicParameters: c.params(u)}
	}
	return out
}

// bareLocators are names as resource locators without parameters
// (locator-unsubscribe-without-params only).
func bareLocators(names []string) []*discovery.ResourceLocator {
	if len(names) == 0 {
		return nil
	}
	out := make([]*discovery.ResourceLocator, len(names))
	for i, n := range names {
		out[i] = &discovery.ResourceLocator{Name: n}
	}
	return out
}

// matches reports whether a variant's constraints match params (DYN-7):
// a value matches that exact value, exists any value of a key present,
// and the and/or/not lists combine them. A key the constraints do not
// mention never prevents a match. No constraints match everything.
func (c *Client) matches(dc *discovery.DynamicParameterConstraints, params map[string]string) bool {
	if dc == nil {
		return true
	}
	if c.fault(FaultStrictConstraints) {
		// DYN-7 broken: every parameter must be constrained.
		mentioned := map[string]bool{}
		keysOf(dc, mentioned)
		for k := range params {
			if !mentioned[k] {
				return false
			}
		}
	}
	return match(dc, params)
}

func match(dc *discovery.DynamicParameterConstraints, params map[string]string) bool {
	switch t := dc.GetType().(type) {
	case *discovery.DynamicParameterConstraints_Constraint:
		v, ok := params[t.Constraint.GetKey()]
		switch ct := t.Constraint.GetConstraintType().(type) {
		case *discovery.DynamicParameterConstraints_SingleConstraint_Value:
			return ok && v == ct.Value
		case *discovery.DynamicParameterConstraints_SingleConstraint_Exists_:
			return ok
		}
		return false // a constraint that says nothing matches nothing
	case *discovery.DynamicParameterConstraints_OrConstraints:
		for _, x := range t.OrConstraints.GetConstraints() {
			if match(x, params) {
				return true
			}
		}
		return false
	case *discovery.DynamicParameterConstraints_AndConstraints:
		for _, x := range t.AndConstraints.GetConstraints() {
			if !match(x, params) {
				return false
			}
		}
		return true
	case *discovery.DynamicParameterConstraints_NotConstraints:
		return !match(t.NotConstraints, params)
	}
	return true // no constraint set: unconstrained
}

// keysOf adds every key dc mentions to into (strict-constraints only).
func keysOf(dc *discovery.DynamicParameterConstraints, into map[string]bool) {
	switch t := dc.GetType().(type) {
	case *discovery.DynamicParameterConstraints_Constraint:
		into[t.Constraint.GetKey()] = true
	case *discovery.DynamicParameterConstraints_OrConstraints:
		for _, x := range t.OrConstraints.GetConstraints() {
			keysOf(x, into)
		}
	case *discovery.DynamicParameterConstraints_AndConstraints:
		for _, x := range t.AndConstraints.GetConstraints() {
			keysOf(x, into)
		}
	case *discovery.DynamicParameterConstraints_NotConstraints:
		keysOf(t.NotConstraints, into)
	}
}

// wrapperName reads the name of a Resource wrapper: its name, or, as TP2
// allows, its resource_name (DYN-1). bad says why the wrapper is rejected
// (a fault), "" when it is not; metadata never is (CACHE-2).
func (c *Client) wrapperName(w *discovery.Resource) (name, bad string) {
	if w.GetMetadata() != nil && c.fault(FaultNackResourceMetadata) {
		return w.GetName(), "Resource wrapper carries metadata" // CACHE-2 broken
	}
	if w.GetName() != "" || w.GetResourceName() == nil {
		return w.GetName(), ""
	}
	if c.fault(FaultWrapperNeedsName) {
		return "", fmt.Sprintf("Resource wrapper has no name (resource_name %q)", w.GetResourceName().GetName()) // DYN-1 broken
	}
	return w.GetResourceName().GetName(), ""
}

// checkVariant is the leaf client's own check of a variant (DYN-10): its
// constraints must match the parameters sent for its type; "" when they
// do, or when the client sent no parameters.
func (c *Client) checkVariant(u string, dc *discovery.DynamicParameterConstraints) string {
	if dc == nil || !c.locating() || c.fault(FaultNoVariantCheck) { // the fault: DYN-10 not used
		return ""
	}
	if p := c.params(u); !c.matches(dc, p) {
		return fmt.Sprintf("variant constraints %v do not match the dynamic parameters sent %v", dc, p)
	}
	return ""
}
