package refclient

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

// fedClient is a client that is not started, for the pure federation
// logic of xdstp.go.
func fedClient(faults ...Fault) *Client {
	c := &Client{
		cfg: Config{ServerAddr: "127.0.0.1:1", Authorities: map[string]Authority{
			"a.test": {Server: "127.0.0.1:2"},
			"b.test": {Server: "127.0.0.1:2", ListenerTemplate: "xdstp://b.test/envoy.config.listener.v3.Listener/tmpl/%s"},
			"c.test": {},
		}, DefaultListenerTemplate: "xdstp://c.test/envoy.config.listener.v3.Listener/%s"},
		faults: map[Fault]bool{},
		res:    map[string]map[string]*resState{},
	}
	for _, f := range faults {
		c.faults[f] = true
	}
	return c
}

// Targets become listener names through the templates of gRFC A47, the
// name percent-encoded in an xdstp template (XDSTP-15).
func TestTargetListener(t *testing.T) {
	for _, tc := range []struct {
		target, want string
		faults       []Fault
	}{
		{"xds:///svc", "xdstp://c.test/envoy.config.listener.v3.Listener/svc", nil},
		{"xds:///a%20b%3Fc", "xdstp://c.test/envoy.config.listener.v3.Listener/a%20b%3Fc", nil},
		{"xds:///a%20b%3Fc", "xdstp://c.test/envoy.config.listener.v3.Listener/a b?c", []Fault{FaultTemplateNotEncoded}},
		{"xds://a.test/x/y", "xdstp://a.test/envoy.config.listener.v3.Listener/x/y", nil},
		{"xds://b.test/svc", "xdstp://b.test/envoy.config.listener.v3.Listener/tmpl/svc", nil},
	} {
		c := fedClient(tc.faults...)
		c.cfg.Target = tc.target
		got, err := c.targetListener()
		require.NoError(t, err, tc.target)
		assert.Equal(t, tc.want, got, tc.target)
	}
	c := fedClient()
	c.cfg.Target = "xds://nowhere.test/svc"
	_, err := c.targetListener()
	assert.ErrorContains(t, err, "XDSTP-13")
	c.cfg.DefaultListenerTemplate = ""
	c.cfg.Target = "xds:///plain"
	got, err := c.targetListener()
	require.NoError(t, err)
	assert.Equal(t, "plain", got, "no template means %s")
}

// Subscriptions are canonical and carry no directives (XDSTP-3, -8);
// delivered names match component by component (XDSTP-3) and exactly
// (XDSTP-5); each name goes to its authority's server (XDSTP-13), one
// group per server (XDSTP-14).
func TestXdstpNames(t *testing.T) {
	const loc = "xdstp://a.test/envoy.config.route.v3.RouteConfiguration/r?b=2&a=1#alt=xdstp://b.test/envoy.config.route.v3.RouteConfiguration/s"
	const canon = "xdstp://a.test/envoy.config.route.v3.RouteConfiguration/r?a=1&b=2"
	assert.Equal(t, canon, fedClient().subscriptionName(loc))
	assert.Contains(t, fedClient(FaultSendDirectives).subscriptionName(loc), "#alt=")
	assert.Equal(t, "udpa://a.test/envoy.config.route.v3.RouteConfiguration/r?a=1&b=2", fedClient(FaultUdpaScheme).subscriptionName(loc))
	assert.Equal(t, "plain", fedClient().subscriptionName("plain"))

	u := wire.Route.URL
	reordered := "xdstp://a.test/envoy.config.route.v3.RouteConfiguration/r?b=2&a=1"
	assert.Equal(t, canon, fedClient().deliveredName(u, reordered))
	assert.Equal(t, reordered, fedClient(FaultExactNameMatch).deliveredName(u, reordered))
	extra := "xdstp://a.test/envoy.config.route.v3.RouteConfiguration/r?a=1&b=2&c=3"
	c := fedClient(FaultIgnoreContextParams)
	c.res[u] = map[string]*resState{canon: {}}
	assert.Equal(t, canon, c.deliveredName(u, extra))
	c = fedClient()
	c.res[u] = map[string]*resState{canon: {}}
	assert.Equal(t, extra, c.deliveredName(u, extra))

	for _, tc := range []struct {
		name, group string
		ok          bool
		faults      []Fault
	}{
		{"plain", "127.0.0.1:1", true, nil},
		{canon, "127.0.0.1:2", true, nil},
		{"xdstp://b.test/envoy.config.cluster.v3.Cluster/c", "127.0.0.1:2", true, nil},
		{"xdstp://c.test/envoy.config.cluster.v3.Cluster/c", "127.0.0.1:1", true, nil},
		{"xdstp://nowhere.test/envoy.config.cluster.v3.Cluster/c", "", false, nil},
		{"xdstp://nowhere.test/envoy.config.cluster.v3.Cluster/c", "127.0.0.1:1", true, []Fault{FaultUnknownAuthorityToDefault}},
		{canon, "127.0.0.1:1", true, []Fault{FaultIgnoreAuthority}},
		{canon, "127.0.0.1:2#a.test", true, []Fault{FaultChannelPerAuthority}},
	} {
		g, _, ok := fedClient(tc.faults...).group(tc.name)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.group, g, "%s %v", tc.name, tc.faults)
	}

	assert.Error(t, fedClient().checkXdstpCluster("xdstp://a.test/envoy.config.cluster.v3.Cluster/c", ""))
	assert.NoError(t, fedClient().checkXdstpCluster("xdstp://a.test/envoy.config.cluster.v3.Cluster/c", "eds"))
	assert.NoError(t, fedClient().checkXdstpCluster("plain", ""))
	assert.NoError(t, fedClient(FaultXdstpClusterWithoutServiceName).checkXdstpCluster("xdstp://a.test/envoy.config.cluster.v3.Cluster/c", ""))
}

// Locators are split at ',' before their values are decoded (XDSTP-9);
// globs are recognised by their last segment (COLL-6).
func TestLocatorsAndGlobs(t *testing.T) {
	valid := "xdstp://a.test/envoy.config.endpoint.v3.ClusterLoadAssignment/e#alt=xdstp://a.test/envoy.config.endpoint.v3.ClusterLoadAssignment/s%2Cb"
	assert.NoError(t, fedClient().checkLocator(valid))
	assert.Error(t, fedClient(FaultDirectivesDecodedBeforeSplit).checkLocator(valid))
	assert.Error(t, fedClient().checkLocator("xdstp://a.test/envoy.config.endpoint.v3.ClusterLoadAssignment/e#alt=x,alt=y"))
	assert.NoError(t, fedClient().checkLocator("plain#not-a-locator"))

	assert.True(t, isGlob("xdstp://a.test/envoy.config.listener.v3.Listener/team/*"))
	assert.False(t, isGlob("xdstp://a.test/envoy.config.listener.v3.Listener/team/web"))
	assert.False(t, isGlob("plain/*"))
}
