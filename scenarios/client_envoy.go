package scenarios

import (
	"slices"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// The scenarios below are written for the Envoy client profile: the client
// asks for every listener and cluster by wildcard, then by name for the
// routes of its listeners (socket listeners whose HTTP connection managers
// take their routes over RDS from ADS) and the endpoints of its clusters,
// warms clusters and listeners, and knows VHDS. No real client of this
// profile runs here (Envoy needs a Docker engine); they are checked against
// builtin:reference --client-profile envoy.

// envoyProfile says the scenario needs an Envoy-profile client;
// envoyObserved, one whose status view it reads too.
var (
	envoyProfile  = []engine.Need{targets.NeedEnvoyProfile}
	envoyObserved = []engine.Need{targets.NeedEnvoyProfile, targets.NeedObserver}
)

// xds_protocol#incremental-xds (wildcard on reconnect), #resource-warming,
// #rpc-services-and-methods-for-each-variant (VHDS: incremental only)
var clientEnvoyScenarios = []*engine.Scenario{
	{
		ID:           "client/wildcard/redeclared-on-delta-reconnect",
		Title:        "On a new delta stream a wildcard subscriber declares its listener and cluster wildcards again",
		Requirements: []string{"WILD-7"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        envoyProfile,
		Run: ClientScript(func(c *C) {
			c.EnvoyChain()
			c.Restart(codes.Unavailable)
			v := c.Checking("WILD-7")
			for _, t := range []wire.Type{CDS, LDS} {
				r := c.Expect(t) // the first of its type on the new stream
				if !isWildcard(r) {
					v.Fatalf("%s is the first %s request of the new stream: a wildcard subscriber must subscribe \"*\" or send both lists empty, but it subscribes %q and unsubscribes %q",
						r, t.Short, r.Delta.GetResourceNamesSubscribe(), r.Delta.GetResourceNamesUnsubscribe())
				}
			}
		}),
	},
	{
		ID:           "client/warming/cluster-waits-for-endpoints",
		Title:        "A cluster is not in use before its endpoints arrive, nor a listener before its routes",
		Requirements: []string{"WARM-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			v := c.Checking("WARM-1")
			inUse := func(r observer.Resource) bool { return r.State == observer.Acked }
			// A warming ends anyway when its initial fetch timeout fires,
			// counted from no earlier than the response's sending: the
			// warming must be seen to end when the dependency comes, in
			// what is left of it after the quiet watch (with --dne-timer
			// shorter than the quiet window and the prompt one together,
			// that proves nothing: a doubt).
			timeout := c.target.Options().DNETimer
			sent := c.ServeWildcardHop(CDS, EDS, c.CL)
			// WARM-1's test: the dump lists it under dynamic_warming_clusters.
			v.AwaitWarmingBefore(sent.Add(timeout), CDS, c.CL, "1")
			v.QuietViewBefore(sent.Add(timeout), CDS, c.CL, "in use before its endpoints arrived", inUse)
			c.ExpectAck(EDS, c.Respond(EDS, "1", c.EnvoyHop(EDS, 1)), "1")
			v.AwaitAckedBefore(sent.Add(timeout), CDS, c.CL, "1")

			sent = c.ServeWildcardHop(LDS, RDS, c.R)
			// Listed with its warming_state.
			v.AwaitWarmingBefore(sent.Add(timeout), LDS, c.L, "1")
			v.QuietViewBefore(sent.Add(timeout), LDS, c.L, "in use before its routes arrived", inUse)
			c.ExpectAck(RDS, c.Respond(RDS, "1", c.EnvoyHop(RDS, 1)), "1")
			v.AwaitAckedBefore(sent.Add(timeout), LDS, c.L, "1")
		}),
	},
	{
		ID:    "client/warming/each-cluster-its-own-endpoints",
		Title: "Of two warming clusters, the one whose endpoints came is in use, and the other still warms",
		// WARM-1: a cluster finishes warming when its own
		// ClusterLoadAssignment arrives, neither before nor on another's.
		Requirements: []string{"WARM-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			v := c.Checking("WARM-1")
			c2 := c.Extra("cluster-2")
			sent := c.ServeWildcard(CDS, wire.ClientCluster(c.CL, 1), wire.ClientCluster(c2, 1))
			c.AwaitSubscribed(EDS, c.CL, c2)
			c.ExpectAck(EDS, c.Respond(EDS, "1", wire.ClientEndpoints(c2, 1)), "1")
			timeout := sent.Add(c.target.Options().DNETimer)
			v.AwaitAckedBefore(timeout, CDS, c2, "1")
			v.AwaitWarmingBefore(timeout, CDS, c.CL, "1")
			c.ExpectAck(EDS, c.Respond(EDS, "2", wire.ClientEndpoints(c.CL, 1), wire.ClientEndpoints(c2, 1)), "2")
			v.AwaitAcked(CDS, c.CL, "1")
		}),
	},
	{
		ID:    "client/warming/default-chain-waits-for-route",
		Title: "A listener whose routes are named in its default filter chain waits for them too",
		// WARM-1: a listener using RDS finishes warming only once its
		// routes arrive, wherever its HTTP connection manager sits.
		Requirements: []string{"WARM-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			v := c.Checking("WARM-1")
			for _, h := range c.envoyHops(1)[:2] {
				c.serveHop(h, h.t.Wildcard)
			}
			sent := c.ServeWildcard(LDS, wire.EnvoyDefaultChainListener(c.L, c.R, 1))
			timeout := sent.Add(c.target.Options().DNETimer)
			v.AwaitWarmingBefore(timeout, LDS, c.L, "1")
			c.AwaitSubscribed(RDS, c.R)
			c.ExpectAck(RDS, c.Respond(RDS, "1", c.EnvoyHop(RDS, 1)), "1")
			v.AwaitAckedBefore(timeout, LDS, c.L, "1")
		}),
	},
	{
		ID:    "client/warming/ends-at-initial-fetch-timeout",
		Title: "A cluster whose endpoints never come is in use once its initial fetch timeout fires",
		// WARM-2: warming is bounded by initial_fetch_timeout ("becomes
		// ready after CLA or after initial_fetch_timeout"); the
		// reference's, and --dne-timer's, is the does-not-exist timer.
		Requirements: []string{"WARM-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			c.ServeWildcardHop(CDS, EDS, c.CL)
			// The endpoints are withheld: the timer, started no later
			// than now, ends the warming all the same.
			v1 := c.V("1", c.CL)
			c.Checking("WARM-2").Await(CDS, c.CL, "in use (ACKED at version "+v1+") once its initial fetch timeout fired, its endpoints withheld",
				c.target.Options().DNETimer, func(r observer.Resource) bool { return r.State == observer.Acked && r.Version == v1 })
		}),
	},
	{
		ID:    "client/status/envoy-chain-shown",
		Title: "The status view of an Envoy-profile client shows each resource of its chain in use at its version, and a rejected update of its listener as rejected",
		// OBS-1 in the Envoy profile: the view is /config_dump, whose
		// sections (listeners, routes, clusters, endpoints) are each
		// read; the gRPC profile's is CSDS (client/status/*).
		Requirements: []string{"OBS-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			c.EnvoyChain()
			v := c.Checking("OBS-1")
			for _, x := range []struct {
				t    wire.Type
				name string
			}{{LDS, c.L}, {RDS, c.R}, {CDS, c.CL}, {EDS, c.CL}} {
				v.AwaitAcked(x.t, x.name, "1")
			}
			c.Checking("ACK-7").ExpectNack(LDS, c.Respond(LDS, "2", wire.InvalidListener(c.L, 2)))
			c.showsAfter(LDS, c.L, observer.Nacked, "the NACK of an invalid version of it", "", nil)
			r := c.AwaitState(LDS, c.L, observer.Nacked)
			require.NotEmpty(v, r.Error, "the NACKED listener should come with the error the client found (error_state.details)")
		}),
	},
	{
		ID:           "client/warming/update-waits-for-endpoints",
		Title:        "An updated cluster keeps its old version in use until fresh endpoints arrive",
		Requirements: []string{"WARM-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			c.EnvoyChain()
			c.AwaitAcked(CDS, c.CL, "1")
			sent := time.Now()
			c.ExpectAck(CDS, c.Respond(CDS, "2", c.EnvoyHop(CDS, 2)), "2")
			v := c.Checking("WARM-2")
			v1 := c.V("1", c.CL)
			// Until the update's initial fetch timeout, counted from no
			// earlier than its sending, could have fired.
			v.QuietViewBefore(sent.Add(c.target.Options().DNETimer), CDS, c.CL, "other than version 1 in use while version 2 waits for fresh endpoints", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != v1
			})
			if _, again := c.ExpectAckPast(EDS, c.Respond(EDS, "2", c.EnvoyHop(EDS, 2)), "2"); again > 0 {
				c.Logf("classification: the client asked again for the endpoints of the updated cluster, as Envoy does")
			}
			v.AwaitAcked(CDS, c.CL, "2")
		}),
	},
	{
		ID:    "client/warming/listener-update-keeps-route",
		Title: "An updated listener waiting for a new route keeps version 1 in use, and its route watched; one naming a route held is in use at once",
		// WARM-2: an LDS update does not take effect before the routes it
		// names come; until then version 1 is the listener in use, and
		// the route it uses stays asked for beside the new one.
		Requirements: []string{"WARM-2", "WARM-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        envoyObserved,
		Run: ClientScript(func(c *C) {
			c.EnvoyChain()
			c.AwaitAcked(LDS, c.L, "1")
			r2 := c.Extra("route-2")
			sent := time.Now()
			c.ExpectAck(LDS, c.Respond(LDS, "2", wire.EnvoyListener(c.L, r2, 2)), "2")
			v := c.Checking("WARM-2")
			v1 := c.V("1", c.L)
			v.QuietViewBefore(sent.Add(c.target.Options().DNETimer), LDS, c.L, "other than version 1 in use while version 2 waits for its route", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != v1
			})
			if c.Variant.IsDelta() {
				r := v.AwaitSubscribed(RDS, r2)
				if slices.Contains(r.Delta.GetResourceNamesUnsubscribe(), c.R) {
					v.Fatalf("%s unsubscribes route %q, which listener version 1 uses: version 1 is still in use while version 2 waits for its route", r, c.R)
				}
			} else {
				v.AwaitSubscribed(RDS, c.R, r2)
			}
			// A restated request of the routes may cross the response.
			c.ExpectAckPast(RDS, c.Respond(RDS, "2", wire.ClientRoute(c.R, c.CL, 1), wire.ClientRoute(r2, c.CL, 2)), "2")
			v.AwaitAcked(LDS, c.L, "2")
			// WARM-1, with WARM-5's note: version 3 names only a route the
			// client holds, which a server need not send again, so nothing
			// is left to wait for: it is in use at once, not at the timer.
			sent = time.Now()
			c.ExpectAck(LDS, c.Respond(LDS, "3", wire.EnvoyListener(c.L, r2, 3)), "3")
			c.Checking("WARM-1").AwaitAckedBefore(sent.Add(c.target.Options().DNETimer), LDS, c.L, "3")
		}),
	},
	{
		ID:           "client/vhds/never-over-sotw",
		Title:        "A SotW client never asks for VirtualHosts: they exist only in the incremental protocol",
		Requirements: []string{"STREAM-10"},
		Level:        results.Must,
		// In delta, asking for VirtualHosts is the normal course, and
		// Envoy asks only on demand, for the host of a request the harness
		// does not send: there is nothing a delta client can get wrong here
		// that a black box sees.
		Variants: sotw,
		Needs:    envoyProfile,
		// The check is the fake server's: no request of any SotW stream
		// asks for VirtualHosts (an invariant of every client scenario);
		// this scenario gives the client a reason to.
		Run: ClientScript(func(c *C) {
			c.ServeWildcardHop(LDS, RDS, c.R)
			n := c.Respond(RDS, "1", wire.RouteWithVHDS(c.R, 1))
			// Rejecting the route and ignoring its vhds are both
			// conformant; asking for a VirtualHost is not.
			if d := c.expectReply(RDS, n).ErrorDetail(); d != nil {
				c.Logf("classification: the client NACKs a route with vhds over SotW: %q", d.GetMessage())
			} else {
				c.Logf("classification: the client accepts a route with vhds over SotW")
			}
		}),
	},
}

// EnvoyChain serves what an Envoy-profile client asks for, clusters first
// as Envoy initialises: by wildcard the cluster CL, then by name its
// endpoints, by wildcard the listener L, then by name its route R; each at
// version "1" and revision 1, each ACKed. Like Chain, it is a
// precondition (serveHop).
func (c *C) EnvoyChain() {
	for _, hop := range c.envoyHops(1) {
		c.serveHop(hop, hop.t.Wildcard)
	}
}

// envoyHops are the Envoy chain's resources at revision rev: an EDS
// cluster over ADS and its endpoints, a socket listener whose routes come
// over RDS from ADS, and its route to the cluster.
func (c *C) envoyHops(rev int) []hop {
	return []hop{
		{CDS, c.CL, wire.ClientCluster(c.CL, rev)},
		{EDS, c.CL, wire.ClientEndpoints(c.CL, rev)},
		{LDS, c.L, wire.EnvoyListener(c.L, c.R, rev)},
		{RDS, c.R, wire.ClientRoute(c.R, c.CL, rev)},
	}
}

// EnvoyHop returns the Envoy chain's resource of type t at revision rev.
func (c *C) EnvoyHop(t wire.Type, rev int) proto.Message {
	for _, h := range c.envoyHops(rev) {
		if h.t.URL == t.URL {
			return h.res
		}
	}
	panic("no Envoy chain hop of type " + t.Short)
}

// ServeWildcardHop serves the Envoy chain's resource of t by wildcard
// (ServeWildcard) and waits for the client to ask for name, of type dep,
// which it names. It returns when the response was sent.
func (c *C) ServeWildcardHop(t, dep wire.Type, name string) (sent time.Time) {
	sent = c.ServeWildcard(t, c.EnvoyHop(t, 1))
	c.AwaitSubscribed(dep, name)
	return sent
}

// ServeWildcard answers the client's wildcard request of t (listeners or
// clusters) with res at version "1" and checks the ACK. It returns when
// the response was sent: the warming of what it carries, and its initial
// fetch timeout, start no earlier.
func (c *C) ServeWildcard(t wire.Type, res ...proto.Message) (sent time.Time) {
	c.ExpectWildcard(t)
	sent = time.Now()
	c.ExpectAck(t, c.Respond(t, "1", res...), "1")
	return sent
}

// isWildcard reports whether r subscribes by wildcard: "*", or no name at
// all (SotW: empty resource_names; delta: both lists empty).
func isWildcard(r *fakeserver.Request) bool {
	if slices.Contains(r.Names(), "*") {
		return true
	}
	if r.Delta != nil {
		return len(r.Delta.GetResourceNamesSubscribe()) == 0 && len(r.Delta.GetResourceNamesUnsubscribe()) == 0
	}
	return len(r.Names()) == 0
}

// ExpectWildcard returns the next request of t, which must ask for every
// resource of the type by wildcard, as an Envoy-profile client does for
// listeners and clusters.
func (c *C) ExpectWildcard(t wire.Type) *fakeserver.Request {
	r := c.Expect(t)
	if !isWildcard(r) {
		c.Fatalf("%s should ask for every %s by wildcard (\"*\", or no name), as an Envoy-profile client does; it asks for %q", r, t.Short, r.Names())
	}
	return r
}

// ExpectAckPast is ExpectAck for a reply that other requests of t may come
// before, ones that answer no newer response (an Envoy asks again for the
// endpoints of an updated cluster with the nonce it last answered): it
// passes over them, within the expect timeout, and says how many it did.
func (c *C) ExpectAckPast(t wire.Type, nonce, version string) (*fakeserver.Request, int) {
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	for passed := 0; ; passed++ {
		r := c.expectReply(t, nonce)
		if r.Nonce() == nonce || deadline.Passed() {
			return c.checkAck(r, nonce, version), passed
		}
	}
}
