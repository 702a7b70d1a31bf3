// Package targets turns a target description ("HOST:PORT",
// "builtin:reference", "container:IMAGE", a client command) into something
// the engine can run scenarios against. The built-in and container targets
// are registered by the packages that have them (see RegisterServer), so
// that a program links them only when it imports those packages.
package targets

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"github.com/xdsconform/xdsconform/internal/infile"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/wire"
)

// Built-in server targets, registered by package peers/builtin
// (BuiltinImport).
const (
	BuiltinReference         = "builtin:reference"
	BuiltinGoControlPlane    = "builtin:go-control-plane"
	BuiltinGoControlPlaneLin = "builtin:go-control-plane-linear"
)

// BuiltinServers lists the built-in server targets the harness ships
// (RegisteredServers lists those a program has).
var BuiltinServers = []string{BuiltinReference, BuiltinGoControlPlane, BuiltinGoControlPlaneLin}

// What scenarios may need from a server target. The needs about the
// server's claims use the fixture's vocabulary (fixture.LegacyWildcard,
// fixture.Feature*, fixture.TypeCapability), so Lacks asks the claims of
// the pair's variant (fixture.Effective) for each of them by that name
// (fixture.Claims.Has).
const (
	// NeedFixture: the scenario changes server state through the fixture API.
	NeedFixture engine.Need = "fixture"
	// NeedLegacyWildcard: the server supports the legacy empty wildcard.
	NeedLegacyWildcard engine.Need = fixture.LegacyWildcard
	// NeedExplicitWildcard: the server supports "*".
	NeedExplicitWildcard engine.Need = fixture.ExplicitWildcard
	// NeedChosenNames: the scenario relies on the server serving the names
	// the harness asks for (not names it generates itself).
	NeedChosenNames engine.Need = "chosen-names"
	// NeedTTL: the scenario sets resources with a TTL (feature "ttl").
	NeedTTL engine.Need = fixture.FeatureTTL
	// NeedAliases: the scenario sets resources with aliases (feature
	// "aliases").
	NeedAliases engine.Need = fixture.FeatureAliases
	// NeedBatch: the scenario applies several changes atomically (feature
	// "batch").
	NeedBatch engine.Need = fixture.FeatureBatch
	// NeedEnvoyWarming: the scenario checks the Envoy warming resend of
	// WARM-4, which only servers claiming "envoy-warming" promise.
	NeedEnvoyWarming engine.Need = fixture.FeatureEnvoyWarming
	// NeedXdstp: the scenario sets and subscribes xdstp:// names.
	NeedXdstp engine.Need = fixture.FeatureXdstp
	// NeedListCollections: the scenario subscribes a list collection.
	NeedListCollections engine.Need = fixture.FeatureListCollections
	// NeedGlobCollections: the scenario subscribes a glob collection.
	NeedGlobCollections engine.Need = fixture.FeatureGlobCollections
	// NeedRedirects: the scenario sets a redirect.
	NeedRedirects engine.Need = fixture.FeatureRedirects
	// NeedDynamicParameters: the scenario sets variants of a resource.
	NeedDynamicParameters engine.Need = fixture.FeatureDynamicParameters
	// NeedResourceErrors: the scenario puts a resource in error.
	NeedResourceErrors engine.Need = fixture.FeatureResourceErrors
)

// NeedType says the scenario uses resource type t.
func NeedType(t wire.Type) engine.Need { return engine.Need(fixture.TypeCapability(t)) }

// ErrUnreachable marks a target that could not be connected to; the CLI
// exits 3 on it.
var ErrUnreachable = errors.New("target unreachable")

// TLSOptions configure TLS to the target; all empty means plaintext.
type TLSOptions struct {
	// CAFile verifies the server; empty uses the system roots.
	CAFile string
	// CertFile and KeyFile are the client certificate for mutual TLS.
	CertFile, KeyFile string
	// ServerName overrides the name checked in the server certificate.
	ServerName string
	// Enabled turns TLS on (implied by any file).
	Enabled bool
}

func (o TLSOptions) on() bool { return o.Enabled || o.CAFile != "" || o.CertFile != "" }

// ServerOptions describe a server target.
type ServerOptions struct {
	// Target is "builtin:…" or "HOST:PORT" of the xDS service.
	Target string
	// Fixture is "HOST:PORT" of the fixture API; empty means none (ignored
	// for built-ins, which bring their own).
	Fixture string
	// REST is the base URL of the server's REST-JSON endpoints
	// ("http://host:port", or https with the TLS settings), for the REST
	// variant; empty means none (ignored for built-ins, which bring their
	// own when they have one).
	REST string
	// RESTHold is the server's REST long-poll hold, as its operator states
	// it (--rest-hold): how long it holds a poll at the current version
	// before ending it without a DiscoveryResponse. The long-poll check
	// (REST-4) watches at least that long: a shorter window would pass a
	// server that answers a held poll early. 0 means DefaultRESTHold for a
	// server of yours, NoRESTHold one that holds none; a built-in runs
	// with a positive one when given, and states its own otherwise
	// (builtin:reference: ReferenceRESTHold).
	RESTHold time.Duration
	// TLS configures the xDS connection (and the fixture's).
	TLS TLSOptions
	// Metadata is sent on every xDS stream.
	Metadata map[string]string
	// Faults switch on faults of a built-in server, by name (ServerFaults
	// lists them; builtin:reference is the one that has any).
	Faults []string
	// ConnectTimeout bounds the reachability check.
	ConnectTimeout time.Duration
	// ContainerXDSPort is the xDS port inside a container:IMAGE target
	// (default DefaultContainerXDSPort); ContainerFixturePort its fixture
	// API port (0: the image serves none); ContainerEnv its environment.
	ContainerXDSPort, ContainerFixturePort int
	ContainerEnv                           map[string]string
	// NodeCluster is the node.cluster of every xDS stream (default
	// DefaultNodeCluster). It may name the pair's node id as {{.NodeID}}:
	// servers that key their state on the cluster, as Envoy Gateway keys
	// its snapshots on the gateway a proxy serves, are then node-scoped.
	NodeCluster string
	// NodeID, when set, is the node.id of every xDS stream, naming the
	// pair's own node id as {{.NodeID}}, which it must: a server that
	// parses node ids in a form of its own (Istio's and Cilium's
	// TYPE~IP~ID~DOMAIN, as in "sidecar~127.0.0.1~{{.NodeID}}~ns.svc.cluster.local")
	// gets that form, and every pair still has a node of its own. The
	// fixture is told the same id.
	NodeID string
	// NodeMetadata is node.metadata, string values by key, on every xDS
	// stream (Istio requires some, e.g. NAMESPACE).
	NodeMetadata map[string]string
	// Dialer, when set, opens the xDS connections (not the fixture's) of a
	// HOST:PORT or container target, for servers reachable only through a
	// path of their own: the e2e suite dials Envoy Gateway inside its
	// private network namespace. Built-in targets ignore it.
	Dialer func(ctx context.Context, addr string) (net.Conn, error)
	// FixturePlaintext connects to the fixture API without TLS even when
	// the xDS connection uses it: a test-build fixture often listens on
	// loopback next to a server whose xDS port requires mutual TLS.
	FixturePlaintext bool
	// MaxRecvSize is the largest xDS message, in bytes, the harness
	// accepts from the target (0: DefaultMaxRecvSize). xDS sets no limit;
	// this one bounds the harness's memory, and a response over it ends
	// the pair with an error that says so, not with a failure.
	MaxRecvSize int
}

// DefaultMaxRecvSize is the receive limit of the harness's xDS
// connections unless configured; it is wire.DefaultMaxRecvSize, the one
// figure the fake server uses too.
const DefaultMaxRecvSize = wire.DefaultMaxRecvSize

// maxRecvSize is n, or the default for 0.
func maxRecvSize(n int) int { return wire.MaxRecvSize(n) }

// recvLimit is the dial option that sets the receive limit n (0: the
// default) on every call of a connection.
func recvLimit(n int) grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvSize(n)))
}

// DefaultNodeCluster is the node.cluster the fake client sends unless
// ServerOptions.NodeCluster says otherwise.
const DefaultNodeCluster = "xdsconform"

// DefaultContainerXDSPort is the xDS port assumed inside a container:IMAGE
// server target, Envoy Gateway's and many control planes' default.
const DefaultContainerXDSPort = 18000

// Server is a running or reachable management server under test. It is the
// engine.Env of the server role.
type Server struct {
	// Name describes the target in reports.
	Name string
	// Addr is the xDS address to dial.
	Addr string
	// Dial are the options for grpc.NewClient.
	Dial []grpc.DialOption
	// Metadata is sent on every stream.
	Metadata map[string]string
	// Fixture drives server state; nil when the target has none. As
	// StartServer and ServeInProcess set it, it watches its own calls: at
	// FixtureHangLimit calls in a row unanswered past their deadline, the
	// target is taken as unusable (Died returns a *FixtureHungError) and
	// every later call fails at once.
	Fixture fixture.Fixture
	// Caps are the fixture's capabilities; nil without a fixture.
	Caps *fixturepb.Capabilities
	// REST is the server's REST-JSON endpoint (the REST variant); nil
	// when it has none or none was named (--rest-target).
	REST *RESTEndpoint
	// MaxRecvSize is the receive limit, in bytes, of the connections Dial
	// makes (see ServerOptions.MaxRecvSize).
	MaxRecvSize int

	// services is what a probe found the target to serve, when no
	// fixture claims it (nil otherwise); probeAll asks Preflight for it.
	services *Services
	probeAll bool

	// NodeMetadata is node.metadata on every stream (ServerOptions.NodeMetadata).
	NodeMetadata map[string]string

	nodeCluster *template.Template // nil: DefaultNodeCluster
	nodeID      *template.Template // nil: the pair's own node id
	closers     []func()
	// probe reaches the xDS address below gRPC, to name why it cannot be
	// used and to tell whether it still can (CheckAlive).
	probe          *probe
	connectTimeout time.Duration
	liveness
	// learned is what pairs of the run learned about the target (Learned).
	learned sync.Map
}

// Learned is the run's memory of what one pair established about the
// target that other pairs rest on: a control precondition that the
// target failed, say, which pairs that run alone would otherwise each
// wait out in turn. It lives as long as the target, a run.
func (s *Server) Learned() *sync.Map { return &s.learned }

// NodeCluster is the node.cluster the fake client sends for node id.
func (s *Server) NodeCluster(nodeID string) string {
	return fill(s.nodeCluster, nodeID, DefaultNodeCluster)
}

// NodeID is the node.id the fake client sends, and the fixture is told,
// for the pair whose own node id is base.
func (s *Server) NodeID(base string) string { return fill(s.nodeID, base, base) }

// fill is t with nodeID for {{.NodeID}}, or otherwise without t.
func fill(t *template.Template, nodeID, otherwise string) string {
	if t == nil {
		return otherwise
	}
	var b strings.Builder
	// Parsed with missingkey=error and checked by nodeTemplate against the
	// one field there is, so executing it cannot fail.
	if err := t.Execute(&b, struct{ NodeID string }{nodeID}); err != nil {
		return otherwise
	}
	return b.String()
}

// nodeTemplate parses a --node-cluster or --node-id template, which may
// name {{.NodeID}} and nothing else.
func nodeTemplate(flag, text string) (*template.Template, error) {
	if text == "" {
		return nil, nil
	}
	t, err := template.New(flag).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", flag, text, err)
	}
	if err := t.Execute(io.Discard, struct{ NodeID string }{"x"}); err != nil {
		return nil, fmt.Errorf("--%s %q: only {{.NodeID}} can be named: %w", flag, text, err)
	}
	return t, nil
}

// CheckNodeOptions says what is wrong with opts.NodeCluster and
// opts.NodeID, as StartServer would, so that a command can refuse them as
// bad input before it starts anything.
func CheckNodeOptions(opts ServerOptions) error {
	_, _, err := nodeTemplates(opts)
	return err
}

func nodeTemplates(opts ServerOptions) (cluster, nodeID *template.Template, err error) {
	if cluster, err = nodeTemplate("node-cluster", opts.NodeCluster); err != nil {
		return nil, nil, err
	}
	if nodeID, err = nodeTemplate("node-id", opts.NodeID); err != nil {
		return nil, nil, err
	}
	if nodeID != nil {
		// Two pairs with one node id would share a node's state.
		if fill(nodeID, "a", "") == fill(nodeID, "b", "") {
			return nil, nil, fmt.Errorf("--node-id %q must name {{.NodeID}}, the pair's own node id: without it every pair would be one node", opts.NodeID)
		}
	}
	return cluster, nodeID, nil
}

// StartServer resolves opts.Target, starting a built-in target if named.
// The caller must Close the result.
func StartServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	cluster, nodeID, err := nodeTemplates(opts)
	if err != nil {
		return nil, err
	}
	s, err := startServer(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.nodeCluster, s.nodeID, s.NodeMetadata = cluster, nodeID, opts.NodeMetadata
	if nodeID != nil && s.Fixture != nil {
		s.Fixture = renamedNodes{s.Fixture, s.NodeID}
	}
	return s, nil
}

func startServer(ctx context.Context, opts ServerOptions) (*Server, error) {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	if strings.HasPrefix(opts.Target, BuiltinPrefix) {
		return startBuiltin(ctx, opts)
	}
	if len(opts.Faults) > 0 { // before a container is started for nothing
		return nil, fmt.Errorf("--fault only applies to %s", BuiltinReference)
	}
	if strings.HasPrefix(opts.Target, ContainerPrefix) {
		return startContainer(ctx, opts)
	}
	if _, _, err := net.SplitHostPort(opts.Target); err != nil {
		return nil, fmt.Errorf("--target %q: want HOST:PORT, container:IMAGE or one of %s", opts.Target, strings.Join(BuiltinServers, ", "))
	}
	creds, tlsCfg, err := transportCredentials(opts.TLS)
	if err != nil {
		return nil, err
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds), recvLimit(opts.MaxRecvSize)}
	if opts.Dialer != nil {
		dial = append(dial, grpc.WithContextDialer(opts.Dialer))
	}
	s := &Server{Name: opts.Target, Addr: opts.Target, Metadata: opts.Metadata, Dial: dial,
		MaxRecvSize: maxRecvSize(opts.MaxRecvSize), probe: newProbe(opts.Target, opts.Dialer, tlsCfg),
		connectTimeout: opts.ConnectTimeout, probeAll: opts.Fixture == ""}
	if err := s.Preflight(ctx, opts.ConnectTimeout); err != nil {
		return nil, err
	}
	if opts.REST != "" {
		rest, err := restEndpoint(opts.REST, tlsCfg)
		if err != nil {
			return nil, err
		}
		rest.Hold = max(cmp.Or(opts.RESTHold, DefaultRESTHold), 0) // NoRESTHold: none
		s.REST = rest
	}
	if opts.Fixture != "" {
		fixtureCreds := creds
		if opts.FixturePlaintext {
			fixtureCreds = insecure.NewCredentials()
		}
		conn, err := grpc.NewClient(opts.Fixture, grpc.WithTransportCredentials(fixtureCreds))
		if err != nil {
			return nil, fmt.Errorf("--fixture %q: %w", opts.Fixture, err)
		}
		s.closers = append(s.closers, func() { conn.Close() })
		s.Fixture = s.watchFixture(fixture.FromConn(conn), "the fixture API at "+opts.Fixture)
		cctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
		defer cancel()
		caps, err := s.Fixture.Capabilities(cctx)
		if err != nil {
			s.Close()
			switch status.Code(err) {
			case codes.Unavailable, codes.DeadlineExceeded:
				return nil, fmt.Errorf("%w: fixture %s: %v", ErrUnreachable, opts.Fixture, err)
			}
			// It answered, but not as a fixture, or with capabilities that
			// cannot be read (fixture.Check): a configuration error.
			return nil, fmt.Errorf("--fixture %s: %v", opts.Fixture, err)
		}
		if caps.GetApiVersion() != fixture.APIVersion {
			s.Close()
			return nil, fmt.Errorf("fixture %s speaks fixture API %q; this harness speaks %q", opts.Fixture, caps.GetApiVersion(), fixture.APIVersion)
		}
		s.Caps = caps
		if caps.GetServer() != "" {
			s.Name += " (" + wording.PeerText(caps.GetServer()) + ")"
		}
	}
	return s, nil
}

// startContainer runs a container:IMAGE control plane, publishes its xDS
// (and fixture) port and treats it as a HOST:PORT target from then on. No
// engine is an unreachable target (exit code 3).
func startContainer(ctx context.Context, opts ServerOptions) (*Server, error) {
	image := strings.TrimPrefix(opts.Target, ContainerPrefix)
	if image == "" {
		return nil, fmt.Errorf("--target %q: name an image, container:IMAGE", opts.Target)
	}
	rt, err := containers(opts.Target)
	if err != nil {
		return nil, err
	}
	if opts.ContainerXDSPort == 0 {
		opts.ContainerXDSPort = DefaultContainerXDSPort
	}
	// An image pull is part of the start, so the bound is generous, but
	// there is one: the CLI's context has no deadline.
	startCtx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout+containerStartTimeout)
	defer cancel()
	ct, err := rt.StartServer(startCtx, ServerContainer{Image: image, XDSPort: opts.ContainerXDSPort,
		FixturePort: opts.ContainerFixturePort, Env: opts.ContainerEnv})
	if err != nil {
		if startCtx.Err() != nil && ctx.Err() == nil {
			// The start's own bound ended it: say which flag raises it.
			err = fmt.Errorf("%s: the container was not ready within %v for pulling its image plus --connect-timeout %v (raise it if the server is only slow to start): %w",
				opts.Target, containerStartTimeout, opts.ConnectTimeout, err)
		}
		return nil, containerError(opts.Target, err)
	}
	stop := func() { _ = ct.Stop(context.WithoutCancel(ctx)) }
	inner := opts
	if inner.Target, err = ct.Addr(startCtx, opts.ContainerXDSPort); err != nil {
		stop()
		return nil, err
	}
	if opts.ContainerFixturePort != 0 {
		if inner.Fixture, err = ct.Addr(startCtx, opts.ContainerFixturePort); err != nil {
			stop()
			return nil, err
		}
	}
	s, err := startServer(ctx, inner)
	if err != nil {
		stop()
		return nil, fmt.Errorf("%s: %w; container output: %s", opts.Target, err, ct.Logs())
	}
	s.Name = opts.Target + strings.TrimPrefix(s.Name, inner.Target)
	s.closers = append([]func(){stop}, s.closers...) // closed last
	return s, nil
}

// containerStartTimeout bounds a container's start, image pull included.
const containerStartTimeout = 3 * time.Minute

// containerError is err from starting a container target: no Docker
// engine makes the target unreachable (exit code 3).
func containerError(target string, err error) error {
	if errors.Is(err, ErrNoContainerEngine) {
		return fmt.Errorf("%w: %s needs a Docker engine: %v", ErrUnreachable, target, err)
	}
	return err
}

// InProcess is a management server that runs inside the harness: its xDS
// services and its fixture API as a server (refserver, gcpserver).
type InProcess interface {
	Register(grpc.ServiceRegistrar)
	FixtureServer() fixturepb.FixtureServer
}

// RESTServer is an InProcess server that also serves REST-JSON polling
// (when RESTHandler is not nil).
type RESTServer interface {
	RESTHandler() http.Handler
}

// RESTHolder is a RESTServer that states its long-poll hold; one that
// does not is taken to hold DefaultRESTHold.
type RESTHolder interface {
	RESTHold() time.Duration
}

// DefaultRESTHold is the long-poll hold taken of a server that states
// none (--rest-hold): 30 s, as the reference server's own default and
// common REST servers hold.
const DefaultRESTHold = 30 * time.Second

// NoRESTHold is ServerOptions.RESTHold for a server that holds no poll:
// it ends one at the current version at once, without a DiscoveryResponse
// (go-control-plane answers 304 Not Modified). The long-poll check then
// needs only its quiet window.
const NoRESTHold time.Duration = -1

// ReferenceRESTHold is the hold builtin:reference runs with unless
// --rest-hold gives another: shorter than a real server's, so that the
// long-poll check, whose window must outlast the hold, fits the suite's
// time, and longer than the 1.5 s quiet window, so that a server answering
// a held poll after it is still caught.
const ReferenceRESTHold = 2 * time.Second

// RESTEndpoint is where and how to reach a server's REST-JSON polling
// endpoints: POST URL + "/v3/discovery:<type>".
type RESTEndpoint struct {
	// URL is the base URL, "http://host:port" or "https://host:port".
	URL string
	// HTTP sends the polls, with the target's TLS settings.
	HTTP *http.Client
	// Hold is how long the server holds a poll at the current version
	// before ending it without a DiscoveryResponse, as stated
	// (ServerOptions.RESTHold, RESTHolder): the long-poll check's window
	// must outlast it.
	Hold time.Duration
}

// restEndpoint checks a --rest-target URL and returns its endpoint,
// speaking TLS with cfg (the xDS connection's settings) for https.
func restEndpoint(raw string, cfg *tls.Config) (*RESTEndpoint, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--rest-target %q: want http://HOST:PORT or https://HOST:PORT", raw)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		tr.TLSClientConfig = cfg
	}
	return &RESTEndpoint{URL: u.Scheme + "://" + u.Host, HTTP: &http.Client{Transport: tr}}, nil
}

// serveREST serves h on a fresh loopback port and adds its endpoint and
// its shutdown to s.
func (s *Server) serveREST(h http.Handler) error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("REST endpoint: %w", err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(lis)
	}()
	// Close, not Shutdown: held long polls would keep Shutdown waiting.
	s.closers = append(s.closers, func() { _ = hs.Close(); <-served })
	s.REST = &RESTEndpoint{URL: "http://" + lis.Addr().String(), HTTP: &http.Client{}, Hold: DefaultRESTHold}
	return nil
}

// ServeInProcess serves impl's xDS services on a fresh loopback port,
// with opts (a stream interceptor, say, for tests that disturb the
// streams), and returns it as a target named name whose fixture calls
// impl directly. The caller must Close it.
func ServeInProcess(ctx context.Context, name string, impl InProcess, opts ...grpc.ServerOption) (*Server, error) {
	return serveInProcess(ctx, name, impl, 0, opts...)
}

// serveInProcess is ServeInProcess with the harness's receive limit
// maxRecv (0: the default).
func serveInProcess(ctx context.Context, name string, impl InProcess, maxRecv int, opts ...grpc.ServerOption) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	guard := &crashGuard{}
	g := grpc.NewServer(append([]grpc.ServerOption{grpc.ChainStreamInterceptor(guard.stream), grpc.ChainUnaryInterceptor(guard.unary)}, opts...)...)
	impl.Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	guard.stop = g.Stop
	s := &Server{
		Name:    name,
		Addr:    lis.Addr().String(),
		Dial:    []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()), recvLimit(maxRecv)},
		closers: []func(){func() { g.Stop(); <-served }},

		MaxRecvSize:    maxRecvSize(maxRecv),
		probe:          newProbe(lis.Addr().String(), nil, nil),
		connectTimeout: 5 * time.Second,
	}
	guard.died = s.markDied
	s.Fixture = s.watchFixture(fixture.FromServer(impl.FixtureServer()), "the in-process fixture API of "+name)
	if rs, ok := impl.(RESTServer); ok && rs.RESTHandler() != nil {
		if err := s.serveREST(rs.RESTHandler()); err != nil {
			s.Close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		if h, ok := impl.(RESTHolder); ok {
			s.REST.Hold = h.RESTHold()
		}
	}
	caps, err := s.Fixture.Capabilities(ctx)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	s.Caps = caps
	return s, nil
}

func startBuiltin(ctx context.Context, opts ServerOptions) (*Server, error) {
	b, ok := serverBuiltin(opts.Target)
	if !ok {
		if err := notLinked(opts.Target, BuiltinServers, RegisteredServers()); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("--target %q: unknown built-in (want one of %s)", opts.Target, strings.Join(RegisteredServers(), ", "))
	}
	if len(opts.Faults) > 0 && len(b.Faults) == 0 {
		return nil, fmt.Errorf("--fault only applies to %s", BuiltinReference)
	}
	faults := make([]string, 0, len(opts.Faults))
	for _, name := range opts.Faults {
		f, err := ParseFault(b.Faults, name)
		if err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
		faults = append(faults, f.Name)
	}
	impl, err := b.New(ctx, ServerLaunch{Faults: faults, RESTHold: max(opts.RESTHold, 0)})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", opts.Target, err)
	}
	name := opts.Target
	if len(faults) > 0 {
		name += " (faults: " + strings.Join(faults, ",") + ")"
	}
	return serveInProcess(ctx, name, impl, opts.MaxRecvSize)
}

// transportCredentials are the gRPC credentials of o, with the TLS
// configuration they use (nil for plaintext), which Preflight's probe
// dials with too.
func transportCredentials(o TLSOptions) (credentials.TransportCredentials, *tls.Config, error) {
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, nil, err
	}
	if cfg == nil {
		return insecure.NewCredentials(), nil, nil
	}
	return credentials.NewTLS(cfg), cfg, nil
}

// maxCAFile bounds a --tls-ca bundle; the system's whole bundle is about
// 200 KiB.
const maxCAFile = 4 << 20

// tlsConfig is the TLS configuration o asks for; nil means plaintext.
func tlsConfig(o TLSOptions) (*tls.Config, error) {
	if !o.on() {
		return nil, nil
	}
	cfg := &tls.Config{ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := infile.ReadAll(context.Background(), o.CAFile, maxCAFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate found", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("--tls-cert and --tls-key go together")
	}
	if o.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Preflight checks, within timeout, that the xDS address can be used: it
// accepts a connection, completes the TLS handshake when TLS is on, speaks
// HTTP/2, and serves at least one xDS discovery method. A target started
// without a fixture is asked about every discovery method, and Lacks
// skips the pairs of those it does not serve (Services). A target that
// cannot be used wraps ErrUnreachable, one that serves no xDS wraps
// ErrNoXDS; either names the address and the cause in one line, as soon as
// the cause is known.
func (s *Server) Preflight(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := s.preflight(ctx); err != nil {
		// The connection's deadline may fire a moment before the
		// context notices its own.
		timedOut := ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded)
		if timedOut && !errors.Is(err, ErrNoXDS) {
			err = fmt.Errorf("%w (connect timeout %v)", err, timeout)
		}
		return err
	}
	return nil
}

func (s *Server) preflight(ctx context.Context) error {
	if s.probe != nil {
		if err := s.probe.check(ctx); err != nil {
			return err
		}
	}
	conn, err := grpc.NewClient(s.Addr, s.Dial...)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, s.Addr, err)
	}
	defer conn.Close()
	if len(s.Metadata) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, metadata.New(s.Metadata))
	}
	found, err := probeServices(ctx, conn, s.Addr, s.probeAll)
	if err != nil {
		return err
	}
	if s.probeAll {
		s.services = found
	}
	return nil
}

// Services is what the target was found to serve, probed because no
// fixture claims it; nil for a target with a fixture.
func (s *Server) Services() *Services { return s.services }

// Connect opens a new client connection to the xDS address; each pair gets
// its own, so a target that breaks one connection affects one pair.
func (s *Server) Connect() (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(s.Addr, s.Dial...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", s.Addr, err)
	}
	return conn, nil
}

// Lacks implements engine.Env. Every claim is read for variant v
// (fixture.Effective) and asked by the need's name (fixture.Claims.Has): a
// server may support a feature in one variant and not in another, and is
// then skipped only where it lacks it. The reasons about the wildcards and
// types keep their v1 wording when the global claim (fixture.Global)
// already lacks it, and name the variant when only its override does.
func (s *Server) Lacks(sc *engine.Scenario, v wire.Variant) string {
	var claims, global fixture.Claims
	if s.services != nil {
		// Without a fixture, what the probe found stands for the claims
		// of the variants served.
		if reason := s.services.lacks(sc, v); reason != "" {
			return reason
		}
	}
	if s.Caps != nil {
		claims, global = fixture.Effective(s.Caps, v), fixture.Global(s.Caps)
		if !claims.Served() {
			return fmt.Sprintf("target does not serve %s", v)
		}
	}
	if v.IsREST() && s.REST == nil {
		return noREST
	}
	for _, n := range sc.Needs {
		name := string(n)
		// lacking is the reason to give when the claims lack name.
		var lacking string
		switch {
		case n == NeedFixture:
			if s.Fixture == nil {
				return noFixture
			}
			continue
		case n == NeedChosenNames:
			if s.Caps != nil && s.Caps.GetGeneratesNames() {
				return "target generates its own resource names"
			}
			continue
		case n == NeedLegacyWildcard:
			lacking = "target does not support the legacy wildcard"
		case n == NeedExplicitWildcard:
			lacking = `target does not support the explicit "*" wildcard`
		case strings.HasPrefix(name, fixture.TypePrefix):
			t, ok := wire.TypeByShort(strings.TrimPrefix(name, fixture.TypePrefix))
			if !ok {
				return fmt.Sprintf("unknown need %q", n)
			}
			if !t.Speaks(v.Protocol) {
				return fmt.Sprintf("%s has no %s method", t.Short, v.Protocol)
			}
			lacking = "target does not serve " + t.Short
		case fixture.IsFeature(name):
			// A feature is a claim of the fixture: without one, nothing
			// is claimed.
			if s.Caps == nil {
				return noFixture
			}
			if !claims.Has(name) {
				return fmt.Sprintf("the fixture does not claim feature %q for %s", n, v)
			}
			continue
		default:
			return fmt.Sprintf("unknown need %q", n)
		}
		// Without a fixture nothing is claimed, and a need about the xDS
		// service alone is left to the scenario.
		if s.Caps != nil && !claims.Has(name) {
			return inVariant(lacking, global.Has(name), v)
		}
	}
	return ""
}

// noREST is the reason to skip a REST pair on a target without a REST
// endpoint.
const noREST = "target has no REST-JSON endpoint (give it with --rest-target URL)"

// noFixture is the reason to skip a scenario that needs the fixture API on
// a target started without one.
const noFixture = "needs fixture (start the target with --fixture)"

// inVariant is reason, naming variant v when the global claim (global)
// had it and only v's override took it away.
func inVariant(reason string, global bool, v wire.Variant) string {
	if global {
		return fmt.Sprintf("%s in %s", reason, v)
	}
	return reason
}

// Close stops a built-in target and closes connections.
func (s *Server) Close() {
	for _, c := range slices.Backward(s.closers) {
		c()
	}
	s.closers = nil
}
