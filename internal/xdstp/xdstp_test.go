package xdstp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAndCanonicalForm(t *testing.T) {
	for _, tc := range []struct{ in, canonical string }{
		{"xdstp://auth/envoy.config.listener.v3.Listener/foo", "xdstp://auth/envoy.config.listener.v3.Listener/foo"},
		{"xdstp:///envoy.config.listener.v3.Listener/foo/bar", "xdstp:///envoy.config.listener.v3.Listener/foo/bar"},
		// XDSTP-3: context parameters sorted by key.
		{"xdstp://a/T/foo?b=2&a=1", "xdstp://a/T/foo?a=1&b=2"},
		// Escapes normalised: a space and a '?' in the id stay encoded, an
		// escaped unreserved character is written as it is.
		{"xdstp://a/T/my%20svc%3F%7e", "xdstp://a/T/my%20svc%3F~"},
		{"xdstp://a/T/foo/*?x=y", "xdstp://a/T/foo/*?x=y"},
		// XDSTP-9: a ',' inside a directive value stays encoded.
		{"xdstp://a/T/foo#alt=xdstp://b/T/bar%2Cbaz,entry=e", "xdstp://a/T/foo#alt=xdstp://b/T/bar%2Cbaz,entry=e"},
	} {
		got, err := Canonical(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.canonical, got, tc.in)
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{
		"udpa://a/T/foo",
		"xdstp://a/T",
		"xdstp://a//foo",
		"xdstp://a/T/foo?a=1&a=2",
		"xdstp://a/T/foo#alt=x,alt=y", // XDSTP-9: each directive once
		"xdstp://a/T/foo#ref=x",
		"xdstp://a/T/foo#",
		"xdstp://a/T/fo%zz",
	} {
		_, err := Parse(in)
		assert.Error(t, err, in)
	}
}

func TestSame(t *testing.T) {
	assert.True(t, Same("xdstp://a/T/foo?b=2&a=1", "xdstp://a/T/foo?a=1&b=2"))
	assert.True(t, Same("xdstp://a/T/foo#entry=x", "xdstp://a/T/foo"))
	assert.False(t, Same("xdstp://a/T/foo?a=1", "xdstp://a/T/foo"))
	assert.False(t, Same("xdstp://a/T/foo", "xdstp://b/T/foo"))
	assert.False(t, Same("foo", "foo"), "opaque names are not xdstp names")
}

func TestGlobs(t *testing.T) {
	g := MustParse("xdstp://a/T/foo/*?p=1")
	assert.True(t, g.IsGlob())
	assert.False(t, g.IsURN())
	assert.True(t, MustParse("xdstp://a/T/foo/bar?p=1").InGlob(g))
	assert.False(t, MustParse("xdstp://a/T/foo/bar").InGlob(g), "context parameters must match exactly")
	assert.False(t, MustParse("xdstp://a/T/foo/bar/baz?p=1").InGlob(g), "one level below the glob's path")
	assert.False(t, MustParse("xdstp://a/T/foobar?p=1").InGlob(g))
	assert.Equal(t, g.String(), MustParse("xdstp://a/T/foo/bar?p=1").Glob().String())
	assert.True(t, MustParse("xdstp://a/T/x").InGlob(MustParse("xdstp://a/T/*")))
}

func TestReserved(t *testing.T) {
	n := MustParse("xdstp://a/T/foo?xds.resource.listening_address=1.2.3.4:80&env=prod&v=%2Bx")
	assert.Equal(t, []string{"xds.resource.listening_address"}, n.ReservedParams())
	assert.Equal(t, []string{"v"}, n.ReservedValues())
	assert.Equal(t, "type.googleapis.com/T", n.TypeURL())
}
