package xdstp

import (
	"testing"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A name goes into a structured locator and back as the same resource,
// with the same directives, an alt's encoded ',' decoded on the way
// (XDSTP-9).
func TestLocatorRoundTrip(t *testing.T) {
	for _, s := range []string{
		"xdstp://a/envoy.config.listener.v3.Listener/foo",
		"xdstp:///envoy.config.listener.v3.Listener/foo/bar?b=2&a=1",
		"xdstp://a/envoy.config.listener.v3.Listener/foo/*?x=y",
		"xdstp://a/T/foo#alt=xdstp://b/T/bar%2Cbaz,entry=e",
	} {
		n := MustParse(s)
		l, err := n.Locator()
		require.NoError(t, err, s)
		back, err := FromLocator(l)
		require.NoError(t, err, s)
		assert.Equal(t, n.Resource(), back.Resource(), s)
		require.Len(t, back.Directives, len(n.Directives), s)
		for i, d := range n.Directives {
			assert.Equal(t, d.Key, back.Directives[i].Key, s)
			if d.Key == DirectiveAlt {
				// The alt comes back as a name, escaped as names are.
				assert.True(t, Same(d.Value, back.Directives[i].Value), "%s: alt %q came back as %q", s, d.Value, back.Directives[i].Value)
			} else {
				assert.Equal(t, d.Value, back.Directives[i].Value, s)
			}
		}
	}
	l, err := MustParse("xdstp://a/T/foo#alt=xdstp://b/T/bar%2Cbaz").Locator()
	require.NoError(t, err)
	assert.Equal(t, "bar,baz", l.GetDirectives()[0].GetAlt().GetId())
}

// FromLocator refuses what no name can say: a directive given twice
// (XDSTP-9), an empty one, another scheme, no type or id.
func TestFromLocatorRejects(t *testing.T) {
	entry := &xdscore.ResourceLocator_Directive{Directive: &xdscore.ResourceLocator_Directive_Entry{Entry: "e"}}
	for name, l := range map[string]*xdscore.ResourceLocator{
		"nil":         nil,
		"http":        {Scheme: xdscore.ResourceLocator_HTTP, ResourceType: "T", Id: "x"},
		"no type":     {Id: "x"},
		"no id":       {ResourceType: "T"},
		"entry twice": {ResourceType: "T", Id: "x", Directives: []*xdscore.ResourceLocator_Directive{entry, entry}},
		"empty":       {ResourceType: "T", Id: "x", Directives: []*xdscore.ResourceLocator_Directive{{}}},
		"bad alt":     {ResourceType: "T", Id: "x", Directives: []*xdscore.ResourceLocator_Directive{{Directive: &xdscore.ResourceLocator_Directive_Alt{Alt: &xdscore.ResourceLocator{}}}}},
	} {
		_, err := FromLocator(l)
		assert.Error(t, err, name)
	}
}
