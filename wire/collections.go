package wire

import (
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	"google.golang.org/protobuf/proto"
)

// ListenerCollection is the list collection type of listeners,
// envoy.config.listener.v3.ListenerCollection (COLL-1): one resource
// whose entries are locators of listeners or inline listeners. It is no
// type of its own in xds_protocol.rst, so it is not in AllTypes: nothing
// that loops over the eight types meets it. It travels on the listener
// service's methods (TP1 names none of its own).
var ListenerCollection = Type{Short: "LDS-collection", URL: TypePrefix + "envoy.config.listener.v3.ListenerCollection",
	Service: Listener.Service, SotWMethod: Listener.SotWMethod, DeltaMethod: Listener.DeltaMethod,
	New: func() proto.Message { return &listener.ListenerCollection{} }}

// collections maps each list collection type to its member type.
var collections = []struct{ collection, member Type }{
	{ListenerCollection, Listener},
}

// CollectionOf is the list collection type of member type t, if the
// harness knows one.
func CollectionOf(t Type) (Type, bool) {
	for _, c := range collections {
		if c.member.URL == t.URL {
			return c.collection, true
		}
	}
	return Type{}, false
}

// MemberOf is the member type of list collection type c, if c is one.
func MemberOf(c Type) (Type, bool) {
	for _, k := range collections {
		if k.collection.URL == c.URL {
			return k.member, true
		}
	}
	return Type{}, false
}
