package hostile_test

// Hostile mode "leak secrets": a management server that serves, for every
// name a scenario asks, a resource whose credential fields hold markers,
// that differs from what the fixture set (so failure messages print
// resources), echoes the call metadata it receives back in every
// response, and, building content, wants a key of its own in its revision
// fields. The bar: no marker reaches any artefact of the run.

import (
	"context"
	"encoding/base64"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	apikey "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/api_key_auth/v3"
	basicauth "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/basic_auth/v3"
	router "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tls "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// The markers, one per kind of credential; each is long enough to be
// remembered and unique to this file.
const (
	markPrivateKey = "MARKER-5ec-private-key"
	markWantedKey  = "MARKER-5ec-wanted-key"
	markBasicAuth  = "MARKER-5ec-basic-auth-user"
	markAPIKey     = "MARKER-5ec-api-key"
	markGeneric    = "MARKER-5ec-generic-secret"
	markUnknownAny = "MARKER-5ec-unknown-any"
	markTicketKey  = "MARKER-5ec-session-ticket-key"
	markCallCred   = "MARKER-5ec-call-credential"
	markHeader     = "MARKER-5ec-marked-header"
	markAuthz      = "MARKER-5ec-authorization"
)

var allMarkers = []string{markPrivateKey, markWantedKey, markBasicAuth, markAPIKey, markGeneric, markUnknownAny,
	markTicketKey, markCallCred, markHeader, markAuthz}

// base64Forms are what the standard base64 encoding of any bytes that
// hold m contains, wherever m lies in them: the encoding starts a group of
// three bytes at m's first, second or third byte, so the groups wholly
// within m encode m from one of those on, cut to whole groups.
func base64Forms(m string) []string {
	forms := make([]string, 0, 3)
	for skip := range 3 {
		rest := m[skip:]
		forms = append(forms, base64.StdEncoding.EncodeToString([]byte(rest[:len(rest)/3*3])))
	}
	return forms
}

// holdsBase64 reports whether out holds the base64 of bytes that contain
// m, at any offset (a marker planted in a larger bytes field).
func holdsBase64(out []byte, m string) bool {
	for _, f := range base64Forms(m) {
		if strings.Contains(string(out), f) {
			return true
		}
	}
	return false
}

// The base64 check finds a marker at every offset in a larger field, and
// not in a field without it.
func TestHoldsBase64AtEveryOffset(t *testing.T) {
	for _, m := range allMarkers {
		for _, f := range base64Forms(m) {
			require.GreaterOrEqual(t, len(f), 16, "a form this short could match by chance: %s", m)
		}
		for offset := range 6 {
			field := strings.Repeat("p", offset) + m + "suffix"
			out := []byte(`{"bytes": "` + base64.StdEncoding.EncodeToString([]byte(field)) + `"}`)
			assert.True(t, holdsBase64(out, m), "%s at offset %d", m, offset)
		}
		clean := base64.StdEncoding.EncodeToString([]byte("pp" + strings.ReplaceAll(m, "MARKER", "MARKED") + "suffix"))
		assert.False(t, holdsBase64([]byte(clean), m), "%s found where it is not", m)
	}
}

// markedHeader is the header the run marks with --redact-header.
const markedHeader = "x-hostile-tenant"

// privateKeyPath is where a cluster's inline key is, as a revision path.
const privateKeyPath = "transport_socket.typed_config.common_tls_context.tls_certificates.0.private_key.inline_string"

func keyPEM(marker string) string {
	return "-----BEGIN PRIVATE KEY-----\n" + marker + "\n-----END PRIVATE KEY-----\n"
}

func inlineSource(s string) *core.DataSource {
	return &core.DataSource{Specifier: &core.DataSource_InlineString{InlineString: s}}
}

func packAny(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(err) // only messages of linked types are packed here
	}
	return a
}

// vaultAny is an Any of a type no binary links, whose bytes hold the
// marker.
func vaultAny() *anypb.Any {
	b := protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), markUnknownAny)
	return &anypb.Any{TypeUrl: "type.googleapis.com/acme.hostile.v1.Vault", Value: b}
}

// leakyCluster is c with a TLS context inlining a private key, a gRPC
// call credential and, with unknown, an Any of a type no binary links.
func leakyCluster(c *cluster.Cluster, unknown bool) *cluster.Cluster {
	c.TransportSocket = &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{
		TypedConfig: packAny(&tls.UpstreamTlsContext{CommonTlsContext: &tls.CommonTlsContext{TlsCertificates: []*tls.TlsCertificate{{
			CertificateChain: inlineSource("-----BEGIN CERTIFICATE-----\npublic\n-----END CERTIFICATE-----\n"),
			PrivateKey:       inlineSource(keyPEM(markPrivateKey)),
		}}}}),
	}}
	if unknown {
		c.TypedExtensionProtocolOptions = map[string]*anypb.Any{"acme.hostile.vault": vaultAny()}
	}
	c.HealthChecks = []*core.HealthCheck{{
		EventService: &core.EventServiceConfig{ConfigSourceSpecifier: &core.EventServiceConfig_GrpcService{GrpcService: &core.GrpcService{
			TargetSpecifier: &core.GrpcService_GoogleGrpc_{GoogleGrpc: &core.GrpcService_GoogleGrpc{
				TargetUri: "events:443", StatPrefix: "ev",
				CallCredentials: []*core.GrpcService_GoogleGrpc_CallCredentials{{
					CredentialSpecifier: &core.GrpcService_GoogleGrpc_CallCredentials_AccessToken{AccessToken: markCallCred},
				}},
			}},
			InitialMetadata: []*core.HeaderValue{{Key: markedHeader, Value: markHeader}},
		}}},
	}}
	return c
}

// leakyListener is l with a filter chain whose HTTP filters hold basic-auth
// users, API keys and, with unknown, an Any of a type no binary links,
// whose TLS context holds session ticket keys, and whose routes add the
// marked header.
func leakyListener(l *listener.Listener, unknown bool) *listener.Listener {
	m := &hcm.HttpConnectionManager{
		StatPrefix: "in",
		RouteSpecifier: &hcm.HttpConnectionManager_RouteConfig{RouteConfig: &route.RouteConfiguration{
			Name:                "inline",
			RequestHeadersToAdd: []*core.HeaderValueOption{{Header: &core.HeaderValue{Key: markedHeader, Value: markHeader}}},
		}},
		HttpFilters: []*hcm.HttpFilter{
			{Name: "basic", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: packAny(&basicauth.BasicAuth{Users: inlineSource("admin:{SHA}" + markBasicAuth)})}},
			{Name: "apikey", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: packAny(&apikey.ApiKeyAuth{
				Credentials: []*apikey.Credential{{Key: markAPIKey, Client: "client-a"}},
			})}},
		},
	}
	if unknown {
		m.HttpFilters = append(m.HttpFilters, &hcm.HttpFilter{Name: "vault", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: vaultAny()}})
	}
	m.HttpFilters = append(m.HttpFilters, &hcm.HttpFilter{Name: "router", ConfigType: &hcm.HttpFilter_TypedConfig{TypedConfig: packAny(&router.Router{})}})
	l.FilterChains = append(l.FilterChains, &listener.FilterChain{
		Filters: []*listener.Filter{{Name: "hcm", ConfigType: &listener.Filter_TypedConfig{TypedConfig: packAny(m)}}},
		TransportSocket: &core.TransportSocket{Name: "envoy.transport_sockets.tls", ConfigType: &core.TransportSocket_TypedConfig{
			TypedConfig: packAny(&tls.DownstreamTlsContext{SessionTicketKeysType: &tls.DownstreamTlsContext_SessionTicketKeys{
				SessionTicketKeys: &tls.TlsSessionTicketKeys{Keys: []*core.DataSource{{Specifier: &core.DataSource_InlineBytes{InlineBytes: []byte(markTicketKey)}}}},
			}}),
		}},
	})
	return l
}

// leakyEndpoints is e with typed metadata on every endpoint that holds a
// TLS context inlining a private key: a credential nested in an Any, in a
// resource the scenarios compare whole with what was set.
func leakyEndpoints(e *endpoint.ClusterLoadAssignment) *endpoint.ClusterLoadAssignment {
	for _, group := range e.Endpoints {
		for _, lb := range group.LbEndpoints {
			lb.Metadata = &core.Metadata{TypedFilterMetadata: map[string]*anypb.Any{
				"acme.hostile.tls": packAny(&tls.UpstreamTlsContext{CommonTlsContext: &tls.CommonTlsContext{
					TlsCertificates: []*tls.TlsCertificate{{PrivateKey: inlineSource(keyPEM(markPrivateKey))}},
				}}),
			}}
		}
	}
	return e
}

// leak rewrites one served resource; a, unchanged, when its type has no
// leak of its own. Anys of an unlinked type go in only with unknown: a
// fixture's revision paths cannot be read through one.
func leak(a *anypb.Any, unknown bool) *anypb.Any {
	if a == nil {
		return nil
	}
	if a.GetTypeUrl() == wire.ResourceWrapperURL {
		var r discovery.Resource
		if a.UnmarshalTo(&r) != nil {
			return a
		}
		r.Resource = leak(r.Resource, unknown)
		return packAny(&r)
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return a
	}
	switch r := m.(type) {
	case *cluster.Cluster:
		return packAny(leakyCluster(r, unknown))
	case *endpoint.ClusterLoadAssignment:
		return packAny(leakyEndpoints(r))
	case *listener.Listener:
		return packAny(leakyListener(r, unknown))
	case *tls.Secret:
		r.Type = &tls.Secret_GenericSecret{GenericSecret: &tls.GenericSecret{Secret: inlineSource(markGeneric)}}
		return packAny(r)
	}
	return a
}

// leaker is the interceptor of the hostile server: it rewrites what the
// reference server sends and echoes the call metadata it received.
type leaker struct {
	// unknown puts Anys of an unlinked type in listeners and clusters.
	unknown   bool
	rewritten atomic.Int64
}

func (l *leaker) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	md, _ := metadata.FromIncomingContext(ss.Context())
	echo := "echo: " + strings.Join(append(md.Get("authorization"), md.Get(markedHeader)...), " ")
	return handler(srv, &leakyStream{ServerStream: ss, l: l, echo: echo})
}

type leakyStream struct {
	grpc.ServerStream
	l    *leaker
	echo string
}

func (s *leakyStream) SendMsg(m any) error {
	switch r := m.(type) {
	case *discovery.DiscoveryResponse:
		c := proto.Clone(r).(*discovery.DiscoveryResponse)
		for i, a := range c.Resources {
			c.Resources[i] = leak(a, s.l.unknown)
		}
		c.ControlPlane = &core.ControlPlane{Identifier: s.echo}
		s.l.rewritten.Add(1)
		m = c
	case *discovery.DeltaDiscoveryResponse:
		c := proto.Clone(r).(*discovery.DeltaDiscoveryResponse)
		for _, res := range c.Resources {
			res.Resource = leak(res.Resource, s.l.unknown)
		}
		c.ControlPlane = &core.ControlPlane{Identifier: s.echo}
		s.l.rewritten.Add(1)
		m = c
	}
	return s.ServerStream.SendMsg(m)
}

// wantKey is the fixture's unary interceptor in the content-building
// mode: every cluster set is said to carry a key of the server's own,
// which the served one (leakyCluster's) is not.
func wantKey(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	set, ok := req.(*fixturepb.SetResourceRequest)
	if err != nil || !ok || set.GetTypeUrl() != wire.Cluster.URL {
		return resp, err
	}
	if r, ok := resp.(*fixturepb.SetResourceResponse); ok {
		r.Revision = append(r.Revision, &fixturepb.RevisionField{Path: privateKeyPath, Value: keyPEM(markWantedKey)})
	}
	return resp, err
}

// startLeaker serves the reference server (building content or not)
// behind the leaker, xDS and fixture on one loopback port.
func startLeaker(t *testing.T, buildsContent bool) (string, *leaker) {
	t.Helper()
	ref := refserver.New()
	if buildsContent {
		ref.BuildsContent()
	}
	l := &leaker{unknown: !buildsContent}
	g := grpc.NewServer(grpc.StreamInterceptor(l.stream), grpc.UnaryInterceptor(wantKey))
	ref.Register(g)
	fixturepb.RegisterFixtureServer(g, ref.FixtureServer())
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return lis.Addr().String(), l
}

// TestNoSecretInAnyArtefact runs the server suite's resource scenarios
// against the leaking server, in both fixture modes, and looks for every
// marker, as is and base64-encoded, in the console, the JSON and the
// JUnit. The run must also show that the leaks happened and were caught:
// failures that print the served resources, redaction placeholders, the
// unknown Any's type, the echo.
func TestNoSecretInAnyArtefact(t *testing.T) {
	for _, mode := range []struct {
		name          string
		buildsContent bool
		// evidence is what a failure message must show: the resource
		// printed whole, or the revision path into the key.
		evidence string
	}{
		{"serves-what-is-set", false, `"typed_filter_metadata"`},
		{"builds-content", true, privateKeyPath},
	} {
		t.Run(mode.name, func(t *testing.T) {
			addr, l := startLeaker(t, mode.buildsContent)
			r := runCLI(t, cliOptions{}, "server", "--target", addr, "--fixture", addr, "--verbose",
				"--metadata", "authorization=Bearer "+markAuthz, "--metadata", markedHeader+"="+markHeader,
				"--redact-header", strings.ToUpper(markedHeader),
				"--run", "server/stream/every-type-served", "--run", "server/resources/requested-supplied",
				"--run", "server/stream/node-only-on-first-request", "--timeout", "2s",
				"--variant", "sotw-ads,delta-ads")
			require.Equal(t, 1, r.Code, "the leaks must fail scenarios\nstdout: %s\nstderr: %s", r.Stdout, r.Stderr)
			require.Positive(t, l.rewritten.Load(), "the hostile server rewrote nothing")
			assert.Less(t, r.MaxRSS, int64(maxRSS))

			for name, out := range r.artefacts() {
				for _, m := range allMarkers {
					assert.NotContains(t, string(out), m, "%s holds a marker", name)
					assert.False(t, holdsBase64(out, m), "%s holds %s in base64", name, m)
				}
			}

			run := r.report(t)
			printed := false
			for _, res := range run.Results {
				if res.Outcome == results.Fail && strings.Contains(res.Message, mode.evidence) {
					printed = true
				}
			}
			assert.True(t, printed, "no failure message shows %s: the mismatch path was not exercised", mode.evidence)
			shown := []string{`[redacted]`, `"identifier": "echo: [redacted] [redacted]"`}
			if !mode.buildsContent {
				shown = append(shown, `acme.hostile.v1.Vault`, `withheld_bytes`) // the unlinked Any, by type and size
			}
			for _, want := range shown {
				assert.Contains(t, string(r.JSON), want)
			}
			assert.Contains(t, r.Stdout, "[redacted]", "the console shows no redacted failure")
			assert.Contains(t, string(r.JUnit), "[redacted]")
		})
	}
}

// A --redact-header without a name is a usage error.
func TestRedactHeaderNeedsAName(t *testing.T) {
	r := runCLI(t, cliOptions{NoReports: true}, "server", "--target", "builtin:reference", "--redact-header", " ")
	assert.Equal(t, 2, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
	assert.Contains(t, r.Stderr, "--redact-header")
}

// A --client-cmd that does not parse, or uses an unknown variable, is a
// one-line usage error that does not echo the command (its token).
func TestClientCmdErrorHidesTheCommand(t *testing.T) {
	const token = "MARKER-5ec-client-cmd-token"
	for _, cmd := range []string{
		"my-client --token " + token + " --target {{.Nope}}",
		"my-client --token " + token + " --target {{.Target",
		"my-client --token {{" + token + "}}",
	} {
		r := runCLI(t, cliOptions{NoReports: true}, "client", "--client-cmd", cmd)
		assert.Equal(t, 2, r.Code, "stdout: %s\nstderr: %s", r.Stdout, r.Stderr)
		assert.Contains(t, r.Stderr, "command template")
		for name, out := range r.artefacts() {
			assert.NotContains(t, string(out), token, name)
			assert.NotContains(t, string(out), "my-client --token", name)
		}
	}
}
