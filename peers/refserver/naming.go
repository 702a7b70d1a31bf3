package refserver

import "github.com/xdsconform/xdsconform/internal/xdstp"

// The reference server's reading of xdstp names on every path that
// carries one, not only on subscribe (xdstp.go): a name written with its
// context parameters in another order is the subscribed resource wherever
// it comes (XDSTP-3), in a delta unsubscription and in the names of a
// SotW ACK or NACK alike. A stream keeps each subscription under the
// spelling it was first subscribed with, and reads later spellings of the
// same name as that one; removals name the resource as subscribed, with
// its context parameters (XDSTP-4). Names of different authorities are
// different resources whatever else they share (XDSTP-3). The rest of
// this file is the memory some faults of faults_naming.go need.

// namingState is a stream's memory for the naming faults.
type namingState struct {
	// matched are the subscribed xdstp names a view last found a
	// resource for (FaultRemovalAcrossAuthorities).
	matched nameSet
	// gone are the paths (authority left out) of subscribed xdstp names
	// whose resource went away (FaultRemovalAcrossAuthorities).
	gone nameSet
	// alias is, for each subscribed xdstp name written otherwise than
	// the stored name it matched, what it was last served
	// (FaultStaleXdstpAlias).
	alias map[string]*entry
}

// asSubscribed is the spelling under which names holds the resource n
// names: n itself when names has it or n is no xdstp name, else the
// subscribed xdstp name that is the same resource written otherwise
// (XDSTP-3), else n.
func asSubscribed(names nameSet, n string) string {
	if names[n] || !xdstp.Is(n) {
		return n
	}
	for s := range names {
		if xdstp.Same(s, n) {
			return s
		}
	}
	return n
}

// respelled is requested with each xdstp name of an existing SotW
// subscription prev written as prev has it (XDSTP-3): a request that
// lists a subscribed name with its context parameters in another order
// changes nothing. With FaultReorderedIsNew the names stay as written.
func (c *conn) respelled(prev nameSet, requested []string) []string {
	if c.s.has(FaultReorderedIsNew) || c.s.has(FaultXdstpVerbatim) || len(prev) == 0 {
		// Breaks UPD-1, ACK-5 (a new name, sent again), or with
		// FaultXdstpVerbatim XDSTP-3 (a new name, matching nothing).
		return requested
	}
	out := make([]string, len(requested))
	for i, n := range requested {
		out[i] = asSubscribed(prev, n)
	}
	return out
}

// unsubscribing is the subscribed name a delta unsubscription of n ends:
// the same resource written otherwise counts (XDSTP-3), unless
// FaultUnsubscribeVerbatim.
func (c *conn) unsubscribing(subscribed nameSet, n string) string {
	if c.s.has(FaultUnsubscribeVerbatim) || c.s.has(FaultXdstpVerbatim) {
		return n // breaks XDSTP-3: only the same string unsubscribes
	}
	return asSubscribed(subscribed, n)
}

// removedName is the name removed_resources carries for the removal of
// name: as subscribed, context parameters and all (XDSTP-4), or without
// them with FaultRemovalDropsParams.
func (c *conn) removedName(name string) string {
	if !c.s.has(FaultRemovalDropsParams) || !xdstp.Is(name) {
		return name
	}
	n, err := xdstp.Parse(name)
	if err != nil || len(n.Params) == 0 {
		return name
	}
	n.Params = nil
	return n.String() // breaks XDSTP-4
}

// pathKey is an xdstp name without its authority: what
// FaultRemovalAcrossAuthorities mistakes for its identity.
func pathKey(n xdstp.Name) string {
	n.Authority = ""
	return n.Resource()
}

// acrossAuthorities is FaultRemovalAcrossAuthorities's view: once the
// resource of a subscribed xdstp name goes away, every subscribed name
// with its type, id and context parameters goes too, whatever its
// authority. subs are the subscribed names; found those the view found a
// resource for.
func (c *conn) acrossAuthorities(subs []string, found nameSet, snap snapshot) {
	if !c.s.has(FaultRemovalAcrossAuthorities) {
		return
	}
	st := &c.naming
	if st.matched == nil {
		st.matched, st.gone = nameSet{}, nameSet{}
	}
	keys := map[string]string{}
	for _, n := range subs {
		p, err := xdstp.Parse(n)
		if err != nil || !p.IsURN() {
			continue
		}
		keys[n] = pathKey(p)
		switch {
		case found[n]:
			st.matched[n] = true
		case st.matched[n]:
			delete(st.matched, n)
			st.gone[keys[n]] = true
		}
	}
	for n, k := range keys {
		if st.gone[k] {
			delete(snap.resources, n) // breaks XDSTP-3: another authority's deletion
		}
	}
}

// staleAlias is FaultStaleXdstpAlias's memory: what a subscribed name
// written otherwise than the stored one was served last, which the view
// goes on serving after the stored resource is deleted.
func (c *conn) staleAlias(n string, e *entry) *entry {
	if !c.s.has(FaultStaleXdstpAlias) {
		return e
	}
	if c.naming.alias == nil {
		c.naming.alias = map[string]*entry{}
	}
	if e != nil {
		c.naming.alias[n] = e
		return e
	}
	return c.naming.alias[n] // breaks XDSTP-3: the deletion is not seen under n
}
