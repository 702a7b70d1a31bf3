package refclient

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/wire"
)

// raw is one resource as it came off the wire; name is the delta
// Resource.name (empty in SotW).
type raw struct {
	any     *anypb.Any
	version string
	name    string
	// ttl is the Resource wrapper's TTL (TTL-2), nil when it has none.
	ttl *durationpb.Duration
	// heartbeat marks a wrapper without a body naming a resource held at
	// that version: it only restarts the TTL (TTL-4).
	heartbeat bool
	// constraints are the variant's dynamic parameter constraints
	// (Resource.resource_name, xRFC TP2), nil when it has none.
	constraints *discovery.DynamicParameterConstraints
	// bad says why the wrapper is rejected as it is, "" when it is not.
	bad string
}

// item is a resource that decoded and has a name; refs is nil when the
// resource failed the type checks (it is then only ever applied by the
// apply-rejected fault).
type item struct {
	name      string
	spelled   string // name as the response wrote it (omission-verbatim)
	any       *anypb.Any
	version   string
	refs      []ref
	ttl       *durationpb.Duration
	heartbeat bool
}

// problem is one reason to NACK a response; name is the resource it is
// about, "" when it concerns the response as a whole.
type problem struct {
	name, msg string
}

// onResponse processes one response: validation, then either apply and
// ACK or apply nothing and NACK (ACK-1, ACK-7). The reply is queued before
// the loop's reconcile queues any request the response triggers.
func (c *Client) onResponse(ev evResponse) {
	st := ev.st
	if st.held {
		st.held = false // waits-for-server: the server spoke, release the requests
	}
	delete(c.deadlines, timerKey{kind: silenceTimer, st: st})
	u, nonce := ev.sotw.GetTypeUrl(), ev.sotw.GetNonce()
	if ev.delta != nil {
		u, nonce = ev.delta.GetTypeUrl(), ev.delta.GetNonce()
	}
	if c.fault(FaultCrashOnUnusableResponse) && (nonce == "" || len(nonce) > 1<<10) {
		c.crash(fmt.Errorf("refclient: crashed on a response with a %d-byte nonce", len(nonce))) // breaks ROB-3
		return
	}
	if u == "" {
		u, _ = responseType(st, u) // implied by a per-type stream
	}
	if _, ok := c.knownType(u); !ok {
		// ROB-3, RES-3: a type the client never asked for is ignored. It
		// cannot be validated, so neither an ACK nor a NACK fits, and a
		// reply would name a type the client does not speak (STREAM-6).
		if c.fault(FaultCrashOnUnusableResponse) {
			c.crash(fmt.Errorf("refclient: crashed on a response of type %q", u)) // breaks ROB-3
		}
		return
	}
	if ev.sotw != nil {
		c.onSotW(st, ev.sotw)
	} else {
		c.onDelta(st, ev.delta)
	}
}

// responseType is the type a response on st is read as, and the type_url
// it came with when that is another one (foreign). A per-type stream
// carries its own type only: a response there is read as of that type,
// whatever it says (it implies the type when the server left it out), so
// its NACK carries the stream's type like every request on it (STREAM-6);
// decode rejects one that says another type (ROB-3). An empty SotW
// response of another type, read as the stream's full state, would
// otherwise delete every listener or cluster held.
func responseType(st *stream, u string) (typ, foreign string) {
	if st.slot.typ == "" {
		return u, ""
	}
	if u != "" && u != st.slot.typ {
		return st.slot.typ, u
	}
	return st.slot.typ, ""
}

// noteNonce records a response's nonce for its type on st (NONCE-3); it
// lives as long as the stream (NONCE-6).
func (c *Client) noteNonce(st *stream, u, nonce string) {
	if old, ok := st.nonces[u]; ok {
		st.prevNonces[u] = old
	}
	st.nonces[u] = nonce
	st.lastNonce = nonce
	c.respCount[u]++
}

// replies reports whether this response of type u gets an ACK/NACK.
func (c *Client) replies(u string) bool {
	return !(c.fault(FaultSkipAcks) && c.respCount[u]%2 == 0) // ACK-1 broken
}

func (c *Client) onSotW(st *stream, r *discovery.DiscoveryResponse) {
	u, foreign := responseType(st, r.GetTypeUrl())
	c.noteNonce(st, u, r.GetNonce())
	raws := make([]raw, 0, len(r.GetResources()))
	for _, a := range r.GetResources() {
		rw := c.unwrap(u, a, r.GetVersionInfo())
		if rw.heartbeat && c.fault(FaultHeartbeatDeletes) {
			continue // TTL-6 broken: the heartbeat reads as absence
		}
		raws = append(raws, rw)
	}
	items, probs, crash := c.decode(st, u, foreign, raws)
	if crash != nil {
		c.crash(crash)
		return
	}
	prev := c.versions[c.versionKey(st, u)]
	if len(probs) > 0 {
		switch {
		case c.fault(FaultApplyRejected):
			c.applySotW(st, u, items, errorNames(r.GetResourceErrors())) // ACK-7 broken
		case c.fault(FaultApplyDuplicates) && onlyDuplicates(probs):
			c.applySotW(st, u, items, errorNames(r.GetResourceErrors())) // DUP-2 broken: the last copy is used
		default:
			c.applyValid(u, items, probs) // ACK-8: the valid ones are used
		}
		msg := c.reject(u, func(string) string { return r.GetVersionInfo() }, probs)
		// The errors are about other resources than the rejected ones.
		c.applyErrors(u, r.GetVersionInfo(), r.GetResourceErrors(), itemNames(items), false)
		if !c.replies(u) {
			return
		}
		// ACK-3: the last accepted version, the rejected nonce, error_detail;
		// RES-1: the names wanted now.
		names := c.requestedOn(st, u)
		if prev, ok := st.repliedNames[u]; ok && c.fault(FaultNackRestatesRepliedNames) {
			names = prev // RES-1 broken: the names of the last reply
		}
		st.rejectedVersion[u] = r.GetVersionInfo() // version-after-nack-is-rejected's memory
		req := c.sotwRequest(st, u, names, true)
		if c.fault(FaultNackRejectedVersion) {
			req.VersionInfo = r.GetVersionInfo() // ACK-3 broken
		}
		if !c.fault(FaultNackWithoutErrorDetail) { // else ACK-3, ACK-4 broken
			req.ErrorDetail = &status.Status{Code: c.nackCode(), Message: c.nackMessage(msg)}
		}
		if c.fault(FaultNackEmptyNames) {
			req.ResourceNames = nil // RES-1 broken
		}
		if c.fault(FaultNoTypeURL) {
			req.TypeUrl = "" // STREAM-6 broken
		}
		st.nackedLatest[u] = true
		c.enqueueReply(st, req)
		return
	}
	c.applySotW(st, u, items, errorNames(r.GetResourceErrors()))
	c.applyErrors(u, r.GetVersionInfo(), r.GetResourceErrors(), itemNames(items), false)
	c.versions[c.versionKey(st, u)] = r.GetVersionInfo()
	st.lastVersion = r.GetVersionInfo()
	if !c.replies(u) {
		return
	}
	if c.fault(FaultRequestBeforeAck) {
		// UPD-4 broken: the subscription again, at the previous version,
		// before the ACK.
		again := c.sotwRequest(st, u, c.requestedOn(st, u), true)
		again.VersionInfo = prev
		c.enqueue(st, again)
	}
	st.nackedLatest[u] = false
	st.acceptedNonces[u] = r.GetNonce()
	delete(st.rejectedVersion, u)
	// ACK-2: the response's version and nonce, no error_detail, and the
	// names wanted now (RES-1).
	names := c.requestedOn(st, u)
	if c.fault(FaultNextRequestNamesAnsweredOnly) {
		names = answeredOnly(names, items) // RES-1 broken
	}
	req := c.sotwRequest(st, u, names, true)
	if c.fault(FaultAckEmptyNames) {
		req.ResourceNames = nil // ACK-2 broken
	}
	if c.fault(FaultAckWrongVersion) {
		req.VersionInfo = prev // ACK-2 broken
	}
	if c.fault(FaultAckEmptyNonce) {
		req.ResponseNonce = "" // NONCE-4 broken
	}
	if c.fault(FaultNoTypeURL) {
		req.TypeUrl = "" // STREAM-6 broken
	}
	c.enqueueReply(st, req)
}

// onlyDuplicates reports whether every problem is a duplicate name.
func onlyDuplicates(probs []problem) bool {
	for _, p := range probs {
		if !strings.HasPrefix(p.msg, "duplicate resource name") {
			return false
		}
	}
	return true
}

// applyValid applies, of a NACKed response, the resources that were
// valid, as gRPC clients do (ACK-8); a problem with the response as a
// whole applies none. A resource found invalid keeps the version in use
// (ACK-7).
func (c *Client) applyValid(u string, items []item, probs []problem) {
	if c.fault(FaultAllOrNothing) {
		return // ACK-8 not used (MAY)
	}
	bad := map[string]bool{}
	for _, p := range probs {
		if p.name == "" {
			return
		}
		bad[p.name] = true
	}
	for _, it := range items {
		if bad[it.name] {
			continue
		}
		if s := c.stateOrAdopt(u, it.name); s != nil {
			c.store(s, it)
		}
	}
}

// nackCode is the error_detail code of a NACK: INVALID_ARGUMENT, as gRPC
// clients send (ACK-3).
func (c *Client) nackCode() int32 {
	if c.fault(FaultNackCodeOK) {
		return 0 // ACK-3, DELTA-1 broken
	}
	return int32(codes.InvalidArgument)
}

func (c *Client) onDelta(st *stream, r *discovery.DeltaDiscoveryResponse) {
	u, foreign := responseType(st, r.GetTypeUrl())
	c.noteNonce(st, u, r.GetNonce())
	raws := make([]raw, len(r.GetResources()))
	versions := map[string]string{}
	for i, res := range r.GetResources() {
		name, bad := c.wrapperName(res)
		raws[i] = raw{any: res.GetResource(), version: res.GetVersion(), name: name, ttl: res.GetTtl(),
			constraints: res.GetResourceName().GetDynamicParameterConstraints(), bad: bad}
		if (res.GetResource() == nil || c.fault(FaultResendAtHeldVersionIsHeartbeat)) && bad == "" { // ERR-5 broken when set
			if hb, ok := c.heartbeat(u, res); ok {
				raws[i] = hb
			}
		}
		versions[name] = res.GetVersion()
	}
	// Variants sent with constraints are removed by removed_resource_names
	// (DYN-5): the name is what the client watches.
	removed := r.GetRemovedResources()
	for _, rn := range r.GetRemovedResourceNames() {
		removed = append(removed, rn.GetName())
	}
	items, probs, crash := c.decode(st, u, foreign, raws)
	if crash != nil {
		c.crash(crash)
		return
	}
	for _, it := range items {
		versions[it.name] = it.version
	}
	if c.fault(FaultNackUnknownRemoval) { // DEL-3 broken
		for _, name := range r.GetRemovedResources() {
			if c.state(u, name) == nil {
				probs = append(probs, problem{"", fmt.Sprintf("removal of unknown resource %q", name)})
			}
		}
	}
	sv := r.GetSystemVersionInfo()
	if c.fault(FaultNackDecreasingSystemVersion) { // VER-6 broken
		if prevSV, ok := c.sysVersions[c.versionKey(st, u)]; sv == "" || (ok && versionLess(sv, prevSV)) {
			probs = append(probs, problem{"", fmt.Sprintf("system_version_info %q is empty or below %q", sv, prevSV)})
		}
	}
	req := &discovery.DeltaDiscoveryRequest{TypeUrl: u, ResponseNonce: r.GetNonce()}
	if p, ok := st.prevNonces[u]; ok && c.fault(FaultEchoOldNonce) {
		req.ResponseNonce = p // NONCE-3 broken
	}
	if len(probs) > 0 {
		switch {
		case c.fault(FaultApplyRejected):
			c.applyDelta(u, items, removed) // ACK-7 broken
		case c.fault(FaultApplyDuplicates) && onlyDuplicates(probs):
			c.applyDelta(u, items, nil) // DUP-2 broken: the last copy is used
		default:
			c.applyValid(u, items, probs) // ACK-8: the valid ones are used
		}
		msg := c.reject(u, func(name string) string {
			if v := versions[name]; v != "" {
				return v
			}
			return sv
		}, probs)
		if !c.fault(FaultNackWithoutErrorDetail) { // else DELTA-1, ACK-4 broken
			req.ErrorDetail = &status.Status{Code: c.nackCode(), Message: c.nackMessage(msg)}
		}
		c.applyErrors(u, sv, r.GetResourceErrors(), itemNames(items), true)
	} else {
		c.applyDelta(u, items, removed)
		c.applyErrors(u, sv, r.GetResourceErrors(), itemNames(items), true)
		c.sysVersions[c.versionKey(st, u)] = sv
		if c.fault(FaultDeltaAckWithoutNonce) {
			req.ResponseNonce = "" // DELTA-1 broken
		}
		if c.fault(FaultNextRequestNamesAnsweredOnly) {
			// DELTA-2 broken: what the response left out is unsubscribed.
			req.ResourceNamesUnsubscribe = slices.DeleteFunc(c.requestedOn(st, u), func(n string) bool {
				return slices.ContainsFunc(items, func(it item) bool { return it.name == n })
			})
		}
	}
	if !c.replies(u) {
		return
	}
	// DELTA-1: the response's nonce, error_detail only on a NACK.
	req.Node = c.nodeFor(st)
	if c.fault(FaultIrvOnEveryRequest) {
		req.InitialResourceVersions = c.held(u) // DELTA-6 broken
	}
	if c.fault(FaultResubscribeInAcks) {
		req.ResourceNamesSubscribe = c.requested(u) // DELTA-2 broken
	}
	if c.fault(FaultNoTypeURL) {
		req.TypeUrl = "" // STREAM-6 broken
	}
	st.sent[u] = true // later requests of the type are not its first (DELTA-6)
	c.enqueueReply(st, req)
}

// versionLess orders system_version_info values numerically when both are
// numbers, else as strings (nack-decreasing-system-version only).
func versionLess(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	if errA == nil && errB == nil {
		return x < y
	}
	return a < b
}

// decode validates every resource of a response of type u. A response is
// valid when every resource has the response's type (STREAM-8), decodes,
// has a name, is not named twice (DUP-2) and passes the type checks of the
// gRPC profile. crash is set when the crash-on-empty-name fault fires.
func (c *Client) decode(st *stream, u, foreign string, raws []raw) (items []item, probs []problem, crash error) {
	t, ok := c.knownType(u)
	if !ok {
		return nil, []problem{{"", fmt.Sprintf("unsupported response type_url %q", u)}}, nil
	}
	if foreign != "" && !c.fault(FaultForeignTypeApplied) { // else ROB-3 broken
		probs = append(probs, problem{"", fmt.Sprintf("response of type %q on the %s stream", foreign, u)})
	}
	seen := map[string]int{}
	for i, r := range raws {
		if r.bad != "" {
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %d: %s", i, r.bad)})
			continue
		}
		if r.any == nil {
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %d (%q) has no body", i, r.name)})
			continue
		}
		if r.any.GetTypeUrl() == locatorTypeURL && r.name != "" {
			// REDIR-1: a redirect to another resource of the type.
			name := c.deliveredName(u, r.name)
			target, err := c.redirectTarget(u, r.any)
			if err != nil && c.fault(FaultRedirectFailureSilent) {
				// REDIR-3 broken: accepted, leading nowhere, no error shown.
				seen[name] = len(items)
				items = append(items, item{name: name, any: r.any, version: r.version, ttl: r.ttl})
				continue
			}
			if err != nil {
				// REDIR-3: a redirect the client cannot follow is rejected.
				probs = append(probs, problem{name, fmt.Sprintf("resource %q: %v", r.name, err)})
				continue
			}
			seen[name] = len(items)
			items = append(items, item{name: name, any: r.any, version: r.version, refs: []ref{{u, target}}, ttl: r.ttl})
			continue
		}
		if r.any.GetTypeUrl() != u {
			if c.fault(FaultIgnoreAnyType) {
				continue // STREAM-8 broken
			}
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %d has type %q, not the response's %q", i, r.any.GetTypeUrl(), u)})
			continue
		}
		m := t.New()
		if err := r.any.UnmarshalTo(m); err != nil {
			if c.fault(FaultCrashOnUnusableResponse) {
				return nil, nil, fmt.Errorf("refclient: crashed on %s resource %d, which does not decode: %w", t.Short, i, err) // breaks ROB-3
			}
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %d: decode %s: %v", i, t.Short, err)})
			continue
		}
		spelled := wire.NameOf(m)
		name := c.deliveredName(u, spelled)
		if name == "" && u == listenerCollection.URL {
			spelled = r.name
			name = c.deliveredName(u, r.name) // a collection is named by its Resource (COLL-1)
		}
		c.noteSpelling(u, name, spelled)
		if name == "" {
			if c.fault(FaultCrashOnEmptyName) {
				return nil, nil, fmt.Errorf("refclient: crashed on %s resource %d with an empty name", t.Short, i)
			}
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %d: %s has no name", i, t.Short)})
			continue
		}
		if r.name != "" && c.deliveredName(u, r.name) != name {
			probs = append(probs, problem{r.name, fmt.Sprintf("resource %q carries %s named %q", r.name, wording.A(t.Short), name)})
			continue
		}
		refs, err := c.validate(m)
		if err != nil {
			probs = append(probs, problem{name, err.Error()})
		}
		if msg := c.checkVariant(u, r.constraints); msg != "" {
			probs = append(probs, problem{name, msg}) // DYN-10
		}
		it := item{name: name, spelled: spelled, any: r.any, version: r.version, refs: refs, ttl: r.ttl, heartbeat: r.heartbeat}
		if j, dup := seen[name]; dup {
			if !c.fault(FaultAckDuplicates) { // else DUP-2 broken
				probs = append(probs, problem{name, fmt.Sprintf("duplicate resource name %q", name)})
			}
			items[j] = it // the last one wins
			continue
		}
		if c.fault(FaultNackUnrequested) && c.state(u, name) == nil {
			probs = append(probs, problem{name, fmt.Sprintf("resource %q was not requested", name)}) // RES-3 broken
		}
		seen[name] = len(items)
		items = append(items, it)
	}
	if c.fault(FaultNackSticky) && c.nackedTypes[u] {
		probs = append(probs, problem{"", "an earlier response of the type was rejected"}) // ACK-6 broken
	}
	return items, probs, nil
}

// reject marks the watched resources a NACK is about as NACKED, keeping
// the version in use (ACK-7), and returns the NACK message (ACK-4).
func (c *Client) reject(u string, versionOf func(name string) string, probs []problem) string {
	c.nackedTypes[u] = true
	msgs := make([]string, 0, len(probs))
	byName := map[string][]string{}
	for _, p := range probs {
		msgs = append(msgs, p.msg)
		if p.name != "" {
			byName[p.name] = append(byName[p.name], p.msg)
		}
	}
	for name, ms := range byName {
		if s := c.state(u, name); s != nil {
			s.status = statusNacked
			s.errDetails = strings.Join(ms, "; ")
			s.errVersion = versionOf(name)
		}
	}
	short := u
	if t, ok := wire.TypeByURL(u); ok {
		short = t.Short
	}
	return fmt.Sprintf("%s response rejected: %s", short, strings.Join(msgs, "; "))
}

// applySotW stores the watched resources of an accepted SotW response.
// Resources not watched are ignored (RES-3). A held Listener or Cluster
// missing from the response is deleted (DEL-4), unless the response names
// it in resource_errors (spared): the error says why it is missing, and
// decides what becomes of it (ERR-7); a missing resource of another type
// stays (DEL-5, GRP-3); a name never received stays REQUESTED, since the
// response may answer an older request (DNE-2).
func (c *Client) applySotW(st *stream, u string, items []item, spared map[string]bool) {
	in := map[string]bool{}
	t, _ := wire.TypeByURL(u)
	for _, it := range items {
		in[it.name] = true
		if c.fault(FaultOmissionVerbatim) {
			in[it.name], in[it.spelled] = false, true // DEL-4, XDSTP-3 broken: only the string asked for counts
		}
		switch s := c.stateOrAdopt(u, it.name); {
		case s != nil:
			c.store(s, it)
		case c.fault(FaultApplyDropped) && c.dropped(u, it.name):
			c.keepUnrequested(u, it) // RES-3 broken: what it dropped is used
		case c.fault(FaultRecreationRewatchesDropped):
			c.recreatedDropped(u, it.name)
		case c.fault(FaultApplyUnrequested):
			c.keepUnrequested(u, it)
		case c.fault(FaultEmptyIsWildcard) && !t.Wildcard && len(c.requested(u)) == 0:
			c.keepUnrequested(u, it) // RES-6 broken: no names read as all of them
		}
	}
	if t.Wildcard { // a full state: what it leaves out is deleted
		for name := range c.everRequested[u] {
			if !in[name] {
				c.deletedDropped(u, name)
			}
		}
	}
	deleteMissing := t.Wildcard
	if t.Wildcard && c.fault(FaultIgnoreLdsCdsOmission) {
		deleteMissing = false // DEL-4 broken
	}
	if t.Wildcard && len(items) > 0 && c.fault(FaultOmissionOnlyWhenEmpty) {
		deleteMissing = false // DEL-4 broken
	}
	if !t.Wildcard && c.fault(FaultOmissionDeletesAllTypes) {
		deleteMissing = true // DEL-5 broken
	}
	if !deleteMissing {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(c.res[u])) {
		s := c.res[u][name]
		switch {
		case in[name], spared[name]:
		case !c.inGroup(name, st.slot.group):
			// Another server's resource: this response says nothing of it.
		case s.any != nil:
			c.remove(s)
			c.removeAcross(u, name)
		case !t.Wildcard:
			c.remove(s) // DEL-5 broken: even a name never received is given up
		case c.fault(FaultAbsenceIsProof):
			c.remove(s) // DNE-2 broken: one response without it is taken as proof
		}
	}
}

// applyDelta stores the watched resources of an accepted delta response
// (DELTA-5 ignores the rest) and deletes the removed ones (DEL-2). A
// removed name the client does not watch is ignored (DEL-3); a watched one
// not yet received does not exist (DNE-5).
func (c *Client) applyDelta(u string, items []item, removed []string) {
	for _, it := range items {
		switch s := c.stateOrAdopt(u, it.name); {
		case s != nil:
			c.store(s, it)
		case c.fault(FaultApplyUnrequested), c.fault(FaultApplyDropped) && c.dropped(u, it.name):
			c.keepUnrequested(u, it) // RES-3, DELTA-5 broken
		case c.fault(FaultRecreationRewatchesDropped):
			c.recreatedDropped(u, it.name)
		}
	}
	if c.fault(FaultDeltaOmissionDeletes) {
		// GRP-3 broken: what the response leaves out is taken as deleted.
		in := map[string]bool{}
		for _, it := range items {
			in[it.name] = true
		}
		for _, s := range c.res[u] {
			if s.any != nil && !in[s.name] {
				c.remove(s)
			}
		}
	}
	if c.fault(FaultIgnoreRemoved) || (len(items) > 0 && c.fault(FaultIgnoreRemovedWithResources)) {
		return // DEL-2 broken
	}
	for _, name := range removed {
		watched := c.deliveredName(u, name) // XDSTP-3: in any parameter order
		if c.fault(FaultRemovalVerbatim) {
			watched = name // DEL-2, XDSTP-3 broken
		}
		if s := c.state(u, watched); s != nil {
			c.remove(s)
			c.removeAcross(u, s.name)
			continue
		}
		// DEL-3: a removal of a name not watched is harmless.
		c.deletedDropped(u, watched)
		if c.fault(FaultRemovalRewatchesDropped) && c.dropped(u, watched) {
			c.rewatchName(u, watched) // DEL-3 broken: it is watched again
		}
	}
}

// store replaces a resource whole (GRP-4), whether solicited or pushed
// (UPD-6), and also after it was found not to exist (DNE-4).
func (c *Client) store(s *resState, it item) {
	if it.heartbeat {
		// TTL-4: a heartbeat restarts the TTL and changes nothing else.
		if !c.fault(FaultHeartbeatNoRefresh) { // else TTL-4 broken
			c.setTTL(s, it.ttl)
		}
		return
	}
	if s.status == statusDoesNotExist && c.fault(FaultIgnoreAfterDne) {
		return // DNE-4 broken
	}
	if it.ttl != nil || !c.fault(FaultTTLSticks) { // else TTL-3 broken: the old TTL runs on
		c.setTTL(s, it.ttl)
	}
	if s.any != nil && c.fault(FaultIgnoreUpdates) {
		return // UPD-6, GRP-4 broken
	}
	if c.firstVersions[s.typ] == nil {
		c.firstVersions[s.typ] = map[string]string{}
	}
	if _, ok := c.firstVersions[s.typ][s.name]; !ok {
		c.firstVersions[s.typ][s.name] = it.version // for stale-initial-resource-versions
		s.firstAny = it.any                         // for status-shows-first-config
	}
	prev := s.current()
	refs := it.refs
	if s.typ == listenerCollection.URL && s.any != nil && c.fault(FaultCollectionFrozen) {
		refs = s.refs // COLL-2 broken: the first membership stays
	}
	s.any, s.version, s.refs = it.any, it.version, refs
	s.updated = time.Now()
	s.status = statusAcked
	s.errDetails, s.errVersion = "", ""
	c.stopDNE(s.typ, s.name)
	if c.envoy {
		c.warm(s, prev) // WARM-1, WARM-2
	}
}

// setTTL starts (or restarts) the resource's TTL timer, or, for a
// resource resent without a TTL, cancels it (TTL-2, TTL-3).
func (c *Client) setTTL(s *resState, ttl *durationpb.Duration) {
	k := timerKey{kind: ttlTimer, typ: s.typ, name: s.name}
	if ttl == nil {
		delete(c.deadlines, k)
		return
	}
	c.deadlines[k] = time.Now().Add(ttl.AsDuration())
}

// remove deletes a resource: it does not exist any more.
func (c *Client) remove(s *resState) {
	s.any, s.version, s.refs = nil, "", nil
	s.status = statusDoesNotExist
	s.errDetails, s.errVersion = "", ""
	c.stopDNE(s.typ, s.name)
	delete(c.deadlines, timerKey{kind: ttlTimer, typ: s.typ, name: s.name})
	c.endWarming(s) // gone, warming or not
}

// unwrap reads one SotW resource. The client advertises resource-in-sotw,
// so a Resource wrapper is unwrapped (TTL-6); a wrapper without a body is
// read by heartbeat, and a heartbeat keeps the resource held as it is (for
// LDS and CDS it still counts as present). Anything else is read as it is.
func (c *Client) unwrap(u string, a *anypb.Any, version string) raw {
	if a.GetTypeUrl() != wire.ResourceWrapperURL || c.fault(FaultNoUnwrap) {
		return raw{any: a, version: version} // with no-unwrap: TTL-6 broken, the wrapper is invalid
	}
	w := &discovery.Resource{}
	if err := a.UnmarshalTo(w); err != nil {
		return raw{any: a, version: version} // decode reports it
	}
	name, bad := c.wrapperName(w)
	if bad != "" {
		return raw{name: name, version: version, bad: bad}
	}
	if w.GetResource() == nil {
		if hb, ok := c.heartbeat(u, w); ok {
			return hb
		}
		return raw{name: name, version: version} // not a heartbeat of anything held: no body
	}
	return raw{any: w.GetResource(), version: version, name: name, ttl: w.GetTtl(),
		constraints: w.GetResourceName().GetDynamicParameterConstraints()}
}

// heartbeat reads a Resource without a body, in a delta response or a
// SotW wrapper alike: it is a heartbeat when it names a resource the
// client holds, at the version held (the Resource's own version; in SotW
// the held version is the version_info the resource came with), and then
// only restarts the TTL (TTL-4, TTL-6). The version must match because
// the spec defines a heartbeat as one with the version most recently
// sent; anything else without a body is not a heartbeat (ok false), and
// decode rejects it as having no body.
func (c *Client) heartbeat(u string, r *discovery.Resource) (hb raw, ok bool) {
	s := c.state(u, r.GetName())
	if s == nil || s.any == nil || s.version != r.GetVersion() {
		return raw{}, false
	}
	return raw{any: s.any, version: s.version, name: r.GetName(), ttl: r.GetTtl(), heartbeat: true}, true
}

// nackMessage is the error_detail message of a NACK (ACK-4).
func (c *Client) nackMessage(msg string) string {
	if c.fault(FaultNackEmptyMessage) {
		return "" // ACK-4 broken
	}
	return msg
}

// keepUnrequested is the apply-unrequested fault: a resource the client
// never asked for is reported as in use (RES-3 broken).
func (c *Client) keepUnrequested(u string, it item) {
	c.unrequested = append(c.unrequested, &resState{typ: u, name: it.name, status: statusAcked, version: it.version, any: it.any})
}
