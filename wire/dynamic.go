package wire

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
)

// Dynamic parameters (xRFC TP2): a resource may have several variants, each
// with DynamicParameterConstraints; a subscription (ResourceLocator) carries
// dynamic parameters, and the variant served is the one whose constraints
// the parameters satisfy (DYN-7).

// Constraint builders, so scenarios and tests can write constraint tables
// in the spec's own terms.

// Exact is the constraint "key has exactly value".
func Exact(key, value string) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
		Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
			ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Value{Value: value}}}}
}

// Exists is the constraint "key is present, with any value".
func Exists(key string) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_Constraint{
		Constraint: &discovery.DynamicParameterConstraints_SingleConstraint{Key: key,
			ConstraintType: &discovery.DynamicParameterConstraints_SingleConstraint_Exists_{
				Exists: &discovery.DynamicParameterConstraints_SingleConstraint_Exists{}}}}}
}

// And is the constraint that all of cs hold.
func And(cs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_AndConstraints{
		AndConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: cs}}}
}

// Or is the constraint that one of cs holds.
func Or(cs ...*discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_OrConstraints{
		OrConstraints: &discovery.DynamicParameterConstraints_ConstraintList{Constraints: cs}}}
}

// Not is the constraint that c does not hold.
func Not(c *discovery.DynamicParameterConstraints) *discovery.DynamicParameterConstraints {
	return &discovery.DynamicParameterConstraints{Type: &discovery.DynamicParameterConstraints_NotConstraints{NotConstraints: c}}
}

// Matches reports whether dynamic parameters params satisfy constraints c
// (DYN-7): a value constraint holds when the key is present with exactly
// that value, exists when the key is present at all; and_constraints need
// all (none: true), or_constraints one (none: false), not_constraints the
// opposite. Keys the constraints do not mention play no part, so extra
// parameters never prevent a match. nil constraints (an unconstrained
// resource) match any parameters.
func Matches(c *discovery.DynamicParameterConstraints, params map[string]string) bool {
	if c == nil {
		return true
	}
	switch t := c.GetType().(type) {
	case *discovery.DynamicParameterConstraints_Constraint:
		v, ok := params[t.Constraint.GetKey()]
		if !ok {
			return false
		}
		if t.Constraint.GetExists() != nil {
			return true
		}
		return v == t.Constraint.GetValue()
	case *discovery.DynamicParameterConstraints_AndConstraints:
		for _, sub := range t.AndConstraints.GetConstraints() {
			if !Matches(sub, params) {
				return false
			}
		}
		return true
	case *discovery.DynamicParameterConstraints_OrConstraints:
		return slices.ContainsFunc(t.OrConstraints.GetConstraints(), func(sub *discovery.DynamicParameterConstraints) bool {
			return Matches(sub, params)
		})
	case *discovery.DynamicParameterConstraints_NotConstraints:
		return !Matches(t.NotConstraints, params)
	}
	return false // a constraint of a kind this build does not know matches nothing
}

// ConstraintsKey is a canonical form of c, equal for equal constraints, ""
// for none: with the name it identifies one variant of a resource, as
// caches key variants (DYN-3, DYN-9).
func ConstraintsKey(c *discovery.DynamicParameterConstraints) string {
	if c == nil {
		return ""
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
	if err != nil {
		return "unmarshalable:" + c.String()
	}
	return hex.EncodeToString(b)
}

// ConstraintsString renders c in a short readable form for reports, e.g.
// (env=prod AND version exists).
func ConstraintsString(c *discovery.DynamicParameterConstraints) string {
	if c == nil {
		return "(none)"
	}
	switch t := c.GetType().(type) {
	case *discovery.DynamicParameterConstraints_Constraint:
		if t.Constraint.GetExists() != nil {
			return t.Constraint.GetKey() + " exists"
		}
		return fmt.Sprintf("%s=%s", t.Constraint.GetKey(), t.Constraint.GetValue())
	case *discovery.DynamicParameterConstraints_AndConstraints:
		return list(" AND ", t.AndConstraints.GetConstraints())
	case *discovery.DynamicParameterConstraints_OrConstraints:
		return list(" OR ", t.OrConstraints.GetConstraints())
	case *discovery.DynamicParameterConstraints_NotConstraints:
		return "NOT " + ConstraintsString(t.NotConstraints)
	}
	return "(unknown constraint)"
}

func list(op string, cs []*discovery.DynamicParameterConstraints) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = ConstraintsString(c)
	}
	return "(" + strings.Join(parts, op) + ")"
}

// VariantKey identifies one variant of a resource: its name and its
// constraints' canonical form, the identity a response's resources,
// removals and errors are compared by once variants exist (DUP-1, DUP-3,
// ERR-2).
func VariantKey(name string, c *discovery.DynamicParameterConstraints) string {
	if c == nil {
		return name
	}
	return name + "\x00" + ConstraintsKey(c)
}
