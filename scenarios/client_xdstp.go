package scenarios

import (
	"maps"
	"slices"
	"strings"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Federation in the client role (xRFC TP1, gRFC A47): the client is
// pointed at xdstp:// names through its bootstrap's authorities, each
// authority served by a fake management server of its own where the
// scenario needs to see which server the client picks (XDSTP-13).

// The authorities of the scenarios. They are the same in every pair:
// names stay the pair's own through their ids (T.Name), and each pair
// has servers of its own.
const (
	authA       = "a.xdsconform.test"
	authB       = "b.xdsconform.test"
	authC       = "c.xdsconform.test"
	authUnknown = "unknown.xdsconform.test" // in no bootstrap
)

// xname is the xdstp name of the resource of type t called id at
// authority, with context parameters params written as given ("k=v").
func xname(authority string, t wire.Type, id string, params ...string) string {
	n := xdstp.Scheme + authority + "/" + strings.TrimPrefix(t.URL, xdstp.TypePrefix) + "/" + id
	if len(params) > 0 {
		n += "?" + strings.Join(params, "&")
	}
	return n
}

// F is a federation scenario in progress: the client-role scenario C,
// whose Srv is the default server (and the server of authority A), and
// the servers of the other authorities.
type F struct {
	*C
	// On are the scenario's views of the other authorities' servers, by
	// authority: C's steps, talking to that server.
	On map[string]*C
}

// fedSetup says what a federation scenario's client is told: the
// authorities and which have a server of their own, the chain's names,
// the target and the default listener template.
type fedSetup struct {
	// own are the authorities served by a fake server of their own; every
	// other authority in shared is served by the default server.
	own, shared []string
	// names renames the chain (n.L, n.R, n.CL) before the launch; t.Name
	// keeps names the pair's own.
	names func(t *engine.T, n *chain)
	// target and template, when set, go into the launch (gRFC A47).
	target, template func(t *engine.T) string
}

// chain are the names of a client-role scenario's chain (C.L, C.R, C.CL).
type chain struct{ L, R, CL string }

// federated starts a federation scenario: the default server, one more
// per authority in s.own, a client whose bootstrap maps each authority to
// its server.
func federated(t *engine.T, s fedSetup) *F {
	target, ok := t.Env.(*targets.Clients)
	if !ok {
		t.Abortf("client scenario run without a client target (env %T)", t.Env)
	}
	// The chain's names as client gives them, renamed.
	n := chain{L: t.Name("listener"), R: t.Name("route"), CL: t.Name("cluster")}
	if s.names != nil {
		s.names(t, &n)
	}
	servers := map[string]*fakeserver.Server{}
	c := NewCWith(t, func(spec *targets.LaunchSpec) {
		spec.Listener = n.L
		for _, a := range s.shared {
			spec.Authorities = append(spec.Authorities, bootstrap.Authority{Name: a, ServerAddr: spec.ServerAddr})
		}
		for _, a := range s.own {
			// Started before the client, so closed after it.
			srv, err := fakeserver.Start(fakeserver.Options{Variant: t.Variant,
				Timeout: t.Timeouts.Expect, Quiet: t.Timeouts.Quiet, Transcript: t.Transcript,
				MaxRecvSize: target.Options().MaxRecvSize, OnSend: t.SentToTarget})
			if err != nil {
				t.Abortf("starting the server of authority %s: %v", a, err)
			}
			t.Cleanup(srv.Close)
			t.AfterRun(func(t *engine.T) {
				for _, v := range srv.Violations() {
					t.Errorf("%s", v)
				}
			})
			servers[a] = srv
			spec.Authorities = append(spec.Authorities, bootstrap.Authority{Name: a, ServerAddr: srv.Addr()})
		}
		if s.target != nil {
			spec.Target = s.target(t)
		}
		if s.template != nil {
			spec.DefaultListenerTemplate = s.template(t)
		}
	})
	c.L, c.R, c.CL = n.L, n.R, n.CL
	f := &F{C: c, On: map[string]*C{}}
	for a, srv := range servers {
		// C's steps, talking to the authority's server.
		on := *c
		on.Srv, on.after = srv, map[string]int{}
		f.On[a] = &on
	}
	return f
}

// fed is cli for federation scenarios.
func fed(s fedSetup, body func(f *F)) func(*engine.T) {
	return func(t *engine.T) { body(federated(t, s)) }
}

// serve serves one hop on c's server: waits for the subscription to
// name, answers with res at version "1" and expects the ACK.
func (c *C) serve(t wire.Type, name string, res proto.Message) {
	c.AwaitSubscribed(t, name)
	c.ExpectAck(t, c.Respond(t, "1", res), "1")
}

// edsCluster is the chain's cluster named name, its endpoints named by
// service_name as gRFC A47 asks of xdstp clusters (XDSTP-16); an empty
// service leaves it out.
func edsCluster(name, service string) *cluster.Cluster {
	cl := wire.ClientCluster(name, 1)
	cl.EdsClusterConfig.ServiceName = service
	return cl
}

// xdstpNeeds are the needs of every federation scenario: the feature,
// and a client the harness configures (its bootstrap carries the
// authorities).
var xdstpNeeds = []engine.Need{targets.NeedClientFeature(targets.ClientFeatureXdstp), targets.NeedFreshClient}

// xdstpChain names the whole chain at authority A, served by the default
// server: the client is pointed at xds://A/<listener>.
var xdstpChain = fedSetup{
	shared: []string{authA},
	names: func(t *engine.T, n *chain) {
		n.L = xname(authA, LDS, t.Name("listener"))
		n.R = xname(authA, RDS, t.Name("route"))
		n.CL = xname(authA, CDS, t.Name("cluster"))
	},
	target: func(t *engine.T) string { return "xds://" + authA + "/" + t.Name("listener") },
}

// xdstp_protocol (TP1) §URI-based xDS resource names, §Normalization;
// gRFC A47 §Bootstrap Config Changes, §Server Channel Map, §CDS.
var clientXdstpScenarios = []*engine.Scenario{
	{
		ID:           "client/ack/versions-per-server",
		Title:        "Each management server's requests carry the version last accepted from that server, and the same version from two servers is applied from each",
		Requirements: []string{"VER-3"},
		Level:        results.Must,
		// SotW: a delta request carries no version of the type to echo
		// (each resource has its own, VER-6), so a version shared across
		// servers would not show on the wire.
		Variants: sotw,
		// Several servers: the harness can point a client at two only
		// through the bootstrap's authorities, so federation is needed.
		Needs: append(slices.Clip(xdstpNeeds), targets.NeedObserver),
		Run: fed(fedSetup{own: []string{authB, authC}}, func(f *F) {
			b, cc := f.On[authB], f.On[authC]
			// The route names three clusters: an old-style one, of the
			// default server, one of authority B, of B's server, and one
			// of authority C, of C's. So three servers serve the client
			// clusters, each with versions of its own; two of them are
			// not the default one, whose streams a client must not mix up
			// either.
			clB, clC := xname(authB, CDS, f.Name("cluster")), xname(authC, CDS, f.Name("cluster"))
			edsB, edsC := xname(authB, EDS, f.Name("endpoints")), xname(authC, EDS, f.Name("endpoints"))
			// An xdstp cluster names its endpoints (XDSTP-16).
			clusterAt := func(name string, rev int) *cluster.Cluster {
				cl := wire.ClientCluster(name, rev)
				switch name {
				case clB:
					cl.EdsClusterConfig.ServiceName = edsB
				case clC:
					cl.EdsClusterConfig.ServiceName = edsC
				}
				return cl
			}
			f.Chain(LDS)
			ask, ack := f.precondition("RES-1"), f.precondition(chainAckRule)
			ask.AwaitSubscribed(RDS, f.R)
			ack.ExpectAck(RDS, ack.Respond(RDS, "1", wire.ClientRoutes(f.R, 1, f.CL, clB, clC)), "1")
			ask.AwaitSubscribed(CDS, f.CL)
			b.precondition("XDSTP-13").AwaitSubscribed(CDS, clB)
			cc.precondition("XDSTP-13").AwaitSubscribed(CDS, clC)

			a, onB, onC := f.Checking("VER-3"), b.Checking("VER-3"), cc.Checking("VER-3")
			const onA, toB, toC = "the default server", "the server of authority " + authB, "the server of authority " + authC
			// Each row is a response of one server and what the client
			// must answer: version "1" from all three, with different
			// content, applied from each; then each server's versions
			// apart from the others' (B's going back to "0" after A's
			// "2"), each NACK carrying the version last accepted from its
			// own server.
			type step struct {
				on      *C
				server  string // which server on is, in words
				name    string
				version string
				rev     int
				invalid bool
				want    string // the version the reply carries
				other   string // another server's last accepted version
			}
			for _, st := range []step{
				{on: a, server: onA, name: f.CL, version: "1", rev: 1, want: "1"},
				{on: onB, server: toB, name: clB, version: "1", rev: 5, want: "1"},
				{on: onC, server: toC, name: clC, version: "1", rev: 8, want: "1"},
				{on: a, server: onA, name: f.CL, version: "2", rev: 2, want: "2", other: "1"},
				{on: onB, server: toB, name: clB, version: "7", invalid: true, want: "1", other: "2"},
				{on: onC, server: toC, name: clC, version: "3", rev: 9, want: "3", other: "2"},
				{on: onB, server: toB, name: clB, version: "0", rev: 6, want: "0", other: "3"},
				{on: onC, server: toC, name: clC, version: "8", invalid: true, want: "3", other: "0"},
				{on: a, server: onA, name: f.CL, version: "9", invalid: true, want: "2", other: "3"},
			} {
				if !st.invalid {
					st.on.ExpectAck(CDS, st.on.Respond(CDS, st.version, clusterAt(st.name, st.rev)), st.want)
					// Applied, from this server, whatever the others sent
					// at the same version.
					st.on.RequireConfig(st.on.AwaitAcked(CDS, st.name, st.want), clusterAt(st.name, st.rev))
					continue
				}
				r := st.on.ExpectNack(CDS, st.on.Respond(CDS, st.version, wire.InvalidCluster(st.name, 0)))
				switch got := r.Version(); {
				case got == st.want:
				case got == st.version:
					st.on.Checking("ACK-3").Fatalf("%s, to %s, NACKs with the rejected version %q: a NACK carries the version last accepted from this server, %q", r, st.server, got, st.want)
				case got == st.other:
					st.on.Fatalf("%s, to %s, NACKs with version %q, the version last accepted from another management server: versions are per server, and this one's last accepted version is %q", r, st.server, got, st.want)
				default:
					st.on.Fatalf("%s, to %s, NACKs with version %q; the version last accepted from this server is %q", r, st.server, got, st.want)
				}
			}
		}),
	},
	{
		ID:    "client/reconnect/initial-versions-per-server",
		Title: "Reconnecting to one management server, a delta client lists in initial_resource_versions what it holds from that server alone",
		// DELTA-6 with several servers: what the client holds from
		// another server is no version this server ever sent.
		Requirements: []string{"DELTA-6"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        xdstpNeeds,
		Run: fed(fedSetup{own: []string{authB}}, func(f *F) {
			b := f.On[authB]
			clB := xname(authB, CDS, f.Name("cluster"))
			edsB := xname(authB, EDS, f.Name("endpoints"))
			f.Chain(LDS)
			ask, ack := f.precondition("RES-1"), f.precondition(chainAckRule)
			ask.AwaitSubscribed(RDS, f.R)
			ack.ExpectAck(RDS, ack.Respond(RDS, "1", wire.ClientRoutes(f.R, 1, f.CL, clB)), "1")
			ask.AwaitSubscribed(CDS, f.CL)
			b.precondition("XDSTP-13").AwaitSubscribed(CDS, clB)
			ack.ExpectAck(CDS, ack.Respond(CDS, "1", f.Hop(CDS, 1)), "1")
			bAck := b.precondition(chainAckRule)
			clusterB := wire.ClientCluster(clB, 1)
			clusterB.EdsClusterConfig.ServiceName = edsB // XDSTP-16
			bAck.ExpectAck(CDS, bAck.Respond(CDS, "1", clusterB), "1")
			f.Restart(codes.Unavailable)
			r := f.Checking("DELTA-6").Expect(CDS)
			want := map[string]string{f.CL: f.V("1", f.CL)}
			if got := r.Delta.GetInitialResourceVersions(); len(got) != 0 && !maps.Equal(got, want) {
				f.Checking("DELTA-6").Fatalf("%s, to the default server, lists initial_resource_versions %v: it holds %v from this server; %s is of another server (authority %s)", r, got, want, clB, authB)
			}
		}),
	},
	{
		ID:           "client/xdstp/chain",
		Title:        "A chain named by xdstp names is asked for verbatim, on SotW and delta alike",
		Requirements: []string{"XDSTP-1", "XDSTP-18"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		Run: fed(xdstpChain, func(f *F) {
			eds := xname(authA, EDS, f.Name("endpoints"))
			// XDSTP-18: a client taking xdstp names asks for them whatever
			// the protocol.
			first := f.Checking("XDSTP-18").Expect(LDS)
			// XDSTP-1: the names go out as written: scheme xdstp, same
			// authority, type and id.
			for _, n := range first.Names() {
				if _, err := xdstp.Parse(n); err != nil {
					f.Checking("XDSTP-1").Fatalf("%s asks for %q, which is not an xdstp name: %v", first, n, err)
				}
			}
			require.Equal(f.Checking("XDSTP-1"), []string{f.L}, first.Names(), "%s should ask for the listener %s", first, f.L)
			f.ExpectAck(LDS, f.Respond(LDS, "1", wire.ClientListener(f.L, f.R, 1)), "1")
			f.Checking("XDSTP-1").serve(RDS, f.R, wire.ClientRoute(f.R, f.CL, 1))
			f.Checking("XDSTP-1").serve(CDS, f.CL, edsCluster(f.CL, eds))
			f.Checking("XDSTP-1").serve(EDS, eds, wire.ClientEndpoints(eds, 1))
		}),
	},
	{
		ID:           "client/xdstp/context-parameter-order",
		Title:        "A resource delivered with its context parameters in another order is the one asked for",
		Requirements: []string{"XDSTP-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		// Authority A has a server of its own, so that the check does not
		// rest on whether the client shares a channel (XDSTP-14).
		Run: fed(fedSetup{own: []string{authA}, names: func(t *engine.T, n *chain) {
			// The listener names its route with parameters out of order;
			// a client normalises them (sorts the keys).
			n.R = xname(authA, RDS, t.Name("route"), "zone=z1", "env=prod")
		}}, func(f *F) {
			f.Chain(LDS)
			a := f.On[authA]
			r := a.Expect(RDS)
			require.Len(f.Checking("XDSTP-3"), r.Names(), 1, "%s should ask for the route %s alone", r, f.R)
			asked := r.Names()[0]
			require.True(f.Checking("XDSTP-3"), xdstp.Same(asked, f.R), "%s should ask for %s, in any parameter order", r, f.R)
			// Delivered in the other order from the one asked for.
			delivered := xname(authA, RDS, f.Name("route"), "zone=z1", "env=prod")
			if strings.HasSuffix(asked, "env=prod") {
				delivered = xname(authA, RDS, f.Name("route"), "env=prod", "zone=z1")
			}
			a.ExpectAck(RDS, a.Respond(RDS, "1", wire.ClientRoute(delivered, f.CL, 1)), "1")
			// The client uses it: it follows the route to its cluster, an
			// old-style name, asked of the default server.
			f.Checking("XDSTP-3").AwaitSubscribed(CDS, f.CL)
		}),
	},
	{
		ID:           "client/xdstp/context-parameters-exact",
		Title:        "A resource with context parameters the subscription lacks is not the one asked for",
		Requirements: []string{"XDSTP-5"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        append(slices.Clip(xdstpNeeds), targets.NeedObserver),
		Run: fed(fedSetup{own: []string{authA}, names: func(t *engine.T, n *chain) {
			n.R = xname(authA, RDS, t.Name("route"))
		}}, func(f *F) {
			f.Chain(LDS)
			a := f.On[authA]
			a.AwaitSubscribed(RDS, f.R)
			other := xname(authA, RDS, f.Name("route"), "some=thing")
			a.Respond(RDS, "1", wire.ClientRoute(other, f.CL, 1))
			f.Checking("XDSTP-5").Never(RDS, f.R, "in use, from a resource named "+other, func(r observer.Resource) bool {
				return r.State == observer.Acked
			})
		}),
	},
	{
		ID:           "client/xdstp/authority-to-server",
		Title:        "Names of an authority are asked of that authority's server only",
		Requirements: []string{"XDSTP-13"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		Run: fed(fedSetup{own: []string{authB}, names: func(t *engine.T, n *chain) {
			n.R = xname(authB, RDS, t.Name("route"))
		}}, func(f *F) {
			// The listener, an old-style name, comes from the default
			// server; its route, of authority B, from B's.
			f.Chain(LDS)
			f.On[authB].Checking("XDSTP-13").serve(RDS, f.R, wire.ClientRoute(f.R, f.CL, 1))
			// The route's cluster, an old-style name, from the default
			// server again.
			f.AwaitSubscribed(CDS, f.CL)
		}),
	},
	{
		ID:           "client/xdstp/unknown-authority",
		Title:        "A name of an authority missing from the bootstrap is asked of no server, on no stream of its own",
		Requirements: []string{"XDSTP-13", "XDSTP-14"},
		Level:        results.Must,
		Variants:     ads,
		Needs:        xdstpNeeds,
		Run: fed(fedSetup{shared: []string{authA}, names: func(t *engine.T, n *chain) {
			n.R = xname(authUnknown, RDS, t.Name("route"))
		}}, func(f *F) {
			// The listener names the route: the unknown authority is an
			// error of that watch (gRFC A47), so a client that dies of it
			// before answering the listener breaks this rule. The listener
			// is what is checked, not a precondition: it is served here,
			// not by Chain, whose failures would block the pair.
			f.defaulting("RES-1").AwaitSubscribed(LDS, f.L)
			f.Checking("XDSTP-13").ExpectAck(LDS, f.Respond(LDS, "1", f.Hop(LDS, 1)), "1")
			ctx, cancel := f.untilExit()
			defer cancel()
			r, err := f.Stream(RDS).None(ctx, RDS)
			if err != nil {
				f.fail("watching for a route request: %v", err)
			}
			if r != nil && slices.Contains(r.Names(), f.R) {
				f.Checking("XDSTP-13").Fatalf("%s asks the default server for %s, whose authority %s is in no bootstrap", r, f.R, authUnknown)
			}
			// Nor is a stream opened for it: authorities of one server
			// share its one ADS stream, and an unknown one has none.
			if sts := f.Srv.Streams(); len(sts) != 1 {
				f.Checking("XDSTP-14").Fatalf("the client opened %d streams to its one management server, where its one ADS stream serves every authority it knows (the route's authority %s is in no bootstrap)", len(sts), authUnknown)
			}
		}),
	},
	{
		ID:           "client/xdstp/shared-channel",
		Title:        "Authorities with the same server share one ADS stream",
		Requirements: []string{"XDSTP-14"},
		Level:        results.Must,
		Variants:     ads,
		Needs:        xdstpNeeds,
		Run: fed(fedSetup{shared: []string{authA, authB}, names: func(t *engine.T, n *chain) {
			n.R = xname(authA, RDS, t.Name("route"))
			n.CL = xname(authB, CDS, t.Name("cluster"))
		}}, func(f *F) {
			f.Chain(LDS)
			r := f.Expect(RDS)
			l := f.Stream(LDS)
			if r.Stream != l {
				f.Checking("XDSTP-14").Fatalf("the route of authority %s is asked for on %s, not on %s with the listener: authorities with the same server share its stream", authA, r.Stream.Name, l.Name)
			}
			require.Equal(f.Checking("XDSTP-1"), []string{f.R}, r.Names(), "%s should ask for the route", r)
			eds := xname(authB, EDS, f.Name("endpoints"))
			f.ExpectAck(RDS, f.Respond(RDS, "1", wire.ClientRoute(f.R, f.CL, 1)), "1")
			c := f.Expect(CDS)
			if c.Stream != l {
				f.Checking("XDSTP-14").Fatalf("the cluster of authority %s is asked for on %s, not on %s with the listener and the route of %s: authorities with the same server share its stream", authB, c.Stream.Name, l.Name, authA)
			}
			f.ExpectAck(CDS, f.Respond(CDS, "1", edsCluster(f.CL, eds)), "1")
		}),
	},
	{
		ID:    "client/xdstp/authorities-on-one-stream",
		Title: "Names of two authorities that differ in nothing else, on one stream, are two resources: asked for, used and removed apart",
		// XDSTP-3: the same resource only if every component matches, the
		// authority among them. Both authorities are served by the
		// default server, so their names share its ADS stream (XDSTP-14,
		// a precondition).
		Requirements: []string{"XDSTP-3", "DEL-2", "DEL-4"},
		Level:        results.Must,
		Variants:     ads,
		Needs:        append(slices.Clip(xdstpNeeds), targets.NeedObserver),
		Run: fed(fedSetup{shared: []string{authA, authB}}, func(f *F) {
			f.Chain(LDS)
			// The route names a cluster of each authority, with one path.
			clA, clB := xname(authA, CDS, f.Name("svc")), xname(authB, CDS, f.Name("svc"))
			edA, edB := xname(authA, EDS, f.Name("svc")), xname(authB, EDS, f.Name("svc"))
			f.precondition("RES-1").AwaitSubscribed(RDS, f.R)
			f.precondition(chainAckRule).ExpectAck(RDS, f.Respond(RDS, "1", wire.ClientRoutes(f.R, 1, clA, clB)), "1")
			v := f.Checking("XDSTP-3")
			first, err := f.next(CDS)
			if err != nil {
				if n := len(f.Srv.Streams()); n > 1 {
					f.precondition("XDSTP-14").Fatalf("no cluster of %s or %s, both served by the default server, is asked for on the stream of the listener; the client opened %d streams to that server: authorities with the same server share its stream", authA, authB, n)
				}
				v.Fatalf("the client should ask for %s and %s: expected a CDS request: %v", clA, clB, err)
			}
			if !sameSet(first.Names(), []string{clA, clB}) {
				v.AwaitSubscribed(CDS, clA, clB)
			}
			// B's alone first: it is B's, not A's, that the client takes.
			f.precondition(chainAckRule).ExpectAck(CDS, f.Respond(CDS, "1", edsCluster(clB, edB)), "1")
			v.AwaitAcked(CDS, clB, "1")
			// Both, then A's removed: B's stays.
			both := []proto.Message{edsCluster(clA, edA), edsCluster(clB, edB)}
			if f.Variant.IsDelta() {
				both = both[:1]
			}
			f.precondition(chainAckRule).ExpectAck(CDS, f.Respond(CDS, "2", both...), "2")
			f.precondition("RES-1").AwaitAcked(CDS, clA, "2")
			if f.Variant.IsDelta() {
				f.precondition(chainAckRule).ExpectAck(CDS, f.Remove(CDS, "3", clA), "")
				f.Checking("DEL-2").AwaitGone(CDS, clA)
			} else {
				f.precondition(chainAckRule).ExpectAck(CDS, f.Respond(CDS, "3", edsCluster(clB, edB)), "3")
				f.Checking("DEL-4").AwaitGone(CDS, clA)
			}
			v.Never(CDS, clB, "deleted with "+clA+", of another authority", func(r observer.Resource) bool { return r.State != observer.Acked })
		}),
	},
	{
		ID:           "client/xdstp/listener-template-encoding",
		Title:        "The target's name is percent-encoded into an xdstp listener template",
		Requirements: []string{"XDSTP-15"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		Run: fed(fedSetup{shared: []string{authA},
			// The target's name holds a space and a '?' (escaped in the
			// URI); the listener name must hold them percent-encoded.
			names: func(t *engine.T, n *chain) {
				n.L = xdstp.Scheme + authA + "/" + strings.TrimPrefix(LDS.URL, xdstp.TypePrefix) + "/" + t.Name("svc") + "%20v%3F2"
			},
			target: func(t *engine.T) string { return "xds:///" + t.Name("svc") + "%20v%3F2" },
			template: func(*engine.T) string {
				return xdstp.Scheme + authA + "/" + strings.TrimPrefix(LDS.URL, xdstp.TypePrefix) + "/%s"
			},
		}, func(f *F) {
			r := f.Expect(LDS)
			require.Equal(f.Checking("XDSTP-15"), []string{f.L}, r.Names(), "%s should ask for the listener the template makes of %q, percent-encoded", r, f.Name("svc")+" v?2")
		}),
	},
	{
		ID:           "client/xdstp/cluster-needs-service-name",
		Title:        "An EDS cluster named by an xdstp name without service_name is rejected",
		Requirements: []string{"XDSTP-16"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		Run: fed(xdstpChain, func(f *F) {
			f.Chain(RDS)
			f.AwaitSubscribed(CDS, f.CL)
			f.Checking("XDSTP-16").ExpectNack(CDS, f.Respond(CDS, "1", edsCluster(f.CL, "")))
		}),
	},
	{
		ID:           "client/xdstp/directive-encoding",
		Title:        "A directive value holding an encoded ',' is read whole",
		Requirements: []string{"XDSTP-9"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        append(slices.Clip(xdstpNeeds), targets.NeedClientFeature(targets.ClientFeatureDirectives)),
		Run: fed(xdstpChain, func(f *F) {
			f.Chain(RDS)
			f.AwaitSubscribed(CDS, f.CL)
			eds := xname(authA, EDS, f.Name("endpoints"))
			// The alt's id holds a ',', percent-encoded: the fragment is
			// one directive, split first and decoded after.
			alt := xname(authA, EDS, f.Name("spare")) + "%2Cb"
			f.Checking("XDSTP-9").ExpectAck(CDS, f.Respond(CDS, "1", edsCluster(f.CL, eds+"#alt="+alt)), "1")
			f.Checking("XDSTP-8").AwaitSubscribed(EDS, eds)
		}),
	},
	{
		ID:    "client/xdstp/directive-twice-rejected",
		Title: "A locator naming a directive twice is rejected",
		// XDSTP-9's test: each directive at most once, and a locator
		// breaking that is NACKed (the test says SHOULD; the scenario
		// takes the rule's level, as the catalogue check wants).
		Requirements: []string{"XDSTP-9"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        append(slices.Clip(xdstpNeeds), targets.NeedClientFeature(targets.ClientFeatureDirectives)),
		Run: fed(xdstpChain, func(f *F) {
			f.Chain(RDS)
			f.AwaitSubscribed(CDS, f.CL)
			eds := xname(authA, EDS, f.Name("endpoints"))
			alt := xname(authA, EDS, f.Name("spare"))
			f.Checking("XDSTP-9").ExpectNack(CDS, f.Respond(CDS, "1", edsCluster(f.CL, eds+"#alt="+alt+",alt="+alt)))
		}),
	},
	{
		ID:           "client/xdstp/directives-stripped",
		Title:        "A locator's directives are never sent to the server",
		Requirements: []string{"XDSTP-8"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        xdstpNeeds,
		Run: fed(xdstpChain, func(f *F) {
			f.Chain(RDS)
			eds := xname(authA, EDS, f.Name("endpoints"))
			alt := xname(authB, EDS, f.Name("elsewhere"))
			f.serve(CDS, f.CL, edsCluster(f.CL, eds+"#alt="+alt))
			r := f.Expect(EDS)
			require.Equal(f.Checking("XDSTP-8"), []string{eds}, r.Names(), "%s should ask for %s: the #alt directive stays with the client", r, eds)
		}),
	},
}
