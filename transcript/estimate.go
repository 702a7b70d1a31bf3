package transcript

import (
	"encoding/base64"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// What a message kept as wire bytes counts against the caps before it is
// rendered. Record keeps a message's wire bytes and renders them only
// when the entry is first read (see raw), so the caps and the run's
// budget cannot count the rendering: they count an upper bound of its
// size (Message plus Note), computed by scan from the wire bytes in one
// pass with no decoding. The bound follows what render makes of each
// field: its name, quotes, colon and comma (len(name)+6, which also pays
// for a list's brackets), and its value at its longest (a string with
// every byte escaped as compact's JSON re-encoding may, a 64-bit integer
// quoted with its sign, an enum's longest name, an Any's type URL and
// contents or the description Redact gives instead). A bound, not a
// guess: TestEstimateBoundsRendering checks it is never below the
// rendering, for every linked type filled at random. On the messages the
// suites exchange an entry counts 1.04 to 1.46 times its rendering
// (TestEstimateIsClose), so the caps keep nearly as many entries as when
// they counted renderings.
//
// Where scan cannot bound a message, or the message holds a secret, it
// says so and Record renders at once as it always did (the entry then
// counts its rendering exactly): a message larger than EntryBytes on the
// wire or bounded above it (which render cuts, with a note), one with a
// credential (Redact must remember it now, for Scrub, and its raw bytes
// are better not kept), a FieldMask (protojson's error for a bad path
// quotes it), an extension or a group (which no xDS message has), bytes
// that do not parse, a map entry without its key or value, and nesting
// past maxScanDepth. So neither a message kept raw nor its rendering is
// ever larger than what it counts (a factor of 1): the caps and the
// budget bound memory and reports alike, as before. What a message
// counts also counts in the elision note's bytes when it is elided.
const (
	// maxScanDepth is how deep scan follows nested messages before it
	// gives up (and the message is rendered at once).
	maxScanDepth = 100
	// minMessage is the least a message counts: render replaces a
	// message protojson refuses (a Duration out of range, a Value with
	// no kind) by a note of about 100 bytes, whatever its size.
	minMessage = 128
	// wktFloor is the least a google.protobuf message counts: an empty
	// Timestamp renders as "1970-01-01T00:00:00Z", not {}.
	wktFloor = 34
	// withheldAny is the longest description of a withheld Any (see
	// withhold) apart from its type URL.
	withheldAny = 200
)

// scan bounds the rendering of a message of type md whose wire bytes
// are b (see above), and reports false when it cannot or when Redact
// would find a secret in it.
func scan(md protoreflect.MessageDescriptor, b []byte, depth int) (int, bool) {
	if depth > maxScanDepth || md.FullName() == "google.protobuf.FieldMask" {
		return 0, false
	}
	if isAny(md) {
		return scanAny(b, depth)
	}
	header := headerTypes[md.FullName()]
	fields := md.Fields()
	n := 2 // braces
	var seenKey, seenValue bool
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b)
		if !ok {
			return 0, false
		}
		b = rest
		fd := fields.ByNumber(num)
		if fd == nil {
			if md.ExtensionRanges().Len() > 0 {
				return 0, false // could be an extension, which protojson renders
			}
			continue // an unknown field: Redact drops it
		}
		if IsSensitiveField(fd) {
			return 0, false
		}
		name := fd.Name()
		if name == header && typ == protowire.BytesType {
			if h, _ := protowire.ConsumeBytes(v); IsSensitiveHeader(string(h)) {
				return 0, false
			}
		}
		seenKey, seenValue = seenKey || num == 1, seenValue || num == 2
		size, ok := scanValue(fd, typ, v, depth)
		if !ok {
			return 0, false
		}
		n += len(name) + 6 + size
	}
	if md.IsMapEntry() && !(seenKey && seenValue) {
		// Only hand-made bytes (in an Any) leave out a map entry's key
		// or value, which still renders, as its default: not worth
		// bounding.
		return 0, false
	}
	if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
		n = max(n, wktFloor)
	}
	return n, true
}

// nextField splits the first field off b: its number, wire type and
// value (tag taken off), and what follows; ok is false when b does not
// parse.
func nextField(b []byte) (num protowire.Number, typ protowire.Type, v, rest []byte, ok bool) {
	num, typ, l := protowire.ConsumeTag(b)
	if l < 0 {
		return 0, 0, nil, nil, false
	}
	b = b[l:]
	if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
		return 0, 0, nil, nil, false
	}
	return num, typ, b[:l], b[l:], true
}

// scanAny bounds an Any: `"@type":` and its URL, then its contents, or
// `"value":` and them for a well-known type; or, as Redact may withhold
// it (its type not linked, its bytes not decoding), its description.
func scanAny(b []byte, depth int) (int, bool) {
	var url string
	var value []byte
	for len(b) > 0 {
		num, typ, v, rest, ok := nextField(b)
		if !ok {
			return 0, false
		}
		b = rest
		if typ == protowire.BytesType {
			v, _ := protowire.ConsumeBytes(v)
			switch num {
			case 1:
				url = string(v)
			case 2:
				value = v
			}
		}
	}
	shown := url
	if len(shown) > maxTypeURL {
		shown = shown[:maxTypeURL] + "…"
	}
	withheld := withheldAny + stringSize(shown)
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(url)
	if err != nil {
		return withheld, true // withheld whole: nothing in it to remember
	}
	inner, ok := scan(mt.Descriptor(), value, depth+1)
	if !ok {
		return 0, false
	}
	return max(withheld, 2+len(`"@type":,"value":`)+stringSize(url)+inner), true
}

// scanValue bounds one value of field fd as it appears on the wire (with
// wire type typ and bytes v): a packed list's values, each with its comma.
func scanValue(fd protoreflect.FieldDescriptor, typ protowire.Type, v []byte, depth int) (int, bool) {
	kind := fd.Kind()
	switch {
	case typ == protowire.BytesType && kind == protoreflect.MessageKind:
		b, _ := protowire.ConsumeBytes(v)
		return scan(fd.Message(), b, depth+1)
	case typ == protowire.BytesType && kind == protoreflect.StringKind:
		b, _ := protowire.ConsumeBytes(v)
		return stringSize(string(b)), true
	case typ == protowire.BytesType && kind == protoreflect.BytesKind:
		b, _ := protowire.ConsumeBytes(v)
		return 2 + base64.StdEncoding.EncodedLen(len(b)), true
	case typ == protowire.BytesType && fd.IsList() && scalarWire(kind) != protowire.BytesType:
		b, _ := protowire.ConsumeBytes(v)
		n := 0
		for len(b) > 0 {
			l := protowire.ConsumeFieldValue(0, scalarWire(kind), b)
			if l < 0 {
				return 0, false
			}
			b = b[l:]
			n += scalarSize(fd) + 1
		}
		return n, true
	case typ == scalarWire(kind) && typ != protowire.BytesType:
		return scalarSize(fd), true
	}
	return 0, false // a group, or a wire type that does not fit the field
}

// scalarWire is the wire type of a value of kind k when not packed.
func scalarWire(k protoreflect.Kind) protowire.Type {
	switch k {
	case protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Uint64Kind:
		return protowire.VarintType
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind, protoreflect.FloatKind:
		return protowire.Fixed32Type
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind, protoreflect.DoubleKind:
		return protowire.Fixed64Type
	case protoreflect.GroupKind:
		return protowire.StartGroupType
	}
	return protowire.BytesType
}

// scalarSize bounds a number, flag or enum value's rendering.
func scalarSize(fd protoreflect.FieldDescriptor) int {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return len("false")
	case protoreflect.EnumKind:
		return enumSize(fd.Enum())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return len("-2147483648")
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return len(`-2.2250738585072014e-308`) + 2 // or "-Infinity", quoted
	}
	return len(`"-9223372036854775808"`) // 64-bit integers are quoted
}

// enumSizes caches enumSize per enum: a descriptor's values do not change.
var enumSizes sync.Map // protoreflect.EnumDescriptor -> int

// enumSize bounds an enum value's rendering: its longest name, quoted,
// or a number the enum does not name.
func enumSize(ed protoreflect.EnumDescriptor) int {
	if n, ok := enumSizes.Load(ed); ok {
		return n.(int)
	}
	n := len("-2147483648")
	for i := range ed.Values().Len() {
		n = max(n, len(ed.Values().Get(i).Name())+2)
	}
	enumSizes.Store(ed, n)
	return n
}

// stringSize bounds s rendered as a JSON string by compact (encoding/json,
// which escapes <, > and & for HTML, control characters, U+2028 and
// U+2029, and replaces invalid UTF-8).
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			n += len(`\u003c`)
		case c == '"' || c == '\\':
			n += 2
		case c < utf8.RuneSelf:
			n++
		default:
			n += 2 // U+2028 is 3 bytes and 6 escaped
		}
	}
	return n
}

// rawSize is what a message kept as wire bytes counts against the caps
// (see scan): its bound, or its wire size when larger (unknown fields
// count nothing in the bound but are kept until rendered), and never less
// than minMessage.
func rawSize(bound, wire int, e Entry) int64 {
	return int64(max(bound, wire, minMessage)+len(e.Stream)+len(e.Kind)) + entryOverhead
}
