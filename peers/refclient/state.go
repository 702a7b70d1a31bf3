package refclient

import (
	"fmt"
	"maps"
	"slices"
	"time"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// The CSDS statuses the client uses (OBS-1).
const (
	statusRequested    = admin.ClientResourceStatus_REQUESTED
	statusDoesNotExist = admin.ClientResourceStatus_DOES_NOT_EXIST
	statusAcked        = admin.ClientResourceStatus_ACKED
	statusNacked       = admin.ClientResourceStatus_NACKED
)

// resState is what the client knows about one watched resource.
type resState struct {
	typ, name string
	status    admin.ClientResourceStatus
	// version and any are the resource in use: after a NACK still the last
	// accepted one (ACK-7); nil when none is held.
	version string
	any     *anypb.Any
	// firstAny is the first content accepted (a fault's memory).
	firstAny *anypb.Any
	// refs are the resources it points at; the watches follow them.
	refs []ref
	// errDetails and errVersion describe the last rejected update, until
	// the next accepted one.
	errDetails, errVersion string
	// updated is when any was accepted (the config dump's last_updated).
	updated time.Time
	// Envoy profile (envoy.go): while warming, any is accepted but not yet
	// in use (WARM-1, WARM-2), and inUse is the version that is, nil when
	// none is yet.
	warming bool
	inUse   *revision
}

// state returns the state of a watched resource, nil if it is not watched.
func (c *Client) state(typ, name string) *resState {
	return c.res[typ][name]
}

// sorted lists the resources of type u by name: the order of both status
// views (CSDS and /config_dump).
func (c *Client) sorted(u string) []*resState {
	byName := c.res[u]
	out := make([]*resState, 0, len(byName))
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// shown is what the status views (CSDS and /config_dump) report of s, the
// one place both derive it from: the version in use (nil when none), the
// version warming (Envoy profile; nil when none) and the client status.
// ACKED means a version is in use, so a resource whose first version
// still warms is only REQUESTED (WARM-1); an update warming leaves the
// previous version in use, ACKED (WARM-2).
func (s *resState) shown() (use, warm *revision, status admin.ClientResourceStatus) {
	use, status = s.inUseNow(), s.status
	if s.warming {
		warm = s.current()
	}
	if status == statusAcked && use == nil {
		status = statusRequested
	}
	return use, warm, status
}

// reconcile recomputes the watches from the held resources, forgets what is
// no longer referenced, opens per-type streams for newly watched types and
// sends every subscription change, type by type in chain order.
func (c *Client) reconcile() {
	want := map[string]map[string]bool{}
	for _, t := range c.types() {
		want[t.URL] = map[string]bool{}
	}
	if c.envoy {
		c.seedWildcards(want)
	} else {
		rootType := wire.Listener.URL
		if c.rootIsCollection() {
			rootType = listenerCollection.URL // COLL-2
		}
		want[rootType][c.subscriptionName(c.rootListener())] = true
	}
	for u, names := range c.rewatch {
		for n := range names {
			if want[u] != nil {
				want[u][n] = true // RES-3, DELTA-5 or DEL-3 broken (faults_core.go)
			}
		}
	}
	// Refs point down the chain (LDS → RDS or CDS → CDS → EDS; in the
	// Envoy profile CDS → EDS, LDS → RDS → VHDS), or, for a redirect
	// (REDIR-1), to a resource of the same type; a glob's held members
	// are watched through it (COLL-6). Passes in chain order repeat until
	// nothing is added.
	for grew := true; grew; {
		grew = false
		add := func(typ, name string) {
			if w, ok := want[typ]; ok && !w[name] {
				w[name] = true
				grew = true
			}
		}
		for _, t := range c.types() {
			for _, name := range slices.Sorted(maps.Keys(want[t.URL])) {
				for _, m := range c.globMembers(t.URL, name) {
					add(t.URL, m)
				}
				if s := c.state(t.URL, name); s != nil {
					for _, r := range c.watchRefs(s) {
						add(r.typ, c.subscriptionName(r.name))
					}
				}
			}
		}
	}
	for _, t := range c.types() {
		u := t.URL
		if c.res[u] == nil {
			c.res[u] = map[string]*resState{}
		}
		for name := range c.res[u] {
			if !want[u][name] { // only referenced resources are watched and kept
				delete(c.res[u], name)
				c.stopDNE(u, name)
			}
		}
		if c.everRequested[u] == nil {
			c.everRequested[u] = map[string]bool{}
		}
		for name := range want[u] {
			if c.res[u][name] == nil {
				c.res[u][name] = &resState{typ: u, name: name, status: statusRequested}
			}
			c.everRequested[u][name] = true
		}
	}
	c.watched = want

	if c.cfg.Variant.IsADS() && !c.fault(FaultADSStreamPerType) {
		c.ensureSlot("")
		for _, t := range c.types() {
			for _, g := range c.groups(t.URL) {
				_, addr, _ := c.group(c.firstIn(t.URL, g))
				c.ensureSlotIn(g, addr, "")
			}
		}
	} else {
		for _, t := range c.types() {
			if c.fileSourced(t.URL) {
				continue // read from a file (fs.go), not asked of any server
			}
			if c.wildcard(t.URL) {
				c.ensureSlot(t.URL)
			}
			for _, g := range c.groups(t.URL) {
				_, addr, _ := c.group(c.firstIn(t.URL, g))
				c.ensureSlotIn(g, addr, t.URL)
			}
		}
	}
	for _, sl := range c.orderedSlots() {
		if sl.cur == nil {
			continue
		}
		for _, u := range sl.types {
			c.syncType(sl.cur, u)
		}
	}
	c.edsAgain = false
}

// rootListener is the listener every watch starts from: the one the client
// was pointed at.
func (c *Client) rootListener() string {
	if c.fault(FaultWrongListenerName) {
		return c.cfg.Listener + wrongListenerSuffix // RES-1 broken
	}
	return c.root
}

// orderedSlots lists the slots in chain order so that requests triggered by
// one response go out in a stable order.
func (c *Client) orderedSlots() []*slot {
	var out []*slot
	if sl, ok := c.slots[""]; ok {
		out = append(out, sl)
	}
	for _, t := range c.types() {
		if sl, ok := c.slots[t.URL]; ok {
			out = append(out, sl)
		}
	}
	// The other servers' slots (xdstp.go), in a stable order.
	for _, k := range slices.Sorted(maps.Keys(c.slots)) {
		if sl := c.slots[k]; !slices.Contains(out, sl) {
			out = append(out, sl)
		}
	}
	return out
}

// requested is the sorted set of names the client asks for of type u.
func (c *Client) requested(u string) []string {
	if c.wildcard(u) {
		return nil // asked for by wildcard: no name is ever listed
	}
	names := maps.Clone(c.watched[u])
	if names == nil {
		names = map[string]bool{}
	}
	if c.fault(FaultNeverUnsubscribe) {
		// UNSUB-1 broken: a name once asked for is asked for forever.
		maps.Copy(names, c.everRequested[u])
	}
	if c.fault(FaultXdstpDeltaOnly) && !c.cfg.Variant.IsDelta() {
		// XDSTP-18 broken: xdstp names are asked for over delta only.
		maps.DeleteFunc(names, func(n string, _ bool) bool { return xdstp.Is(n) })
	}
	// COLL-6: a glob is asked for over delta only; its members come
	// through it, never by name.
	maps.DeleteFunc(names, func(n string, _ bool) bool {
		return (isGlob(n) && !c.cfg.Variant.IsDelta() && !c.fault(FaultGlobOverSotW)) || c.inWatchedGlob(u, n)
	})
	if c.fault(FaultOneWatchPerPath) {
		return onePerPath(slices.Sorted(maps.Keys(names)))
	}
	return slices.Sorted(maps.Keys(names))
}

// held is {name: version} of the resources of type u the client holds.
func (c *Client) held(u string) map[string]string {
	var out map[string]string
	for name, s := range c.res[u] {
		if s.any != nil {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = s.version
		}
	}
	return out
}

// syncType sends the request that tells st's server the current names of
// type u, if they differ from what this stream was last told. A type whose
// last name was dropped still gets a request (UNSUB-1, UNSUB-3).
func (c *Client) syncType(st *stream, u string) {
	if c.wildcard(u) {
		if !st.sent[u] {
			c.subscribeWildcard(st, u)
		}
		return // a wildcard subscription never changes
	}
	names := c.requestedOn(st, u)
	if !st.sent[u] && st.gen > 1 && c.fault(FaultReconnectForgetsPending) {
		// RECONN-3, DELTA-7 broken: the new stream is told only what is
		// held, and the client takes the server to know the rest.
		held := slices.DeleteFunc(slices.Clone(names), func(n string) bool { s := c.state(u, n); return s == nil || s.any == nil })
		if len(held) > 0 {
			c.subscribe(st, u, held, nil)
		}
		st.sent[u], st.sentNames[u] = true, setOf(names)
		return
	}
	if !st.sent[u] {
		if st.gen > 1 && c.fault(FaultGlobMembersByNameOnReconnect) {
			names = c.globsAsMembers(u, names) // DELTA-7 broken: the glob is not subscribed again
		}
		if len(names) > 0 {
			c.subscribe(st, u, names, nil)
		}
		return
	}
	cur := st.sentNames[u]
	var add, drop []string
	for _, n := range names {
		if !cur[n] {
			add = append(add, n)
		}
	}
	want := setOf(names)
	for _, n := range slices.Sorted(maps.Keys(cur)) {
		if !want[n] {
			drop = append(drop, n)
		}
	}
	if len(add) == 0 && len(drop) == 0 {
		if c.askAgain(st, u) {
			c.subscribe(st, u, names, nil) // the same request again (envoy.go)
		}
		return
	}
	if len(names) == 0 && c.fault(FaultSilentLastUnsubscribe) {
		st.sentNames[u] = nil // UNSUB-1, UNSUB-3 broken: nobody is told
		return
	}
	if len(names) == 0 && c.fault(FaultLastUnsubscribeSaysNothing) {
		// UNSUB-1, UNSUB-3 broken: a request goes out, but drops nothing.
		if st.slot.delta {
			c.subscribe(st, u, nil, nil)
		} else {
			c.subscribe(st, u, drop, nil)
		}
		return
	}
	switch {
	case st.slot.delta:
		c.subscribe(st, u, add, drop)
	case len(add) > 0 && c.fault(FaultOnlyNewNames):
		c.subscribe(st, u, add, nil) // RES-1 broken: not the full set
	default:
		c.subscribe(st, u, names, nil)
	}
}

// subscribe queues a subscription request: SotW with the full name set
// (RES-1), Delta with the diff.
func (c *Client) subscribe(st *stream, u string, names, drop []string) {
	if st.slot.delta {
		c.enqueue(st, c.deltaRequest(st, u, names, drop))
		return
	}
	req := c.sotwRequest(st, u, names, false)
	c.enqueue(st, req)
	if len(names) == 0 && c.fault(FaultForgetNonceOnUnsubscribe) {
		// NONCE-6 broken: the nonce goes with the last name.
		delete(st.nonces, u)
		delete(st.prevNonces, u)
	}
}

// nodeFor returns the node for the next request on st: only on the first
// one (STREAM-3).
func (c *Client) nodeFor(st *stream) *core.Node {
	if c.fault(FaultNoNode) { // STREAM-3 broken
		return nil
	}
	if c.fault(FaultNodeDrifts) { // STREAM-5 broken
		c.nodeCounter++
		n := c.baseNode()
		n.UserAgentVersionType = &core.Node_UserAgentVersion{UserAgentVersion: fmt.Sprintf("%s.%d", userAgentVersion, c.nodeCounter)}
		st.nodeSent = true
		return n
	}
	if st.nodeSent {
		return nil
	}
	st.nodeSent = true
	return c.baseNode()
}

// sotwNonce is the nonce SotW requests of type u carry on st: the latest
// received for that type on this stream (NONCE-3), "" before any (NONCE-4).
func (c *Client) sotwNonce(st *stream, u string) string {
	n := st.nonces[u]
	if c.fault(FaultEchoOldNonce) { // NONCE-3 broken
		if p, ok := st.prevNonces[u]; ok {
			n = p
		}
	}
	if c.fault(FaultStreamWideNonce) { // NONCE-3 broken on ADS
		n = st.lastNonce
	}
	if c.fault(FaultNonceOfLastAccepted) && st.nackedLatest[u] {
		n = st.acceptedNonces[u] // NONCE-3 broken
	}
	return n
}

// sotwRequest builds a SotW request of type u naming names, with the last
// accepted version (VER-4) and the type's nonce, and records what the
// stream was told. reply is true for ACKs and NACKs.
func (c *Client) sotwRequest(st *stream, u string, names []string, reply bool) *discovery.DiscoveryRequest {
	req := &discovery.DiscoveryRequest{
		Node:          c.nodeFor(st),
		TypeUrl:       u,
		ResourceNames: names,
		VersionInfo:   c.versions[c.versionKey(st, u)],
		ResponseNonce: c.sotwNonce(st, u),
	}
	if !reply && !st.sent[u] && st.gen > 1 && c.fault(FaultReconnectEmptyVersion) {
		req.VersionInfo = "" // VER-4 broken
	}
	if !reply && st.sent[u] && c.fault(FaultHintWithoutVersion) {
		req.VersionInfo = "" // HINT-1 not used (MAY)
	}
	if c.fault(FaultStreamWideVersion) && st.lastVersion != "" {
		req.VersionInfo = st.lastVersion // VER-2, ADS-1 broken on ADS
	}
	if v, ok := st.rejectedVersion[u]; ok && !reply && c.fault(FaultVersionAfterNackIsRejected) {
		req.VersionInfo = v // SEQ-1 broken: the version it rejected
	}
	if reply {
		st.repliedNames[u] = slices.Clone(names) // nack-restates-replied-names' memory
	}
	if c.locating() {
		// xRFC TP2: the names go as locators with the parameters; a
		// locator left out ends its subscription (LOC-1).
		located := req.ResourceNames
		if c.fault(FaultLocatorsSticky) {
			// LOC-1 broken: every locator ever sent stays.
			set := setOf(located)
			for n := range c.everRequested[u] {
				if c.inGroup(n, st.slot.group) {
					set[n] = true
				}
			}
			located = slices.Sorted(maps.Keys(set))
		}
		req.ResourceLocators, req.ResourceNames = c.locators(u, located), nil
	}
	resent := st.gen > 1 && !st.sent[u]
	st.sent[u] = true
	st.sentNames[u] = setOf(names)
	for _, n := range names {
		c.startDNE(u, n, resent)
	}
	return req
}

// deltaRequest builds a Delta subscription change. The first request of a
// type on a stream lists every name and the versions held
// (DELTA-6, DELTA-7); later ones only the diff (UNSUB-3). A request that
// acknowledges nothing carries no nonce (NONCE-11).
func (c *Client) deltaRequest(st *stream, u string, sub, unsub []string) *discovery.DeltaDiscoveryRequest {
	first := !st.sent[u]
	req := &discovery.DeltaDiscoveryRequest{
		Node:                     c.nodeFor(st),
		TypeUrl:                  u,
		ResourceNamesSubscribe:   sub,
		ResourceNamesUnsubscribe: unsub,
	}
	if (first && !c.fault(FaultForgetInitialResourceVersions)) || c.fault(FaultIrvOnEveryRequest) {
		req.InitialResourceVersions = c.heldOn(st, u)
		if c.fault(FaultStaleInitialVersions) {
			req.InitialResourceVersions = maps.Clone(c.firstVersions[u]) // DELTA-6 broken
		}
		if c.fault(FaultIrvSystemVersion) {
			for n := range req.InitialResourceVersions {
				req.InitialResourceVersions[n] = c.sysVersions[c.versionKey(st, u)] // DELTA-6 broken
			}
		}
		if c.fault(FaultIrvListsPending) && st.gen > 1 {
			for _, n := range sub {
				if _, held := req.InitialResourceVersions[n]; !held {
					if req.InitialResourceVersions == nil {
						req.InitialResourceVersions = map[string]string{}
					}
					req.InitialResourceVersions[n] = "" // DELTA-6 broken: a name never received
				}
			}
		}
	}
	if first && c.fault(FaultReuseNonceAfterReconnect) {
		req.ResponseNonce = st.nonces[u] // NONCE-5 broken
	}
	if c.fault(FaultStreamWideNonce) {
		req.ResponseNonce = st.lastNonce // NONCE-3, NONCE-11 broken
	}
	if c.locating() {
		// xRFC TP2: the names go as locators with the parameters.
		req.ResourceLocatorsSubscribe, req.ResourceNamesSubscribe = c.locators(u, sub), nil
		switch {
		case c.fault(FaultLocatorUnsubscribeByName):
			// LOC-1 broken: the bare names stay in resource_names_unsubscribe.
		case c.fault(FaultLocatorUnsubscribeWithoutParams):
			req.ResourceLocatorsUnsubscribe, req.ResourceNamesUnsubscribe = bareLocators(unsub), nil // LOC-1 broken
		default:
			// LOC-1: each ends with the locator it was subscribed with.
			req.ResourceLocatorsUnsubscribe, req.ResourceNamesUnsubscribe = c.locators(u, unsub), nil
		}
	}
	st.sent[u] = true
	if st.sentNames[u] == nil {
		st.sentNames[u] = map[string]bool{}
	}
	for _, n := range sub {
		st.sentNames[u][n] = true
		c.startDNE(u, n, first && st.gen > 1)
	}
	for _, n := range unsub {
		delete(st.sentNames[u], n)
	}
	return req
}

func setOf(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}
