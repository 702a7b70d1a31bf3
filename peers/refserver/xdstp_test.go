package refserver

import (
	"context"
	"testing"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

const xL = "xdstp://a/envoy.config.listener.v3.Listener/"

// SetResource refuses xdstp names no resource may have: another type's
// (XDSTP-2), a locator (XDSTP-10), and sets of a list collection, which
// is built from its members (COLL-1).
func TestSetRefusesBadXdstpNames(t *testing.T) {
	f := New().FixtureServer()
	for name, r := range map[string]*fixturepb.SetResourceRequest{
		"type segment": setReq(wire.Listener, "xdstp://a/envoy.config.cluster.v3.Cluster/x", 1),
		"glob":         setReq(wire.Listener, xL+"p/*", 1),
		"directive":    setReq(wire.Listener, xL+"x#entry=e", 1),
		"collection":   {NodeId: node, TypeUrl: wire.ListenerCollection.URL, Name: "xdstp://a/envoy.config.listener.v3.ListenerCollection/p"},
		"bad redirect": {NodeId: node, TypeUrl: wire.Listener.URL, Name: xL + "x", Redirect: "udpa://a/T/x"},
	} {
		_, err := f.SetResource(context.Background(), r)
		assert.Equal(t, codes.InvalidArgument, status.Code(err), "%s: %v", name, err)
	}
}

// A redirect is stored as the ResourceLocator of its target (REDIR-1).
func TestSetRedirect(t *testing.T) {
	s := New()
	_, err := s.FixtureServer().SetResource(context.Background(), &fixturepb.SetResourceRequest{
		NodeId: node, TypeUrl: wire.Listener.URL, Name: xL + "x", Redirect: "xdstp://b/envoy.config.listener.v3.Listener/y?k=v#alt=xdstp://c/envoy.config.listener.v3.Listener/z"})
	require.NoError(t, err)
	e := s.snapshot(node, wire.Listener.URL).resources[xL+"x"]
	require.NotNil(t, e)
	require.Equal(t, xdstp.LocatorTypeURL, e.res.GetTypeUrl())
	l := &xdscore.ResourceLocator{}
	require.NoError(t, e.res.UnmarshalTo(l))
	n, err := xdstp.FromLocator(l)
	require.NoError(t, err)
	assert.Equal(t, "xdstp://b/envoy.config.listener.v3.Listener/y?k=v", n.Resource())
	alt, _ := n.Directive(xdstp.DirectiveAlt)
	assert.True(t, xdstp.Same(alt, "xdstp://c/envoy.config.listener.v3.Listener/z"))
}

// A list collection lists the listeners one level below its path with
// exactly its context parameters, inlined under their leaf (COLL-1,
// COLL-3, XDSTP-11).
func TestCollectionSnapshot(t *testing.T) {
	s := New()
	f := s.FixtureServer()
	for _, n := range []string{xL + "p/a?env=prod", xL + "p/b?env=prod", xL + "q/c?env=prod", xL + "p/d?env=dev", "opaque"} {
		_, err := f.SetResource(context.Background(), setReq(wire.Listener, n, 1))
		require.NoError(t, err)
	}
	snap := s.snapshot(node, wire.ListenerCollection.URL)
	leaves := func(name string) []string {
		e := snap.resources[name]
		require.NotNil(t, e, name)
		lc := &listener.ListenerCollection{}
		require.NoError(t, e.res.UnmarshalTo(lc))
		var out []string
		for _, en := range lc.GetEntries() {
			assert.NotEmpty(t, en.GetInlineEntry().GetVersion())
			out = append(out, en.GetInlineEntry().GetName())
		}
		return out
	}
	const coll = "xdstp://a/envoy.config.listener.v3.ListenerCollection/"
	assert.Equal(t, []string{"a", "b"}, leaves(coll+"p?env=prod"))
	assert.Equal(t, []string{"d"}, leaves(coll+"p?env=dev"))
	assert.Equal(t, []string{"c"}, leaves(coll+"q?env=prod"))
	assert.Len(t, snap.resources, 3)
}

// A stream's view serves a stored xdstp resource under the name
// subscribed, its context parameters in the order written (XDSTP-3,
// XDSTP-4), and nothing for a name with other parameters (XDSTP-5) or
// another type segment (XDSTP-2).
func TestXdstpView(t *testing.T) {
	s := New()
	_, err := s.FixtureServer().SetResource(context.Background(), setReq(wire.Listener, xL+"x?a=1&b=2", 1))
	require.NoError(t, err)
	c := newConn(s, nil)
	c.node = node
	sub := xL + "x?b=2&a=1"
	others := []string{xL + "x", xL + "x?a=1", xL + "x?a=1&b=2&c=3", "xdstp://a/envoy.config.cluster.v3.Cluster/x?a=1&b=2"}
	v := c.xview(wire.Listener, s.snapshot(node, wire.Listener.URL), false, nameSet{sub: true}, others)
	e := v.resources[sub]
	require.NotNil(t, e)
	m, err := wire.Unpack(e.res)
	require.NoError(t, err)
	assert.Equal(t, sub, wire.NameOf(m), "served under the name as subscribed")
	for _, o := range others {
		assert.NotContains(t, v.resources, o)
	}
}
