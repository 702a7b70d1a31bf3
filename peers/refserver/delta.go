package refserver

import (
	"slices"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/wire"
)

// deltaType is the state of one resource type on a Delta stream.
type deltaType struct {
	typeBase

	subscribed nameSet // explicitly subscribed names
	globs      nameSet // subscribed glob collections (COLL-4), not in subscribed
	// known maps the names the client holds, as far as the server knows, to
	// their versions: what was sent, plus initial_resource_versions.
	known map[string]string

	firstSent map[string]string // FaultFirstResourceVersion: version first sent per name
	everSent  map[string]string // FaultNoResendOnResubscribe: last version sent per name
}

// deltaConn is one Delta stream, ADS or per-type.
type deltaConn struct {
	*conn
	st    deltaStream
	types map[string]*deltaType
	order []string // type URLs in the order first seen, for deterministic pushes
}

func (s *Server) serveDelta(st deltaStream, service *wire.Type) error {
	c := &deltaConn{conn: newConn(s, service), st: st, types: map[string]*deltaType{}}
	return serve(st.Context(), c.conn, st.Recv, c.onRequest, c.onWake)
}

func (c *deltaConn) typeState(t wire.Type) *deltaType {
	ts := c.types[t.URL]
	if ts == nil {
		ts = &deltaType{typeBase: newTypeBase(t), subscribed: nameSet{}, globs: nameSet{}, known: map[string]string{}, everSent: map[string]string{}, firstSent: map[string]string{}}
		c.types[t.URL] = ts
		c.order = append(c.order, t.URL)
	}
	return ts
}

func (c *deltaConn) onRequest(req *discovery.DeltaDiscoveryRequest) error {
	if err := c.begin(req.GetNode()); err != nil {
		return err
	}
	t, err := c.resolveType(req.GetTypeUrl())
	if err != nil {
		return err
	}
	if c.s.dropped(t, true) {
		return nil // breaks STREAM-9 (Runtime) or STREAM-10 (VirtualHost)
	}
	ts := c.typeState(t)
	if c.s.has(FaultIgnoreFirstRequest) && !ts.ignoredFirst {
		ts.ignoredFirst = true
		return nil // breaks RES-2: the type's first request is never answered
	}
	if c.s.has(FaultWedgeOnUnusualRequest) && unusualDelta(req) {
		return c.wedge() // breaks ROB-2
	}
	nonce := req.GetResponseNonce()

	// NONCE-12: in Delta the nonce only correlates an ACK/NACK with a
	// response. Subscription changes apply whatever nonce comes with them.
	if c.s.has(FaultDeltaDropStaleRequests) && nonce != "" && nonce != ts.lastNonce {
		return nil // breaks NONCE-12
	}
	// A NACK's rejected content is not sent again (UPD-1).
	nack := req.GetErrorDetail() != nil
	if nack && c.s.has(FaultCloseOnNack) {
		return status.Error(codes.Internal, "client rejected the configuration") // breaks ACK-9
	}
	// Breaks ACK-9 with FaultStallAfterNack: pushes wait for the next request.
	ts.stalled = nack && c.s.has(FaultStallAfterNack)
	if nack && c.s.has(FaultLateNackResend) {
		// Breaks ACK-5 / UPD-1, a second later: the rejected content again.
		c.after(time.Second, func() error {
			snap := c.snapshot(t.URL)
			return c.send(ts, snap, setOfNames(c.wanted(ts, snap)), nil)
		})
	}

	sub, unsub := c.locateDelta(t, req) // dynamic.go: names and locators alike (DYN-2)
	// The first request that answers the latest response is its ACK or
	// NACK; its lists change the subscription like any request's.
	reply := nonce != "" && nonce == ts.lastNonce && nonce != ts.repliedNonce
	if nonce != "" {
		ts.repliedNonce = nonce
	}
	if (nack && c.s.has(FaultNackDropsSubscriptionChange)) || (reply && !nack && c.s.has(FaultAckDropsSubscriptionChange)) {
		sub, unsub = nil, nil // breaks DELTA-3 / UNSUB-2: the reply is taken for the ACK or NACK alone
	}
	if reply && c.s.has(FaultReplyKeepsDropped) {
		unsub = nil // breaks UNSUB-2: what the reply drops stays
	}
	if reply && !nack && c.s.has(FaultPartialAnswerSettles) {
		// Breaks DNE-3: the ACK settles the subscription; the names no
		// response carried are dropped.
		for n := range ts.subscribed {
			if _, ok := ts.known[n]; !ok {
				delete(ts.subscribed, n)
			}
		}
	}
	if irv := req.GetInitialResourceVersions(); !ts.started && len(irv) > 0 && c.s.has(FaultReconnectForgetsPending) {
		// Breaks DNE-3 / DELTA-3: a reconnecting client is taken to hold
		// all it asks for, so only the names it lists versions of stay.
		sub = slices.DeleteFunc(slices.Clone(sub), func(n string) bool { _, held := irv[n]; return !held && n != "*" })
	}
	// XDSTP-3, -4: xdstp names, subscribed or being subscribed, see
	// what they match under the name they were written as.
	snap := c.xview(t, c.snapshot(t.URL), false, ts.subscribed, sub)
	first := !ts.started
	ts.started = true
	wasWildcard := ts.wildcard
	send, remove := nameSet{}, nameSet{} // DUP-3: a name exists or not, never both

	if first {
		// Start from what the client reports, not from what a push of an
		// unrequested type (FaultPushUnrequestedTypes) may have recorded.
		ts.known = map[string]string{}
		// WILD-2, WILD-6: a first request of Listener/Cluster subscribing
		// to nothing is a legacy wildcard.
		if len(sub) == 0 && t.Wildcard && !c.s.has(FaultNoLegacyWildcard) { // breaks WILD-2 when set
			ts.wildcard = true
		}
		// DELTA-6, DELTA-8: initial_resource_versions (first request of the
		// type only) says what the client still holds from an earlier
		// stream; listed names that no longer exist are reported removed.
		if !c.s.has(FaultIgnoreInitialResourceVersions) { // breaks DELTA-8 when set
			for n, v := range req.GetInitialResourceVersions() {
				ts.known[n] = v
				if _, ok := snap.resources[n]; !ok {
					remove[n] = true
				}
			}
		}
	}

	if c.s.firstNameOnly(t) && len(sub) > 1 {
		sub = sub[:1] // breaks RES-2, MULTI-1
	}
	for _, n := range sub {
		if n == "*" && !c.s.has(FaultStarIsLiteral) { // breaks WILD-1/WILD-3 when set
			ts.wildcard = true // WILD-1, WILD-3
			continue
		}
		if t.Wildcard && c.s.has(FaultWildcardOnlyLdsCds) {
			continue // breaks WILD-8: the name is dropped
		}
		if c.subscribeGlob(ts, snap, n, send, remove) {
			continue // COLL-4, COLL-5, COLL-7
		}
		n = c.resolveAlias(snap, n)
		ts.subscribed[n] = true
		ts.everSubscribed[n] = true
		delete(ts.excluded, n)
		e, ok := snap.resources[n]
		if !ok {
			// DNE-5: a subscribed name that does not exist is reported in
			// removed_resources; the subscription is kept (DNE-3).
			if !c.s.has(FaultNoMissingReport) {
				remove[n] = true
			} // else breaks DNE-5
			if c.s.has(FaultForgetMissingSubscriptions) {
				delete(ts.subscribed, n) // breaks DNE-3
			}
			continue
		}
		if first && c.s.has(FaultInitialVersionsSkipAll) {
			if _, listed := req.GetInitialResourceVersions()[n]; listed {
				ts.known[n] = c.versionOf(e) // breaks DELTA-8: changed ones are skipped too
				continue
			}
		}
		if first && ts.known[n] == e.version {
			continue // DELTA-8: the reconnecting client already has this version
		}
		if c.s.has(FaultNoResendOnResubscribe) && ts.everSent[n] == c.versionOf(e) {
			continue // breaks DELTA-3
		}
		if c.s.warming(c.node, t, n) {
			continue // breaks WARM-3: the next change sends it
		}
		send[n] = true // DELTA-3: subscribing always (re)sends the resource
	}

	if len(unsub) > 1 && c.s.has(FaultUnsubscribeFirstOnly) {
		unsub = unsub[:1] // breaks UNSUB-2: the names after the first stay
	}
	if c.s.has(FaultGlobUnsubscribeKept) {
		// Breaks UNSUB-2: the globs stay subscribed.
		unsub = slices.DeleteFunc(slices.Clone(unsub), func(n string) bool { return ts.globs[n] })
	}

	for _, n := range unsub {
		if ts.globs[n] {
			c.unsubscribeGlob(ts, n)
			continue
		}
		n = c.resolveAlias(snap, n)
		n = c.unsubscribing(ts.subscribed, n) // XDSTP-3: in any parameter order (naming.go)
		if n == "*" && !c.s.has(FaultStarIsLiteral) {
			if !c.s.has(FaultStickyWildcard) { // breaks WILD-4 when set
				ts.wildcard = false // WILD-4: explicit names stay
			}
			if c.s.has(FaultDropNamesWithStar) {
				ts.subscribed = nameSet{} // breaks WILD-4: they go with it
			}
			continue
		}
		if !ts.subscribed[n] {
			if c.s.has(FaultPhantomUnsubscribeError) {
				return status.Errorf(codes.InvalidArgument, "%q is not subscribed", n) // breaks UNSUB-4
			}
			continue // UNSUB-4: unsubscribing a name never subscribed is a no-op
		}
		delete(ts.subscribed, n)
		if !ts.wildcard {
			if !c.s.has(FaultRemovalAfterUnsubscribe) { // else breaks UNSUB-2: its deletion is still reported
				delete(ts.known, n) // UNSUB-5: no response needed, the client drops it
			}
			continue
		}
		if c.s.has(FaultUnsubscribeWildcardMember) {
			ts.excluded[n] = true // breaks WILD-9 / UNSUB-6
			delete(ts.known, n)
			continue
		}
		// UNSUB-6: the wildcard still covers the name, so the server must
		// say whether the client keeps it: the resource if it exists,
		// removed_resources otherwise.
		if _, ok := snap.resources[n]; ok {
			send[n] = true
		} else {
			remove[n] = true
		}
	}
	if ts.wildcard && c.s.has(FaultOverlapOutsideSilent) {
		// Breaks UNSUB-6: a name outside the wildcard's set, unsubscribed
		// beside "*", is not reported removed.
		for _, n := range unsub {
			delete(remove, n)
		}
	}

	if !first && len(sub) == 0 && len(unsub) == 0 && c.s.has(FaultEmptyDeltaUnsubscribesAll) {
		// Breaks DELTA-2: empty lists are read as "unsubscribe everything".
		ts.subscribed, ts.wildcard, ts.known = nameSet{}, false, map[string]string{}
	}
	if !first && len(unsub) > 0 && len(ts.subscribed) == 0 && !ts.wildcard && t.Wildcard && c.s.has(FaultEmptyMeansWildcard) {
		ts.wildcard = true // breaks WILD-5: unsubscribing the last name turns wildcard on
	}

	switch {
	case ts.wildcard && !wasWildcard:
		ts.frozen = snap.names() // FaultWildcardFrozen's memory
		// Wildcard turned on: send every resource the client does not hold
		// at its current version.
		for n, e := range snap.resources {
			if !ts.excluded[n] && ts.known[n] != c.versionOf(e) {
				send[n] = true
			}
		}
	case wasWildcard && !ts.wildcard:
		// WILD-4: without "*" only the explicit names stay subscribed; the
		// wildcard-only resources are no longer tracked or pushed.
		for n := range ts.known {
			if !ts.subscribed[n] {
				delete(ts.known, n)
			}
		}
		ts.excluded = nameSet{}
		if c.s.has(FaultDropStarForgetsHeld) {
			ts.known = map[string]string{} // breaks WILD-4: the names kept are forgotten too
		}
	}
	if !first && wasWildcard && ts.wildcard && c.s.has(FaultRequestForgetsWildcardHeld) {
		// Breaks DEL-1: what the wildcard alone delivered is forgotten.
		for n := range ts.known {
			if !ts.subscribed[n] && !send[n] {
				delete(ts.known, n)
			}
		}
	}
	if first {
		// initial_resource_versions names count as subscribed only when the
		// request or the wildcard subscribes to them.
		for n := range ts.known {
			if !ts.subscribed[n] && !ts.wildcard {
				delete(ts.known, n)
			}
		}
	}
	if first && c.s.has(FaultReconnectHeldUntracked) {
		// Breaks DEL-1: what the client listed and is not sent again is
		// not remembered as held.
		for n := range req.GetInitialResourceVersions() {
			if !send[n] {
				delete(ts.known, n)
			}
		}
	}

	if nack && c.s.has(FaultNackResendLoop) {
		// Breaks ACK-5 / UPD-1: the NACK is read as a request for the content.
		for _, n := range c.wanted(ts, snap) {
			send[n] = true
		}
	}
	if nack && len(sub) > 0 && c.s.has(FaultNackAddResendsRejected) {
		// Breaks ACK-5 / UPD-1: a NACK that subscribes is answered with
		// everything subscribed, the rejected resources too.
		for _, n := range c.wanted(ts, snap) {
			send[n] = true
		}
	}
	isAck := !first && !nack && nonce != "" && len(sub) == 0 && len(unsub) == 0
	if isAck && c.s.has(FaultResendOnAck) {
		// Breaks UPD-1: an ACK is answered with the same resources again.
		for _, n := range c.wanted(ts, snap) {
			send[n] = true
		}
	}

	// The first response of a wildcard subscription is sent even when the
	// type has no resources, so the client learns that there are none
	// instead of waiting for its does-not-exist timeout (DNE-6), as the SotW
	// full state does.
	if len(send) > 0 || len(remove) > 0 || (first && ts.wildcard) {
		if err := c.send(ts, snap, send, remove); err != nil {
			return err
		}
	} else if ts.wildcard && c.s.has(FaultWildcardAnswersEveryRequest) {
		if err := c.send(ts, snap, send, remove); err != nil { // breaks UPD-1: an empty answer
			return err
		}
	}
	if first && c.service == nil && c.s.has(FaultPushUnrequestedTypes) {
		// Breaks STREAM-2: a type the client did not ask for arrives on ADS.
		if other := c.typeState(unrequestedType(t)); !other.started {
			o := c.snapshot(other.t.URL)
			return c.send(other, o, o.names(), nil)
		}
	}
	return nil
}

// resolveAlias is the name of the resource that has alias n, or n: a
// client may subscribe and unsubscribe by alias (DELTA-10).
func (c *deltaConn) resolveAlias(snap snapshot, n string) string {
	if _, ok := snap.resources[n]; ok || c.s.has(FaultAliasesIgnored) { // breaks DELTA-10 when set
		return n
	}
	for name, e := range snap.resources {
		if slices.Contains(e.aliases, n) {
			return name
		}
	}
	return n
}

// wants reports whether the stream subscribes to name: explicitly or through
// the wildcard, which covers every resource of the type for the node.
func (c *deltaConn) wants(ts *deltaType, name string) bool {
	if ts.subscribed[name] || c.s.inAnyGlob(ts.t, ts.globs, name) { // COLL-4: glob members too
		return true
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

// wanted lists the existing resources the stream subscribes to.
func (c *deltaConn) wanted(ts *deltaType, snap snapshot) []string {
	return snap.filter(func(n string) bool { return c.wants(ts, n) })
}

// onWake pushes store changes: subscribed resources whose version differs
// from what the client holds (DELTA-4, DNE-3), and deletions of resources
// the client holds (DEL-1).
func (c *deltaConn) onWake() error {
	type pending struct {
		ts           *deltaType
		snap         snapshot
		send, remove nameSet
	}
	var updates, removals []pending
	urls := c.pushing()
	snaps := c.snapshots(urls) // at one moment, as in sotwConn.onWake
	for _, url := range urls {
		ts := c.types[url]
		snap := c.xview(ts.t, snaps[url], false, ts.subscribed, nil)
		if h := c.s.hooks.viewed; h != nil {
			h(url)
		}
		send, remove := nameSet{}, nameSet{}
		for n, e := range snap.resources {
			// MULTI-2: only the streams subscribed to a resource get it.
			wanted := c.wants(ts, n) || c.s.has(FaultBroadcastUpdates) // breaks MULTI-2 when set
			if wanted && ts.known[n] != c.versionOf(e) {
				send[n] = true
			}
		}
		if c.s.has(FaultBumpAllTypes) && len(send) == 0 && snap.version != ts.lastVersion {
			// Breaks VER-2 / UPD-1: a new version of an unchanged type is pushed.
			for _, n := range c.wanted(ts, snap) {
				send[n] = true
			}
		}
		for n := range ts.known {
			if _, ok := snap.resources[n]; ok {
				continue
			}
			globOnly := !ts.subscribed[n] && c.s.inAnyGlob(ts.t, ts.globs, n)
			if c.s.has(FaultNeverReportDeletions) || (c.s.has(FaultNoRemovalUnderWildcard) && !ts.subscribed[n]) ||
				(globOnly && c.s.has(FaultGlobNoRemovals)) { // breaks COLL-4 when set
				delete(ts.known, n) // breaks DEL-1: forgotten silently
				continue
			}
			remove[n] = true
			if c.s.has(FaultForgetDeleted) {
				// Breaks DNE-3 / WILD-2: a re-created resource is not pushed.
				if ts.subscribed[n] {
					delete(ts.subscribed, n)
				} else if ts.wildcard {
					ts.excluded[n] = true
				}
			}
		}
		if c.s.has(FaultRecreationAfterUnsubscribe) {
			// Breaks UNSUB-2: a deleted resource ever sent is re-armed,
			// subscribed or not, so its re-creation is pushed.
			for n := range ts.everSent {
				if _, ok := snap.resources[n]; !ok && !c.wants(ts, n) {
					ts.rearmed[n] = true
				}
			}
		}
		if len(send) > 0 && (c.s.has(FaultDeltaPushEverything) || c.s.has(FaultVersionPerPush)) {
			for _, n := range c.wanted(ts, snap) {
				send[n] = true // breaks UPD-1: the unchanged ones too
			}
		}
		if len(send) > 0 {
			updates = append(updates, pending{ts: ts, snap: snap, send: send})
		}
		if len(remove) > 0 {
			removals = append(removals, pending{ts: ts, snap: snap, remove: remove})
		}
	}
	// Make-before-break (CONS-1..6): updates in dependency order, then
	// removals, referrers first (see sotwConn.onWake).
	for _, ph := range phases(c.conn, updates, removals, func(p pending) string { return p.ts.t.URL }) {
		for _, p := range ph.pending {
			if err := c.send(p.ts, p.snap, p.send, p.remove); err != nil {
				return err
			}
			rds := c.types[wire.Route.URL]
			if p.ts.t.URL == wire.Listener.URL && len(p.send) > 0 && rds != nil && rds.started && c.s.has(FaultResendRoutesOnListenerUpdate) {
				// WARM-5 not used (MAY): the listener's routes go again, unchanged.
				snap := c.snapshot(wire.Route.URL)
				if err := c.send(rds, snap, setOfNames(c.wanted(rds, snap)), nil); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pushing lists the types of the stream a change is pushed for.
func (c *deltaConn) pushing() []string {
	return c.pushable(c.order, func(u string) *typeBase { return &c.types[u].typeBase })
}

// send sends one delta response of ts's type and records what the client
// now holds.
func (c *deltaConn) send(ts *deltaType, snap snapshot, send, remove nameSet) error {
	resp := &discovery.DeltaDiscoveryResponse{
		SystemVersionInfo: snap.version,
		TypeUrl:           ts.t.URL, // STREAM-7
		Nonce:             c.nextNonce(),
	}
	for _, n := range sortedNames(send) { // DUP-1: names are unique
		e := snap.resources[n]
		if c.deltaError(ts, resp, n, e) { // errors.go: in resource_errors instead (ERR-1, ERR-2)
			if c.s.has(FaultErrorEndsResponse) {
				break // breaks RES-2: the names after it are left out
			}
			continue
		}
		r := &discovery.Resource{Name: c.servedName(ts.t, n), Version: e.version, Resource: c.pack(ts.t, e), Aliases: e.aliases} // VER-7, DELTA-10
		// dynamic.go: variants go by resource_name (DYN-3, DYN-4, DYN-6).
		c.nameVariant(ts.t, resp, r, e)
		if c.takesTTL() {
			r.Ttl = e.ttl // TTL-1: only for clients that take TTLs
		}
		switch {
		case c.s.has(FaultNoResourceVersions):
			r.Version = "" // breaks VER-7
		case c.s.has(FaultVersionOnFirstSendOnly) && ts.everSent[n] != "":
			r.Version = "" // breaks VER-7 from the second send on
		case c.s.has(FaultFirstResourceVersion) && ts.everSent[n] != "":
			r.Version = ts.firstSent[n] // breaks VER-7: the version does not follow the content
		case c.s.has(FaultVersionPerPush):
			r.Version = resp.Nonce // breaks VER-7: an unchanged resource gets a new version
		}
		if _, ok := ts.firstSent[n]; !ok {
			ts.firstSent[n] = r.Version
		}
		if prev, ok := ts.sentAny[n]; ok && c.s.has(FaultMergeUpdates) && ts.everSent[n] != c.versionOf(e) {
			r.Resource = mergeAny(prev, r.Resource) // breaks GRP-4
		}
		ts.sentAny[n] = r.Resource
		resp.Resources = append(resp.Resources, r)
		ts.known[n] = c.versionOf(e)
		ts.everSent[n] = c.versionOf(e)
	}
	if c.s.has(FaultDuplicateNames) && len(resp.Resources) > 0 {
		resp.Resources = append(resp.Resources, resp.Resources[0]) // breaks DUP-1
	}
	for _, n := range sortedNames(remove) {
		c.removeDelta(ts.t, resp, n) // dynamic.go: variants in removed_resource_names (DYN-5)
		delete(ts.known, n)
	}
	ts.lastNonce = resp.Nonce
	ts.lastVersion = snap.version
	c.s.sent(c.node, ts.t, sortedNames(send))
	var eds nameSet
	if ts := c.types[wire.Endpoint.URL]; ts != nil {
		eds = ts.subscribed
	}
	if c.holdsHeadOfLine(eds) {
		return nil // breaks ADS-2: nothing is answered while an EDS name is missing
	}
	if err := c.sendTorn(ts, snap); err != nil { // breaks DYN-6 with FaultTornVariantChange
		return err
	}
	if c.s.has(FaultRemovalKeptHeld) {
		// Breaks UPD-1: what was removed still counts as held, so every
		// later push reports it removed again.
		for n := range remove {
			ts.known[n] = "removed"
		}
	}
	return c.st.Send(resp)
}

// setOfNames is names as a set.
func setOfNames(names []string) nameSet {
	out := nameSet{}
	for _, n := range names {
		out[n] = true
	}
	return out
}
