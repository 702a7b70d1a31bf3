package refserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// Per-resource errors (xRFC TP3, feature "resource-errors").
//
// A name the fixture puts in error is stored as an entry with err set and
// no resource, so the stream machinery treats it as any resource: a
// subscription to it is answered, the change into or out of error is
// pushed (a new version), and a deletion removes it. Only when a response
// is built does it go in resource_errors instead of resources (ERR-1),
// never in both (ERR-2); a SotW Listener or Cluster response that reports
// it still carries every other resource (ERR-3). An error goes to a
// stream once, until it changes (ERR-4: the client remembers it, ERR-5).

// prepareError validates a SetResource that puts name in error and builds
// its entry.
func (f fixtureServer) prepareError(t wire.Type, r *fixturepb.SetResourceRequest) (set, error) {
	if r.GetResource() != nil {
		return set{}, status.Errorf(codes.InvalidArgument, "%q: set either a resource or an error, not both", r.GetName())
	}
	if r.GetDynamicParameterConstraints() != nil {
		return set{}, status.Errorf(codes.InvalidArgument, "%q: errors for one variant are not supported", r.GetName())
	}
	if r.GetError().GetCode() == int32(codes.OK) {
		return set{}, status.Errorf(codes.InvalidArgument, "%q: an error with code OK is no error", r.GetName())
	}
	name := r.GetName()
	if f.s.generateNames {
		name = GeneratedPrefix + name
	}
	st := &rpcstatus.Status{Code: r.GetError().GetCode(), Message: r.GetError().GetMessage()}
	h := sha256.Sum256(fmt.Appendf(nil, "error\x00%d\x00%s", st.GetCode(), st.GetMessage()))
	e := &entry{err: st, version: hex.EncodeToString(h[:8])}
	return set{t: t, name: name, e: e, resp: &fixturepb.SetResourceResponse{Name: name}}, nil
}

// resourceError is the resource_errors entry of name in error st.
func resourceError(name string, st *rpcstatus.Status) *discovery.ResourceError {
	return &discovery.ResourceError{ResourceName: &discovery.ResourceName{Name: name}, ErrorDetail: proto.Clone(st).(*rpcstatus.Status)}
}

// sotwError puts name, if e is an error, in resp's resource_errors, and
// reports whether it was one: then it is no resource of resp.
func (c *sotwConn) sotwError(ts *sotwType, resp *discovery.DiscoveryResponse, name string, e *entry) bool {
	if e.err == nil {
		return false
	}
	repeat := c.dyn.errSent[ts.t.URL][name] == e.version
	if c.s.has(FaultErrorsOncePerStream) {
		// Breaks RES-4: an error once reported is never reported again on
		// the stream, even to a request that names it anew.
		key := ts.t.URL + " " + name
		repeat = repeat || c.dyn.errEver[key] == e.version
		if c.dyn.errEver == nil {
			c.dyn.errEver = map[string]string{}
		}
		c.dyn.errEver[key] = e.version
	}
	ts.sent[name] = e.version // no change to push until the error changes
	c.dyn.noteError(ts.t.URL, name, e.version)
	switch {
	case c.s.has(FaultNoResourceErrors):
		return true // breaks ERR-1: the error is never said
	case repeat && !c.s.has(FaultRepeatErrors): // ERR-4 not used when set (MAY)
		return true // ERR-4: sent once, the client remembers it (ERR-5)
	}
	resp.ResourceErrors = append(resp.ResourceErrors, resourceError(c.errorName(&ts.typeBase, ts.names[name], name), e.err))
	if c.s.has(FaultErrorAndResource) && ts.sentAny[name] != nil {
		resp.Resources = append(resp.Resources, ts.sentAny[name]) // breaks ERR-2: the old resource with its error
	}
	return true
}

// noteError records that the error at version was reported for name.
func (d *dynState) noteError(url, name, version string) {
	d.errSent.set(url, name, version)
}

// forgetErrors forgets the errors reported for names a SotW stream no
// longer subscribes to, so subscribing again brings the error again, as
// it brings a resource again (RES-4). A wildcard may still cover them, so
// it forgets none; an empty request after names (RES-6) subscribes to
// nothing, so it forgets them all.
func (d *dynState) forgetErrors(url string, subscribed nameSet, wildcard bool) {
	if wildcard {
		return
	}
	for n := range d.errSent[url] {
		if !subscribed[n] {
			delete(d.errSent[url], n)
		}
	}
}

// errorsOnly is FaultErrorsDropFullState: a SotW response that reports an
// error carries nothing else (ERR-3 broken).
func (c *sotwConn) errorsOnly(resp *discovery.DiscoveryResponse) {
	if c.s.has(FaultErrorsDropFullState) && len(resp.GetResourceErrors()) > 0 {
		resp.Resources = nil
	}
}

// deltaError is sotwError for delta: the client is noted as holding the
// error's version, so it is pushed again only when it changes.
func (c *deltaConn) deltaError(ts *deltaType, resp *discovery.DeltaDiscoveryResponse, name string, e *entry) bool {
	if e.err == nil {
		return false
	}
	ts.known[name] = c.versionOf(e)
	if c.s.has(FaultDeltaErrorsNotHeld) {
		delete(ts.known, name) // ERR-4 not used: pushed again at every change of the type
	}
	ts.everSent[name] = c.versionOf(e)
	c.dyn.noteSent(ts.t.URL, name, nil)
	if c.s.has(FaultNoResourceErrors) {
		return true // breaks ERR-1
	}
	resp.ResourceErrors = append(resp.ResourceErrors, resourceError(c.errorName(&ts.typeBase, ts.subscribed[name], name), e.err))
	if c.s.has(FaultErrorAndResource) && ts.sentAny[name] != nil {
		// Breaks ERR-2: the old resource with its error.
		resp.Resources = append(resp.Resources, &discovery.Resource{Name: name, Version: e.version, Resource: ts.sentAny[name]})
	}
	return true
}

// errorName is the name an error of resource name is reported under: its
// own (ERR-11), also when the client gets it through a wildcard, which has
// no name to report errors under. named says the client subscribed to it
// by name.
func (c *conn) errorName(ts *typeBase, named bool, name string) string {
	if c.s.has(FaultWildcardErrorsUnnamed) && ts.wildcard && !named {
		return "" // breaks ERR-11: named with the (legacy) wildcard's empty name
	}
	return name
}
