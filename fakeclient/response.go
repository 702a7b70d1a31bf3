package fakeclient

import (
	"slices"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/wire"
)

// Response is a SotW or delta response as the scenario sees it: the raw
// message plus its decoded resources.
type Response struct {
	// Stream names the stream it arrived on.
	Stream string
	// Seq numbers the client's responses from 1 in the order they
	// arrived, across streams and types: the order rules (make-before-break)
	// compare it.
	Seq int
	// TypeURL is the response's type_url.
	TypeURL string
	// Nonce is the response's nonce.
	Nonce string
	// Version is version_info (SotW) or system_version_info (delta).
	Version string
	// Resources are the decoded resources, in wire order.
	Resources []Resource
	// Removed is removed_resources (delta only).
	Removed []string
	// RemovedNames is removed_resource_names (delta only): removals of
	// resources sent with dynamic parameter constraints (DYN-5).
	RemovedNames []*discovery.ResourceName
	// Errors is resource_errors (xRFC TP3): per-resource errors (ERR-1).
	Errors []*discovery.ResourceError
	// SotW is the raw SotW message, nil for delta.
	SotW *discovery.DiscoveryResponse
	// Delta is the raw delta message, nil for SotW.
	Delta *discovery.DeltaDiscoveryResponse

	size int64 // what it counts against QueueBytes
}

// Resource is one resource of a response.
type Resource struct {
	// Name is the resource's name (delta Resource.name, or the name inside
	// the message for SotW).
	Name string
	// Version is the delta per-resource version; empty in SotW.
	Version string
	// Message is the decoded resource; nil if it could not be decoded.
	Message proto.Message
	// Any is the packed resource as received.
	Any *anypb.Any
	// Wrapped says the resource came in an envoy.service.discovery.v3.Resource
	// wrapper (always true in delta, where every resource is one).
	Wrapped bool
	// TTL is the wrapper's ttl, nil when it has none.
	TTL *durationpb.Duration
	// Aliases are the wrapper's aliases (delta).
	Aliases []string
	// Heartbeat says the wrapper has no resource: a TTL refresh of what
	// the client holds (TTL-3), not an update.
	Heartbeat bool
	// Constraints are the dynamic parameter constraints of the variant
	// (the wrapper's resource_name, xRFC TP2, DYN-3); nil when it came
	// without any.
	Constraints *discovery.DynamicParameterConstraints
	// NamedTwice says the wrapper set both name and resource_name (DYN-4).
	NamedTwice bool
}

// Names lists the resource names in wire order (duplicates kept).
func (r *Response) Names() []string {
	out := make([]string, 0, len(r.Resources))
	for _, res := range r.Resources {
		out = append(out, res.Name)
	}
	return out
}

// Has reports whether the response carries a resource named name.
func (r *Response) Has(name string) bool { return slices.Contains(r.Names(), name) }

// HasRemoved reports whether the delta response lists name in
// removed_resources or, with any constraints, in removed_resource_names.
func (r *Response) HasRemoved(name string) bool {
	return slices.Contains(r.Removed, name) || slices.ContainsFunc(r.RemovedNames, func(rn *discovery.ResourceName) bool {
		return rn.GetName() == name
	})
}

// removedNames lists every name the delta response removes, from
// removed_resources and removed_resource_names alike.
func (r *Response) removedNames() []string {
	out := slices.Clone(r.Removed)
	for _, rn := range r.RemovedNames {
		out = append(out, rn.GetName())
	}
	return out
}

// Find returns the first resource named name, or nil.
func (r *Response) Find(name string) *Resource {
	for i := range r.Resources {
		if r.Resources[i].Name == name {
			return &r.Resources[i]
		}
	}
	return nil
}

// Get returns the resource named name, or nil.
func (r *Response) Get(name string) proto.Message {
	if res := r.Find(name); res != nil {
		return res.Message
	}
	return nil
}

// ResourceVersion returns the delta version of the resource named name.
func (r *Response) ResourceVersion(name string) string {
	if res := r.Find(name); res != nil {
		return res.Version
	}
	return ""
}

// Filter returns the names among names() for which keep is true; scenarios
// use it to look only at their own resources on shared servers.
func (r *Response) Filter(keep func(string) bool) []string {
	var out []string
	for _, n := range r.Names() {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

func decodeSotW(stream string, m *discovery.DiscoveryResponse) *Response {
	r := &Response{Stream: stream, TypeURL: m.GetTypeUrl(), Nonce: m.GetNonce(), Version: m.GetVersionInfo(), SotW: m,
		Errors: m.GetResourceErrors()}
	for _, a := range m.GetResources() {
		res := Resource{Any: a}
		if msg, err := wire.Unpack(a); err == nil {
			res.Message = msg
		}
		res.Name, _ = wire.AnyName(a)
		if a.GetTypeUrl() == wire.ResourceWrapperURL {
			w := &discovery.Resource{}
			if a.UnmarshalTo(w) == nil {
				res.Wrapped, res.TTL, res.Version, res.Heartbeat = true, w.GetTtl(), w.GetVersion(), w.GetResource() == nil
				res.named(w)
			}
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

// TTLOf returns the TTL the response gives the resource named name, nil
// when it gives none.
func (r *Response) TTLOf(name string) *durationpb.Duration {
	if res := r.Find(name); res != nil {
		return res.TTL
	}
	return nil
}

// Wrapped reports whether the resource named name came wrapped.
func (r *Response) Wrapped(name string) bool {
	res := r.Find(name)
	return res != nil && res.Wrapped
}

// AliasesOf returns the aliases a delta response lists for name.
func (r *Response) AliasesOf(name string) []string {
	if res := r.Find(name); res != nil {
		return res.Aliases
	}
	return nil
}

func decodeDelta(stream string, m *discovery.DeltaDiscoveryResponse) *Response {
	r := &Response{Stream: stream, TypeURL: m.GetTypeUrl(), Nonce: m.GetNonce(), Version: m.GetSystemVersionInfo(),
		Removed: m.GetRemovedResources(), RemovedNames: m.GetRemovedResourceNames(), Errors: m.GetResourceErrors(), Delta: m}
	for _, dr := range m.GetResources() {
		res := Resource{Name: dr.GetName(), Version: dr.GetVersion(), Any: dr.GetResource(), Wrapped: true,
			TTL: dr.GetTtl(), Aliases: dr.GetAliases(), Heartbeat: dr.GetResource() == nil}
		res.named(dr)
		if dr.GetResource() != nil {
			if msg, err := wire.Unpack(dr.GetResource()); err == nil {
				res.Message = msg
			}
		}
		r.Resources = append(r.Resources, res)
	}
	return r
}

// named takes the wrapper's resource_name (xRFC TP2): a resource named
// only there goes by that name, with its constraints.
func (res *Resource) named(w *discovery.Resource) {
	rn := w.GetResourceName()
	if rn == nil {
		return
	}
	res.NamedTwice = w.GetName() != ""
	if w.GetName() == "" {
		res.Name = rn.GetName()
	}
	res.Constraints = rn.GetDynamicParameterConstraints()
}

// key is the resource's identity in the response: its name and, for a
// variant, its constraints (wire.VariantKey).
func (res *Resource) key() string { return wire.VariantKey(res.Name, res.Constraints) }

// ConstraintsOf returns the constraints the response gives the resource
// named name, nil when it gives none (or does not carry it).
func (r *Response) ConstraintsOf(name string) *discovery.DynamicParameterConstraints {
	if res := r.Find(name); res != nil {
		return res.Constraints
	}
	return nil
}

// RemovedVariant returns the removed_resource_names entry for name, nil
// when there is none.
func (r *Response) RemovedVariant(name string) *discovery.ResourceName {
	for _, rn := range r.RemovedNames {
		if rn.GetName() == name {
			return rn
		}
	}
	return nil
}

// ErrorFor returns the resource_errors entry for name, nil when there is
// none.
func (r *Response) ErrorFor(name string) *discovery.ResourceError {
	for _, e := range r.Errors {
		if e.GetResourceName().GetName() == name {
			return e
		}
	}
	return nil
}

// ErrorNames lists the names of resource_errors, in wire order.
func (r *Response) ErrorNames() []string {
	out := make([]string, 0, len(r.Errors))
	for _, e := range r.Errors {
		out = append(out, e.GetResourceName().GetName())
	}
	return out
}
