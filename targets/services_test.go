package targets_test

import (
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// only registers on g the services keep accepts, with the methods of each
// it accepts: a server that serves a subset of xDS, as a real one may
// (Consul serves delta ADS only, a small control plane ADS alone).
type only struct {
	g    *grpc.Server
	keep func(service, method string) bool
}

func (o only) RegisterService(d *grpc.ServiceDesc, impl any) {
	cp := *d
	cp.Streams = slices.DeleteFunc(slices.Clone(d.Streams), func(s grpc.StreamDesc) bool { return !o.keep(d.ServiceName, s.StreamName) })
	if len(cp.Streams) > 0 {
		o.g.RegisterService(&cp, impl)
	}
}

// partial serves the reference server's xDS methods that keep accepts,
// and gRPC reflection when asked, on a fresh port.
func partial(t *testing.T, withReflection bool, keep func(service, method string) bool) string {
	t.Helper()
	g := grpc.NewServer()
	refserver.New().Register(only{g, keep})
	if withReflection {
		reflection.Register(g)
	}
	return serve(t, g)
}

// pair is a scenario of the server role that needs types, as the catalogue
// declares them.
func pair(types ...wire.Type) *engine.Scenario {
	sc := &engine.Scenario{ID: "server/probe/x"}
	for _, ty := range types {
		sc.Needs = append(sc.Needs, targets.NeedType(ty))
	}
	return sc
}

// TestStartServer_ProbesServices checks that a target started without a
// fixture is asked which discovery methods it serves, and that the pairs
// that would open a method it does not serve are skipped with the method
// and what the target answered, while the others run.
func TestStartServer_ProbesServices(t *testing.T) {
	adsOnly := func(service, _ string) bool { return service == wire.ADSService }
	deltaADS := func(service, method string) bool { return method == wire.ADSDeltaMethod }
	edsPerType := func(service, method string) bool {
		return service == wire.Endpoint.Service || service == wire.ADSService && method == wire.ADSSotWMethod
	}
	const (
		sotwADS   = "envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources"
		deltaCDS  = "envoy.service.cluster.v3.ClusterDiscoveryService/DeltaClusters"
		sotwLDS   = "envoy.service.listener.v3.ListenerDiscoveryService/StreamListeners"
		unimpl    = "(Unimplemented)"
		reflected = "(not listed by its gRPC reflection)"
	)
	for _, tc := range []struct {
		name       string
		addr       string
		serves     string
		sc         *engine.Scenario
		v          wire.Variant
		skip, also string // "": runs
	}{
		{"ADS only: ADS runs", partial(t, false, adsOnly), "sotw-ads, delta-ads", pair(wire.Endpoint), wire.DeltaADS, "", ""},
		{"ADS only: per-type skipped", partial(t, false, adsOnly), "sotw-ads, delta-ads", pair(wire.Listener), wire.SotWPerType,
			"the target does not serve " + sotwLDS, unimpl},
		{"ADS only, reflection: per-type skipped", partial(t, true, adsOnly), "sotw-ads, delta-ads", pair(wire.Cluster), wire.DeltaPerType,
			"the target does not serve " + deltaCDS, reflected},
		{"delta ADS only: SotW ADS skipped", partial(t, true, deltaADS), "delta-ads", pair(wire.Endpoint), wire.SotWADS,
			"the target does not serve " + sotwADS, unimpl},
		{"delta ADS only: a scenario naming no type", partial(t, false, deltaADS), "delta-ads", pair(), wire.DeltaPerType,
			"the target serves no per-type delta discovery service", unimpl},
		{"EDS per-type: EDS runs", partial(t, false, edsPerType), "sotw-ads, sotw-pertype (EDS), delta-pertype (EDS)", pair(wire.Endpoint), wire.SotWPerType, "", ""},
		{"EDS per-type: CDS and EDS skipped for CDS", partial(t, false, edsPerType), "sotw-ads, sotw-pertype (EDS), delta-pertype (EDS)", pair(wire.Cluster, wire.Endpoint), wire.DeltaPerType,
			"the target does not serve " + deltaCDS, unimpl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: tc.addr, ConnectTimeout: patient})
			require.NoError(t, err)
			defer s.Close()
			require.NotNil(t, s.Services())
			assert.Equal(t, tc.serves, s.Services().String())
			got := s.Lacks(tc.sc, tc.v)
			if tc.skip == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.skip)
			assert.Contains(t, got, tc.also)
		})
	}

	t.Run("with a fixture, its claims decide", func(t *testing.T) {
		g := grpc.NewServer()
		ref := refserver.New()
		ref.Register(only{g, adsOnly})
		fixturepb.RegisterFixtureServer(g, ref.FixtureServer())
		addr := serve(t, g)
		s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: addr, Fixture: addr, ConnectTimeout: patient})
		require.NoError(t, err)
		defer s.Close()
		assert.Nil(t, s.Services(), "no probe beyond the first served method")
		assert.Empty(t, s.Lacks(pair(wire.Listener), wire.SotWPerType), "the fixture claims every variant")
	})
}

// TestStartServer_NoXDS checks that a target that serves no discovery
// service is a configuration error (ErrNoXDS, not ErrUnreachable) whose
// one line says what answered instead.
func TestStartServer_NoXDS(t *testing.T) {
	fixtureReflecting := grpc.NewServer()
	fixturepb.RegisterFixtureServer(fixtureReflecting, refserver.New().FixtureServer())
	reflection.Register(fixtureReflecting)
	evil := grpc.NewServer()
	evil.RegisterService(&grpc.ServiceDesc{ServiceName: "evil\x1b[2J.Service", HandlerType: (*any)(nil)}, struct{}{})
	reflection.Register(evil)

	// An HTTP/2 server that is no gRPC server: a web server with
	// cleartext HTTP/2 on.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	web := &http.Server{Handler: http.NotFoundHandler(), Protocols: new(http.Protocols)}
	web.Protocols.SetUnencryptedHTTP2(true)
	go func() { _ = web.Serve(lis) }()
	t.Cleanup(func() { _ = web.Close() })

	for _, tc := range []struct {
		name   string
		target string
		cause  []string
	}{
		{"fixture port with reflection", serve(t, fixtureReflecting), []string{"serves no xDS service",
			"its gRPC reflection lists no discovery service, only grpc.reflection.v1.ServerReflection, grpc.reflection.v1alpha.ServerReflection, xdsconform.fixture.v1.Fixture",
			`it serves the fixture API (server "xdsconform reference server"): give this address as --fixture and the xDS port as --target`}},
		{"a name that is not a name", serve(t, evil), []string{`"evil\x1b[2J.Service"`}},
		{"HTTP/2 without gRPC", lis.Addr().String(), []string{"is an HTTP/2 server but not a gRPC one", "404"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: tc.target, ConnectTimeout: patient})
			t.Log(err)
			require.ErrorIs(t, err, targets.ErrNoXDS)
			assert.NotErrorIs(t, err, targets.ErrUnreachable)
			for _, c := range tc.cause {
				assert.Contains(t, err.Error(), c)
			}
			assert.NotContains(t, err.Error(), "\x1b", "nothing the target names reaches the line unescaped")
			assert.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one line")
		})
	}
}
