package fakeclient

import (
	"fmt"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/wire"
)

// Violation is a breach of a rule that must hold on every response of every
// scenario, whatever the scenario is about.
type Violation struct {
	// Rule is the catalogue ID, e.g. "DUP-1".
	Rule string
	// Stream and Nonce locate the offending response.
	Stream, Nonce string
	// Message says what was wrong.
	Message string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s violated on %s (nonce %q): %s", v.Rule, v.Stream, v.Nonce, v.Message)
}

// full reports whether held reached maxNames (see hold): a name it lacks
// may then have been sent.
func full(held map[string]string) bool {
	_, ok := held[namesFull]
	return ok
}

// checkResponse applies the global invariants to one response. expectedType
// is the stream's type for per-type streams, "" on ADS. seen holds the
// nonces already received per type on the stream; held the version the
// stream last received of each resource (type URL, then name); takesTTL
// whether the client advertised xds.config.supports-resource-ttl; asked
// the type URLs of the requests sent on the stream.
func checkResponse(r *Response, expectedType string, asked map[string]bool, seen map[string]map[string]bool, held map[string]map[string]string, resourceInSotW, takesTTL bool) []Violation {
	var out []Violation
	bad := func(rule, format string, args ...any) {
		out = append(out, Violation{Rule: rule, Stream: r.Stream, Nonce: r.Nonce, Message: fmt.Sprintf(format, args...)})
	}
	// NONCE-1: every streamed response carries a nonce.
	if r.Nonce == "" {
		bad("NONCE-1", "response of type %s has an empty nonce", r.TypeURL)
	} else {
		// NONCE-2: nonces are distinct per type within a stream.
		if seen[r.TypeURL] == nil || len(seen[r.TypeURL]) >= maxNonces {
			// Bounded: a reuse is caught within windows of maxNonces.
			seen[r.TypeURL] = map[string]bool{}
		}
		if seen[r.TypeURL][r.Nonce] {
			bad("NONCE-2", "nonce %q reused for a second %s response on this stream", r.Nonce, r.TypeURL)
		}
		seen[r.TypeURL][r.Nonce] = true
	}
	// STREAM-7: the response names the type it answers: a known type, or
	// one the client asked for on this stream (an answer to a request of
	// a type the server does not know names that type, which is
	// consistent); the stream's own type on a per-type stream; and every
	// resource is of that type.
	if _, ok := wire.TypeByExactURL(r.TypeURL); !ok && !asked[r.TypeURL] {
		bad("STREAM-7", "response type_url %q is not a v3 resource type", r.TypeURL)
	}
	if expectedType != "" && r.TypeURL != expectedType {
		bad("STREAM-7", "response type_url %q on a %s stream", r.TypeURL, expectedType)
	}
	names := map[string]int{}    // resource identity (wire.VariantKey) -> times carried
	words := map[string]string{} // resource identity -> how a report quotes it
	var order []string
	for i, res := range r.Resources {
		if res.Any == nil {
			if r.Delta == nil {
				bad("STREAM-7", "resource #%d is empty", i)
			}
		} else {
			if r.SotW != nil && res.Any.GetTypeUrl() == wire.ResourceWrapperURL && !resourceInSotW {
				// TTL-5: wrappers only for clients that advertise the feature.
				bad("TTL-5", "resource #%d is wrapped in envoy.service.discovery.v3.Resource but the client did not advertise xds.config.resource-in-sotw", i)
			}
			if inner := wire.InnerTypeURL(res.Any); inner == xdstp.LocatorTypeURL {
				// REDIR-1: a ResourceLocator payload is a redirect to the
				// resource it locates, not a resource of another type.
			} else if inner != r.TypeURL {
				bad("STREAM-7", "resource #%d (%q) has type %q in a %s response", i, res.Name, inner, r.TypeURL)
			} else if res.Message == nil {
				bad("STREAM-7", "resource #%d (%q) of type %s does not decode", i, res.Name, inner)
			}
		}
		if r.Delta != nil && res.Name == "" {
			// DELTA-9: delta resources are named.
			bad("DELTA-9", "delta resource #%d has no name", i)
		}
		if res.Heartbeat && res.Name != "" {
			// TTL-3: a Resource without a body is a heartbeat, a TTL refresh
			// of the version the client holds, for clients that take TTLs.
			switch v, ok := held[r.TypeURL][res.Name]; {
			case !takesTTL:
				bad("TTL-3", "resource #%d (%q) is a heartbeat (no body), but the client did not advertise xds.config.supports-resource-ttl", i, res.Name)
			case !ok && !full(held[r.TypeURL]):
				bad("TTL-3", "resource #%d (%q) is a heartbeat (no body) for a resource the stream never sent", i, res.Name)
			case res.Version != "" && v != "" && res.Version != v:
				bad("TTL-3", "resource #%d (%q) is a heartbeat at version %q, but the version sent last is %q", i, res.Name, res.Version, v)
			}
		}
		if res.NamedTwice {
			// DYN-4: only one of name and resource_name may be set.
			bad("DYN-4", "resource #%d sets both name %q and resource_name (%q, constraints %s)", i, res.Name, res.Name, wire.ConstraintsString(res.Constraints))
		}
		if res.Name != "" {
			// Variants of one name (xRFC TP2) are distinct resources:
			// a resource is its name and its constraints.
			k := res.key()
			if names[k] == 0 {
				order = append(order, k)
				words[k] = variantWords(res.Name, res.Constraints)
			}
			names[k]++
		}
	}
	// DUP-1: no response carries two resources with one name.
	for _, k := range order {
		if names[k] > 1 {
			bad("DUP-1", "resource %s appears %d times in one response", words[k], names[k])
		}
	}
	// DUP-3: a delta response does not both update and remove a name.
	for _, n := range r.Removed {
		if names[n] > 0 {
			bad("DUP-3", "%q is in both resources and removed_resources", n)
		}
	}
	for _, rn := range r.RemovedNames {
		if k := wire.VariantKey(rn.GetName(), rn.GetDynamicParameterConstraints()); names[k] > 0 {
			bad("DUP-3", "%s is in both resources and removed_resource_names", words[k])
		}
	}
	// ERR-2: a resource is either served or in error, never both in one
	// response.
	for _, e := range r.Errors {
		rn := e.GetResourceName()
		if k := wire.VariantKey(rn.GetName(), rn.GetDynamicParameterConstraints()); names[k] > 0 {
			bad("ERR-2", "%s is in both resources and resource_errors (%s)", words[k], e.GetErrorDetail())
		}
	}
	return out
}

// variantWords quotes a resource for a report: its name, and its
// constraints when it is a variant.
func variantWords(name string, c *discovery.DynamicParameterConstraints) string {
	if c == nil {
		return fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("%q (variant %s)", name, wire.ConstraintsString(c))
}
