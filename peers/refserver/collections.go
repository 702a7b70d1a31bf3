package refserver

import (
	"fmt"
	"maps"
	"strings"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// This file holds the reference server's collections (xRFC TP1; features
// "list-collections" and "glob-collections").
//
// A list collection is not stored: its resource is built from the store
// whenever a stream looks, so it follows its members. The collection
// xdstp://A/envoy.config.listener.v3.ListenerCollection/P?ctx lists every
// listener stored as xdstp://A/envoy.config.listener.v3.Listener/P/<leaf>?ctx
// (one level below P, exactly the same context parameters), each inlined
// (COLL-3) under its leaf as entry name (XDSTP-11), with its version.
// Subscriptions then match it like any xdstp name (xview).
//
// A glob collection is a delta subscription ending in "/*": each member
// goes as a resource of its own and leaves through removed_resources
// (COLL-4); a glob without members is reported removed (COLL-5). Over
// SotW a glob is only a name, which no resource has (COLL-6).

// collectionSnapshot is the snapshot of list collection type c of node:
// one collection per path that has members, at the member type's
// version. s.mu held.
func (s *Server) collectionSnapshotLocked(node string, c, member wire.Type) snapshot {
	ts := s.typeStoreLocked(node, member.URL)
	type coll struct {
		name    xdstp.Name
		members []string
	}
	colls := map[string]*coll{}
	parsed := map[string]xdstp.Name{}
	for _, k := range sortedNames(ts.resources) {
		n, err := xdstp.Parse(k)
		i := strings.LastIndexByte(n.ID, '/')
		if err != nil || i <= 0 {
			continue
		}
		parsed[k] = n
		cn := xdstp.Name{Authority: n.Authority, Type: strings.TrimPrefix(c.URL, xdstp.TypePrefix), ID: n.ID[:i], Params: n.Params}
		key := cn.Resource()
		if colls[key] == nil {
			colls[key] = &coll{name: cn}
		}
	}
	for _, col := range colls {
		for _, k := range sortedNames(parsed) {
			n := parsed[k]
			in := n.Authority == col.name.Authority && maps.Equal(n.Params, col.name.Params)
			if !s.has(FaultCollectionOfAllPaths) { // breaks COLL-1 when set: any path will do
				in = in && strings.TrimSuffix(n.ID[:strings.LastIndexByte(n.ID, '/')], "/") == col.name.ID
			}
			if in {
				col.members = append(col.members, k)
			}
		}
	}
	out := snapshot{version: fmt.Sprintf("v%d", ts.counter), resources: map[string]*entry{}}
	for key, col := range colls {
		lc := &listener.ListenerCollection{}
		for _, k := range col.members {
			e := ts.resources[k]
			n := parsed[k]
			inline := &xdscore.CollectionEntry_InlineEntry{
				Name:     n.ID[strings.LastIndexByte(n.ID, '/')+1:], // XDSTP-11: the leaf, no '/'
				Version:  e.version,                                 // COLL-3
				Resource: e.res,
			}
			if s.has(FaultInlineBadNames) {
				inline.Name = col.name.ID + "/" // breaks XDSTP-11: a '/', and every entry alike
			}
			if s.has(FaultInlineNoVersion) {
				inline.Version = "" // breaks COLL-3
			}
			lc.Entries = append(lc.Entries, &xdscore.CollectionEntry{ResourceSpecifier: &xdscore.CollectionEntry_InlineEntry_{InlineEntry: inline}})
		}
		a, err := anypb.New(lc)
		if err != nil {
			continue
		}
		out.resources[key] = &entry{res: a, version: contentVersion(a)}
	}
	return out
}

// globOf parses n as a glob collection locator, if it is one.
func globOf(n string) (xdstp.Name, bool) {
	if !xdstp.Is(n) {
		return xdstp.Name{}, false
	}
	g, err := xdstp.Parse(n)
	return g, err == nil && g.IsGlob() && len(g.Directives) == 0
}

// inGlob reports whether the stored resource name is a member of the glob
// g on a stream of type t: same authority and type, one level below the
// glob's path, exactly its context parameters (COLL-4, XDSTP-5), at any
// depth of path (COLL-7).
func (s *Server) inGlob(t wire.Type, g xdstp.Name, name string) bool {
	if g.TypeURL() != t.URL || !xdstp.Is(name) {
		return false
	}
	if s.has(FaultShallowGlobs) && strings.Contains(strings.TrimSuffix(g.ID, "/*"), "/") {
		return false // breaks COLL-7: deeper globs have no members
	}
	n, err := xdstp.Parse(name)
	if err == nil && s.has(FaultGlobDeep) {
		// Breaks COLL-4: anything below the glob's path is a member.
		dir := strings.TrimSuffix(g.ID, "*")
		return n.Authority == g.Authority && n.Type == g.Type && strings.HasPrefix(n.ID, dir) && maps.Equal(n.Params, g.Params)
	}
	// COLL-4: one path level below the glob, no deeper.
	return err == nil && n.InGlob(g)
}

// inAnyGlob reports whether name is a member of one of the globs among
// names.
func (s *Server) inAnyGlob(t wire.Type, names nameSet, name string) bool {
	for n := range names {
		if g, ok := globOf(n); ok && s.inGlob(t, g, name) {
			return true
		}
	}
	return false
}

// globMembers lists, sorted, the members of glob g in snap.
func (s *Server) globMembers(t wire.Type, snap snapshot, g xdstp.Name) []string {
	return snap.filter(func(n string) bool { return s.inGlob(t, g, n) })
}

// globRedirect is FaultRedirectGlob's answer to glob g: a redirect of the
// glob as a whole to its first member (REDIR-2 broken).
func globRedirect(first string) (*entry, error) {
	n, err := xdstp.Parse(first)
	if err != nil {
		return nil, err
	}
	l, err := n.Locator()
	if err != nil {
		return nil, err
	}
	a, err := anypb.New(l)
	if err != nil {
		return nil, err
	}
	return &entry{res: a, version: contentVersion(a)}, nil
}

// subscribeGlob handles the delta subscription of name n if it is a glob
// collection, and reports whether it was: every member is sent, whether
// the client holds it or not, as for any subscription (DELTA-3); a glob
// without members is reported in removed_resources (COLL-5). Several
// globs may come in one request, at any depth (COLL-7).
func (c *deltaConn) subscribeGlob(ts *deltaType, snap snapshot, n string, send, remove nameSet) bool {
	g, ok := globOf(n)
	if !ok {
		return false
	}
	if ts.globs[n] && c.s.has(FaultGlobResubscribeSilent) {
		return true // breaks DELTA-3: a glob subscribed again brings nothing
	}
	ts.globs[n] = true
	if e, ok := snap.resources[n]; ok && e.err != nil && !c.s.has(FaultGlobErrorsDropped) { // the fault breaks ERR-11
		// ERR-11: an error for the collection as a whole is named with
		// the glob's URL, in resource_errors (errors.go).
		send[n] = true
		return true
	}
	members := c.s.globMembers(ts.t, snap, g)
	if len(members) > 0 && c.s.has(FaultRedirectGlob) {
		// Breaks REDIR-2: the glob as a whole is redirected.
		if e, err := globRedirect(members[0]); err == nil {
			snap.resources[n] = e
			send[n] = true
			return true
		}
	}
	for _, m := range members {
		send[m] = true
	}
	if len(members) == 0 && !c.s.has(FaultEmptyGlobSilent) { // breaks COLL-5 when set
		remove[n] = true
	}
	return true
}

// unsubscribeGlob drops glob n: its members the client holds are no
// longer tracked unless subscribed otherwise; like any unsubscription it
// needs no response (UNSUB-5).
func (c *deltaConn) unsubscribeGlob(ts *deltaType, n string) {
	if c.s.has(FaultGlobUnsubscribeIgnored) {
		return // breaks UNSUB-2: the glob's members keep coming
	}
	delete(ts.globs, n)
	if c.s.has(FaultGlobMembersStillHeld) {
		return // breaks UNSUB-2: the members' deletions are still reported
	}
	for m := range ts.known {
		if !c.wants(ts, m) {
			delete(ts.known, m)
		}
	}
}
