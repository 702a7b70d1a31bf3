package refserver

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// Dynamic parameters (xRFC TP2, feature "dynamic-parameters").
//
// A resource may be set in several variants, each with its
// DynamicParameterConstraints. The store keeps each variant as an entry
// of its own under wire.VariantKey(name, constraints), so batches, resets
// and deletions treat variants like any resource and a change of variants
// made in one batch is one change (DYN-6). Streams never see those keys:
// every snapshot a stream takes is resolved for it (resolve), each name
// with variants becoming, under its own name, the one variant whose
// constraints the stream's dynamic parameters for that name satisfy
// (DYN-7), or nothing, as if the resource did not exist, when none does
// (DYN-8). The rest of the stream machinery then works unchanged: a
// variant switch is a new version, a vanished match a deletion.
//
// A stream subscribes a name with one set of parameters at a time, the
// latest locator's (a plain name subscription has none): the model of a
// leaf client, which sends the same parameters for everything (DYN-11).
// A caching proxy subscribing one name with several parameter sets on one
// stream is beyond it.

// variant is what makes an entry one variant of a resource.
type variant struct {
	name        string // the resource's name, as served
	constraints *discovery.DynamicParameterConstraints
}

// dynState is a stream's dynamic-parameter state.
type dynState struct {
	// params are, per type URL, the dynamic parameters each name is
	// subscribed with (its resource_locators); a name subscribed by
	// resource_names has none.
	params byTypeURL[map[string]string]
	// located says the client subscribed by locator, so it takes SotW
	// Resource wrappers (DYN-1).
	located bool
	// sent are, per type URL, the constraints of the variant last sent
	// of each name (delta): its removal must name them (DYN-5).
	sent byTypeURL[*discovery.DynamicParameterConstraints]
	// torn are FaultTornVariantChange's removals, sent ahead of the
	// response that replaces them.
	torn []*discovery.ResourceName
	// errSent are, per type URL, the version of the error last reported
	// of each name in SotW (errors.go), reported once (ERR-4).
	errSent byTypeURL[string]
	// errEver is FaultErrorsOncePerStream's memory: every error version
	// reported on the stream, by type URL and name.
	errEver map[string]string
}

// byTypeURL is a stream's memory of something per type URL and name; its
// zero value is empty and ready for set.
type byTypeURL[V any] map[string]map[string]V

// set records v for name of type url, making the maps it needs.
func (m *byTypeURL[V]) set(url, name string, v V) {
	if *m == nil {
		*m = byTypeURL[V]{}
	}
	if (*m)[url] == nil {
		(*m)[url] = map[string]V{}
	}
	(*m)[url][name] = v
}

// paramsFor returns the parameters a stream subscribes name of type url
// with.
func (d *dynState) paramsFor(url string) func(name string) map[string]string {
	return func(name string) map[string]string { return d.params[url][name] }
}

// setParams records that name of type url is subscribed with params (nil:
// by name, without any) and reports whether that changed anything.
func (d *dynState) setParams(url, name string, params map[string]string) bool {
	old, had := d.params[url][name]
	if params == nil {
		if had {
			delete(d.params[url], name)
		}
		return had
	}
	d.params.set(url, name, maps.Clone(params))
	return !had || !maps.Equal(old, params)
}

// snapshot is the stream's view of type url: the store's, each resource
// with variants resolved for the parameters the stream subscribes it with.
func (c *conn) snapshot(url string) snapshot {
	return c.s.snapshotFor(c.node, url, c.dyn.paramsFor(url))
}

// snapshots is snapshot for the types urls, read at one moment.
func (c *conn) snapshots(urls []string) map[string]snapshot {
	return c.s.snapshotsFor(c.node, urls, c.dyn.paramsFor)
}

// poke wakes the stream's own push loop: its parameters for a name
// changed, so the variant it must hold may have too.
func (c *conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// locate is the names a SotW request subscribes: resource_names and the
// names of resource_locators alike (DYN-2). A SotW request restates the
// whole subscription, so the locators replace the stream's parameters
// for the type.
func (c *conn) locate(t wire.Type, req *discovery.DiscoveryRequest) []string {
	names, locs := req.GetResourceNames(), req.GetResourceLocators()
	if c.s.has(FaultLocatorSubscriptionsIgnored) || (len(locs) == 0 && len(c.dyn.params[t.URL]) == 0) {
		return names // breaks DYN-2 when the fault is set: locators go unheard
	}
	out := slices.Clone(names)
	changed := false
	kept := map[string]bool{}
	for _, l := range locs {
		c.dyn.located = true
		if !slices.Contains(out, l.GetName()) {
			out = append(out, l.GetName())
		}
		kept[l.GetName()] = true
		if c.dyn.setParams(t.URL, l.GetName(), locatorParams(l)) {
			changed = true
		}
	}
	for n := range c.dyn.params[t.URL] {
		if kept[n] {
			continue
		}
		if c.s.has(FaultLocatorUnsubscribeIgnored) {
			// Breaks LOC-1: a locator left out stays subscribed.
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
			continue
		}
		if c.s.has(FaultNameKeepsParams) && slices.Contains(names, n) {
			continue // breaks DYN-7: the name keeps the locator's parameters
		}
		// LOC-1: a locator the request leaves out is unsubscribed.
		if c.dyn.setParams(t.URL, n, nil) {
			changed = true
		}
	}
	if c.s.has(FaultParamChangeNotPushed) {
		changed = false // breaks DYN-7: the variant the new parameters match is not pushed
	}
	if changed {
		c.poke()
	}
	return out
}

// locateDelta is the names a delta request subscribes and unsubscribes:
// resource_names_* and resource_locators_* alike (DYN-2). A name
// subscribed by resource_names_subscribe has no parameters from then on.
func (c *conn) locateDelta(t wire.Type, req *discovery.DeltaDiscoveryRequest) (sub, unsub []string) {
	sub, unsub = slices.Clone(req.GetResourceNamesSubscribe()), slices.Clone(req.GetResourceNamesUnsubscribe())
	if c.s.has(FaultLocatorSubscriptionsIgnored) {
		return sub, unsub // breaks DYN-2
	}
	for _, n := range sub {
		if c.s.has(FaultNameKeepsParams) {
			continue // breaks DYN-7: the name keeps its locator's parameters
		}
		c.dyn.setParams(t.URL, n, nil)
	}
	for _, l := range req.GetResourceLocatorsSubscribe() {
		c.dyn.located = true
		sub = append(sub, l.GetName())
		c.dyn.setParams(t.URL, l.GetName(), locatorParams(l))
	}
	for _, l := range req.GetResourceLocatorsUnsubscribe() {
		if c.s.has(FaultLocatorUnsubscribeIgnored) {
			continue // breaks LOC-1: the locator subscription stays
		}
		// LOC-1: the subscription of the locator's name ends.
		unsub = append(unsub, l.GetName())
		c.dyn.setParams(t.URL, l.GetName(), nil)
	}
	return sub, unsub
}

// locatorParams are a locator's dynamic parameters, never nil: a locator
// without any still subscribes with the empty set.
func locatorParams(l *discovery.ResourceLocator) map[string]string {
	if p := l.GetDynamicParameters(); p != nil {
		return p
	}
	return map[string]string{}
}

// resolve turns resources, a private copy of a type's store, into a
// stream's view (see the comment at the top of the file); params gives
// the parameters a name is subscribed with (nil: none).
func (s *Server) resolve(resources map[string]*entry, params func(name string) map[string]string) {
	variants := map[string][]*entry{}
	for k, e := range resources {
		if e.variant != nil {
			delete(resources, k)
			variants[e.variant.name] = append(variants[e.variant.name], e)
		}
	}
	for name, vs := range variants {
		slices.SortFunc(vs, func(a, b *entry) int {
			return strings.Compare(wire.ConstraintsKey(a.variant.constraints), wire.ConstraintsKey(b.variant.constraints))
		})
		var p map[string]string
		if params != nil {
			p = params(name)
		}
		if e := s.pick(vs, p); e != nil {
			resources[name] = e
		}
	}
}

// pick chooses the variant for params among vs, sorted: the one whose
// constraints match (DYN-7), none when none does (DYN-8). Variants whose
// constraints overlap are refused by a control plane (DYN-12); the first
// match wins here.
func (s *Server) pick(vs []*entry, params map[string]string) *entry {
	if s.has(FaultIgnoreConstraints) {
		return vs[0] // breaks DYN-7: every client gets the same variant
	}
	for _, e := range vs {
		if s.matches(e.variant.constraints, params) {
			return e
		}
	}
	if s.has(FaultNoMatchServesDefault) {
		return vs[0] // breaks DYN-8: a resource no variant of which matches is served anyway
	}
	return nil
}

// matches is wire.Matches, or with FaultUnconstrainedKeysBlock a match
// that parameters the constraints do not mention prevent.
func (s *Server) matches(c *discovery.DynamicParameterConstraints, params map[string]string) bool {
	if s.has(FaultUnconstrainedKeysBlock) {
		for k := range params {
			if !mentions(c, k) {
				return false // breaks DYN-7: unconstrained parameters must not matter
			}
		}
	}
	return wire.Matches(c, params)
}

// mentions reports whether constraints c name key anywhere.
func mentions(c *discovery.DynamicParameterConstraints, key string) bool {
	switch t := c.GetType().(type) {
	case *discovery.DynamicParameterConstraints_Constraint:
		return t.Constraint.GetKey() == key
	case *discovery.DynamicParameterConstraints_AndConstraints:
		return slices.ContainsFunc(t.AndConstraints.GetConstraints(), func(s *discovery.DynamicParameterConstraints) bool { return mentions(s, key) })
	case *discovery.DynamicParameterConstraints_OrConstraints:
		return slices.ContainsFunc(t.OrConstraints.GetConstraints(), func(s *discovery.DynamicParameterConstraints) bool { return mentions(s, key) })
	case *discovery.DynamicParameterConstraints_NotConstraints:
		return mentions(t.NotConstraints, key)
	}
	return false
}

// constrain makes e, to be stored for request r under name, a variant
// when r carries constraints, and returns the key to store it under.
func constrain(r *fixturepb.SetResourceRequest, name string, e *entry) (string, error) {
	c, err := fixture.Constraints(r.GetDynamicParameterConstraints())
	if err != nil || c == nil {
		return name, err
	}
	if len(e.aliases) > 0 {
		return "", status.Errorf(codes.InvalidArgument, "%q: aliases on a variant with dynamic parameter constraints are not supported", name)
	}
	e.variant = &variant{name: name, constraints: c}
	// The version covers the constraints, so a stream whose match moves
	// to another variant of the same content still sees a change.
	h := sha256.Sum256([]byte(e.version + "\x00" + wire.ConstraintsKey(c)))
	e.version = hex.EncodeToString(h[:8])
	return wire.VariantKey(name, c), nil
}

// deleteKeys are the store keys a DeleteResource removes: the variant its
// constraints name, or the unconstrained resource. With
// FaultVariantRemovalDropsAll, every variant of the name goes too.
func (s *Server) deleteKeys(resources map[string]*entry, r *fixturepb.DeleteResourceRequest) ([]string, error) {
	c, err := fixture.Constraints(r.GetDynamicParameterConstraints())
	if err != nil {
		return nil, err
	}
	keys := []string{wire.VariantKey(r.GetName(), c)}
	if c != nil && s.has(FaultVariantRemovalDropsAll) {
		// Breaks DYN-5: removing one variant removes them all.
		for k, e := range resources {
			if e.variant != nil && e.variant.name == r.GetName() {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// checkVariants refuses a set that would make a name both an
// unconstrained resource and a resource with variants: the unconstrained
// one would overlap every variant (DYN-12).
func checkVariants(resources map[string]*entry, p set) error {
	if v := p.e.variant; v != nil {
		if e, ok := resources[v.name]; ok && e.variant == nil {
			return status.Errorf(codes.InvalidArgument, "%s %q is set without constraints; delete it before setting variants of it", p.t.Short, v.name)
		}
		return nil
	}
	for _, e := range resources {
		if e.variant != nil && e.variant.name == p.name {
			return status.Errorf(codes.InvalidArgument, "%s %q has variants with dynamic parameter constraints; delete them before setting it without", p.t.Short, p.name)
		}
	}
	return nil
}

// nameVariant names delta Resource r of entry e: a variant goes by
// resource_name, with its constraints, and not by name (DYN-3, DYN-4). It
// notes the constraints sent, and when they replace other constraints
// sent before for the name, the old variant's removal goes in the same
// response (DYN-6).
func (c *deltaConn) nameVariant(t wire.Type, resp *discovery.DeltaDiscoveryResponse, r *discovery.Resource, e *entry) {
	prev := c.dyn.sent[t.URL][r.GetName()]
	var now *discovery.DynamicParameterConstraints
	if e.variant != nil {
		now = e.variant.constraints
		switch {
		case c.s.has(FaultNamesNotResourceNames):
			// Breaks DYN-3: the variant goes by name alone, without its constraints.
		case c.s.has(FaultNameAndResourceName):
			r.ResourceName = &discovery.ResourceName{Name: r.GetName(), DynamicParameterConstraints: now} // breaks DYN-4: both
		default:
			r.ResourceName = &discovery.ResourceName{Name: r.GetName(), DynamicParameterConstraints: now}
			r.Name = ""
		}
	}
	name := r.GetName()
	if name == "" {
		name = r.GetResourceName().GetName()
	}
	if prev != nil && wire.ConstraintsKey(prev) != wire.ConstraintsKey(now) {
		gone := &discovery.ResourceName{Name: name, DynamicParameterConstraints: prev}
		if c.s.has(FaultTornVariantChange) {
			c.dyn.torn = append(c.dyn.torn, gone) // breaks DYN-6: sent on its own, first
		} else {
			resp.RemovedResourceNames = append(resp.RemovedResourceNames, gone)
		}
	}
	c.dyn.noteSent(t.URL, name, now)
}

// noteSent records the constraints of the variant of name sent last.
func (d *dynState) noteSent(url, name string, cons *discovery.DynamicParameterConstraints) {
	if cons == nil {
		delete(d.sent[url], name)
		return
	}
	d.sent.set(url, name, cons)
}

// removeDelta lists name as removed in resp: in removed_resource_names,
// with the constraints it was sent with, when it was a variant (DYN-5);
// in removed_resources otherwise.
func (c *deltaConn) removeDelta(t wire.Type, resp *discovery.DeltaDiscoveryResponse, name string) {
	cons := c.dyn.sent[t.URL][name]
	c.dyn.noteSent(t.URL, name, nil)
	if cons == nil || c.s.has(FaultPlainVariantRemoval) { // breaks DYN-5 when set
		resp.RemovedResources = append(resp.RemovedResources, c.removedName(name)) // XDSTP-4 (naming.go)
		return
	}
	resp.RemovedResourceNames = append(resp.RemovedResourceNames, &discovery.ResourceName{Name: c.removedName(name), DynamicParameterConstraints: cons})
}

// sendTorn is FaultTornVariantChange: the removals of replaced variants
// go in a response of their own, ahead of the one with the replacements.
func (c *deltaConn) sendTorn(ts *deltaType, snap snapshot) error {
	if len(c.dyn.torn) == 0 {
		return nil
	}
	resp := &discovery.DeltaDiscoveryResponse{SystemVersionInfo: snap.version, TypeUrl: ts.t.URL, Nonce: c.nextNonce(), RemovedResourceNames: c.dyn.torn}
	c.dyn.torn = nil
	return c.st.Send(resp)
}

// wrapVariant is a variant as a SotW response carries it: in a Resource
// wrapper named by resource_name with its constraints (DYN-3, DYN-4), for
// a client that takes wrappers (it subscribed by locator, DYN-1, or
// advertised resource-in-sotw); bare for the others, to whom the
// constraints cannot be said. ok is false for a resource that is no
// variant.
func (c *sotwConn) wrapVariant(name string, e *entry, a *anypb.Any) (_ *anypb.Any, ok bool) {
	if e.variant == nil {
		return nil, false
	}
	if !c.dyn.located && !c.takesWrappers() {
		return a, true
	}
	w := &discovery.Resource{Version: e.version, Resource: a,
		ResourceName: &discovery.ResourceName{Name: name, DynamicParameterConstraints: e.variant.constraints}}
	switch {
	case c.s.has(FaultNamesNotResourceNames):
		w.Name, w.ResourceName = name, nil // breaks DYN-3
	case c.s.has(FaultNameAndResourceName):
		w.Name = name // breaks DYN-4
	}
	if e.ttl != nil && c.takesTTL() {
		w.Ttl = e.ttl
	}
	if c.s.has(FaultVariantTTLDropped) {
		w.Ttl = nil // breaks TTL-3
	}
	out, err := anypb.New(w)
	if err != nil {
		return a, true
	}
	return out, true
}
