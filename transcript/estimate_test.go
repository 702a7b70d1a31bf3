package transcript

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/xdsconform/xdsconform/wire"
)

// filler fills messages at random with what makes renderings long:
// escaped characters, extreme numbers, long enum names, unknown enum
// values, Anys of linked and unlinked types, and garbled Anys; never a
// sensitive field (those are rendered at once, see scan).
type filler struct {
	r     *rand.Rand
	types []protoreflect.MessageType
}

var fillRunes = []string{"a", "Z", "<", ">", "&", "\n", "\x01", `"`, `\`, "é", "\u2028", "🙂", "/"}

func (f *filler) fill(m protoreflect.Message, depth int) {
	if isAny(m.Descriptor()) {
		f.fillAny(m, depth)
		return
	}
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		if f.r.IntN(2) == 0 || IsSensitiveField(fd) || fd.ContainingOneof() != nil && m.WhichOneof(fd.ContainingOneof()) != nil {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range f.r.IntN(3) {
				mp.Set(f.value(fd.MapKey(), nil, depth).MapKey(), f.value(fd.MapValue(), mp.NewValue, depth))
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range 1 + f.r.IntN(3) {
				l.Append(f.value(fd, l.NewElement, depth))
			}
		default:
			m.Set(fd, f.value(fd, func() protoreflect.Value { return m.NewField(fd) }, depth))
		}
	}
}

func (f *filler) fillAny(m protoreflect.Message, depth int) {
	urlFD, valueFD := anyFields(m)
	switch f.r.IntN(4) {
	case 0: // a type this binary does not link
		m.Set(urlFD, protoreflect.ValueOfString("type.googleapis.com/acme.v1."+f.text(300)))
		m.Set(valueFD, protoreflect.ValueOfBytes([]byte(f.text(20))))
	case 1: // a linked type whose bytes do not decode
		m.Set(urlFD, protoreflect.ValueOfString(wire.Cluster.URL))
		m.Set(valueFD, protoreflect.ValueOfBytes([]byte{0xff, 0xff, 0x01}))
	default:
		inner := f.types[f.r.IntN(len(f.types))].New()
		if depth > 0 {
			f.fill(inner, depth-1)
		}
		b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(inner.Interface())
		if err != nil {
			return
		}
		m.Set(urlFD, protoreflect.ValueOfString("type.googleapis.com/"+string(inner.Descriptor().FullName())))
		m.Set(valueFD, protoreflect.ValueOfBytes(b))
	}
}

func (f *filler) text(maxLen int) string {
	var b strings.Builder
	for range f.r.IntN(maxLen + 1) {
		b.WriteString(fillRunes[f.r.IntN(len(fillRunes))])
	}
	return b.String()
}

func (f *filler) value(fd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value, depth int) protoreflect.Value {
	pick := func(vs ...int64) int64 { return vs[f.r.IntN(len(vs))] }
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(f.r.IntN(2) == 0)
	case protoreflect.EnumKind:
		vs := fd.Enum().Values()
		if f.r.IntN(4) == 0 {
			return protoreflect.ValueOfEnum(protoreflect.EnumNumber(pick(12345, -7, math.MinInt32)))
		}
		return protoreflect.ValueOfEnum(vs.Get(f.r.IntN(vs.Len())).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(pick(0, -1, 7, math.MinInt32, math.MaxInt32)))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(pick(0, 7, math.MaxUint32)))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(pick(0, -1, 315576000000, math.MinInt64, math.MaxInt64))
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64([]uint64{0, 7, math.MaxUint64}[f.r.IntN(3)])
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32([]float32{0, -1.5, math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(-1))}[f.r.IntN(5)])
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64([]float64{0, -1.5, 1e21, -math.MaxFloat64, -2.2250738585072014e-308, math.NaN(), math.Inf(-1)}[f.r.IntN(7)])
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(f.text(40))
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte(f.text(40)))
	}
	v := newMsg()
	if depth > 0 {
		f.fill(v.Message(), depth-1)
	}
	return v
}

// The estimate a message kept raw counts is never below what it renders
// to, whatever the message; the rendering read later is exactly what
// rendering at once gives (the old Record); and a message recorded is
// kept raw in most cases, or the test proves little.
func TestEstimateBoundsRendering(t *testing.T) {
	types := reachableTypes(t)
	names := make([]string, 0, len(types))
	for n, md := range types {
		if !md.IsMapEntry() {
			names = append(names, string(n))
		}
	}
	sort.Strings(names)
	f := &filler{r: rand.New(rand.NewPCG(1, 2))}
	var mts []protoreflect.MessageType
	for _, n := range names {
		if mt, err := protoregistry.GlobalTypes.FindMessageByName(protoreflect.FullName(n)); err == nil {
			mts = append(mts, mt)
		}
	}
	f.types = mts
	var keptRaw, all int
	var bound, rendered int64
	for _, mt := range mts {
		for seed := range 3 {
			m := mt.New()
			f.fill(m, 3)
			if seed == 2 {
				m.SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 9999, protowire.BytesType), f.text(300)))
			}
			msg := m.Interface()
			wantMessage, wantNote := render(msg)
			if b, err := (proto.MarshalOptions{AllowPartial: true}).Marshal(msg); err == nil && wantNote == "" {
				// The bound itself, before the floors that pay for notes.
				if bound, ok := scan(m.Descriptor(), b, 0); ok {
					require.LessOrEqual(t, len(wantMessage), bound, "%s: bound %d, renders to %.300s", mt.Descriptor().FullName(), bound, wantMessage)
				}
			}
			tr := New()
			tr.Record("ads#1", Received, msg)
			kept, _, _ := tr.Kept()
			es := tr.Entries()
			require.Len(t, es, 1)
			require.LessOrEqual(t, EntrySize(es[0]), kept, "%s: counted %d, renders to %d:\n%s %s", mt.Descriptor().FullName(), kept, EntrySize(es[0]), es[0].Message, es[0].Note)
			require.Equal(t, string(wantMessage), string(es[0].Message), mt.Descriptor().FullName())
			require.Equal(t, Clip(wantNote, NoteBytes), es[0].Note, mt.Descriptor().FullName())
			all++
			if tr.head[0].raw != nil {
				keptRaw++
				bound += kept
				rendered += EntrySize(es[0])
			}
		}
	}
	t.Logf("%d of %d messages kept raw; their estimates sum to %.2f times their renderings", keptRaw, all, float64(bound)/float64(rendered))
	require.Greater(t, keptRaw, all*3/4)
}

// The messages the suites exchange count at most half as much again raw
// as rendered (1.04 to 1.46 times when written): the caps keep about as
// many of them as before.
func TestEstimateIsClose(t *testing.T) {
	msgs := []proto.Message{realisticResponse(1), realisticResponse(4),
		&discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, VersionInfo: "1", ResponseNonce: "1", ResourceNames: []string{"c"},
			Node: &core.Node{Id: "n", Cluster: "c", UserAgentName: "grpc-go", ClientFeatures: []string{"xds.config.resource-in-sotw"}}}}
	for _, ty := range wire.AllTypes {
		msgs = append(msgs, &discovery.DiscoveryResponse{VersionInfo: "1", TypeUrl: ty.URL, Nonce: "1",
			Resources: []*anypb.Any{wire.BuildAny(ty, "resource-name", 1)}})
	}
	for _, m := range msgs {
		tr := New()
		tr.Record("ads#1", Received, m)
		kept, _, _ := tr.Kept()
		size := EntrySize(tr.Entries()[0])
		assert.LessOrEqual(t, size, kept)
		assert.LessOrEqual(t, 2*kept, 3*size, "%s counts %d, renders to %d", m.ProtoReflect().Descriptor().Name(), kept, size)
	}
}

// What scan cannot bound is rendered at once and counts its rendering.
func TestUnboundedRenderedAtOnce(t *testing.T) {
	unknown := &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL}
	unknown.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 9999, protowire.BytesType), strings.Repeat("u", EntryBytes)))
	for what, m := range map[string]proto.Message{
		"over EntryBytes in unknown fields": unknown,
		"a secret":                          &tls.Secret{Name: "s", Type: &tls.Secret_GenericSecret{GenericSecret: &tls.GenericSecret{Secret: inline("MARKER-at-once-secret")}}},
		"a field mask":                      &anypb.Any{TypeUrl: "type.googleapis.com/google.protobuf.FieldMask", Value: mustMarshal(t, &fieldmaskpb.FieldMask{Paths: []string{"a_b"}})},
		"over EntryBytes":                   &discovery.DiscoveryRequest{ResourceNames: []string{strings.Repeat("n", EntryBytes)}},
		"bound over cap":                    &discovery.DiscoveryRequest{ResourceNames: []string{strings.Repeat("<", EntryBytes/2)}},
		"a credential key":                  &discovery.DiscoveryResponse{Resources: []*anypb.Any{clusterWithKey(t, leafKey)}},
		"a map entry without its value": &anypb.Any{TypeUrl: "type.googleapis.com/envoy.config.core.v3.Metadata",
			Value: protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
				protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "key-only"))},
	} {
		tr := New()
		tr.Record("ads#1", Received, m)
		require.Nil(t, tr.head[0].raw, what)
		kept, _, _ := tr.Kept()
		assert.Equal(t, EntrySize(tr.Entries()[0]), kept, what)
	}
}

func mustMarshal(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	require.NoError(t, err)
	return b
}

// Recording alone remembers a message's secrets for Scrub (a secret
// echoed elsewhere is scrubbed even if its message is never rendered,
// elided, say), for every sensitive field and header.
func TestRecordRemembersSecrets(t *testing.T) {
	types := reachableTypes(t)
	n := 0
	for name, md := range types {
		mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
		if err != nil || md.IsMapEntry() {
			continue
		}
		fs := md.Fields()
		for i := range fs.Len() {
			fd := fs.Get(i)
			if !IsSensitiveField(fd) {
				continue
			}
			n++
			marker := fmt.Sprintf("MARKER-record-%d-%s", n, fd.Name())
			m := mt.New()
			require.True(t, plantIn(m, fd, marker))
			New().Record("ads#1", Received, &discovery.DiscoveryResponse{Resources: []*anypb.Any{mustAny(t, m.Interface())}})
			assert.Equal(t, "seen "+RedactedSecret, Scrub("seen "+marker), "%s: not remembered by Record", fd.FullName())
		}
	}
	require.Positive(t, n)
	value := "MARKER-record-header-value"
	New().Record("ads#1", Received, &discovery.DiscoveryResponse{Resources: []*anypb.Any{mustAny(t, listenerWithHeader(t, "x-api-token", value))}})
	assert.Equal(t, "seen "+RedactedSecret, Scrub("seen "+value))
}

// A message is recorded as it was when Record returned: the caller's
// later changes do not reach the transcript, and a private key in it is
// redacted however late the entry is read.
func TestRecordThenMutate(t *testing.T) {
	key := "-----BEGIN EC PRIVATE KEY-----MARKER-mutated-key"
	withKey := &discovery.DiscoveryResponse{VersionInfo: "1", Resources: []*anypb.Any{clusterWithKey(t, key)}}
	plain := realisticResponse(2)
	tr := New()
	tr.Record("ads#1", Received, withKey)
	tr.Record("ads#1", Received, plain)
	require.NotNil(t, tr.head[1].raw, "the plain message is kept raw")
	wantPlain, _ := render(plain)

	withKey.VersionInfo = "2"
	withKey.Resources[0] = clusterWithKey(t, "-----BEGIN EC PRIVATE KEY-----MARKER-second-key")
	plain.VersionInfo = "changed"
	plain.Resources = plain.Resources[:1]

	es := tr.Entries()
	assert.Contains(t, string(es[0].Message), `"version_info":"1"`)
	assert.NotContains(t, string(es[0].Message), "MARKER-")
	assert.Contains(t, string(es[0].Message), RedactedSecret)
	assert.Equal(t, string(wantPlain), string(es[1].Message))
	assert.Contains(t, string(es[1].Message), `"version_info":"v42"`)
	assert.Equal(t, es, tr.Entries(), "read again, the same")
}

// Entries read while messages are recorded (the record proxy's live
// view, the engine at a pair's end) render each message once, safely.
func TestEntriesConcurrent(t *testing.T) {
	tr := New()
	resp := realisticResponse(2)
	var wg sync.WaitGroup
	want, _ := render(resp)
	for range 4 {
		wg.Go(func() {
			for range 10 {
				tr.Record("ads#1", Received, resp)
				for _, e := range tr.Entries() {
					if string(e.Message) != string(want) {
						t.Errorf("entry at %v rendered as %.200s", e.At, e.Message)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	_, elided, _ := tr.Kept()
	require.Zero(t, elided)
	require.Equal(t, 40, len(tr.Entries()))
}
