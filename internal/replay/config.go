package replay

import (
	"fmt"
	"slices"
	"strings"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/wire"
)

// A recording holds only the xDS streams. What the server was configured
// with, and what was changed in it while the recording ran, is not in it,
// but the server's responses show it: the resources they carry are the
// configuration, and a response that brings a resource changed (or one
// the client had not asked for anew, or removes one) without the client
// having asked for anything new is a configuration change the server
// pushed. Config reads that from a plan, so that a replay can set the same
// configuration through a fixture, or say that differences from a change
// on may be the change's rather than the target's.

// ConfigChange is one change of the server's configuration the recording
// shows, made before the response at step Before.
type ConfigChange struct {
	// Before is the index (Step.Index) of the response that first shows
	// it.
	Before  int
	TypeURL string
	Name    string
	// Resource is the resource as that response carries it; nil for a
	// removal.
	Resource *anypb.Any
}

// Config is the configuration a recording shows: what the server held
// when the recording started (each resource as first served, in a
// response the client asked for), and the changes made while it ran, in
// order.
type Config struct {
	Initial []ConfigChange
	Changes []ConfigChange
	// Partial is set when a response was kept in part (the transcript's
	// size bound): its resources cannot be set as they were.
	Partial bool
}

// resourceKey names a resource: its type and name.
type resourceKey struct{ typeURL, name string }

// Config reads the configuration the plan's responses show. A response
// is prompted when, since the last response of its type on its stream,
// the client sent a request other than an ACK of it (a first request, a
// change of subscription, a NACK); any other is pushed. A resource first
// served in a prompted response is initial configuration; one first
// served in a pushed response was added then. A resource served again
// with other content changed before that response; one a pushed delta
// response removes was removed. A SotW response that omits a resource
// says nothing certain (the client may have unsubscribed): it is not read
// as a removal.
func (p *Plan) Config() Config {
	var cfg Config
	last := map[resourceKey][]byte{}
	// pending is, per stream and type, whether a request since the last
	// response asks for something new.
	type streamType struct {
		s   *Stream
		url string
	}
	pending := map[streamType]bool{}
	names := map[streamType][]string{} // SotW: the names of the last request
	for _, st := range p.Steps {
		switch st.Kind {
		case Request:
			k := streamType{st.Stream, st.TypeURL}
			anew := asksAnew(st.Message)
			if r, ok := st.Message.(*discovery.DiscoveryRequest); ok {
				now := slices.Sorted(slices.Values(r.GetResourceNames()))
				if prev, ok := names[k]; ok && !slices.Equal(prev, now) {
					anew = true // a subscription change carried by an ACK
				}
				names[k] = now
			}
			if anew {
				pending[k] = true
			}
		case Response:
			if st.Partial {
				cfg.Partial = true
			}
			k := streamType{st.Stream, st.TypeURL}
			prompted := pending[k]
			pending[k] = false
			resources, removed := served(st.Message)
			for _, r := range resources {
				key := resourceKey{st.TypeURL, r.name}
				body := r.res.GetValue()
				prev, seen := last[key]
				last[key] = body
				change := ConfigChange{Before: st.Index, TypeURL: st.TypeURL, Name: r.name, Resource: r.res}
				switch {
				case !seen && prompted:
					cfg.Initial = append(cfg.Initial, change)
				case !seen, !slices.Equal(prev, body):
					cfg.Changes = append(cfg.Changes, change)
				}
			}
			if !prompted {
				for _, name := range removed {
					key := resourceKey{st.TypeURL, name}
					if _, seen := last[key]; seen {
						delete(last, key)
						cfg.Changes = append(cfg.Changes, ConfigChange{Before: st.Index, TypeURL: st.TypeURL, Name: name})
					}
				}
			}
		}
	}
	return cfg
}

// asksAnew reports whether a request asks the server for something: all
// but an ACK, which only echoes what it was sent. A first request (no
// nonce), a NACK (an error), a SotW request naming other resources than
// the last, a delta request that subscribes or unsubscribes.
func asksAnew(m proto.Message) bool {
	switch r := m.(type) {
	case *discovery.DiscoveryRequest:
		// Whether its names changed is told against the request before
		// it (Config).
		return r.GetResponseNonce() == "" || r.GetErrorDetail() != nil
	case *discovery.DeltaDiscoveryRequest:
		return r.GetResponseNonce() == "" || r.GetErrorDetail() != nil ||
			len(r.GetResourceNamesSubscribe()) > 0 || len(r.GetResourceNamesUnsubscribe()) > 0
	}
	return false
}

// servedResource is a resource in a response, with its name.
type servedResource struct {
	name string
	res  *anypb.Any
}

// served lists the resources a response carries, and the names a delta
// response removes.
func served(m proto.Message) ([]servedResource, []string) {
	var out []servedResource
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		for _, a := range r.GetResources() {
			a = wire.Inner(a) // the resource a fixture sets is the wrapped one
			if name, err := wire.AnyName(a); err == nil && name != "" {
				out = append(out, servedResource{name, a})
			}
		}
		return out, nil
	case *discovery.DeltaDiscoveryResponse:
		for _, res := range r.GetResources() {
			if res.GetResource() != nil {
				out = append(out, servedResource{res.GetName(), res.GetResource()})
			}
		}
		return out, r.GetRemovedResources()
	}
	return nil, nil
}

// Summary says in one line what the changes are: how many, of what, and
// at which entries.
func (c Config) Summary() string {
	var set, removed, at []string
	for _, ch := range c.Changes {
		if ch.Resource == nil {
			removed = append(removed, short(ch.TypeURL)+" "+ch.Name)
		} else {
			set = append(set, short(ch.TypeURL)+" "+ch.Name)
		}
		if e := fmt.Sprint(ch.Before); !slices.Contains(at, e) {
			at = append(at, e)
		}
	}
	var parts []string
	if len(set) > 0 {
		parts = append(parts, "set "+list(set))
	}
	if len(removed) > 0 {
		parts = append(parts, "removed "+list(removed))
	}
	entry := "entry"
	if len(at) > 1 {
		entry = wording.Plural(entry)
	}
	return fmt.Sprintf("%s (before %s %s)", strings.Join(parts, "; "), entry, strings.Join(at, ", "))
}

// list shows at most four items, then how many more.
func list(items []string) string {
	if len(items) <= 4 {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:4], ", "), len(items)-4)
}
