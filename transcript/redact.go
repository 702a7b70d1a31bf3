package transcript

import (
	"strings"
	"sync"

	"github.com/cncf/xds/go/udpa/annotations"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"
)

// RedactedSecret is what replaces a secret in every artefact.
const RedactedSecret = "[redacted]"

// Redact returns m with every credential in it replaced by RedactedSecret,
// at any depth and through nested Anys: the one renderer's view of a
// message that transcripts and failure messages use. A credential is a
// field the xDS API annotates as one (udpa.annotations.sensitive, or
// debug_redact), a field in explicitSensitive, or the value of a header
// named like a credential (see IsSensitiveHeader). An Any of a type this
// binary does not link, or whose bytes do not decode, is replaced by a
// description of its type URL and size: its bytes could hold anything.
// Unknown fields (from a newer API) are dropped for the same reason.
// Every value replaced is remembered for Scrub. m itself is never
// modified, and comes back as is when there is nothing to redact.
func Redact(m proto.Message) proto.Message {
	if m == nil || !m.ProtoReflect().IsValid() {
		return m
	}
	if !redact(m.ProtoReflect(), false) {
		return m
	}
	c := proto.Clone(m)
	redact(c.ProtoReflect(), true)
	return c
}

// explicitSensitive are credential fields the API does not annotate
// (checked against the descriptors by TestExplicitSensitiveFieldsAreNeeded:
// an entry that gains the annotation, or no longer exists, fails it).
var explicitSensitive = map[protoreflect.FullName]bool{
	// Google gRPC call credentials, inline in any GrpcService (access
	// loggers, ext_authz, tracers).
	"envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.access_token":                                true,
	"envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.google_refresh_token":                        true,
	"envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.ServiceAccountJWTAccessCredentials.json_key": true,
	"envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.GoogleIAMCredentials.authorization_token":    true,
}

// headerTypes are messages that carry one header, by the field holding its
// name: when the name is a credential's (IsSensitiveHeader), every other
// field of the message is sensitive (a HeaderValue's value, a
// HeaderMatcher's exact match of a bearer token).
var headerTypes = map[protoreflect.FullName]protoreflect.Name{
	"envoy.config.core.v3.HeaderValue":    "key",
	"envoy.config.route.v3.HeaderMatcher": "name",
}

// sensitiveCache remembers IsSensitiveField per field descriptor: reading
// an extension from field options is too slow to repeat for every field
// of every message recorded.
var sensitiveCache sync.Map // protoreflect.FieldDescriptor -> bool

// IsSensitiveField reports whether fd carries a credential by its
// declaration: annotated udpa.annotations.sensitive or debug_redact, or
// listed in explicitSensitive.
func IsSensitiveField(fd protoreflect.FieldDescriptor) bool {
	if v, ok := sensitiveCache.Load(fd); ok {
		return v.(bool)
	}
	s := annotatedSensitive(fd) || explicitSensitive[fd.FullName()]
	sensitiveCache.Store(fd, s)
	return s
}

// annotatedSensitive reports whether the API itself marks fd.
func annotatedSensitive(fd protoreflect.FieldDescriptor) bool {
	opts, ok := fd.Options().(*descriptorpb.FieldOptions)
	if !ok || opts == nil {
		return false
	}
	if opts.GetDebugRedact() {
		return true
	}
	s, _ := proto.GetExtension(opts, annotations.E_Sensitive).(bool)
	return s
}

// redact walks m. With apply false it only reports whether anything
// would be redacted (so that a message without secrets is not copied);
// with apply true it redacts m in place and reports whether it did.
func redact(m protoreflect.Message, apply bool) bool {
	changed := false
	if len(m.GetUnknown()) > 0 {
		if !apply {
			return true
		}
		m.SetUnknown(nil)
		changed = true
	}
	if isAny(m.Descriptor()) {
		return redactAny(m, apply) || changed
	}
	nameField, byName := headerTypes[m.Descriptor().FullName()]
	if byName {
		fd := m.Descriptor().Fields().ByName(nameField)
		byName = fd != nil && fd.Kind() == protoreflect.StringKind && IsSensitiveHeader(m.Get(fd).String())
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if IsSensitiveField(fd) || byName && fd.Name() != nameField && carriesText(fd) {
			changed = true
			if apply {
				redactField(m, fd, v)
			}
			return apply
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				changed = redact(v.List().Get(i).Message(), apply) || changed
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				changed = redact(mv.Message(), apply) || changed
				return apply || !changed
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			changed = redact(v.Message(), apply) || changed
		}
		return apply || !changed
	})
	return changed
}

// carriesText reports whether fd can hold a credential's text: a string,
// bytes or a message (whose texts blank replaces). A header matcher's
// flags and numbers say nothing secret and stay.
func carriesText(fd protoreflect.FieldDescriptor) bool {
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BytesKind, protoreflect.MessageKind, protoreflect.GroupKind:
		return true
	}
	return false
}

func isAny(md protoreflect.MessageDescriptor) bool {
	return md.FullName() == "google.protobuf.Any"
}

// anyFields are an Any's type_url and value fields.
func anyFields(m protoreflect.Message) (url, value protoreflect.FieldDescriptor) {
	fs := m.Descriptor().Fields()
	return fs.ByNumber(1), fs.ByNumber(2)
}

// redactAny redacts inside an Any, in place: its contents are decoded,
// redacted and encoded again; contents this binary cannot decode are
// withheld.
func redactAny(m protoreflect.Message, apply bool) bool {
	urlFD, valueFD := anyFields(m)
	url, value := m.Get(urlFD).String(), m.Get(valueFD).Bytes()
	if url == "" && len(value) == 0 {
		return false
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		if apply {
			withhold(m, "its type is not linked into xdsconform")
		}
		return true
	}
	inner := mt.New()
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(value, inner.Interface()); err != nil {
		if apply {
			withhold(m, "its bytes do not decode as that type")
		}
		return true
	}
	if !redact(inner, apply) {
		return false
	}
	if !apply {
		return true
	}
	b, err := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(inner.Interface())
	if err != nil {
		withhold(m, "it could not be encoded again after redaction")
		return true
	}
	m.Set(valueFD, protoreflect.ValueOfBytes(b))
	return true
}

// withhold replaces an Any, in place, by a Struct that says what it was:
// its type URL (bounded), its size and why its contents are not shown.
func withhold(m protoreflect.Message, why string) {
	urlFD, valueFD := anyFields(m)
	url, size := m.Get(urlFD).String(), len(m.Get(valueFD).Bytes())
	if len(url) > maxTypeURL {
		// Cut on a character boundary: structpb refuses invalid UTF-8,
		// which would leave an empty Any and lose the type and size.
		url = strings.ToValidUTF8(url[:maxTypeURL], "") + "…"
	}
	s, err := structpb.NewStruct(map[string]any{
		"withheld_type_url": url,
		"withheld_bytes":    size,
		"why":               "contents withheld: " + why,
	})
	a := &anypb.Any{}
	if err == nil {
		a, err = anypb.New(s)
		if err != nil {
			a = &anypb.Any{}
		}
	}
	m.Set(urlFD, protoreflect.ValueOfString(a.GetTypeUrl()))
	m.Set(valueFD, protoreflect.ValueOfBytes(a.GetValue()))
	m.SetUnknown(nil)
}

// redactField replaces the value of a sensitive field of m, remembering
// every secret it held.
func redactField(m protoreflect.Message, fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	switch {
	case fd.IsList():
		l := v.List()
		for i := range l.Len() {
			if nv, ok := blankValue(fd, l.Get(i)); ok {
				l.Set(i, nv)
			}
		}
	case fd.IsMap():
		mp := v.Map()
		var keys []protoreflect.MapKey
		mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
			keys = append(keys, k)
			return true
		})
		for _, k := range keys {
			if nv, ok := blankValue(fd.MapValue(), mp.Get(k)); ok {
				mp.Set(k, nv)
			}
		}
	default:
		if nv, ok := blankValue(fd, v); ok {
			m.Set(fd, nv)
		} else if fd.Message() == nil {
			m.Clear(fd) // a number or flag: nothing to show in its place
		}
	}
}

// blankValue remembers and replaces one value of a sensitive field: a
// string or bytes by RedactedSecret, a message by blanking it in place
// (every text in it replaced, numbers kept), which needs no new value.
func blankValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		RememberSecret(v.String())
		return protoreflect.ValueOfString(RedactedSecret), true
	case protoreflect.BytesKind:
		rememberBytes(v.Bytes())
		return protoreflect.ValueOfBytes([]byte(RedactedSecret)), true
	case protoreflect.MessageKind, protoreflect.GroupKind:
		blank(v.Message())
		return v, false
	}
	return v, false
}

// blank replaces every string and bytes value in m (at any depth) by
// RedactedSecret, remembering each; an Any in it is withheld whole after
// its decodable contents are remembered.
func blank(m protoreflect.Message) {
	m.SetUnknown(nil)
	if isAny(m.Descriptor()) {
		rememberAny(m)
		withhold(m, "it is a secret")
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		redactField(m, fd, v)
		return true
	})
}

// rememberAny remembers what a sensitive Any holds: its bytes, and every
// text inside them when the type is known.
func rememberAny(m protoreflect.Message) {
	urlFD, valueFD := anyFields(m)
	value := m.Get(valueFD).Bytes()
	rememberBytes(value)
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(m.Get(urlFD).String())
	if err != nil {
		return
	}
	inner := mt.New()
	if (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(value, inner.Interface()) == nil {
		blank(inner) // remembers as it blanks; the copy is thrown away
	}
}
