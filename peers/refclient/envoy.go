package refclient

import (
	"fmt"
	"maps"
	"slices"
	"time"

	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// The Envoy profile (Config.Profile "envoy") follows Envoy rather than a
// gRPC client:
//
//   - Listeners and clusters are asked for by wildcard, in the legacy form
//     (SotW: no resource_names; delta: a first request with empty
//     subscribe and unsubscribe lists), and every one the server sends is
//     taken. On a new delta stream the wildcard is declared again the same
//     way, with initial_resource_versions of what is held (WILD-7).
//   - Routes and endpoints are asked for by name: the routes of the HTTP
//     connection managers of the listeners (socket listeners, API listeners
//     too), the endpoints of the EDS clusters (eds_cluster_config's
//     service_name, else the cluster's name). Every config source must be
//     ADS: the client speaks to one management server.
//   - Warming (WARM-1, WARM-2): a cluster is not in use until its
//     ClusterLoadAssignment arrived, a listener until its
//     RouteConfigurations did. A cluster update warms until fresh endpoints
//     arrive (in SotW ADS the client asks for them again with the same
//     EDS request, as Envoy does), the old version staying in use. Warming
//     ends anyway when the initial fetch timeout (Config.DNETimeout) fires.
//   - VHDS (STREAM-10): a route configuration with vhds makes a delta
//     client subscribe to the VirtualHost "<route>/<Config.Listener>", as
//     Envoy's on-demand VHDS does for a request to that host. VirtualHosts
//     exist only in delta xDS: a SotW client NACKs such a route, as Envoy
//     rejects vhds without a delta config source.
//   - The status view is also served as Envoy's admin /config_dump
//     (admin.go), where warming resources show as warming.

// envoyFollowed are the types the Envoy profile watches, in the order its
// requests go out: clusters before listeners, as Envoy initialises.
var envoyFollowed = []wire.Type{wire.Cluster, wire.Endpoint, wire.Listener, wire.Route, wire.VirtualHost}

// wildcard reports whether type u is asked for by wildcard: listeners and
// clusters in the Envoy profile.
func (c *Client) wildcard(u string) bool {
	return c.envoy && (u == wire.Listener.URL || u == wire.Cluster.URL)
}

// seedWildcards puts in want every listener and cluster held: the
// wildcard's members, whose references the watches follow.
func (c *Client) seedWildcards(want map[string]map[string]bool) {
	for _, u := range []string{wire.Listener.URL, wire.Cluster.URL} {
		for name, s := range c.res[u] {
			if s.any != nil {
				want[u][name] = true
			}
		}
	}
}

// watchRefs are the references of s the watches follow: in the Envoy
// profile those of the version in use too while a new one warms, and none
// to a type asked for by wildcard.
func (c *Client) watchRefs(s *resState) []ref {
	if !c.envoy {
		return s.refs
	}
	refs := slices.Clone(s.refs)
	if s.warming && s.inUse != nil && !c.fault(FaultWarmingDropsInUseRefs) { // else WARM-2 broken
		refs = append(refs, s.inUse.refs...)
	}
	return slices.DeleteFunc(refs, func(r ref) bool { return c.wildcard(r.typ) })
}

// stateOrAdopt is state, except that a resource of a type asked for by
// wildcard is taken whatever its name.
func (c *Client) stateOrAdopt(u, name string) *resState {
	if s := c.state(u, name); s != nil || (!c.wildcard(u) && !c.inWatchedGlob(u, name)) {
		return s // a member of a watched glob is adopted too (COLL-6)
	}
	if c.res[u] == nil {
		c.res[u] = map[string]*resState{}
	}
	s := &resState{typ: u, name: name, status: statusRequested}
	c.res[u][name] = s
	return s
}

// subscribeWildcard sends the first request of a type asked for by
// wildcard on st: the legacy form, with initial_resource_versions of what
// is held on a delta stream (WILD-7).
func (c *Client) subscribeWildcard(st *stream, u string) {
	if !st.slot.delta {
		c.enqueue(st, c.sotwRequest(st, u, nil, false))
		return
	}
	if held := c.held(u); st.gen > 1 && len(held) > 0 && c.fault(FaultWildcardLostOnReconnect) {
		c.subscribe(st, u, slices.Sorted(maps.Keys(held)), nil) // WILD-7 broken: names, no wildcard
		return
	}
	c.enqueue(st, c.deltaRequest(st, u, nil, nil))
}

// askAgain reports whether the unchanged EDS subscription goes out again
// on st: in SotW ADS, after a cluster update, Envoy sends the same EDS
// request again to get fresh endpoints for the warming cluster.
func (c *Client) askAgain(st *stream, u string) bool {
	return c.edsAgain && u == wire.Endpoint.URL && !st.slot.delta && st.sent[u]
}

// checkEnvoy validates a decoded resource of the Envoy profile and returns
// what it references.
func (c *Client) checkEnvoy(m proto.Message) ([]ref, error) {
	switch r := m.(type) {
	case *listener.Listener:
		if r.GetApiListener() != nil {
			return checkListener(r, false)
		}
		if r.GetDefaultFilterChain() != nil && c.fault(FaultDefaultChainIgnored) {
			r = proto.CloneOf(r)
			r.DefaultFilterChain = nil // WARM-1 broken: its routes are not waited for
			if len(r.GetFilterChains()) == 0 {
				return nil, nil
			}
		}
		return checkSocketListener(r)
	case *route.RouteConfiguration:
		return c.checkEnvoyRoute(r)
	}
	return check(m, false) // clusters and endpoints as in the gRPC profile
}

// checkSocketListener accepts a listener whose filter chains' HTTP
// connection managers take their routes over ADS or inline, and returns
// what they name, once each: the routes, and the clusters of inline
// routes, which watchRefs drops since clusters come by wildcard anyway.
func checkSocketListener(l *listener.Listener) ([]ref, error) {
	chains := slices.Clone(l.GetFilterChains())
	if l.GetDefaultFilterChain() != nil {
		chains = append(chains, l.GetDefaultFilterChain())
	}
	if len(chains) == 0 {
		return nil, fmt.Errorf("listener %q: no filter chains specified", l.GetName())
	}
	var refs []ref
	for _, fc := range chains {
		for _, f := range fc.GetFilters() {
			tc := f.GetTypedConfig()
			if tc.GetTypeUrl() != hcmURL {
				continue // other network filters name nothing watched by name
			}
			named, err := hcmRefs(l, tc, false)
			if err != nil {
				return nil, err
			}
			for _, r := range named {
				if !slices.Contains(refs, r) {
					refs = append(refs, r)
				}
			}
		}
	}
	return refs, nil
}

// checkEnvoyRoute accepts a route configuration; one with vhds also
// references its VirtualHost for the host the client models a request to
// (Config.Listener), which exists only in delta xDS (STREAM-10).
func (c *Client) checkEnvoyRoute(rc *route.RouteConfiguration) ([]ref, error) {
	if rc.GetName() == "" {
		return nil, fmt.Errorf("route configuration has no name")
	}
	refs := routeRefs(rc, true)
	v := rc.GetVhds()
	if v == nil {
		return refs, nil
	}
	if !c.cfg.Variant.IsDelta() && !c.fault(FaultVHDSOverSotW) { // else STREAM-10 broken
		return nil, fmt.Errorf("route configuration %q: vhds needs the incremental protocol: VirtualHost resources exist only in delta xDS", rc.GetName())
	}
	if v.GetConfigSource().GetAds() == nil {
		return nil, fmt.Errorf("route configuration %q: vhds config_source is not ADS, the only source this client speaks", rc.GetName())
	}
	return append(refs, ref{wire.VirtualHost.URL, wire.VirtualHostName(rc.GetName(), c.cfg.Listener)}), nil
}

// revision is one accepted version of a resource.
type revision struct {
	any     *anypb.Any
	version string
	refs    []ref
	updated time.Time
}

// current is the version of s last accepted, nil when none is held.
func (s *resState) current() *revision {
	if s.any == nil {
		return nil
	}
	return &revision{any: s.any, version: s.version, refs: s.refs, updated: s.updated}
}

// inUseNow is the version of s in use: while it warms, the one before.
func (s *resState) inUseNow() *revision {
	if s.warming {
		return s.inUse
	}
	return s.current()
}

// warm decides, when s was just accepted and prev was held before,
// whether s warms (WARM-1, WARM-2); endpoints and routes arriving end the
// warming of the clusters and listeners waiting for them.
func (c *Client) warm(s *resState, prev *revision) {
	switch s.typ {
	case wire.Endpoint.URL, wire.Route.URL:
		c.arrived(s)
		return
	case wire.Listener.URL, wire.Cluster.URL:
	default:
		return
	}
	if prev != nil && sameContent(prev.any, s.any) {
		return // restated unchanged (SotW sends every cluster each time): nothing warms
	}
	inUse := prev
	if s.warming {
		inUse = s.inUse // a newer version replaces the one warming
	}
	update := inUse != nil
	switch {
	case !update && c.fault(FaultNoWarming): // WARM-1 broken
		c.endWarming(s)
		return
	case update && c.fault(FaultUpdateSkipsWarming): // WARM-2 broken
		c.endWarming(s)
		return
	case c.ready(s, update):
		c.endWarming(s)
		return
	}
	s.warming, s.inUse = true, inUse
	if !c.fault(FaultWarmsForever) { // else WARM-2 broken
		c.deadlines[timerKey{kind: warmTimer, typ: s.typ, name: s.name}] = time.Now().Add(c.cfg.DNETimeout)
	}
	if update && s.typ == wire.Cluster.URL && c.cfg.Variant == wire.SotWADS {
		c.edsAgain = true
	}
}

// dependency is the type a listener or cluster of type u waits for.
func dependency(u string) string {
	if u == wire.Cluster.URL {
		return wire.Endpoint.URL
	}
	return wire.Route.URL
}

// ready reports whether s can be in use at once: everything it waits for
// is held. An updated cluster waits for fresh endpoints all the same.
func (c *Client) ready(s *resState, update bool) bool {
	dep := dependency(s.typ)
	for _, r := range s.refs {
		if r.typ != dep {
			continue
		}
		if update && (s.typ == wire.Cluster.URL || c.fault(FaultUpdateAwaitsHeldRoutes)) { // a listener's: WARM-1 broken
			return false
		}
		if d := c.state(dep, r.name); d == nil || d.any == nil {
			return false
		}
	}
	return true
}

// arrived ends the warming of the clusters waiting for the endpoints d,
// or of the listeners that now have every route they name.
func (c *Client) arrived(d *resState) {
	if c.fault(FaultWarmingEndsAtTimer) {
		return // WARM-1 broken: only the initial fetch timeout ends warming
	}
	owner := wire.Listener.URL
	if d.typ == wire.Endpoint.URL {
		owner = wire.Cluster.URL
	}
	for _, s := range c.res[owner] {
		if !s.warming || !slices.Contains(s.refs, ref{d.typ, d.name}) {
			continue
		}
		if owner == wire.Cluster.URL || c.ready(s, false) {
			c.endWarming(s)
		}
	}
}

// endWarming puts the version of s last accepted in use.
func (c *Client) endWarming(s *resState) {
	s.warming, s.inUse = false, nil
	delete(c.deadlines, timerKey{kind: warmTimer, typ: s.typ, name: s.name})
}

// sameContent reports whether two packed resources hold the same message.
func sameContent(a, b *anypb.Any) bool {
	if proto.Equal(a, b) {
		return true
	}
	ma, errA := a.UnmarshalNew()
	mb, errB := b.UnmarshalNew()
	return errA == nil && errB == nil && proto.Equal(ma, mb)
}
