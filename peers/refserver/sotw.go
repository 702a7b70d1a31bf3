package refserver

import (
	"fmt"
	"maps"
	"slices"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// sotwType is the state of one resource type on a SotW stream. On ADS each
// type is its own logical sub-stream with its own nonce, version and
// subscription (ADS-1).
type sotwType struct {
	typeBase

	names     nameSet           // explicitly subscribed names
	everNamed bool              // a request named resources, so an empty list no longer means wildcard (WILD-5)
	sent      map[string]string // name -> version of the content last sent
	// lastSent is what the latest response carried (name -> version), and
	// rejected what a NACK rejected of it, until the client accepts it.
	lastSent, rejected map[string]string

	// forgotten is FaultForgetMissingSubscriptions's and FaultForgetDeleted's
	// memory: names missing when added, or deleted, no longer served.
	forgotten nameSet
}

// sotwConn is one SotW stream, ADS or per-type.
type sotwConn struct {
	*conn
	st       sotwStream
	types    map[string]*sotwType
	order    []string // type URLs in the order first seen, for deterministic pushes
	versions uint64   // FaultSharedAdsNonce: one version counter for all types
	// clustersSent are the clusters sent on this (ADS) stream since their
	// endpoints were last sent: an Envoy asks for the endpoints again after
	// a cluster update and waits for them (WARM-4).
	clustersSent nameSet
}

func (s *Server) serveSotW(st sotwStream, service *wire.Type) error {
	c := &sotwConn{conn: newConn(s, service), st: st, types: map[string]*sotwType{}, clustersSent: nameSet{}}
	return serve(st.Context(), c.conn, st.Recv, c.onRequest, c.onWake)
}

func (c *sotwConn) typeState(t wire.Type) *sotwType {
	ts := c.types[t.URL]
	if ts == nil {
		ts = &sotwType{typeBase: newTypeBase(t), names: nameSet{}, sent: map[string]string{}, forgotten: nameSet{}, lastSent: map[string]string{}, rejected: map[string]string{}}
		c.types[t.URL] = ts
		c.order = append(c.order, t.URL)
	}
	return ts
}

// currentNonce is the nonce a non-stale request of ts's type must carry: the
// last one sent for that type, not for the stream (ADS-1).
func (c *sotwConn) currentNonce(ts *sotwType) string {
	if c.service == nil && c.s.has(FaultSharedAdsNonce) {
		return c.lastNonce // breaks ADS-1: any type's response makes the others stale
	}
	return ts.lastNonce
}

func (c *sotwConn) onRequest(req *discovery.DiscoveryRequest) error {
	if err := c.begin(req.GetNode()); err != nil {
		return err
	}
	t, err := c.resolveType(req.GetTypeUrl())
	if err != nil {
		return err
	}
	if c.s.dropped(t, false) {
		return nil // breaks STREAM-9: the type is never answered
	}
	ts := c.typeState(t)
	if c.s.has(FaultIgnoreFirstRequest) && !ts.ignoredFirst {
		ts.ignoredFirst = true
		return nil // breaks RES-2: the type's first request is never answered
	}
	if c.s.has(FaultWedgeOnUnusualRequest) && c.unusualSotW(ts, req) {
		return c.wedge() // breaks ROB-2
	}
	nonce := req.GetResponseNonce()

	// NONCE-7: a request answering an older response than the latest one of
	// its type is stale. It crossed a newer response, and the client will
	// repeat its names when it ACKs that one (NONCE-8), so it is ignored
	// completely. An empty nonce is an initial request and is never stale.
	if nonce != "" && nonce != c.currentNonce(ts) {
		if c.s.has(FaultStaleNamesKept) {
			// Breaks NONCE-8: the names count as asked for, and answered.
			ts.started = true
			c.applyNames(ts, c.locate(t, req))
			return nil
		}
		if !c.s.has(FaultAnswerStaleNonce) {
			return nil
		}
		// Breaks NONCE-7: apply the stale request and answer it in full.
		ts.started = true
		c.applyNames(ts, c.locate(t, req))
		return c.respondSubscribed(ts, c.snapshot(t.URL), false)
	}

	// ACK-5: a NACK is recognised by error_detail alone. Its names are
	// applied like any request's, and the rejected content is not sent
	// again: only a change makes a new response (UPD-1).
	nack := req.GetErrorDetail() != nil
	if c.s.has(FaultNackByVersion) && nonce != "" && nonce == ts.lastNonce && req.GetVersionInfo() != ts.lastVersion {
		nack = true // breaks HINT-2: ACK-5's older way, by version, takes a hint update for a NACK
	}
	// The first request that answers the latest response is its ACK or
	// NACK; a later one with the same nonce is a hint update (HINT-1).
	reply := nonce != "" && nonce != ts.repliedNonce
	ts.repliedNonce = nonce
	// ACK-5: what a NACK rejected is remembered until it changes, so that
	// it is not sent again with names added later; an ACK accepts it.
	for n, v := range ts.lastSent {
		switch {
		case reply && nack:
			ts.rejected[n] = v
		case reply && !c.s.has(FaultAckKeepsRejected): // breaks RES-5 when set
			delete(ts.rejected, n)
		}
	}
	if nack && c.s.has(FaultCloseOnNack) {
		return status.Error(codes.Internal, "client rejected the configuration") // breaks ACK-9
	}
	// Breaks ACK-9 with FaultStallAfterNack: pushes wait for the next request.
	ts.stalled = nack && c.s.has(FaultStallAfterNack)
	if nack && c.s.has(FaultLateNackResend) {
		// Breaks ACK-5 / UPD-1, a second later: the rejected content again.
		c.after(time.Second, func() error { return c.respondSubscribed(ts, c.snapshot(t.URL), false) })
	}

	first := !ts.started
	ts.started = true
	prevNames, prevWildcard := maps.Clone(ts.names), ts.wildcard
	// UPD-3, HINT-2: the latest request's names apply, also when they come
	// with an ACK.
	apply := true
	if c.s.has(FaultFirstRequestWins) && nonce != "" && !nack {
		apply = false // breaks UPD-3 / HINT-2: names carried by ACKs are ignored
	}
	if (nack && c.s.has(FaultNackDropsSubscriptionChange)) || (reply && !nack && c.s.has(FaultAckDropsSubscriptionChange)) {
		apply = false // breaks RES-4 / UNSUB-2: the reply is taken for the ACK or NACK alone
	}
	if apply {
		c.applyNames(ts, c.locate(t, req))
	}
	if reply && c.s.has(FaultReplyKeepsDropped) {
		maps.Copy(ts.names, prevNames) // breaks UNSUB-2: what the reply drops stays
	}
	snap := c.xview(t, c.snapshot(t.URL), true, ts.names, nil) // XDSTP-18: xdstp names on SotW too
	if ts.wildcard && !prevWildcard {
		ts.frozen = snap.names() // FaultWildcardFrozen's memory
	}
	if c.s.has(FaultForgetMissingSubscriptions) {
		// Breaks DNE-3: a name missing when it is added is never served on
		// the stream until the client drops it and adds it again.
		for n := range ts.names {
			if _, ok := snap.resources[n]; !ok && !prevNames[n] {
				ts.forgotten[n] = true
			}
		}
		for n := range ts.forgotten {
			if !ts.names[n] {
				delete(ts.forgotten, n)
			}
		}
	}
	if first && req.GetVersionInfo() != "" && c.s.has(FaultReconnectForgetsPending) {
		// Breaks DNE-3: a reconnecting client is taken to hold all it
		// names, so the names that do not exist are not kept.
		for n := range ts.names {
			if _, ok := snap.resources[n]; !ok {
				ts.forgotten[n] = true
			}
		}
	}
	if reply && !nack && c.s.has(FaultPartialAnswerSettles) {
		// Breaks DNE-3: the ACK settles the subscription; the names no
		// response carried are dropped.
		for n := range ts.names {
			if _, ok := ts.sent[n]; !ok {
				ts.forgotten[n] = true
			}
		}
	}
	added := false // RES-4/RES-5: names not subscribed just before, or wildcard turned on
	for n := range ts.names {
		if !prevNames[n] {
			added = true
		}
	}
	if ts.wildcard && !prevWildcard {
		added = true
	}
	unchanged := !added && ts.wildcard == prevWildcard && maps.Equal(prevNames, ts.names)

	switch {
	case first && c.s.has(FaultSkipCurrentVersionOnReconnect) && req.GetVersionInfo() != "" && req.GetVersionInfo() == snap.version:
		// Breaks RES-4: a reconnecting client at the current version is
		// assumed to hold everything it names.
	case nack && c.s.has(FaultNackResendLoop):
		// Breaks ACK-5 / UPD-1: the NACK is read as a request for the content.
		err = c.respondSubscribed(ts, snap, false)
	case nack && c.s.has(FaultNackByVersion):
		// Breaks HINT-2: a NACK waits for the next version, and its new
		// names with it.
	case added && c.warmingHeld(ts, prevNames):
		// Breaks WARM-3: the endpoints of a cluster just pushed wait for
		// the next change.
	case added:
		// RES-4, RES-5, NONCE-9: newly subscribed names are sent even if they
		// were sent before and have not changed. A first request naming only
		// missing resources gets an empty full state for Listener/Cluster
		// ("there are none") and nothing for the other types. ACK-5, UPD-1:
		// what the client rejected, and that has not changed since, is left
		// out (a NACK that adds names, or a hint update after a NACK): a
		// response carrying it would be NACKed whole, the new names with
		// it. A full state has to carry everything.
		names := c.wanted(ts, snap)
		if !ts.t.Wildcard && !c.s.has(FaultNackAddResendsRejected) { // breaks ACK-5 / UPD-1 when set
			names = slices.DeleteFunc(names, func(n string) bool {
				return ts.rejected[n] != "" && (ts.rejected[n] == c.versionOf(snap.resources[n]) || c.s.has(FaultRejectedForever)) // breaks RES-5 when set
			})
		}
		err = c.respondNames(ts, snap, names, c.s.has(FaultNoResendOnResubscribe))
	case unchanged && !first && !nack && ts.t.URL == wire.Endpoint.URL && c.reloading(ts):
		// WARM-4 (feature envoy-warming): an Envoy that updated a cluster
		// asks for its endpoints again, identically, and keeps the cluster
		// warming until they come, changed or not.
		err = c.send(ts, snap, c.reloaded(ts, snap), false)
	case unchanged && !first && !nack && nonce != "" && c.s.has(FaultResendOnAck):
		// Breaks UPD-1: an ACK is answered with the same resources again.
		err = c.respondSubscribed(ts, snap, false)
	default:
		// UPD-1: an ACK, a repeated request or one that only removes names
		// needs no response; the client knows what it dropped.
	}
	if err != nil {
		return err
	}
	if first && c.service == nil && c.s.has(FaultPushUnrequestedTypes) {
		// Breaks STREAM-2: a type the client did not ask for arrives on ADS.
		if other := c.typeState(unrequestedType(t)); !other.started {
			o := c.snapshot(other.t.URL)
			return c.send(other, o, sortedNames(o.resources), false)
		}
	}
	return nil
}

// warmingHeld is FaultSlowWarming: names just added of ts are endpoints
// of a cluster just pushed.
func (c *sotwConn) warmingHeld(ts *sotwType, prev nameSet) bool {
	for n := range ts.names {
		if !prev[n] && c.s.warming(c.node, ts.t, n) {
			return true
		}
	}
	return false
}

// reloading reports whether an EDS stream names a cluster sent on the
// stream since its endpoints were (WARM-4).
func (c *sotwConn) reloading(ts *sotwType) bool {
	if c.service != nil || c.s.has(FaultNoCLAAfterClusterUpdate) { // breaks WARM-4 when set
		return false
	}
	for n := range ts.names {
		if c.clustersSent[n] {
			return true
		}
	}
	return false
}

// reloaded lists the existing endpoints of the clusters sent since.
func (c *sotwConn) reloaded(ts *sotwType, snap snapshot) []string {
	return snap.filter(func(n string) bool {
		return (ts.names[n] || c.s.has(FaultReloadUnsubscribed)) && c.clustersSent[n] // breaks UNSUB-2 when set
	})
}

// applyNames replaces the subscription of ts by resource_names. SotW
// requests always carry the whole set of names (RES-1).
func (c *sotwConn) applyNames(ts *sotwType, requested []string) {
	// XDSTP-3: a subscribed xdstp name written otherwise is the same
	// subscription (naming.go).
	requested = c.respelled(ts.names, requested)
	if c.s.firstNameOnly(ts.t) && len(requested) > 1 {
		requested = requested[:1] // breaks RES-2, MULTI-1
	}
	names, star := nameSet{}, false
	for _, n := range requested {
		if n == "*" && !c.s.has(FaultStarIsLiteral) { // "*" breaks WILD-1/WILD-3 when literal
			star = true // WILD-1, WILD-3: "*" subscribes to everything, names add to it
			continue
		}
		if ts.t.Wildcard && c.s.has(FaultWildcardOnlyLdsCds) {
			continue // breaks WILD-8: the name is dropped
		}
		names[n] = true
	}
	if len(names) > 0 && ts.t.Wildcard && c.s.has(FaultNamedIsWildcard) {
		star = true // breaks WILD-8: names read as a wildcard
	}
	wildcard := star
	if len(requested) == 0 {
		switch {
		case c.s.has(FaultEmptyMeansWildcard) && (ts.everNamed || !ts.t.Wildcard):
			wildcard = true // breaks WILD-5 / RES-6
		case !ts.everNamed && ts.t.Wildcard && !c.s.has(FaultNoLegacyWildcard):
			// WILD-2: a Listener/Cluster stream that never named anything is
			// a legacy wildcard. Breaks WILD-2 with FaultNoLegacyWildcard.
			wildcard = true
		default:
			// RES-6, WILD-5: after names, an empty list means nothing.
		}
	}
	if ts.wildcard && c.s.has(FaultStickyWildcard) {
		wildcard = true // breaks WILD-4 / WILD-5
	}
	if c.s.has(FaultUnsubscribeWildcardMember) {
		// Breaks WILD-9: a name dropped while "*" stays is excluded from the wildcard.
		if ts.wildcard && wildcard {
			for n := range ts.names {
				if !names[n] {
					ts.excluded[n] = true
				}
			}
		}
		for n := range names {
			delete(ts.excluded, n)
		}
		if !wildcard {
			ts.excluded = nameSet{}
		}
	}
	if len(names) > 0 {
		ts.everNamed = true
	}
	for n := range names {
		ts.everSubscribed[n] = true
	}
	ts.names, ts.wildcard = names, wildcard
	if len(names) > 0 || !c.s.has(FaultEmptyRequestKeepsErrors) { // breaks RES-4 when set
		c.dyn.forgetErrors(ts.t.URL, names, wildcard)
	}
}

// wants reports whether the stream subscribes to name: explicitly or through
// the wildcard, which covers every resource of the type for the node.
func (c *sotwConn) wants(ts *sotwType, name string) bool {
	if ts.names[name] && !ts.forgotten[name] {
		return true
	}
	if c.s.has(FaultGlobInSotW) && c.s.inAnyGlob(ts.t, ts.names, name) {
		return true // breaks COLL-6: over SotW a glob is only a name
	}
	if ts.covers(c.s, name) {
		return true
	}
	if ts.rearmed[name] {
		return true // breaks UNSUB-2 (FaultRecreationAfterUnsubscribe): a deletion re-armed it
	}
	// Breaks UNSUB-2: once subscribed, always pushed.
	return c.s.has(FaultUpdatesAfterUnsubscribe) && ts.everSubscribed[name]
}

// forgetDeleted implements FaultForgetDeleted: a deleted name stops
// being wanted, by name or under the wildcard. Unlike on Delta, asking
// for it again does not undo that: only FaultForgetMissingSubscriptions
// and FaultUnsubscribeWildcardMember prune forgotten and excluded, so a
// re-created resource is not pushed on the stream.
func (c *sotwConn) forgetDeleted(ts *sotwType, name string) {
	if ts.names[name] {
		ts.forgotten[name] = true
	} else if ts.wildcard {
		ts.excluded[name] = true
	}
}

// wanted lists the existing resources the stream subscribes to.
func (c *sotwConn) wanted(ts *sotwType, snap snapshot) []string {
	return snap.filter(func(n string) bool { return c.wants(ts, n) })
}

// respondSubscribed sends every subscribed existing resource: the full state
// for Listener/Cluster (GRP-1), even when empty, and for the other types only
// when there is something to send. skipSent implements
// FaultNoResendOnResubscribe.
func (c *sotwConn) respondSubscribed(ts *sotwType, snap snapshot, skipSent bool) error {
	return c.respondNames(ts, snap, c.wanted(ts, snap), skipSent)
}

// respondNames is respondSubscribed for the given names only (wanted, and
// existing, for a type that is no full state).
func (c *sotwConn) respondNames(ts *sotwType, snap snapshot, names []string, skipSent bool) error {
	if skipSent && !ts.t.Wildcard {
		// Breaks RES-4/RES-5: unchanged resources sent before are left out.
		var fresh []string
		for _, n := range names {
			if ts.sent[n] != snap.resources[n].version {
				fresh = append(fresh, n)
			}
		}
		names = fresh
	}
	if len(names) == 0 && !ts.t.Wildcard {
		return nil
	}
	return c.send(ts, snap, names, ts.t.Wildcard)
}

// onWake pushes store changes. For every type it compares what the stream
// has sent with the store: this is what lets a subscription to a missing
// name be served once the resource is created (DNE-3), and sends nothing
// for names the stream does not subscribe to (UNSUB-2).
//
// One change (a batch of the fixture's) is pushed make-before-break
// (CONS-1..6): first what is added or updated, type by type in the order
// a client needs them (clusters before their endpoints, both before the
// listeners and routes that use them), with a full-state type still
// holding what was deleted; then the removals, referrers first.
func (c *sotwConn) onWake() error {
	type pending struct {
		ts      *sotwType
		snap    snapshot
		changed []string
		deleted bool
	}
	var updates, removals []pending
	urls := c.pushing()
	// Every type is read at one moment: read one after the other, a
	// change landing in between would be half seen, and its listener
	// pushed ahead of the cluster it came with (CONS-1).
	snaps := c.snapshots(urls)
	for _, url := range urls {
		ts := c.types[url]
		snap := c.xview(ts.t, snaps[url], true, ts.names, nil)
		if h := c.s.hooks.viewed; h != nil {
			h(url)
		}
		var changed []string
		for _, n := range sortedNames(snap.resources) {
			// MULTI-2: only the streams subscribed to a resource get it.
			wanted := c.wants(ts, n) || c.s.has(FaultBroadcastUpdates) // breaks MULTI-2 when set
			if wanted && ts.sent[n] != c.versionOf(snap.resources[n]) {
				changed = append(changed, n)
			}
		}
		if c.s.has(FaultBumpAllTypes) && len(changed) == 0 && snap.version != ts.lastVersion {
			// Breaks VER-2 / UPD-1: a new version of an unchanged type is pushed.
			if err := c.respondSubscribed(ts, snap, false); err != nil {
				return err
			}
			continue
		}
		deleted := false
		for n := range ts.sent {
			if _, ok := snap.resources[n]; ok {
				continue
			}
			if c.s.has(FaultRecreationAfterUnsubscribe) && !c.wants(ts, n) {
				ts.rearmed[n] = true // breaks UNSUB-2: its re-creation will be pushed
				continue
			}
			if !ts.t.Wildcard {
				// DEL-5: outside Listener/Cluster absence is no deletion and
				// an empty response is a no-op, so nothing is sent; forget
				// it so that re-creating it is a change.
				delete(ts.sent, n)
			} else if c.wants(ts, n) {
				deleted = true
			}
			if c.s.has(FaultForgetDeleted) {
				c.forgetDeleted(ts, n)
			}
		}
		if deleted && c.s.has(FaultNeverReportDeletions) {
			deleted = false // breaks DEL-7: deletions trigger no response
		}
		if len(changed) > 0 {
			updates = append(updates, pending{ts, snap, changed, deleted})
		}
		if deleted {
			removals = append(removals, pending{ts: ts, snap: snap, deleted: true})
		}
	}
	for _, ph := range phases(c.conn, updates, removals, func(p pending) string { return p.ts.t.URL }) {
		for _, p := range ph.pending {
			if err := c.push(p.ts, p.snap, p.changed, p.deleted, ph.removing); err != nil {
				return err
			}
		}
	}
	return nil
}

// push sends one type's part of a change: its updates (removing false) or
// its removals. A full-state type sends the whole state; while updating,
// the resources the change deletes are kept in it (make-before-break,
// CONS-6), the removal phase then leaves them out.
func (c *sotwConn) push(ts *sotwType, snap snapshot, changed []string, deleted, removing bool) error {
	switch {
	case !ts.t.Wildcard:
		if removing {
			return nil // DEL-5: nothing to say about removals
		}
		if c.s.has(FaultFullStateEveryType) {
			return c.send(ts, snap, c.wanted(ts, snap), false) // GRP-2 not used (MAY)
		}
		return c.send(ts, snap, changed, false) // GRP-2: only the changed ones
	case removing && c.s.has(FaultEmptyStateOnDelete):
		return c.send(ts, snap, nil, true) // breaks GRP-1: what remains is dropped
	case removing:
		// GRP-1, DEL-7: a deleted resource is simply absent from the full state.
		return c.send(ts, snap, c.wanted(ts, snap), true)
	case c.s.has(FaultPartialFullState) || (c.s.has(FaultPartialStateForNamed) && !ts.wildcard):
		return c.send(ts, snap, changed, false) // breaks GRP-1
	case deleted && !c.s.has(FaultRemovalsFirst):
		// GRP-1 with the deleted ones still in: they go in the removal phase.
		return c.sendKeeping(ts, snap, c.wanted(ts, snap))
	}
	if err := c.send(ts, snap, c.wanted(ts, snap), true); err != nil {
		return err
	}
	if rds := c.types[wire.Route.URL]; ts.t.URL == wire.Listener.URL && rds != nil && rds.started && c.s.has(FaultResendRoutesOnListenerUpdate) {
		// WARM-5 not used (MAY): the listener's routes go again, unchanged.
		return c.respondSubscribed(rds, c.snapshot(wire.Route.URL), false)
	}
	return nil
}

// sendKeeping sends the full state names plus, as last sent, the
// resources the store deleted that the stream still holds.
func (c *sotwConn) sendKeeping(ts *sotwType, snap snapshot, names []string) error {
	stale := map[string]*anypb.Any{}
	for n := range ts.sent {
		if _, ok := snap.resources[n]; !ok && c.wants(ts, n) && ts.sentAny[n] != nil {
			stale[n] = ts.sentAny[n]
		}
	}
	return c.sendWith(ts, snap, names, false, stale)
}

// pushOrder is the order in which the types of a change are pushed:
// make-before-break (see onWake), or with FaultOrderAsSubscribed the order
// in which the stream subscribed to them.
func (c *conn) pushOrder(subscribed []string) []string {
	if c.s.has(FaultOrderAsSubscribed) {
		return subscribed // breaks CONS-1..5
	}
	var out []string
	for _, t := range makeBeforeBreak {
		if slices.Contains(subscribed, t.URL) {
			out = append(out, t.URL)
		}
	}
	// Types outside the eight (a list collection, COLL-1) refer to
	// nothing a client must have first: they go last.
	for _, u := range subscribed {
		if !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// pushable lists, in push order, the types of order a change is pushed
// for: those requested, and not stalled by a fault; base finds a type's
// state.
func (c *conn) pushable(order []string, base func(url string) *typeBase) []string {
	var out []string
	for _, u := range c.pushOrder(order) {
		if ts := base(u); ts.started && !ts.stalled {
			out = append(out, u)
		}
	}
	return out
}

// pushing lists the types of the stream a change is pushed for.
func (c *sotwConn) pushing() []string {
	return c.pushable(c.order, func(u string) *typeBase { return &c.types[u].typeBase })
}

// makeBeforeBreak orders the types of one change: what a resource refers
// to comes before it (CONS-1..5).
var makeBeforeBreak = []wire.Type{wire.Secret, wire.Cluster, wire.Endpoint, wire.Listener, wire.Route, wire.ScopedRoute, wire.VirtualHost, wire.Runtime}

// removalOrder orders the removals of one change referrers first:
// listeners and routes before the clusters they used, clusters before
// their endpoints (CONS-6).
var removalOrder = []wire.Type{wire.Listener, wire.ScopedRoute, wire.Route, wire.VirtualHost, wire.Cluster, wire.Endpoint, wire.Secret, wire.Runtime}

// inRemovalOrder sorts ps by removalOrder of their type URL.
func inRemovalOrder[P any](ps []P, typeOf func(P) string) []P {
	var out []P
	for _, t := range removalOrder {
		for _, p := range ps {
			if typeOf(p) == t.URL {
				out = append(out, p)
			}
		}
	}
	for _, p := range ps { // a list collection (COLL-1): last
		if !slices.ContainsFunc(removalOrder, func(t wire.Type) bool { return t.URL == typeOf(p) }) {
			out = append(out, p)
		}
	}
	return out
}

// versionOf is what the stream compares to decide whether a resource
// changed: its version, which covers its TTL, or with
// FaultTTLChangeNotPushed its content only.
func (c *conn) versionOf(e *entry) string {
	if c.s.has(FaultTTLChangeNotPushed) {
		return contentVersion(e.res) // breaks TTL-3
	}
	return e.version
}

// send sends one response of ts's type with the named resources. full says
// the response is the complete state, so names missing from the store are
// no longer known to the client.
func (c *sotwConn) send(ts *sotwType, snap snapshot, names []string, full bool) error {
	return c.sendWith(ts, snap, names, full, nil)
}

// sendWith is send with stale resources added as they were last sent.
func (c *sotwConn) sendWith(ts *sotwType, snap snapshot, names []string, full bool, stale map[string]*anypb.Any) error {
	resp := &discovery.DiscoveryResponse{
		VersionInfo: c.versionInfo(snap),
		TypeUrl:     ts.t.URL, // STREAM-7: the requested type
		Nonce:       c.nextNonce(),
	}
	for _, n := range names { // DUP-1: names are unique
		e := snap.resources[n]
		if c.sotwError(ts, resp, n, e) { // errors.go: in resource_errors instead (ERR-1, ERR-2)
			if c.s.has(FaultErrorEndsResponse) {
				break // breaks RES-2: the names after it are left out
			}
			continue
		}
		a := c.pack(ts.t, e)
		if prev, ok := ts.sentAny[n]; ok && c.s.has(FaultMergeUpdates) && ts.sent[n] != c.versionOf(e) {
			a = mergeAny(prev, a) // breaks GRP-4
		}
		ts.sentAny[n] = a
		resp.Resources = append(resp.Resources, c.wrap(n, e, a))
		ts.sent[n] = c.versionOf(e)
	}
	for _, n := range sortedNames(stale) {
		resp.Resources = append(resp.Resources, stale[n])
	}
	c.errorsOnly(resp) // breaks ERR-3 with FaultErrorsDropFullState
	for _, n := range names {
		switch ts.t.URL {
		case wire.Cluster.URL:
			c.clustersSent[n] = true
		case wire.Endpoint.URL:
			delete(c.clustersSent, n)
		}
	}
	if c.s.has(FaultDuplicateNames) && len(resp.Resources) > 0 {
		resp.Resources = append(resp.Resources, resp.Resources[0]) // breaks DUP-1
	}
	if full {
		for n := range ts.sent {
			if _, ok := snap.resources[n]; !ok {
				delete(ts.sent, n)
			}
		}
	}
	ts.lastNonce = resp.Nonce
	ts.lastVersion = snap.version
	if !c.s.has(FaultNackRejectsEverySent) { // breaks RES-5 when set: a NACK rejects every name ever sent
		ts.lastSent = map[string]string{}
	}
	for _, n := range names {
		if e, ok := snap.resources[n]; ok {
			ts.lastSent[n] = c.versionOf(e)
		}
	}
	c.s.sent(c.node, ts.t, names)
	var eds nameSet
	if ts := c.types[wire.Endpoint.URL]; ts != nil {
		eds = ts.names
	}
	if c.holdsHeadOfLine(eds) {
		return nil // breaks ADS-2: nothing is answered while an EDS name is missing
	}
	return c.st.Send(resp)
}

// wrap is the resource as a SotW response carries it: wrapped in a
// discovery Resource with its TTL when it has one and the client takes
// both TTLs and wrappers (TTL-1, TTL-5), bare otherwise, since a TTL
// cannot be said without a wrapper.
func (c *sotwConn) wrap(name string, e *entry, a *anypb.Any) *anypb.Any {
	if w, ok := c.wrapVariant(name, e, a); ok {
		return w // dynamic.go: a variant goes by resource_name (DYN-3)
	}
	if e.ttl == nil || !c.takesWrappers() || !(c.takesTTL() || c.s.has(FaultWrapForEveryone)) {
		return a
	}
	w, err := anypb.New(&discovery.Resource{Name: name, Version: e.version, Ttl: e.ttl, Resource: a})
	if err != nil {
		return a
	}
	return w
}

// versionInfo is the type's version for the node: it changes whenever a
// resource of the type changes (VER-1) and only then (VER-2).
func (c *sotwConn) versionInfo(snap snapshot) string {
	if c.s.has(FaultStaticVersion) {
		return "v1" // breaks VER-1
	}
	if c.service == nil && c.s.has(FaultSharedAdsNonce) {
		c.versions++ // breaks VER-2: one counter for every type on the stream
		return fmt.Sprintf("v%d", c.versions)
	}
	return snap.version
}
