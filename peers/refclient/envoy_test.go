package refclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/wire"
)

// Building blocks of the Envoy profile. Names: cluster C (endpoints C),
// listener L → route R.

// startEnvoy starts a reference client of the Envoy profile.
func startEnvoy(t *testing.T, v wire.Variant, mod func(*Config)) *harness {
	t.Helper()
	return start(t, v, func(c *Config) {
		c.Profile = ProfileEnvoy
		if mod != nil {
			mod(c)
		}
	})
}

// acceptCluster answers the wildcard cluster request with C at version 1
// (nonce c1), checks the ACK and the EDS subscription it triggers.
func acceptCluster(h *harness) {
	h.t.Helper()
	h.expectSubscribe(wire.Cluster) // the wildcard: no name
	h.send(wire.Cluster, "1", "c1", wire.ClientCluster("C", 1))
	h.expectAck(wire.Cluster, "1", "c1")
	h.expectSubscribe(wire.Endpoint, "C")
}

// acceptEndpoints sends C's endpoints at version and checks the ACK.
func acceptEndpoints(h *harness, version, nonce string) {
	h.t.Helper()
	h.send(wire.Endpoint, version, nonce, wire.ClientEndpoints("C", 1))
	h.expectAck(wire.Endpoint, version, nonce, "C")
}

// acceptEnvoyListener answers the wildcard listener request with the
// socket listener L → R at version 1 (nonce l1), checks the ACK and the
// RDS subscription it triggers.
func acceptEnvoyListener(h *harness) {
	h.t.Helper()
	h.expectSubscribe(wire.Listener)
	h.send(wire.Listener, "1", "l1", wire.EnvoyListener("L", "R", 1))
	h.expectAck(wire.Listener, "1", "l1")
	h.expectSubscribe(wire.Route, "R")
}

// acceptEnvoyChain is acceptEnvoyListener, then the route R → C at
// version 1 (nonce r1), ACKed: listener L in use.
func acceptEnvoyChain(h *harness) {
	h.t.Helper()
	acceptEnvoyListener(h)
	h.send(wire.Route, "1", "r1", wire.ClientRoute("R", "C", 1))
	h.expectAck(wire.Route, "1", "r1", "R")
}

// eachEnvoyVariant runs body once per variant, in parallel subtests, each
// against a fresh client of the Envoy profile.
func eachEnvoyVariant(t *testing.T, body func(t *testing.T, v wire.Variant, h *harness)) {
	t.Helper()
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			t.Parallel()
			body(t, v, startEnvoy(t, v, nil))
		})
	}
}

// observe reads the client's /config_dump?include_eds through the admin
// observer, keyed "CDS/name".
func observe(h *harness) map[string]string {
	h.t.Helper()
	o := observer.NewConfigDump(h.c.AdminAddr())
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	rs, err := o.Observe(ctx)
	require.NoError(h.t, err)
	out := map[string]string{}
	for _, r := range rs {
		typ, ok := wire.TypeByURL(r.TypeURL)
		require.True(h.t, ok, r.TypeURL)
		out[typ.Short+"/"+r.Name] = fmt.Sprintf("%s %s", r.State, r.Version)
	}
	return out
}

func TestEnvoyProfileValidation(t *testing.T) {
	_, err := Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Listener: "L", Profile: "istio"})
	assert.ErrorContains(t, err, `unknown profile "istio"`)
	_, err = Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Listener: "L", Faults: []Fault{FaultNoWarming}})
	assert.ErrorContains(t, err, "no-warming acts in the envoy profile only")
	for _, f := range AllFaults {
		assert.Equal(t, envoyFaults[f], f.Profile() == ProfileEnvoy, f)
	}
	c, err := Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Listener: "L"})
	require.NoError(t, err)
	defer c.Close()
	assert.Empty(t, c.AdminAddr(), "the gRPC profile serves no admin interface")
}

// Listeners and clusters are asked for by wildcard and taken whatever
// their names; routes and endpoints by name, following the references of
// socket and API listeners and of EDS clusters.
func TestEnvoyWildcardFollowsReferences(t *testing.T) {
	eachEnvoyVariant(t, func(t *testing.T, v wire.Variant, h *harness) {
		acceptCluster(h)
		acceptEnvoyListener(h)
		// An API listener is taken too; SotW restates L.
		h.send(wire.Listener, "2", "l2", wire.EnvoyListener("L", "R", 1), wire.ClientListener("A", "RA", 1))
		h.expectAck(wire.Listener, "2", "l2")
		want := []string{"R", "RA"}
		if v.IsDelta() {
			want = []string{"RA"} // the change only
		}
		assert.Equal(t, want, h.next(wire.Route).Names)
		assert.Equal(t, "REQUESTED 2", statusOf(h, wire.Listener, "A"), "A warms until RA comes")
	})
}

// On a new delta stream the wildcard is declared again in the legacy form,
// with the versions held (WILD-7); SotW restates it with the last version
// accepted.
func TestEnvoyWildcardAfterReconnect(t *testing.T) {
	eachEnvoyVariant(t, func(t *testing.T, v wire.Variant, h *harness) {
		acceptCluster(h)
		acceptEndpoints(h, "1", "e1")
		h.closeStreams(nil)
		r := h.next(wire.Cluster)
		assert.Nil(t, r.Names)
		assert.Nil(t, r.Unsub)
		if v.IsDelta() {
			assert.Equal(t, map[string]string{"C": "1"}, r.IRV)
		} else {
			assert.Equal(t, "1", r.Version)
		}
		assert.Equal(t, []string{"C"}, h.next(wire.Endpoint).Names)
	})
}

// A cluster warms until its endpoints arrive, a listener until its route
// does (WARM-1); an updated cluster warms until fresh endpoints arrive,
// the old version staying in use (WARM-2). The status views agree.
func TestEnvoyWarming(t *testing.T) {
	eachEnvoyVariant(t, func(t *testing.T, v wire.Variant, h *harness) {
		acceptCluster(h)
		assert.Equal(t, "REQUESTED 1", statusOf(h, wire.Cluster, "C"))
		assert.Equal(t, "REQUESTED 1", observe(h)["CDS/C"], "listed under dynamic_warming_clusters")
		acceptEndpoints(h, "1", "e1")
		assert.Equal(t, "ACKED 1", statusOf(h, wire.Cluster, "C"))

		acceptEnvoyListener(h)
		assert.Equal(t, "REQUESTED 1", statusOf(h, wire.Listener, "L"))
		assert.Equal(t, "REQUESTED 1", observe(h)["LDS/L"], "listed with a warming_state only")
		h.send(wire.Route, "1", "r1", wire.ClientRoute("R", "C", 1))
		h.expectAck(wire.Route, "1", "r1", "R")
		assert.Equal(t, "ACKED 1", statusOf(h, wire.Listener, "L"))

		h.send(wire.Cluster, "2", "c2", wire.ClientCluster("C", 2))
		h.expectAck(wire.Cluster, "2", "c2")
		if v == wire.SotWADS {
			// As Envoy: the same EDS request again, for fresh endpoints.
			again := h.next(wire.Endpoint)
			assert.Equal(t, treq{TypeURL: wire.Endpoint.URL, Names: []string{"C"}, Version: "1", Nonce: "e1", Seq: again.Seq}, again)
		}
		assert.Equal(t, "ACKED 1", statusOf(h, wire.Cluster, "C"), "version 1 stays in use")
		assert.Equal(t, "ACKED 1", observe(h)["CDS/C"], "active 1, warming 2")
		acceptEndpoints(h, "2", "e2")
		assert.Equal(t, "ACKED 2", statusOf(h, wire.Cluster, "C"))
		// Restating the cluster unchanged warms nothing.
		h.send(wire.Cluster, "3", "c3", wire.ClientCluster("C", 2))
		h.expectAck(wire.Cluster, "3", "c3")
		assert.Equal(t, "ACKED 3", statusOf(h, wire.Cluster, "C"))
	})
}

// Warming ends when the initial fetch timeout fires, endpoints or not.
func TestEnvoyWarmingTimesOut(t *testing.T) {
	h := startEnvoy(t, wire.DeltaADS, func(c *Config) { c.DNETimeout = 200 * time.Millisecond })
	acceptCluster(h)
	acceptEnvoyListener(h)
	for _, typ := range []wire.Type{wire.Cluster, wire.Listener} {
		_, ok := h.waitCSDS(typ, map[string]string{"CDS": "C", "LDS": "L"}[typ.Short], time.Second, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
			return g.GetClientStatus().String() == "ACKED"
		})
		assert.True(t, ok, "%s in use after the timeout", typ.Short)
	}
}

// The config dump reads back as the CSDS view: warming, rejected and
// deleted resources included; endpoints only with include_eds.
func TestEnvoyConfigDump(t *testing.T) {
	h := startEnvoy(t, wire.SotWADS, nil)
	acceptCluster(h)
	acceptEndpoints(h, "1", "e1")
	acceptEnvoyChain(h)
	// C updated and warming; D new, warming; E deleted by omission later.
	h.send(wire.Cluster, "2", "c2", wire.ClientCluster("C", 2), wire.ClientCluster("D", 1), wire.ClientCluster("E", 1))
	h.expectAck(wire.Cluster, "2", "c2")
	h.send(wire.Cluster, "3", "c3", wire.ClientCluster("C", 2), wire.ClientCluster("D", 1))
	h.expectAck(wire.Cluster, "3", "c3")
	// The route rejected: version 1 stays.
	h.send(wire.Route, "2", "r2", wire.RouteWithVHDS("R", 2))
	h.expectNack(wire.Route, "r2")

	want := map[string]string{
		"CDS/C": "ACKED 1", "CDS/D": "REQUESTED 3",
		"EDS/C": "ACKED 1",
		"LDS/L": "ACKED 1",
		"RDS/R": "NACKED 1",
	}
	assert.Equal(t, want, observe(h))
	csds := map[string]string{}
	for k, g := range h.csds() {
		if g.GetClientStatus().String() != "REQUESTED" || g.GetVersionInfo() != "" {
			csds[k] = g.GetClientStatus().String() + " " + g.GetVersionInfo()
		}
	}
	assert.Equal(t, want, csds, "CSDS shows the same, less what was only asked for")

	resp, err := http.Get("http://" + h.c.AdminAddr() + "/config_dump")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	rs, err := observer.ParseConfigDump(body)
	require.NoError(t, err)
	for _, r := range rs {
		assert.NotEqual(t, wire.Endpoint.URL, r.TypeURL, "no endpoints without include_eds")
	}
	// Envoy's field names, and the extensions inside resources in full.
	assert.Regexp(t, `"dynamic_warming_clusters":\s+\[`, string(body))
	assert.Regexp(t, `"error_state":\s+\{`, string(body))
	assert.Regexp(t, `"@type":\s+"type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"`, string(body))
}

// A route with vhds makes a delta client subscribe to the VirtualHost of
// the host it models a request to; a SotW client rejects it, VirtualHosts
// existing only in delta xDS (STREAM-10).
func TestEnvoyVHDS(t *testing.T) {
	eachEnvoyVariant(t, func(t *testing.T, v wire.Variant, h *harness) {
		acceptEnvoyListener(h)
		h.send(wire.Route, "1", "r1", wire.RouteWithVHDS("R", 1))
		if !v.IsDelta() {
			assert.Contains(t, h.expectNack(wire.Route, "r1").Err.GetMessage(), "vhds needs the incremental protocol")
			return
		}
		h.expectAck(wire.Route, "1", "r1")
		h.expectSubscribe(wire.VirtualHost, "R/L")
		h.send(wire.VirtualHost, "1", "v1", wire.VHDSVirtualHost("R/L", "C", 1))
		h.expectAck(wire.VirtualHost, "1", "v1")
		assert.Equal(t, "ACKED 1", statusOf(h, wire.VirtualHost, "R/L"))
		assert.Equal(t, "ACKED 1", statusOf(h, wire.Listener, "L"))
	})
}

// A resource carrying an extension this binary does not know still shows
// in the dump, the extension by its @type alone.
func TestEnvoyConfigDumpUnknownExtension(t *testing.T) {
	h := startEnvoy(t, wire.DeltaADS, nil)
	l := wire.EnvoyListener("L", "R", 1)
	l.FilterChains[0].Filters = append(l.FilterChains[0].Filters, &listener.Filter{Name: "acme",
		ConfigType: &listener.Filter_TypedConfig{TypedConfig: &anypb.Any{TypeUrl: "type.googleapis.com/acme.Unknown", Value: []byte{0x0a, 0x01, 'x'}}}})
	h.expectSubscribe(wire.Listener)
	h.send(wire.Listener, "1", "l1", l)
	h.expectAck(wire.Listener, "1", "l1")
	assert.Equal(t, "REQUESTED 1", observe(h)["LDS/L"])
}
