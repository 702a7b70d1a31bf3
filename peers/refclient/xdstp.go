package refclient

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// Federation (xRFC TP1, gRFC A47): the reference client takes xdstp://
// names, sends each to the server its authority resolves to, keeps one
// channel per distinct server, and matches delivered names component by
// component.

// Authority is one entry of the client's authorities map (gRFC A47
// bootstrap "authorities").
type Authority struct {
	// Server is the authority's management server, host:port; empty means
	// Config.ServerAddr (A47: an authority without xds_servers uses the
	// top-level ones).
	Server string
	// ListenerTemplate is client_listener_resource_name_template; empty
	// means "xdstp://<authority>/envoy.config.listener.v3.Listener/%s".
	ListenerTemplate string
}

// listenerType is the type segment of xdstp listener names.
var listenerType = strings.TrimPrefix(wire.Listener.URL, xdstp.TypePrefix)

// targetListener is the listener name a channel target resolves to (gRFC
// A47): xds:///NAME through client_default_listener_resource_name_template
// ("%s" when unset), xds://AUTHORITY/NAME through the authority's
// template; an authority missing from the bootstrap is an error
// (XDSTP-13). A template that starts with xdstp: gets NAME
// percent-encoded (XDSTP-15).
func (c *Client) targetListener() (string, error) {
	u, err := url.Parse(c.cfg.Target)
	if err != nil {
		return "", fmt.Errorf("target %q: %w", c.cfg.Target, err)
	}
	if u.Scheme != "xds" {
		return "", fmt.Errorf("target %q: want the xds scheme", c.cfg.Target)
	}
	name := strings.TrimPrefix(u.Path, "/")
	if u.Opaque != "" {
		name = u.Opaque
	}
	tmpl := c.cfg.DefaultListenerTemplate
	if u.Host != "" {
		a, ok := c.cfg.Authorities[u.Host]
		if !ok {
			return "", fmt.Errorf("target %q: authority %q is not in the bootstrap (XDSTP-13)", c.cfg.Target, u.Host)
		}
		tmpl = a.ListenerTemplate
		if tmpl == "" {
			tmpl = xdstp.Scheme + u.Host + "/" + listenerType + "/%s"
		}
	}
	if tmpl == "" {
		tmpl = "%s"
	}
	if strings.HasPrefix(tmpl, "xdstp:") && !c.fault(FaultTemplateNotEncoded) { // else XDSTP-15 broken
		name = encodePath(name)
	}
	return strings.Replace(tmpl, "%s", name, 1), nil
}

// encodePath percent-encodes s as gRFC A47 asks of a template's
// replacement: every character but RFC 3986 path characters, '/'
// included as it is (XDSTP-15).
func encodePath(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

// subscriptionName is the name the client asks for when a resource points
// at locator name: an xdstp locator in its canonical form, context
// parameters sorted (XDSTP-3) and directives stripped (XDSTP-8); any
// other name as it is.
func (c *Client) subscriptionName(name string) string {
	if !xdstp.Is(name) {
		return name
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return name // validate rejects it
	}
	switch {
	case c.fault(FaultSendDirectives):
		return n.String() // XDSTP-8 broken: the fragment goes to the server
	case c.fault(FaultUdpaScheme):
		return "udpa://" + strings.TrimPrefix(n.Resource(), xdstp.Scheme) // XDSTP-1 broken
	}
	return n.Resource()
}

// deliveredName is the watched name a delivered resource named name
// answers: its canonical form, so that context parameters in another
// order still match (XDSTP-3); parameters must match exactly (XDSTP-5).
func (c *Client) deliveredName(u, name string) string {
	if !xdstp.Is(name) || c.fault(FaultExactNameMatch) { // else XDSTP-3 broken
		return name
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return name
	}
	canon := n.Resource()
	if c.fault(FaultAuthorityBlindMatch) {
		// XDSTP-3 broken: the first watched name with its path is taken,
		// whatever its authority.
		for _, w := range slices.Sorted(maps.Keys(c.res[u])) {
			if pathKey(w) == pathKey(canon) {
				return w
			}
		}
	}
	if c.fault(FaultIgnoreContextParams) && c.state(u, canon) == nil {
		// XDSTP-5 broken: a watched name with the same authority, type and
		// id is taken to be this one, whatever its context parameters.
		for w := range c.res[u] {
			if wn, err := xdstp.Parse(w); err == nil && wn.Authority == n.Authority && wn.Type == n.Type && wn.ID == n.ID {
				return w
			}
		}
	}
	return canon
}

// group is where a name's requests go: the server of its authority, the
// default server for names of the old style (XDSTP-13). Authorities with
// the same server share its channel and stream (XDSTP-14), so the group
// is the server's address; ok is false for an xdstp name whose authority
// the bootstrap does not know, which is asked of no server (XDSTP-13).
func (c *Client) group(name string) (g, addr string, ok bool) {
	def := c.cfg.ServerAddr
	if !xdstp.Is(name) {
		return def, def, true
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return "", "", false
	}
	if c.fault(FaultIgnoreAuthority) {
		return def, def, true // XDSTP-13 broken: every name to the default server
	}
	a, known := c.cfg.Authorities[n.Authority]
	if !known {
		if c.fault(FaultUnknownAuthorityToDefault) {
			return def, def, true // XDSTP-13 broken
		}
		return "", "", false
	}
	addr = a.Server
	if addr == "" {
		addr = def
	}
	if c.fault(FaultChannelPerAuthority) {
		return addr + "#" + n.Authority, addr, true // XDSTP-14 broken: no sharing
	}
	return addr, addr, true
}

// inGroup reports whether name's requests go to group g.
func (c *Client) inGroup(name, g string) bool {
	ng, _, ok := c.group(name)
	return ok && ng == g
}

// slotKey is the key of group g's slot for type typ ("" for ADS). The
// default server's slots keep the bare type as their key.
func (c *Client) slotKey(g, typ string) string {
	if g == c.cfg.ServerAddr {
		return typ
	}
	return g + "|" + typ
}

// versionKey is the key of type u's accepted versions on st's server:
// each server versions its own resources (VER-3), and each type its own
// (VER-2).
func (c *Client) versionKey(st *stream, u string) string {
	if st.slot.group == c.cfg.ServerAddr || c.fault(FaultSharedVersionAcrossServers) { // the fault breaks VER-3
		return u
	}
	return st.slot.group + "|" + u
}

// firstIn is the first name of type u that group g is asked for.
func (c *Client) firstIn(u, g string) string {
	for _, n := range c.requested(u) {
		if c.inGroup(n, g) {
			return n
		}
	}
	return ""
}

// connFor returns the channel to addr, opening it on first use; the
// default server's is opened at Start.
func (c *Client) connFor(addr string) (*grpc.ClientConn, error) {
	if addr == c.cfg.ServerAddr {
		return c.conn, nil
	}
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("refclient: channel to %s: %w", addr, err)
	}
	c.conns[addr] = cc
	return cc, nil
}

// groups lists the groups that have names of type u to ask for, the
// default server's first: the slots the type needs.
func (c *Client) groups(u string) []string {
	var out []string
	for _, n := range c.requested(u) {
		if g, _, ok := c.group(n); ok && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == c.cfg.ServerAddr:
			return -1
		case b == c.cfg.ServerAddr:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// requestedOn is requested(u) narrowed to the names st's server is asked
// for.
func (c *Client) requestedOn(st *stream, u string) []string {
	all := c.requested(u)
	g := st.slot.group
	out := make([]string, 0, len(all))
	for _, n := range all {
		if c.inGroup(n, g) {
			out = append(out, n)
		}
	}
	return out
}

// heldOn is held(u) narrowed to the resources of st's server.
func (c *Client) heldOn(st *stream, u string) map[string]string {
	held := c.held(u)
	g := st.slot.group
	if c.fault(FaultIrvOfEveryServer) {
		return held // DELTA-6 broken: every server's
	}
	for n := range held {
		if !c.inGroup(n, g) {
			delete(held, n)
		}
	}
	return held
}

// checkXdstpCluster is gRFC A47's CDS check: an EDS cluster named by an
// xdstp name must name its endpoints in eds_cluster_config.service_name
// (XDSTP-16).
func (c *Client) checkXdstpCluster(name, serviceName string) error {
	if xdstp.Is(name) && serviceName == "" && !c.fault(FaultXdstpClusterWithoutServiceName) { // else XDSTP-16 broken
		return fmt.Errorf("cluster %q is named by an xdstp name but has no eds_cluster_config.service_name (gRFC A47)", name)
	}
	return nil
}

// isGlob reports whether name is an xdstp glob collection locator
// ("…/*", COLL-4).
func isGlob(name string) bool {
	if !xdstp.Is(name) {
		return false
	}
	n, err := xdstp.Parse(name)
	return err == nil && n.IsGlob()
}

// inWatchedGlob reports whether name, of type u, is a member of a glob
// the client watches (memberOf).
func (c *Client) inWatchedGlob(u, name string) bool {
	if !xdstp.Is(name) || isGlob(name) {
		return false
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return false
	}
	for w := range c.watched[u] {
		if g, err := xdstp.Parse(w); err == nil && c.memberOf(n, g) {
			return true
		}
	}
	return false
}

// memberOf reports whether n is a member of glob g: one path level below
// it, with its context parameters (COLL-4).
func (c *Client) memberOf(n, g xdstp.Name) bool {
	if c.fault(FaultGlobDeepMembers) && g.IsGlob() && !n.IsGlob() {
		// DELTA-5 broken: anything below the glob's path is taken.
		return g.Authority == n.Authority && g.Type == n.Type &&
			strings.HasPrefix(n.ID, strings.TrimSuffix(g.ID, "*")) && maps.Equal(g.Params, n.Params)
	}
	return n.InGlob(g)
}

// globMembers are the resources of type u the client holds as members
// of glob (none when glob is no glob): they stay watched while it is.
func (c *Client) globMembers(u, glob string) []string {
	if !isGlob(glob) {
		return nil
	}
	g := xdstp.MustParse(glob)
	var out []string
	for name, s := range c.res[u] {
		if s.any == nil || !xdstp.Is(name) {
			continue
		}
		if n, err := xdstp.Parse(name); err == nil && c.memberOf(n, g) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// globsAsMembers is names with every glob replaced by the names of its
// members the client holds (glob-members-by-name-on-reconnect only).
func (c *Client) globsAsMembers(u string, names []string) []string {
	var out []string
	for _, n := range names {
		if isGlob(n) {
			out = append(out, c.globMembers(u, n)...)
			continue
		}
		out = append(out, n)
	}
	return out
}

// locatorTypeURL is the type URL of xds.core.v3.ResourceLocator: a
// resource whose payload is one redirects to the resource it locates
// (REDIR-1).
const locatorTypeURL = xdstp.TypePrefix + "xds.core.v3.ResourceLocator"

// redirectTarget reads the redirect payload a of a resource of type u:
// the xdstp name it locates, which must be of type u and of an authority
// the bootstrap resolves (REDIR-3: a redirect to an authority without a
// server fails, it is not asked of another server).
func (c *Client) redirectTarget(u string, a *anypb.Any) (string, error) {
	l := &xdscore.ResourceLocator{}
	if err := a.UnmarshalTo(l); err != nil {
		return "", fmt.Errorf("redirect payload does not decode: %w", err)
	}
	n, err := xdstp.FromLocator(l)
	if err != nil {
		return "", fmt.Errorf("redirect to a locator that is no xdstp resource: %w", err)
	}
	if n.TypeURL() != u {
		return "", fmt.Errorf("redirect to %s, which is not of the type %s", n.Resource(), u)
	}
	target := n.Resource()
	if _, _, ok := c.group(target); !ok {
		return "", fmt.Errorf("redirect to %s, whose authority %q is not in the bootstrap (REDIR-3)", target, n.Authority)
	}
	return target, nil
}

// checkLocator checks the directives of a locator a resource points at
// (XDSTP-9): comma-separated, each at most once, ',' and the other
// delimiters percent-encoded inside values, so a value is decoded only
// after the fragment is split.
func (c *Client) checkLocator(name string) error {
	i := strings.IndexByte(name, '#')
	if !xdstp.Is(name) || i < 0 {
		return nil
	}
	if c.fault(FaultDirectivesDecodedBeforeSplit) {
		// XDSTP-9 broken: the fragment is decoded whole, then split, so an
		// encoded ',' splits a value.
		frag, err := url.PathUnescape(name[i+1:])
		if err != nil {
			return fmt.Errorf("locator %q: %w", name, err)
		}
		for _, d := range strings.Split(frag, ",") {
			if k, _, ok := strings.Cut(d, "="); !ok || (k != xdstp.DirectiveAlt && k != xdstp.DirectiveEntry) {
				return fmt.Errorf("locator %q: malformed directive %q", name, d)
			}
		}
		return nil
	}
	if _, err := xdstp.Parse(name); err != nil {
		return fmt.Errorf("locator %q: %w", name, err)
	}
	return nil
}

// noteSpelling records how a response wrote the watched name name of type
// u (status-splits-spellings only).
func (c *Client) noteSpelling(u, name, spelled string) {
	if !c.fault(FaultStatusSplitsSpellings) || name == "" {
		return
	}
	if c.spellings == nil {
		c.spellings = map[string]map[string]string{}
	}
	if c.spellings[u] == nil {
		c.spellings[u] = map[string]string{}
	}
	c.spellings[u][name] = spelled
}

// pathKey is an xdstp name without its authority, "" for any other name:
// what the faults below take for its identity.
func pathKey(name string) string {
	if !xdstp.Is(name) {
		return ""
	}
	n, err := xdstp.Parse(name)
	if err != nil {
		return ""
	}
	n.Authority = ""
	return n.Resource()
}

// removeAcross is removal-across-authorities: the removal of name deletes
// the held resources of every authority with its path too.
func (c *Client) removeAcross(u, name string) {
	k := pathKey(name)
	if !c.fault(FaultRemovalAcrossAuthorities) || k == "" {
		return
	}
	for n, s := range c.res[u] {
		if n != name && s.any != nil && pathKey(n) == k {
			c.remove(s) // XDSTP-3 broken: another authority's resource
		}
	}
}

// onePerPath is one-watch-per-path: of names differing only in their
// authority, the first alone.
func onePerPath(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if k := pathKey(n); k != "" {
			if seen[k] {
				continue // RES-1, XDSTP-3 broken
			}
			seen[k] = true
		}
		out = append(out, n)
	}
	return out
}
