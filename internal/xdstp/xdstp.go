// Package xdstp parses, compares and writes xdstp:// resource names and
// locators (xRFC TP1, the XDSTP and COLL rules of the requirements
// catalogue):
//
//	xdstp://[authority]/{resource type}/{id}[?context params][#directives]
//
// Both roles of the harness need the same reading of a name: the fake
// client to check what a server serves for a subscription (XDSTP-2, -4,
// -5, -10), the fake server to check what a client asks for (XDSTP-1, -3,
// -8), and both reference peers to match names as the spec says, so it
// lives here once.
package xdstp

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Scheme is the URI scheme of new-style names, with its separator.
const Scheme = "xdstp://"

// TypePrefix is what a type URL has before the message name that an
// xdstp name carries as its type segment (XDSTP-1).
const TypePrefix = "type.googleapis.com/"

// The directives of a locator's fragment (XDSTP-9).
const (
	// DirectiveAlt names an alternative resource to fetch if the
	// primary's authority cannot be reached (XDSTP-12).
	DirectiveAlt = "alt"
	// DirectiveEntry names an inline entry of a list collection
	// (XDSTP-11).
	DirectiveEntry = "entry"
)

// Name is a parsed xdstp:// URL: a resource name (a URN: no directives,
// no glob) or a locator, which may end in a glob ("/*") and carry
// directives. The zero Name is not a valid name.
type Name struct {
	// Authority is the logical authority; empty for "xdstp:///...".
	Authority string
	// Type is the fully qualified message name, e.g.
	// "envoy.config.cluster.v3.Cluster" (a type URL without
	// TypePrefix).
	Type string
	// ID is the path after the type, segments joined by "/", decoded;
	// "foo/*" for a glob collection.
	ID string
	// Params are the context parameters, decoded. Their order in the
	// URL is not part of the name (XDSTP-3).
	Params map[string]string
	// Directives are the fragment's directives in the order written.
	Directives []Directive
}

// Directive is one key=value of a locator's fragment.
type Directive struct {
	Key, Value string
}

// Is reports whether s is written as an xdstp name (by its scheme).
func Is(s string) bool { return strings.HasPrefix(s, Scheme) }

// Parse reads an xdstp:// URL. It rejects what TP1 forbids in any name:
// another scheme, a missing type or id, a malformed percent-escape, a
// context parameter given twice, a directive other than alt and entry,
// or one given twice (XDSTP-9).
func Parse(s string) (Name, error) {
	if !Is(s) {
		return Name{}, fmt.Errorf("%q is not an xdstp name: it does not start with %s", s, Scheme)
	}
	rest := strings.TrimPrefix(s, Scheme)
	var n Name
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		ds, err := parseDirectives(rest[i+1:])
		if err != nil {
			return Name{}, fmt.Errorf("%q: %w", s, err)
		}
		n.Directives, rest = ds, rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		ps, err := parseParams(rest[i+1:])
		if err != nil {
			return Name{}, fmt.Errorf("%q: %w", s, err)
		}
		n.Params, rest = ps, rest[:i]
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 3 || parts[1] == "" || parts[2] == "" {
		return Name{}, fmt.Errorf("%q has no resource type and id: want xdstp://[authority]/TYPE/ID", s)
	}
	var err error
	if n.Authority, err = unescape(parts[0]); err != nil {
		return Name{}, fmt.Errorf("%q: authority: %w", s, err)
	}
	n.Type = parts[1]
	if n.ID, err = unescape(parts[2]); err != nil {
		return Name{}, fmt.Errorf("%q: id: %w", s, err)
	}
	return n, nil
}

// MustParse is Parse for names written in code; it panics on error.
func MustParse(s string) Name {
	n, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return n
}

func parseParams(q string) (map[string]string, error) {
	out := map[string]string{}
	if q == "" {
		return out, nil
	}
	for _, kv := range strings.Split(q, "&") {
		k, v, _ := strings.Cut(kv, "=")
		key, err := unescape(k)
		if err != nil {
			return nil, fmt.Errorf("context parameter %q: %w", k, err)
		}
		val, err := unescape(v)
		if err != nil {
			return nil, fmt.Errorf("context parameter %q: %w", k, err)
		}
		if key == "" {
			return nil, fmt.Errorf("context parameter %q has no key", kv)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("context parameter %q is given twice", key)
		}
		out[key] = val
	}
	return out, nil
}

func parseDirectives(f string) ([]Directive, error) {
	if f == "" {
		return nil, errors.New("empty fragment: a '#' must be followed by directives")
	}
	var out []Directive
	for _, kv := range strings.Split(f, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("directive %q is not key=value", kv)
		}
		if k != DirectiveAlt && k != DirectiveEntry {
			return nil, fmt.Errorf("unknown directive %q (want %s or %s)", k, DirectiveAlt, DirectiveEntry)
		}
		if slices.ContainsFunc(out, func(d Directive) bool { return d.Key == k }) {
			return nil, fmt.Errorf("directive %q is given twice", k)
		}
		val, err := unescape(v)
		if err != nil {
			return nil, fmt.Errorf("directive %q: %w", k, err)
		}
		out = append(out, Directive{k, val})
	}
	return out, nil
}

// unescape decodes percent-escapes; unlike query decoding, '+' stays '+'.
func unescape(s string) (string, error) {
	if !strings.Contains(s, "%") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("malformed percent-escape in %q", s)
		}
		b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
		i += 2
	}
	return b.String(), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// escape percent-encodes every byte of s outside the unreserved set of
// RFC 3986 and keep (the characters allowed as they are where s goes).
func escape(s, keep string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~"+keep, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// Characters kept as they are in each part of the canonical form: the
// path keeps its separators and RFC 3986's sub-delimiters other than the
// ones that end it; query keys and values keep ':' and '/', which are
// legal in a query; directive values escape exactly ',', '#', '[', ']'
// and '%' (XDSTP-9), so the locator they hold stays readable.
const (
	keepPath  = "/:@!$'()*+;="
	keepQuery = ":/@!$'()*+;"
)

// String is the canonical form of n: context parameters sorted by key
// (XDSTP-3), components percent-encoded where they must be, directives in
// their order.
func (n Name) String() string {
	s := n.Resource()
	if len(n.Directives) > 0 {
		ds := make([]string, len(n.Directives))
		for i, d := range n.Directives {
			ds[i] = d.Key + "=" + escapeDirective(d.Value)
		}
		s += "#" + strings.Join(ds, ",")
	}
	return s
}

// escapeDirective encodes the characters a directive value may not hold
// as they are (XDSTP-9).
func escapeDirective(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if strings.IndexByte(",#[]%", v[i]) >= 0 {
			fmt.Fprintf(&b, "%%%02X", v[i])
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// Resource is the canonical form of n without its directives: the name a
// client subscribes to for the locator n (XDSTP-8).
func (n Name) Resource() string {
	s := Scheme + escape(n.Authority, ":@!$'()*+,;=") + "/" + n.Type + "/" + escape(n.ID, keepPath)
	if len(n.Params) > 0 {
		keys := slices.Sorted(maps.Keys(n.Params))
		ps := make([]string, len(keys))
		for i, k := range keys {
			ps[i] = escape(k, keepQuery) + "=" + escape(n.Params[k], keepQuery)
		}
		s += "?" + strings.Join(ps, "&")
	}
	return s
}

// Canonical is the canonical form of the xdstp name s (Parse, then
// String), or an error if s is not one.
func Canonical(s string) (string, error) {
	n, err := Parse(s)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// Same reports whether a and b name the same resource: both parse and
// match component by component, whatever the order of their context
// parameters and however their characters are escaped (XDSTP-3).
// Directives are not part of a resource's identity and are ignored.
func Same(a, b string) bool {
	na, err := Parse(a)
	if err != nil {
		return false
	}
	nb, err := Parse(b)
	return err == nil && na.Resource() == nb.Resource()
}

// TypeURL is the type URL of n's type segment.
func (n Name) TypeURL() string { return TypePrefix + n.Type }

// IsGlob reports whether n is a glob collection locator: its id's last
// segment is "*" (COLL-4).
func (n Name) IsGlob() bool { return n.ID == "*" || strings.HasSuffix(n.ID, "/*") }

// IsURN reports whether n may name a delivered resource: no directives
// and no glob (XDSTP-10).
func (n Name) IsURN() bool { return len(n.Directives) == 0 && !n.IsGlob() }

// IsCollectionType reports whether n's type is a list collection type,
// "<T>Collection" (COLL-1).
func (n Name) IsCollectionType() bool { return strings.HasSuffix(n.Type, "Collection") }

// Directive returns the value of directive key and whether n has it.
func (n Name) Directive(key string) (string, bool) {
	for _, d := range n.Directives {
		if d.Key == key {
			return d.Value, true
		}
	}
	return "", false
}

// InGlob reports whether the resource n is a member of the glob
// collection glob: same authority and type, its id directly under the
// glob's path, and exactly the glob's context parameters (XDSTP-5). Like
// Envoy, it takes a member to be one level below the glob's path; TP1
// does not say whether deeper paths belong (see COLL-4's note).
func (n Name) InGlob(glob Name) bool {
	if !glob.IsGlob() || n.IsGlob() || n.Authority != glob.Authority || n.Type != glob.Type {
		return false
	}
	dir := strings.TrimSuffix(strings.TrimSuffix(glob.ID, "*"), "/")
	parent, leaf := "", n.ID
	if i := strings.LastIndexByte(n.ID, '/'); i >= 0 {
		parent, leaf = n.ID[:i], n.ID[i+1:]
	}
	return parent == dir && leaf != "" && maps.Equal(n.Params, glob.Params)
}

// Glob is the glob collection n is a member of: its last id segment
// replaced by "*", its context parameters kept.
func (n Name) Glob() Name {
	g := n
	g.Directives = nil
	if i := strings.LastIndexByte(n.ID, '/'); i >= 0 {
		g.ID = n.ID[:i] + "/*"
	} else {
		g.ID = "*"
	}
	return g
}

// WithParams returns a copy of n with params as its context parameters.
func (n Name) WithParams(params map[string]string) Name {
	n.Params = maps.Clone(params)
	return n
}

// ReservedParams lists the keys of n's context parameters in the xds.*
// namespace, which only clients may generate (XDSTP-6), sorted.
func (n Name) ReservedParams() []string {
	var out []string
	for k := range n.Params {
		if strings.HasPrefix(k, "xds.") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// ReservedValues lists the keys of n's context parameters whose values
// start with a character other than a letter or digit, a prefix TP1
// reserves for future use (XDSTP-7), sorted.
func (n Name) ReservedValues() []string {
	var out []string
	for k, v := range n.Params {
		if v == "" {
			continue
		}
		c := v[0]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
