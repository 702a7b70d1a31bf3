package transcript

import (
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// RedactedSecret is what replaces a Secret's payload in every transcript.
const RedactedSecret = "[redacted]"

// Redact returns m with every SDS Secret payload replaced by a placeholder
// (its name stays), and key material inlined in other resources too (see
// keyMaterial), so that secrets never reach a report. m itself is not
// modified.
func Redact(m proto.Message) proto.Message {
	switch msg := m.(type) {
	case *discovery.DiscoveryResponse:
		var c *discovery.DiscoveryResponse
		for i, a := range msg.GetResources() {
			if red := redactAny(a); red != a {
				if c == nil {
					c = proto.Clone(msg).(*discovery.DiscoveryResponse)
				}
				c.Resources[i] = red
			}
		}
		if c == nil {
			return m
		}
		return c
	case *discovery.DeltaDiscoveryResponse:
		var c *discovery.DeltaDiscoveryResponse
		for i, r := range msg.GetResources() {
			if red := redactAny(r.GetResource()); red != r.GetResource() {
				if c == nil {
					c = proto.Clone(msg).(*discovery.DeltaDiscoveryResponse)
				}
				c.Resources[i].Resource = red
			}
		}
		if c == nil {
			return m
		}
		return c
	}
	return m
}

func redactAny(a *anypb.Any) *anypb.Any {
	if a == nil {
		return nil
	}
	if a.GetTypeUrl() == wire.ResourceWrapperURL {
		var r discovery.Resource
		if err := a.UnmarshalTo(&r); err != nil {
			return placeholder()
		}
		inner := redactAny(r.Resource)
		if inner == r.Resource {
			return a
		}
		r.Resource = inner
		out, err := anypb.New(&r)
		if err != nil {
			return placeholder()
		}
		return out
	}
	if a.GetTypeUrl() != wire.Secret.URL {
		return scrubAny(a)
	}
	var s tls.Secret
	if err := a.UnmarshalTo(&s); err != nil {
		return placeholder()
	}
	// The name stays so the reader can follow the protocol; the payload is
	// replaced by a visible marker.
	red := &tls.Secret{Name: s.GetName(), Type: &tls.Secret_GenericSecret{GenericSecret: &tls.GenericSecret{
		Secret: &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: RedactedSecret}},
	}}}
	out, err := anypb.New(red)
	if err != nil {
		return placeholder()
	}
	return out
}

func placeholder() *anypb.Any { return &anypb.Any{TypeUrl: wire.Secret.URL} }

// keyMaterial are the fields that hold secrets inside other resources:
// real servers inline them (Consul puts each proxy's leaf certificate key
// in every cluster and listener it serves), not only in SDS Secrets.
var keyMaterial = map[protoreflect.FullName]bool{
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.private_key": true,
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.password":    true,
	"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.pkcs12":      true,
	"envoy.extensions.transport_sockets.tls.v3.TlsSessionTicketKeys.keys":  true,
	"envoy.extensions.transport_sockets.tls.v3.GenericSecret.secret":       true,
}

// redactedSource replaces a key-material data source.
func redactedSource() *core.DataSource {
	return &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: RedactedSecret}}
}

// scrubAny returns a with every key-material field inside it (at any depth,
// through nested Anys of known types) replaced by RedactedSecret; a itself
// is not modified, and comes back as is when it holds none.
func scrubAny(a *anypb.Any) *anypb.Any {
	if a == nil {
		return nil
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return a // a type this build does not know: rendered as bytes, not fields
	}
	if !scrub(m.ProtoReflect()) {
		return a
	}
	out, err := anypb.New(m)
	if err != nil {
		return placeholder()
	}
	return out
}

// scrub replaces key material in m, in place, and says whether it did.
func scrub(m protoreflect.Message) bool {
	changed := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil {
			return true
		}
		switch {
		case keyMaterial[fd.FullName()] && fd.IsList():
			for i := range v.List().Len() {
				v.List().Set(i, protoreflect.ValueOfMessage(redactedSource().ProtoReflect()))
			}
			changed = true
		case keyMaterial[fd.FullName()]:
			m.Set(fd, protoreflect.ValueOfMessage(redactedSource().ProtoReflect()))
			changed = true
		case fd.IsList():
			for i := range v.List().Len() {
				changed = scrubValue(v.List().Get(i).Message(), func(n protoreflect.Message) {
					v.List().Set(i, protoreflect.ValueOfMessage(n))
				}) || changed
			}
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				changed = scrubValue(mv.Message(), func(n protoreflect.Message) {
					v.Map().Set(k, protoreflect.ValueOfMessage(n))
				}) || changed
				return true
			})
		default:
			changed = scrubValue(v.Message(), func(n protoreflect.Message) { m.Set(fd, protoreflect.ValueOfMessage(n)) }) || changed
		}
		return true
	})
	return changed
}

// scrubValue scrubs one message field value; an Any is unpacked, scrubbed
// and, if it changed, packed again and handed to set.
func scrubValue(m protoreflect.Message, set func(protoreflect.Message)) bool {
	if a, ok := m.Interface().(*anypb.Any); ok {
		out := scrubAny(a)
		if out == a {
			return false
		}
		set(out.ProtoReflect())
		return true
	}
	return scrub(m)
}
