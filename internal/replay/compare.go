package replay

import (
	"fmt"
	"slices"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// shape is what a replay compares of a response: what it says, not the
// literals a server picks (version and nonce strings), nor, unless asked,
// the resources' bodies, which servers legitimately build differently.
type shape struct {
	typeURL string
	names   []string // resource names, sorted, duplicates kept
	removed []string // delta: removed names, sorted
	noNonce bool
	// misfits are resources a client would NACK the response for: packed
	// as another type than the response's, or not decodable.
	misfits []string
	// noVersion lists delta resources sent without a version.
	noVersion []string
	bodies    map[string]proto.Message // by name, redacted, when bodies are compared
}

// shapeOf reads a SotW or Delta response; with bodies it keeps each
// resource, redacted as the transcript redacts it, to compare with the
// recording's.
func shapeOf(m proto.Message, bodies bool) shape {
	var sh shape
	if bodies {
		sh.bodies = map[string]proto.Message{}
	}
	keep := func(name string, a *anypb.Any) {
		if !bodies || a == nil {
			return
		}
		if inner, err := wire.Unpack(transcript.Redact(a).(*anypb.Any)); err == nil && inner != nil {
			sh.bodies[name] = inner
		} else {
			sh.bodies[name] = transcript.Redact(a)
		}
	}
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		sh.typeURL, sh.noNonce = r.GetTypeUrl(), r.GetNonce() == ""
		for _, a := range r.GetResources() {
			name, err := wire.AnyName(a)
			if err != nil {
				sh.misfits = append(sh.misfits, fmt.Sprintf("a resource that does not decode (%v)", err))
				continue
			}
			if inner := wire.InnerTypeURL(a); inner != "" && inner != r.GetTypeUrl() {
				sh.misfits = append(sh.misfits, fmt.Sprintf("%q packed as %s", name, inner))
			}
			sh.names = append(sh.names, name)
			keep(name, a)
		}
	case *discovery.DeltaDiscoveryResponse:
		sh.typeURL, sh.noNonce = r.GetTypeUrl(), r.GetNonce() == ""
		for _, res := range r.GetResources() {
			sh.names = append(sh.names, res.GetName())
			if res.GetVersion() == "" {
				sh.noVersion = append(sh.noVersion, res.GetName())
			}
			if a := res.GetResource(); a != nil {
				if a.GetTypeUrl() != r.GetTypeUrl() {
					sh.misfits = append(sh.misfits, fmt.Sprintf("%q packed as %s", res.GetName(), a.GetTypeUrl()))
				} else if _, err := wire.Unpack(a); err != nil {
					sh.misfits = append(sh.misfits, fmt.Sprintf("%q does not decode (%v)", res.GetName(), err))
				}
			}
			keep(res.GetName(), res.GetResource())
		}
		sh.removed = slices.Clone(r.GetRemovedResources())
		for _, rn := range r.GetRemovedResourceNames() {
			sh.removed = append(sh.removed, rn.GetName())
		}
	}
	slices.Sort(sh.names)
	slices.Sort(sh.removed)
	slices.Sort(sh.misfits)
	slices.Sort(sh.noVersion)
	return sh
}

// compareResponses says how the target's response (live) differs from
// the recording's (rec); partial says the recording holds rec in part,
// so its lists may be cut: then only what it holds must be in live.
func compareResponses(rec, live shape, partial bool) []string {
	var out []string
	if d := listDiff("resources", rec.names, live.names, partial); d != "" {
		out = append(out, d)
	}
	if d := listDiff("removed resources", rec.removed, live.removed, partial); d != "" {
		out = append(out, d)
	}
	if live.noNonce && !rec.noNonce {
		out = append(out, "the target's response has no nonce (the recording's had one)")
	}
	if !slices.Equal(rec.misfits, live.misfits) && !partial {
		out = append(out, fmt.Sprintf("what a client would NACK the response for: in the target's, %s; in the recording's, %s", orNone(live.misfits), orNone(rec.misfits)))
	}
	if !slices.Equal(rec.noVersion, live.noVersion) && !partial {
		out = append(out, fmt.Sprintf("resources sent without a version: in the target's response, %s; in the recording's, %s", orNone(live.noVersion), orNone(rec.noVersion)))
	}
	if rec.bodies != nil && live.bodies != nil {
		var differ []string
		for name, b := range rec.bodies {
			if lb, ok := live.bodies[name]; ok && !proto.Equal(b, lb) {
				differ = append(differ, name)
			}
		}
		slices.Sort(differ)
		if len(differ) > 0 {
			out = append(out, fmt.Sprintf("resource bodies differ: %s", quoteList(differ)))
		}
	}
	return out
}

// listDiff words how two sorted lists of names differ; "" when they do
// not. With subset, only names of rec missing from live count.
func listDiff(what string, rec, live []string, subset bool) string {
	missing, extra := multisetDiff(rec, live)
	if subset {
		extra = nil
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	var parts []string
	if len(missing) > 0 {
		parts = append(parts, "missing "+quoteList(missing))
	}
	if len(extra) > 0 {
		parts = append(parts, "extra "+quoteList(extra))
	}
	return fmt.Sprintf("%s differ: the recording has %s, the target sent %s (%s)", what, quoteList(rec), quoteList(live), strings.Join(parts, "; "))
}

// multisetDiff returns what of a is not in b and what of b is not in a,
// counting duplicates.
func multisetDiff(a, b []string) (onlyA, onlyB []string) {
	count := map[string]int{}
	for _, s := range a {
		count[s]++
	}
	for _, s := range b {
		count[s]--
	}
	for _, s := range a {
		if count[s] > 0 {
			onlyA = append(onlyA, s)
			count[s]--
		}
	}
	for _, s := range b {
		if count[s] < 0 {
			onlyB = append(onlyB, s)
			count[s]++
		}
	}
	return onlyA, onlyB
}

// maxListed bounds the names one difference quotes.
const maxListed = 20

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	shown := names
	more := ""
	if len(shown) > maxListed {
		shown, more = shown[:maxListed], fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	q := make([]string, len(shown))
	for i, n := range shown {
		q[i] = fmt.Sprintf("%q", transcript.Clip(n, 128))
	}
	return "[" + strings.Join(q, " ") + "]" + more
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// requestShape is what a replay against a client compares of a request:
// what it asks for and whether it is a first request, an ACK or a NACK.
type requestShape struct {
	typeURL     string
	names       []string // SotW resource_names, delta subscribe
	unsubscribe []string // delta
	kind        string   // "request", "ACK", "NACK"
	nonce       string
	version     string // SotW
}

func requestShapeOf(m proto.Message) requestShape {
	var rs requestShape
	var hasErr bool
	switch r := m.(type) {
	case *discovery.DiscoveryRequest:
		rs.typeURL, rs.nonce, rs.version = r.GetTypeUrl(), r.GetResponseNonce(), r.GetVersionInfo()
		rs.names = slices.Clone(r.GetResourceNames())
		hasErr = r.GetErrorDetail() != nil
	case *discovery.DeltaDiscoveryRequest:
		rs.typeURL, rs.nonce = r.GetTypeUrl(), r.GetResponseNonce()
		rs.names = slices.Clone(r.GetResourceNamesSubscribe())
		rs.unsubscribe = slices.Clone(r.GetResourceNamesUnsubscribe())
		hasErr = r.GetErrorDetail() != nil
	}
	slices.Sort(rs.names)
	slices.Sort(rs.unsubscribe)
	switch {
	case hasErr:
		rs.kind = "NACK"
	case rs.nonce != "":
		rs.kind = "ACK"
	default:
		rs.kind = "request"
	}
	return rs
}

// describe names a request in a difference, with its article.
func (rs requestShape) describe() string {
	what := map[string]string{"request": "a request for", "ACK": "an ACK of", "NACK": "a NACK of"}[rs.kind]
	s := fmt.Sprintf("%s %s %s", what, short(rs.typeURL), quoteList(rs.names))
	if rs.nonce != "" {
		s += fmt.Sprintf(" (nonce %q)", transcript.Clip(rs.nonce, 64))
	}
	return s
}

// compareRequests says how the client's request (live) differs from the
// recording's (rec). The replay served the recording's responses, nonces
// and versions as they were, so those literals are compared too.
func compareRequests(rec, live requestShape) []string {
	var out []string
	if rec.typeURL != live.typeURL {
		out = append(out, fmt.Sprintf("type %s, the recording's %s", short(live.typeURL), short(rec.typeURL)))
	}
	if rec.kind != live.kind {
		out = append(out, fmt.Sprintf("the client sent %s where the recording's sent %s", live.describe(), rec.describe()))
	} else if rec.nonce != live.nonce {
		out = append(out, fmt.Sprintf("the %s echoes nonce %q, the recording's %q", live.kind, transcript.Clip(live.nonce, 64), transcript.Clip(rec.nonce, 64)))
	}
	if rec.version != live.version {
		out = append(out, fmt.Sprintf("version_info %q, the recording's %q", transcript.Clip(live.version, 64), transcript.Clip(rec.version, 64)))
	}
	if d := listDiff("names", rec.names, live.names, false); d != "" {
		out = append(out, strings.Replace(d, "the target sent", "the client sent", 1))
	}
	if d := listDiff("unsubscribed names", rec.unsubscribe, live.unsubscribe, false); d != "" {
		out = append(out, strings.Replace(d, "the target sent", "the client sent", 1))
	}
	return out
}

// short is a type URL's short name, or the URL when it is no xDS type.
func short(url string) string {
	if t, ok := wire.TypeByURL(url); ok {
		return t.Short
	}
	return transcript.Clip(url, 128)
}
