package xdstp

import (
	"fmt"
	"maps"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
)

// LocatorTypeURL is the type URL of xds.core.v3.ResourceLocator: a
// Resource whose Any holds one is a redirect to the resource it locates
// (REDIR-1), not a resource of the response's type.
const LocatorTypeURL = TypePrefix + "xds.core.v3.ResourceLocator"

// Locator is n as the structured xds.core.v3.ResourceLocator a redirect
// or a list collection entry carries: scheme xdstp, exact context
// parameters, and each directive as its own message (an alt as the
// locator it names), so nothing of n is lost on the way (XDSTP-9).
func (n Name) Locator() (*xdscore.ResourceLocator, error) {
	l := &xdscore.ResourceLocator{
		Scheme:       xdscore.ResourceLocator_XDSTP,
		Authority:    n.Authority,
		ResourceType: n.Type,
		Id:           n.ID,
	}
	if len(n.Params) > 0 {
		l.ContextParamSpecifier = &xdscore.ResourceLocator_ExactContext{ExactContext: &xdscore.ContextParams{Params: maps.Clone(n.Params)}}
	}
	for _, d := range n.Directives {
		switch d.Key {
		case DirectiveAlt:
			alt, err := Parse(d.Value)
			if err != nil {
				return nil, fmt.Errorf("alt directive: %w", err)
			}
			al, err := alt.Locator()
			if err != nil {
				return nil, fmt.Errorf("alt directive: %w", err)
			}
			l.Directives = append(l.Directives, &xdscore.ResourceLocator_Directive{Directive: &xdscore.ResourceLocator_Directive_Alt{Alt: al}})
		case DirectiveEntry:
			l.Directives = append(l.Directives, &xdscore.ResourceLocator_Directive{Directive: &xdscore.ResourceLocator_Directive_Entry{Entry: d.Value}})
		default:
			return nil, fmt.Errorf("unknown directive %q", d.Key)
		}
	}
	return l, nil
}

// FromLocator reads a structured locator back as a Name. It refuses
// what a Name cannot say: another scheme than xdstp, a missing type or
// id, an empty directive, and a directive of one kind given twice
// (XDSTP-9).
func FromLocator(l *xdscore.ResourceLocator) (Name, error) {
	if l == nil {
		return Name{}, fmt.Errorf("no locator")
	}
	if l.GetScheme() != xdscore.ResourceLocator_XDSTP {
		return Name{}, fmt.Errorf("locator scheme is %s, not XDSTP", l.GetScheme())
	}
	if l.GetResourceType() == "" || l.GetId() == "" {
		return Name{}, fmt.Errorf("locator has no resource type or id (type %q, id %q)", l.GetResourceType(), l.GetId())
	}
	n := Name{Authority: l.GetAuthority(), Type: l.GetResourceType(), ID: l.GetId()}
	if ps := l.GetExactContext().GetParams(); len(ps) > 0 {
		n.Params = maps.Clone(ps)
	}
	seen := map[string]bool{}
	for i, d := range l.GetDirectives() {
		var dir Directive
		switch v := d.GetDirective().(type) {
		case *xdscore.ResourceLocator_Directive_Alt:
			alt, err := FromLocator(v.Alt)
			if err != nil {
				return Name{}, fmt.Errorf("directive #%d (alt): %w", i, err)
			}
			dir = Directive{DirectiveAlt, alt.String()}
		case *xdscore.ResourceLocator_Directive_Entry:
			dir = Directive{DirectiveEntry, v.Entry}
		default:
			return Name{}, fmt.Errorf("directive #%d is empty", i)
		}
		if seen[dir.Key] {
			return Name{}, fmt.Errorf("directive %q is given twice", dir.Key)
		}
		seen[dir.Key] = true
		n.Directives = append(n.Directives, dir)
	}
	return n, nil
}
