package refserver

import (
	"crypto/sha256"
	"maps"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// This file is the reference server's reading of xdstp:// names (xRFC
// TP1, the XDSTP rules; feature "xdstp"). Resources are stored under the
// name the fixture set. A subscription to an xdstp name is matched
// against the stored names component by component (XDSTP-3), context
// parameters exactly (XDSTP-5), and the type segment must be the
// stream's type (XDSTP-2). What matches is served under the subscribed
// name as it was written, so its context parameters are echoed
// (XDSTP-4): a stream's view of the store (xview) adds the matched
// entry under that name, and the rest of the stream logic, which keys
// everything by name, works unchanged.

// checkXdstpName refuses, at SetResource, an xdstp name no resource may
// have: one that does not parse, a locator (directives, a glob) instead
// of a name (XDSTP-10), or one whose type segment is not the type set
// (XDSTP-2). Opaque names pass.
//
// An error (feature "resource-errors") may be set on a glob collection's
// URL: the server reports it for the collection as a whole (ERR-11), so
// withError lets a glob through.
func checkXdstpName(t wire.Type, name string, withError bool) error {
	if !xdstp.Is(name) {
		return nil
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "%v", err)
	}
	if !n.IsURN() && !(withError && n.IsGlob() && len(n.Directives) == 0) {
		return status.Errorf(codes.InvalidArgument, "%q is a locator (directives or a glob), not a resource name", name)
	}
	if n.TypeURL() != t.URL {
		return status.Errorf(codes.InvalidArgument, "%q has type segment %q, but the resource is a %s", name, n.Type, t.URL)
	}
	return nil
}

// redirectEntry is the resource a redirect is stored as (feature
// "redirects", REDIR-1): an Any holding the xds.core.v3.ResourceLocator
// of target, every directive as its own message (XDSTP-9).
func (s *Server) redirectEntry(r *fixturepb.SetResourceRequest) (*anypb.Any, error) {
	n, err := xdstp.Parse(r.GetRedirect())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "redirect: %v", err)
	}
	l, err := n.Locator()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "redirect: %v", err)
	}
	if s.has(FaultRedirectLosesAuthority) {
		l.Authority = "" // breaks REDIR-1: the client looks on the wrong server
	}
	if s.has(FaultDirectiveTwice) && len(l.Directives) > 0 {
		l.Directives = append(l.Directives, l.Directives[0]) // breaks XDSTP-9
	}
	a, err := anypb.New(l)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "packing the redirect: %v", err)
	}
	return a, nil
}

// xdstpMatch reports whether the stored name stored is the resource that
// the subscription sub asks for on a stream of type t: authority, type
// and id equal, and exactly the same context parameters in whatever
// order (XDSTP-3, XDSTP-5); the type segment is the stream's (XDSTP-2).
func (s *Server) xdstpMatch(t wire.Type, sub xdstp.Name, stored string) bool {
	if !xdstp.Is(stored) {
		return false
	}
	k, err := xdstp.Parse(stored)
	if err != nil || (k.ID != sub.ID && !s.has(FaultIDBlind)) { // breaks XDSTP-3 when set
		return false
	}
	// XDSTP-3: the authority is a component like the others.
	if k.Authority != sub.Authority && !s.has(FaultAuthorityBlind) { // breaks XDSTP-3 when set
		return false
	}
	if sub.TypeURL() != t.URL || k.Type != sub.Type {
		if !s.has(FaultWrongTypeSegment) { // breaks XDSTP-2 when set
			return false
		}
	}
	if s.has(FaultLooseContextParams) {
		return true // breaks XDSTP-5: any context parameters do
	}
	return maps.Equal(k.Params, sub.Params)
}

// xview is the stream's view of snap: for every xdstp name among the
// subscribed names, the stored resource it matches, under the name as
// subscribed (XDSTP-4). On SotW streams (sotw) xdstp names are served
// just the same (XDSTP-18).
func (c *conn) xview(t wire.Type, snap snapshot, sotw bool, subscribed nameSet, more []string) snapshot {
	names := slices.Collect(maps.Keys(subscribed))
	names = append(names, more...)
	hasXdstp := slices.ContainsFunc(names, xdstp.Is)
	if sotw && c.s.has(FaultXdstpDeltaOnly) {
		// Breaks XDSTP-18: SotW streams see no xdstp resource at all.
		for n := range snap.resources {
			if xdstp.Is(n) {
				delete(snap.resources, n)
			}
		}
		return snap
	}
	if hasXdstp && c.s.has(FaultOpaqueBesideXdstpIgnored) {
		// Breaks XDSTP-19: next to xdstp names, opaque ones are not found.
		for n := range snap.resources {
			if !xdstp.Is(n) {
				delete(snap.resources, n)
			}
		}
	}
	if !hasXdstp {
		return snap
	}
	stored := sortedNames(snap.resources)
	found := nameSet{}
	for _, n := range names {
		sub, err := xdstp.Parse(n)
		if err != nil || !sub.IsURN() {
			continue // globs are collections (collections.go); the rest matches nothing
		}
		var e *entry
		key := n
		if c.s.has(FaultXdstpVerbatim) {
			e = snap.resources[n] // breaks XDSTP-3: only the same string matches
		} else {
			key = ""
			for _, k := range stored {
				if c.s.xdstpMatch(t, sub, k) {
					e, key = snap.resources[k], k
					break
				}
			}
		}
		if key != n {
			e = c.staleAlias(n, e) // naming.go: breaks XDSTP-3 with FaultStaleXdstpAlias
		}
		if e == nil {
			if _, ok := snap.resources[n]; ok && !c.s.has(FaultXdstpVerbatim) {
				delete(snap.resources, n) // stored under this very string, but not of this stream's type
			}
			continue
		}
		found[n] = true
		snap.resources[n] = c.servedAs(e, n)
	}
	c.acrossAuthorities(names, found, snap) // naming.go: breaks XDSTP-3 with FaultRemovalAcrossAuthorities
	return snap
}

// servedAs is e as the stream serves it under the xdstp name n: the
// resource's own name field set to the name delivered, so SotW clients,
// which read the name from the resource, see it too. The version stays
// the stored one: the same name at one version has one content
// (XDSTP-17). A redirect has no name field and goes as it is.
func (c *conn) servedAs(e *entry, n string) *entry {
	res := e.res
	if a, err := wire.Renamed(e.res, c.deliveredName(n)); err == nil {
		res = a
	}
	if c.s.has(FaultNodeTailoredContent) {
		// Breaks XDSTP-17: the content depends on the client's node.
		h := sha256.Sum256([]byte(strings.Join(c.features, ",")))
		res = &anypb.Any{TypeUrl: res.GetTypeUrl(), Value: protowire.AppendBytes(protowire.AppendTag(slices.Clone(res.GetValue()), builtFieldNumber-1, protowire.BytesType), h[:8])}
	}
	return &entry{res: res, version: e.version, ttl: e.ttl, aliases: e.aliases}
}

// deliveredName is the name an xdstp resource subscribed as n goes out
// under: n as written, or what a fault makes of it.
func (c *conn) deliveredName(n string) string {
	if !xdstp.Is(n) {
		return n
	}
	name, err := xdstp.Parse(n)
	if err != nil {
		return n
	}
	out, changed := name.WithParams(name.Params), false
	if c.s.has(FaultDropContextParams) && len(out.Params) > 0 {
		out.Params, changed = nil, true // breaks XDSTP-4
	}
	if c.s.has(FaultXdsParamAdded) {
		out.Params, changed = withParam(out.Params, "xds.server", "reference"), true // breaks XDSTP-6
	}
	if c.s.has(FaultReservedParamValue) {
		out.Params, changed = withParam(out.Params, "shard", "*1"), true // breaks XDSTP-7
	}
	if c.s.has(FaultDirectiveInName) {
		out.Directives, changed = []xdstp.Directive{{Key: xdstp.DirectiveAlt, Value: name.Resource()}}, true // breaks XDSTP-10
	}
	s := n
	if changed {
		s = out.String()
	}
	if c.s.has(FaultUdpaScheme) {
		s = "udpa://" + strings.TrimPrefix(s, xdstp.Scheme) // breaks XDSTP-1
	}
	return s
}

// withParam is params plus k=v, in a new map.
func withParam(params map[string]string, k, v string) map[string]string {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]string{}
	}
	out[k] = v
	return out
}
