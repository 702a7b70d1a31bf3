package transcript

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/xdsconform/xdsconform/wire"
)

const leafKey = "-----BEGIN EC PRIVATE KEY-----not-a-real-key"

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

func inline(s string) *core.DataSource {
	return &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: s}}
}

// clusterWithKey is a cluster as Consul serves it: the proxy's leaf
// certificate and key inline in its upstream TLS context.
func clusterWithKey(t *testing.T, key string) *anypb.Any {
	ctx := &tls.UpstreamTlsContext{CommonTlsContext: &tls.CommonTlsContext{TlsCertificates: []*tls.TlsCertificate{{
		CertificateChain: inline("-----BEGIN CERTIFICATE-----public"),
		PrivateKey:       inline(key),
	}}}}
	c := &cluster.Cluster{Name: "api", TransportSocket: &core.TransportSocket{
		Name: "tls", ConfigType: &core.TransportSocket_TypedConfig{TypedConfig: mustAny(t, ctx)},
	}}
	return mustAny(t, c)
}

// recorded is what a transcript keeps of m.
func recorded(m proto.Message) string {
	tr := New()
	tr.Record("ads#1", Received, m)
	e := tr.Entries()[0]
	return string(e.Message) + e.Note
}

// Key material inlined in any resource, at any depth and through nested
// Anys and Resource wrappers, never reaches a transcript; what is not
// secret (the certificate, the names) stays, and the message recorded is
// left as it was.
func TestRedactScrubsInlineKeys(t *testing.T) {
	res := clusterWithKey(t, leafKey)
	wrapped := mustAny(t, &discovery.Resource{Name: "api", Resource: clusterWithKey(t, leafKey)})
	for _, tc := range []struct {
		name string
		msg  proto.Message
	}{
		{"sotw", &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{res}}},
		{"sotw wrapped", &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{wrapped}}},
		{"delta", &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*discovery.Resource{{Name: "api", Resource: res}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := proto.Clone(tc.msg)
			got := recorded(tc.msg)
			assert.NotContains(t, got, "not-a-real-key")
			assert.Contains(t, got, RedactedSecret)
			assert.Contains(t, got, "-----BEGIN CERTIFICATE-----public")
			assert.True(t, proto.Equal(before, tc.msg), "Redact modified the recorded message")
		})
	}
}

// A response without secrets is recorded as it is, not copied.
func TestRedactLeavesOtherResponsesAlone(t *testing.T) {
	m := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "c", 1)}}
	assert.Same(t, proto.Message(m), Redact(m))
}

// reachableTypes are the message types reachable from the xDS resource
// types the harness knows: through their message fields, and, since an
// Any can hold any type the binary links, every linked type once an Any
// is reached.
func reachableTypes(t *testing.T) map[protoreflect.FullName]protoreflect.MessageDescriptor {
	t.Helper()
	seen := map[protoreflect.FullName]protoreflect.MessageDescriptor{}
	var queue []protoreflect.MessageDescriptor
	add := func(md protoreflect.MessageDescriptor) {
		if _, ok := seen[md.FullName()]; !ok {
			seen[md.FullName()] = md
			queue = append(queue, md)
		}
	}
	for _, typ := range wire.AllTypes {
		add(typ.New().ProtoReflect().Descriptor())
	}
	add((&discovery.DiscoveryResponse{}).ProtoReflect().Descriptor())
	add((&discovery.DeltaDiscoveryResponse{}).ProtoReflect().Descriptor())
	anyReached := false
	for len(queue) > 0 {
		md := queue[0]
		queue = queue[1:]
		if isAny(md) && !anyReached {
			anyReached = true
			protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
				add(mt.Descriptor())
				return true
			})
		}
		fs := md.Fields()
		for i := range fs.Len() {
			fd := fs.Get(i)
			if fd.IsMap() {
				fd = fd.MapValue()
			}
			if fd.Message() != nil {
				add(fd.Message())
			}
		}
	}
	require.True(t, anyReached, "no Any reachable from the resource types: the walk is broken")
	return seen
}

// plantIn puts marker in field fd of m: as the value of a text field, or
// somewhere inside the message a message field holds.
func plantIn(m protoreflect.Message, fd protoreflect.FieldDescriptor, marker string) bool {
	valueFor := func(vd protoreflect.FieldDescriptor, newMsg func() protoreflect.Value) (protoreflect.Value, bool) {
		switch vd.Kind() {
		case protoreflect.StringKind:
			return protoreflect.ValueOfString(marker), true
		case protoreflect.BytesKind:
			return protoreflect.ValueOfBytes([]byte(marker)), true
		case protoreflect.MessageKind, protoreflect.GroupKind:
			v := newMsg()
			return v, plantAnywhere(v.Message(), marker, 4)
		}
		return protoreflect.Value{}, false
	}
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		v, ok := valueFor(fd.MapValue(), mp.NewValue)
		if ok {
			mp.Set(protoreflect.ValueOfString("k").MapKey(), v)
		}
		return ok
	case fd.IsList():
		l := m.Mutable(fd).List()
		v, ok := valueFor(fd, l.NewElement)
		if ok {
			l.Append(v)
		}
		return ok
	}
	v, ok := valueFor(fd, func() protoreflect.Value { return m.NewField(fd) })
	if ok {
		m.Set(fd, v)
	}
	return ok
}

// plantAnywhere sets some text field inside m (at most depth messages
// down) to marker. An Any gets a known type holding the marker.
func plantAnywhere(m protoreflect.Message, marker string, depth int) bool {
	if isAny(m.Descriptor()) {
		b, err := proto.Marshal(wrapperspb.String(marker))
		if err != nil {
			return false
		}
		urlFD, valueFD := anyFields(m)
		m.Set(urlFD, protoreflect.ValueOfString("type.googleapis.com/google.protobuf.StringValue"))
		m.Set(valueFD, protoreflect.ValueOfBytes(b))
		return true
	}
	if depth == 0 {
		return false
	}
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		switch fd.Kind() {
		case protoreflect.StringKind, protoreflect.BytesKind:
			if plantIn(m, fd, marker) {
				return true
			}
		}
	}
	for i := range fs.Len() {
		fd := fs.Get(i)
		if fd.Message() == nil || fd.IsMap() || fd.IsList() {
			continue
		}
		sub := m.NewField(fd)
		if plantAnywhere(sub.Message(), marker, depth-1) {
			m.Set(fd, sub)
			return true
		}
	}
	return false
}

// The bar of the redaction: every field of every linked message type
// reachable from the resource types that the descriptors (or the explicit
// list) call sensitive is found, and a marker planted in it survives
// neither Redact nor the transcript, whether the message is recorded
// itself or packed in a response; and Scrub then knows the marker too.
func TestEverySensitiveFieldIsRedacted(t *testing.T) {
	types := reachableTypes(t)
	names := make([]string, 0, len(types))
	for n := range types {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var found []string
	for _, n := range names {
		md := types[protoreflect.FullName(n)]
		if md.IsMapEntry() {
			continue // a map's entries are checked through the field that holds the map
		}
		mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
		if err != nil {
			continue // reachable by a field, so linked; a descriptor-only type cannot be sent
		}
		fs := md.Fields()
		for i := range fs.Len() {
			fd := fs.Get(i)
			if !IsSensitiveField(fd) {
				continue
			}
			found = append(found, string(fd.FullName()))
			marker := fmt.Sprintf("MARKER-%d-%s", len(found), strings.ReplaceAll(string(fd.FullName()), ".", "-"))
			m := mt.New()
			require.True(t, plantIn(m, fd, marker), "cannot plant a marker in %s", fd.FullName())
			msg := m.Interface()
			raw, err := proto.Marshal(msg)
			require.NoError(t, err)
			require.Contains(t, string(raw), marker, "%s: the marker was not planted", fd.FullName())

			resp := &discovery.DiscoveryResponse{TypeUrl: "type.googleapis.com/" + string(md.FullName()),
				Resources: []*anypb.Any{mustAny(t, msg), mustAny(t, &discovery.Resource{Name: "r", Resource: mustAny(t, msg)})}}
			for what, out := range map[string]string{
				"the message": recorded(msg), "a response carrying it": recorded(resp),
			} {
				assert.NotContains(t, out, marker, "%s survives in the transcript of %s", fd.FullName(), what)
				assert.NotContains(t, out, base64.StdEncoding.EncodeToString([]byte(marker))[:len(marker)],
					"%s survives base64-encoded in the transcript of %s", fd.FullName(), what)
			}
			assert.Equal(t, "seen "+RedactedSecret, Scrub("seen "+marker), "%s: the marker is not remembered", fd.FullName())
		}
	}
	// The walk must find what is known to be there, or it proves nothing.
	for _, want := range []string{
		"envoy.extensions.transport_sockets.tls.v3.TlsCertificate.private_key",
		"envoy.extensions.transport_sockets.tls.v3.TlsSessionTicketKeys.keys",
		"envoy.extensions.transport_sockets.tls.v3.GenericSecret.secret",
		"envoy.extensions.filters.http.basic_auth.v3.BasicAuth.users",
		"envoy.extensions.filters.http.api_key_auth.v3.ApiKeyAuth.credentials",
		"envoy.config.core.v3.GrpcService.GoogleGrpc.CallCredentials.access_token",
	} {
		assert.Contains(t, found, want)
	}
	t.Logf("%d sensitive fields in %d reachable message types", len(found), len(types))
}

// Each explicit entry must be a field the binary links that the API does
// not annotate: one that gains the annotation is redundant, one that is
// gone is a typo or a removed field, and either fails here.
func TestExplicitSensitiveFieldsAreNeeded(t *testing.T) {
	fields := map[protoreflect.FullName]protoreflect.FieldDescriptor{}
	protoregistry.GlobalTypes.RangeMessages(func(mt protoreflect.MessageType) bool {
		var walk func(md protoreflect.MessageDescriptor)
		walk = func(md protoreflect.MessageDescriptor) {
			for i := range md.Fields().Len() {
				fd := md.Fields().Get(i)
				fields[fd.FullName()] = fd
			}
			for i := range md.Messages().Len() {
				walk(md.Messages().Get(i))
			}
		}
		walk(mt.Descriptor())
		return true
	})
	for name := range explicitSensitive {
		fd, ok := fields[name]
		if assert.True(t, ok, "%s is not a linked field", name) {
			assert.False(t, annotatedSensitive(fd), "%s is annotated now: drop it from explicitSensitive", name)
		}
	}
}

// An Any of a type this binary does not link is shown as its type URL and
// size, never its bytes; so is one whose bytes do not decode, and unknown
// fields of a known message are dropped.
func TestRedactWithholdsWhatItCannotRead(t *testing.T) {
	const marker = "MARKER-unknown-any-payload"
	payload := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), marker)
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/acme.v1.Secretive", Value: payload}
	garbled := &anypb.Any{TypeUrl: wire.Cluster.URL, Value: append([]byte{0xff, 0xff}, marker...)}
	withUnknown := &cluster.Cluster{Name: "c"}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 9999, protowire.BytesType), marker))
	for what, m := range map[string]proto.Message{
		"unknown type":  &discovery.DiscoveryResponse{Resources: []*anypb.Any{unknown}},
		"garbled":       &discovery.DiscoveryResponse{Resources: []*anypb.Any{garbled}},
		"nested":        &discovery.DiscoveryResponse{Resources: []*anypb.Any{mustAny(t, &discovery.Resource{Name: "n", Resource: unknown})}},
		"unknown field": &discovery.DiscoveryResponse{Resources: []*anypb.Any{mustAny(t, withUnknown)}},
	} {
		out := recorded(m)
		assert.NotContains(t, out, marker, what)
		assert.NotContains(t, out, base64.StdEncoding.EncodeToString(payload)[:12], what)
		if what == "unknown type" {
			assert.Contains(t, out, "acme.v1.Secretive", what)
			assert.Contains(t, out, fmt.Sprintf(`"withheld_bytes":%d`, len(payload)), what)
		}
	}
}

// listenerWithHeader is a listener whose HTTP connection manager adds a
// header to every request, as a gateway injecting a credential does.
func listenerWithHeader(t *testing.T, name, value string) *listener.Listener {
	m := &hcm.HttpConnectionManager{StatPrefix: "in", RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &route.RouteConfiguration{
		RequestHeadersToAdd: []*core.HeaderValueOption{{Header: &core.HeaderValue{Key: name, Value: value}}},
		VirtualHosts: []*route.VirtualHost{{Name: "vh", Domains: []string{"*"}, Routes: []*route.Route{{
			Match: &route.RouteMatch{
				PathSpecifier: &route.RouteMatch_Prefix{Prefix: "/"},
				Headers:       []*route.HeaderMatcher{{Name: name, HeaderMatchSpecifier: &route.HeaderMatcher_PresentMatch{PresentMatch: true}}},
			},
		}}}},
	}}}
	return &listener.Listener{Name: "l", FilterChains: []*listener.FilterChain{{Filters: []*listener.Filter{{
		Name: "hcm", ConfigType: &listener.Filter_TypedConfig{TypedConfig: mustAny(t, m)},
	}}}}}
}

// A header named like a credential, or marked by the user, has its value
// redacted wherever a resource carries it; other headers stay readable,
// and so do a matcher's flags.
func TestRedactHeadersByName(t *testing.T) {
	for _, tc := range []struct {
		header string
		secret bool
	}{
		{"Authorization", true},
		{"x-upstream-api-key", true},
		{"x-my-tenant", false},
		{"x-marked-by-user", true},
	} {
		t.Run(tc.header, func(t *testing.T) {
			if tc.header == "x-marked-by-user" {
				assert.False(t, IsSensitiveHeader(tc.header))
				MarkSensitiveHeaders("X-Marked-By-User")
			}
			value := "MARKER-header-" + strings.ToLower(tc.header)
			out := recorded(&discovery.DiscoveryResponse{Resources: []*anypb.Any{mustAny(t, listenerWithHeader(t, tc.header, value))}})
			assert.Contains(t, out, tc.header)
			assert.Contains(t, out, `"present_match":true`)
			if tc.secret {
				assert.NotContains(t, out, value)
			} else {
				assert.Contains(t, out, value)
			}
		})
	}
}

// RememberHeaders remembers the values of sensitive call metadata only.
func TestRememberHeaders(t *testing.T) {
	RememberHeaders(map[string]string{"authorization": "Bearer MARKER-call-token", "x-region": "MARKER-public-region"})
	assert.Equal(t, "got [redacted] and MARKER-public-region", Scrub("got Bearer MARKER-call-token and MARKER-public-region"))
}

// Scrub replaces a remembered secret in every spelling a report can use,
// and in each long line of a multi-line one; short values are never
// remembered, so common words survive.
func TestScrubForms(t *testing.T) {
	secret := "-----BEGIN KEY-----\nMARKER-scrub<&>\"line\n-----END KEY-----"
	RememberSecret(secret)
	RememberSecret("short")
	for _, form := range []string{
		secret,
		`-----BEGIN KEY-----\nMARKER-scrub<&>\"line\n-----END KEY-----`,                // JSON, protojson and Go quoting
		`-----BEGIN KEY-----\nMARKER-scrub\u003c\u0026\u003e\"line\n-----END KEY-----`, // JSON escaping HTML
		base64.StdEncoding.EncodeToString([]byte(secret)),
		`MARKER-scrub<&>"line`, // one line of it, as a first-line renderer cuts it
	} {
		got := Scrub("before " + form + " after")
		assert.Equal(t, "before "+RedactedSecret+" after", got, "form %q", form)
	}
	assert.Equal(t, "a short word", Scrub("a short word"))
	assert.Equal(t, "no secret here", Scrub("no secret here"))
}

// A secret that spans JSON syntax cannot break a recorded message: the
// message is withheld instead.
func TestScrubEntriesKeepsJSONValid(t *testing.T) {
	RememberSecret(`MARKER-json":1`)
	entries := ScrubEntries([]Entry{{Kind: "DiscoveryResponse", Message: []byte(`{"MARKER-json":1}`), Note: `n MARKER-json":1`}})
	assert.NotContains(t, string(entries[0].Message), "MARKER-json")
	assert.Contains(t, string(entries[0].Message), "withheld")
	assert.NotContains(t, entries[0].Note, "MARKER-json")
}

// A withheld Any whose type URL is cut at its length bound still shows its
// type and size when the cut falls inside a multi-byte character (structpb
// refuses invalid UTF-8, which left an empty Any).
func TestWithheldLongTypeURLCutOnACharacter(t *testing.T) {
	url := "type.googleapis.com/acme.v1.x" + strings.Repeat("é", 200) // 29 bytes: the cut at 256 splits an é
	a := &anypb.Any{TypeUrl: url, Value: []byte("0123456789")}
	out := recorded(&discovery.DiscoveryResponse{Resources: []*anypb.Any{a}})
	assert.Contains(t, out, `"withheld_bytes":10`)
	assert.Contains(t, out, "acme.v1.xéé")
}

// Header values shaped like credentials are secrets under any name; values
// that merely contain such a word are not.
func TestIsCredentialValue(t *testing.T) {
	for _, v := range []string{
		"Bearer s3cr3t-t0ken", "bearer abcd1234", "Basic dXNlcjpwYXNz", "Digest username=\"u\", response=\"x\"",
		"Negotiate YIIGhgYJKoZIhvcSAQICAQBuggZ1", "AWS4-HMAC-SHA256 Credential=AKIA/2026", "ApiKey 0123456789",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	} {
		assert.True(t, IsCredentialValue(v), v)
		assert.True(t, IsSensitiveHeaderValue("x-custom-auth", v), v)
	}
	for _, v := range []string{"blue", "token", "Bearer", "basic plan", "eyJ", "application/grpc", "upstream-7"} {
		assert.False(t, IsCredentialValue(v), v)
	}
	assert.True(t, IsSensitiveHeaderValue("authorization", "anything"), "by name")
}
