package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/wire"
)

// Built-in client targets, registered by package peers/builtin
// (BuiltinImport).
const (
	// BuiltinGRPCGo is grpc-go's own xDS client, run as a child process of
	// this binary (BuiltinReference names the reference client in the client
	// role).
	BuiltinGRPCGo = "builtin:grpc-go"
)

// BuiltinClients lists the built-in client targets the harness ships
// (RegisteredClients lists those a program has).
var BuiltinClients = []string{BuiltinReference, BuiltinGRPCGo}

// NeedObserver: the scenario reads the client's status view (CSDS or
// /config_dump) to see what it accepted, rejected or considers absent.
const NeedObserver engine.Need = "observer"

// NeedFreshClient: the scenario assumes a client that has learnt nothing
// yet (a does-not-exist timer, a first NACK), which a client started
// elsewhere and reused across scenarios (--client-wait) is not.
const NeedFreshClient engine.Need = "fresh-client"

// NeedStatus is the need of a scenario whose verdict rests on the
// client's status view showing a resource in state. A view that never
// reports the state would read as the client breaking the rule: Envoy's
// /config_dump lists only the resources Envoy holds, so never one that
// does not exist, and older CSDS implementations never show
// DOES_NOT_EXIST for a timer that fired. Such a target declares what its
// view lacks (ClientOptions.StatusLacks) and the scenario is skipped.
func NeedStatus(state observer.State) engine.Need {
	return engine.Need(statusNeedPrefix + string(state))
}

const statusNeedPrefix = "status:"

// StatusStates are the states a status view can be declared to lack.
var StatusStates = []observer.State{observer.DoesNotExist, observer.Nacked, observer.ReceivedError}

// NeedGRPCProfile: the scenario is written for the gRPC client profile
// (one listener named by the client, then its route, clusters and
// endpoints by name), which a client run in the Envoy profile does not
// follow.
const NeedGRPCProfile engine.Need = "grpc-profile"

// NeedEnvoyProfile: the scenario is written for the Envoy client profile
// (wildcard listeners and clusters, warming, VHDS).
const NeedEnvoyProfile engine.Need = "envoy-profile"

// Optional features of the protocol a client may implement. A scenario
// about one needs it (NeedClientFeature); a client that does not claim it
// (ClientOptions.Features, --client-features) skips the scenario with
// that reason instead of failing it: most clients implement none of them,
// and the rules bind only those that do.
const (
	// ClientFeatureXdstp: the client takes xdstp:// names and resolves
	// their authorities through its bootstrap (xRFC TP1, gRFC A47
	// federation).
	ClientFeatureXdstp = "xdstp"
	// ClientFeatureDirectives: the client reads alt and entry directives
	// in the locators it is given (XDSTP-8, -9, -12).
	ClientFeatureDirectives = "directives"
	// ClientFeatureListCollections: the client subscribes to list
	// collections and follows their entries (COLL-2).
	ClientFeatureListCollections = "list-collections"
	// ClientFeatureGlobCollections: the client subscribes to glob
	// collections (COLL-6).
	ClientFeatureGlobCollections = "glob-collections"
	// ClientFeatureRedirects: the client follows redirects (REDIR-1, -3).
	ClientFeatureRedirects = "redirects"
	// ClientFeatureDynamicParameters: the client sends dynamic
	// parameters in resource_locators (xRFC TP2).
	ClientFeatureDynamicParameters = "dynamic-parameters"
	// ClientFeatureResourceErrors: the client reads resource_errors
	// (xRFC TP3, gRFC A88).
	ClientFeatureResourceErrors = "resource-errors"
	// ClientFeatureREST: the client can poll over REST-JSON.
	ClientFeatureREST = "rest"
	// ClientFeatureFilesystem: the client can load its configuration
	// from watched files.
	ClientFeatureFilesystem = "filesystem"
)

// ClientFeatures lists the optional client features, in the order the
// docs describe them.
var ClientFeatures = []string{ClientFeatureXdstp, ClientFeatureDirectives, ClientFeatureListCollections,
	ClientFeatureGlobCollections, ClientFeatureRedirects, ClientFeatureDynamicParameters,
	ClientFeatureResourceErrors, ClientFeatureREST, ClientFeatureFilesystem}

// NeedClientFeature is the need of a scenario about optional client
// feature f (ClientFeatureXdstp, …).
func NeedClientFeature(f string) engine.Need { return engine.Need(clientFeatureNeedPrefix + f) }

const clientFeatureNeedPrefix = "client-feature:"

// Client profiles: what the client under test follows, and so which
// scenarios apply (NeedGRPCProfile, NeedEnvoyProfile).
const (
	ProfileGRPC  = "grpc"
	ProfileEnvoy = "envoy"
)

// Observer kinds for external clients.
const (
	ObserveCSDS  = "csds"
	ObserveAdmin = "admin"
	ObserveNone  = "none"
)

// DefaultDNETimer is the does-not-exist timer real clients use (DNE-1).
const DefaultDNETimer = 15 * time.Second

// ClientOptions describe the client under test. Exactly one of Target,
// Command and Wait is set.
type ClientOptions struct {
	// Target is a built-in client (BuiltinClients).
	Target string
	// Command is a shell command starting one fresh client per scenario;
	// see CommandVars for the template variables it may use.
	Command string
	// Dir is the working directory Command runs in; empty means the
	// harness's own, so that relative paths in the command mean what they
	// mean where xdsconform was started ({{.Dir}} is the scenario's
	// scratch directory).
	Dir string
	// Wait means the client is started elsewhere and connects on its own to
	// Listen; scenarios then run one at a time on that address.
	Wait bool
	// Listen is the fake management server's address (default 127.0.0.1:0,
	// a fresh port per scenario). Required with Wait.
	Listen string
	// Listener is the name the client is pointed at. With Wait it must be
	// the name the client was configured with; otherwise each scenario
	// picks its own.
	Listener string
	// Variants the client speaks; default all four and REST for the
	// reference client and Envoy containers, SotW ADS otherwise.
	Variants []wire.Variant
	// Profile is the client profile the client follows: ProfileGRPC or
	// ProfileEnvoy. Empty chooses by target: ProfileEnvoy for a container
	// (Envoy), ProfileGRPC otherwise. builtin:reference runs in either.
	Profile string
	// Observer is how to read the client's status: ObserveCSDS,
	// ObserveAdmin (Envoy /config_dump) or ObserveNone. Empty chooses by
	// profile: ObserveAdmin for the Envoy profile (and so for a container),
	// ObserveCSDS otherwise.
	Observer string
	// StatusLacks are the states (StatusStates) the client's status view
	// never reports; scenarios that need one (NeedStatus) are skipped.
	// The admin observer always lacks DOES_NOT_EXIST: /config_dump lists
	// only the resources the client holds.
	StatusLacks []observer.State
	// ObserverAddr is the status endpoint's address, for Wait only (a
	// launched client gets a fresh port per scenario).
	ObserverAddr string
	// Features are the optional features the client implements
	// (ClientFeatures). Nil: a built-in client's own list, none for any
	// other client.
	Features []string
	// Faults switch on faults of the reference client.
	Faults []string
	// DNETimer is the client's does-not-exist timer the scenarios expect
	// (default 15 s). The reference client is configured with it.
	DNETimer time.Duration
	// RESTRefresh is a REST-JSON client's refresh delay, the wait before
	// it polls again (bootstrap refresh_delay; default
	// bootstrap.RESTRefreshDelay, 100 ms). The bootstraps the harness
	// writes and the reference client are configured with it; a client
	// configured elsewhere states its own. A client that does not wait
	// for its poll outstanding polls again when it fires, so the window
	// that checks it waits (REST-1) must outlast it.
	RESTRefresh time.Duration
	// StartTimeout bounds how long a launched client may take to open its
	// first stream (default 10 s).
	StartTimeout time.Duration
	// MaxRecvSize is the largest request, in bytes, the fake management
	// server accepts from the client (0: DefaultMaxRecvSize).
	MaxRecvSize int
	// MaxStatusSize is the largest status view, in bytes, the harness
	// reads from the client: one /config_dump body, one CSDS response
	// (0: DefaultMaxStatusSize). A larger one ends the scenario with an
	// error naming the cap: the harness could not look, so nothing was
	// judged.
	MaxStatusSize int
	// BootstrapTemplate, with Command, replaces the gRPC bootstrap the
	// harness writes for {{.Bootstrap}}: a Go text/template over
	// BootstrapVars, for clients whose bootstrap has another shape.
	BootstrapTemplate string
}

// Clients is a client target: it launches a fresh client per scenario and
// is the client role's engine.Env.
type Clients struct {
	opts ClientOptions
	name string
	// builtin is the built-in client target, when Target names one.
	builtin  *ClientBuiltin
	faults   []string
	variants []wire.Variant
	// liveness says, for a client started elsewhere (--client-wait), that
	// it never came: the rest of the run then errors with that one cause
	// at once, instead of each pair waiting out --start-timeout in turn.
	liveness
	// calibrations are what the calibration pairs found out of the
	// client's status view (calibration.go).
	calibrations calibrations
}

var _ engine.Liveness = (*Clients)(nil)

// NeverConnected records that the client of a pair never connected within
// the start timeout. For a client started elsewhere that ends the run (see
// Died): nothing the harness does brings it. A launched client is fresh in
// every pair, so one that did not connect says nothing of the next.
func (c *Clients) NeverConnected(err error) {
	if c.opts.Wait {
		c.markDied(fmt.Errorf("no client connected to --listen %s within %s %v (start it pointed there, with --listener %s): %w",
			c.opts.Listen, StartTimeoutFlag, c.opts.StartTimeout, c.opts.Listener, err))
	}
}

var _ engine.FreshTargets = (*Clients)(nil)

// FreshTargetPerPair implements engine.FreshTargets: every pair launches
// a client of its own, except with --client-wait, where one client
// started elsewhere serves them all.
func (c *Clients) FreshTargetPerPair() bool { return !c.opts.Wait }

// CheckAlive implements engine.Liveness: a client target cannot be
// probed, so it is alive until a pair found otherwise (NeverConnected).
func (c *Clients) CheckAlive(context.Context) error { return c.Died() }

// Gone implements engine.Liveness. It never closes: the only death a
// client target knows of is found by the pair it happens to, and with
// --client-wait no other pair is in flight to be cut short (they run one
// at a time), so the pair that found it keeps its own account of it.
func (c *Clients) Gone() <-chan struct{} { return nil }

// NewClients validates opts. Errors are configuration errors (exit 2).
func NewClients(opts ClientOptions) (*Clients, error) {
	set := 0
	for _, b := range []bool{opts.Target != "", opts.Command != "", opts.Wait} {
		if b {
			set++
		}
	}
	if set != 1 {
		return nil, errors.New("give exactly one of --target, --client-cmd and --client-wait")
	}
	c := &Clients{opts: opts}
	if b, ok := clientBuiltin(opts.Target); ok {
		c.builtin = &b
	}
	if c.opts.DNETimer <= 0 {
		c.opts.DNETimer = DefaultDNETimer
	}
	if c.opts.RESTRefresh <= 0 {
		c.opts.RESTRefresh = bootstrap.RESTRefreshDelay
	}
	if c.opts.StartTimeout <= 0 {
		c.opts.StartTimeout = 10 * time.Second
	}
	if c.opts.Profile == "" {
		c.opts.Profile = ProfileGRPC
		if strings.HasPrefix(opts.Target, ContainerPrefix) {
			c.opts.Profile = ProfileEnvoy
		}
	}
	switch {
	case c.opts.Profile != ProfileGRPC && c.opts.Profile != ProfileEnvoy:
		return nil, fmt.Errorf("unknown client profile %q (want %s or %s)", c.opts.Profile, ProfileGRPC, ProfileEnvoy)
	case c.builtin != nil && c.builtin.Profiles != nil && !slices.Contains(c.builtin.Profiles, c.opts.Profile):
		return nil, fmt.Errorf("%s follows the %s client profile only", opts.Target, strings.Join(c.builtin.Profiles, " and "))
	}
	if c.opts.Observer == "" {
		c.opts.Observer = ObserveCSDS
		if c.opts.Profile == ProfileEnvoy {
			c.opts.Observer = ObserveAdmin
		}
	}
	if !slices.Contains([]string{ObserveCSDS, ObserveAdmin, ObserveNone}, c.opts.Observer) {
		return nil, fmt.Errorf("unknown observer %q (want csds, admin or none)", c.opts.Observer)
	}
	for _, st := range c.opts.StatusLacks {
		if !slices.Contains(StatusStates, st) {
			return nil, fmt.Errorf("unknown status-view state %q (want one of %v)", st, StatusStates)
		}
	}
	if c.opts.Observer == ObserveAdmin && !slices.Contains(c.opts.StatusLacks, observer.DoesNotExist) {
		c.opts.StatusLacks = append(slices.Clip(c.opts.StatusLacks), observer.DoesNotExist)
	}
	if b := c.builtin; b != nil && b.AdminProfile != "" && c.opts.Observer == ObserveAdmin && c.opts.Profile != b.AdminProfile {
		return nil, fmt.Errorf("%s serves /config_dump in the %s profile only (--client-profile %s)", opts.Target, b.AdminProfile, b.AdminProfile)
	}
	for _, f := range c.opts.Features {
		if !slices.Contains(ClientFeatures, f) {
			return nil, fmt.Errorf("unknown client feature %q (want some of %s)", f, strings.Join(ClientFeatures, ", "))
		}
	}
	if c.opts.Features == nil && c.builtin != nil {
		c.opts.Features = c.builtin.Features
	}
	if opts.Dir != "" {
		dir, err := commandDir(opts)
		if err != nil {
			return nil, err
		}
		c.opts.Dir = dir
	}
	if opts.BootstrapTemplate != "" {
		if opts.Command == "" {
			return nil, errors.New("--bootstrap-template only applies to --client-cmd")
		}
		if _, err := parseBootstrapTemplate(opts.BootstrapTemplate); err != nil {
			return nil, err
		}
	}
	if len(opts.Faults) > 0 && (c.builtin == nil || len(c.builtin.Faults) == 0) {
		return nil, errors.New("--fault only applies to --target builtin:reference")
	}
	for _, f := range opts.Faults {
		pf, err := ParseFault(c.builtin.Faults, f)
		if err != nil {
			return nil, fmt.Errorf("--fault: %w", err)
		}
		if p := pf.Profile; p != "" && p != c.opts.Profile {
			return nil, fmt.Errorf("fault %s acts in the %s profile only (--client-profile %s)", pf.Name, p, p)
		}
		c.faults = append(c.faults, pf.Name)
	}
	switch {
	case c.builtin != nil:
		c.name = opts.Target
		c.variants = c.builtin.Variants
		if len(c.faults) > 0 {
			c.name += " (faults: " + strings.Join(opts.Faults, ",") + ")"
		}
	case strings.HasPrefix(opts.Target, ContainerPrefix):
		// An Envoy image: it speaks every variant and shows its state on
		// the admin interface's /config_dump.
		if strings.TrimPrefix(opts.Target, ContainerPrefix) == "" {
			return nil, fmt.Errorf("--target %q: name an image, container:IMAGE", opts.Target)
		}
		if _, err := containers(opts.Target); err != nil {
			return nil, err
		}
		c.name = opts.Target
		c.variants = append(slices.Clip(wire.AllVariants), wire.REST)
	case opts.Target != "":
		if err := notLinked(opts.Target, BuiltinClients, RegisteredClients()); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("unknown client target %q (built-in clients: %s; external clients: --client-cmd or --client-wait)", opts.Target, strings.Join(RegisteredClients(), ", "))
	case opts.Command != "":
		c.name = commandName(opts.Command)
		if err := checkTemplate(opts.Command); err != nil {
			return nil, err
		}
	case opts.Wait:
		c.name = "client-wait on " + opts.Listen
		if opts.Listen == "" || opts.Listener == "" {
			return nil, errors.New("--client-wait needs --listen (the address the client connects to) and --listener (the name it was pointed at)")
		}
		if opts.Observer != ObserveNone && opts.ObserverAddr == "" {
			return nil, errors.New("--client-wait needs --observer-addr (its CSDS or admin address), or --observer none")
		}
	}
	if c.variants == nil {
		c.variants = []wire.Variant{wire.SotWADS}
	}
	if len(opts.Variants) > 0 {
		for _, v := range opts.Variants {
			if !slices.Contains(c.variants, v) && opts.Target != "" {
				return nil, fmt.Errorf("%s does not speak %s", opts.Target, v)
			}
		}
		c.variants = opts.Variants
	}
	if opts.Listen != "" {
		if _, _, err := net.SplitHostPort(opts.Listen); err != nil {
			return nil, fmt.Errorf("--listen %q: %w", opts.Listen, err)
		}
	}
	return c, nil
}

// Name describes the target in reports.
func (c *Clients) Name() string { return c.name }

// commandName names a --client-cmd target in reports by its program alone:
// the rest of a command line (its arguments, KEY=VALUE assignments before
// it) may carry a token, and reports must never hold one.
func commandName(command string) string {
	fields := strings.Fields(command)
	for len(fields) > 0 && strings.Contains(fields[0], "=") && !strings.HasPrefix(fields[0], "=") {
		fields = fields[1:] // an environment assignment, not the program
	}
	if len(fields) == 0 {
		return "client-cmd"
	}
	name := "client-cmd: " + filepath.Base(strings.Trim(fields[0], `'"`))
	if len(fields) > 1 {
		name += " …"
	}
	return name
}

// Preflight checks, before any scenario, what every launch will need: a
// Docker engine for a container target. Its errors wrap ErrUnreachable.
func (c *Clients) Preflight(ctx context.Context) error {
	if !strings.HasPrefix(c.opts.Target, ContainerPrefix) {
		return nil
	}
	rt, err := containers(c.opts.Target)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rt.Available(ctx); err != nil {
		return containerError(c.opts.Target, err)
	}
	return nil
}

// Options returns the options with defaults filled in.
func (c *Clients) Options() ClientOptions { return c.opts }

// MaxParallel caps the pairs run at once (0: no cap). A client started
// elsewhere connects to one address only, and a fixed --listen address
// serves one scenario at a time, so those scenarios run one by one;
// launched processes are capped at ProcessParallel, because starting
// dozens of processes at once on a small machine delays every client and
// a slow start is not what the scenarios measure.
func (c *Clients) MaxParallel() int {
	switch {
	case c.opts.Wait, c.opts.Listen != "":
		return 1 // one fixed address serves one scenario at a time
	case c.builtin != nil && c.builtin.InProcess:
		return 0
	}
	return ProcessParallel // containers too: each one is a process on the engine's host
}

// ProcessParallel is how many client processes run at once.
const ProcessParallel = 8

// Lacks implements engine.Env.
func (c *Clients) Lacks(s *engine.Scenario, v wire.Variant) string {
	if !slices.Contains(c.variants, v) {
		return "the client does not speak " + v.String()
	}
	// The profile first: a scenario of the other profile does not apply
	// at all, whatever else the client lacks.
	for _, n := range s.Needs {
		switch {
		case n == NeedGRPCProfile && c.opts.Profile != ProfileGRPC:
			return "written for the gRPC client profile; the client runs the " + c.opts.Profile + " profile"
		case n == NeedEnvoyProfile && c.opts.Profile != ProfileEnvoy:
			return "needs an Envoy-profile client (--client-profile envoy)"
		}
	}
	for _, n := range s.Needs {
		switch {
		case n == NeedObserver && c.opts.Observer == ObserveNone:
			return "needs the client's status view (CSDS or /config_dump), which the target does not offer"
		case n == NeedFreshClient && c.opts.Wait:
			return "needs a fresh client, and --client-wait reuses one across scenarios"
		case strings.HasPrefix(string(n), clientFeatureNeedPrefix) && !slices.Contains(c.opts.Features, strings.TrimPrefix(string(n), clientFeatureNeedPrefix)):
			return fmt.Sprintf("the client does not claim feature %q (--client-features)", strings.TrimPrefix(string(n), clientFeatureNeedPrefix))
		case strings.HasPrefix(string(n), statusNeedPrefix) && slices.Contains(c.opts.StatusLacks, observer.State(strings.TrimPrefix(string(n), statusNeedPrefix))):
			return "the client's status view does not report " + strings.TrimPrefix(string(n), statusNeedPrefix) + ", which the scenario's verdict rests on"
		}
	}
	return ""
}

// LaunchSpec says what one scenario needs from its client.
type LaunchSpec struct {
	// ServerAddr is the fake management server's address.
	ServerAddr string
	// NodeID and Cluster identify the client.
	NodeID, Cluster string
	// Listener is the name the client is pointed at (xds:///Listener).
	Listener string
	// Variant is the variant under test.
	Variant wire.Variant
	// Target is the channel target the client is pointed at; empty means
	// xds:///Listener. xds://AUTHORITY/NAME names an authority of the
	// bootstrap (gRFC A47).
	Target string
	// Authorities go into the client's bootstrap (gRFC A47 federation):
	// each maps an authority to a management server (XDSTP-13).
	Authorities []bootstrap.Authority
	// DefaultListenerTemplate is the bootstrap's
	// client_default_listener_resource_name_template; empty leaves it out.
	DefaultListenerTemplate string
	// DynamicParameters, when not nil, are the dynamic parameters the
	// client is asked to send with its subscriptions (xRFC TP2). Only the
	// reference client is configured with them; another client claiming
	// the dynamic-parameters feature sends those it was configured with.
	DynamicParameters map[string]string
	// CDSFile, when set, is where the client reads its clusters from
	// instead of the management server (filesystem subscriptions, FS-1):
	// the Envoy bootstrap's cds_config is a path_config_source.
	CDSFile *bootstrap.FileSource
}

// ChannelTarget is the channel target the client is pointed at:
// xds:///Listener unless Target says otherwise.
func (s LaunchSpec) ChannelTarget() string {
	if s.Target != "" {
		return s.Target
	}
	return "xds:///" + s.Listener
}

// GRPCBootstrap is the gRPC bootstrap JSON for s, authorities included,
// asking for variant v (a gRPC bootstrap can only ask for the ADS
// variants).
func (s LaunchSpec) GRPCBootstrap(v wire.Variant) ([]byte, error) {
	p := s.grpcBootstrap()
	p.Variant = v
	return bootstrap.GRPC(p)
}

// grpcBootstrap is the gRPC bootstrap for s, authorities included, for
// SotW ADS.
func (s LaunchSpec) grpcBootstrap() bootstrap.Params {
	return bootstrap.Params{ServerAddr: s.ServerAddr, NodeID: s.NodeID, Cluster: s.Cluster, Variant: wire.SotWADS,
		Authorities: s.Authorities, DefaultListenerTemplate: s.DefaultListenerTemplate}
}

// Running is one launched client.
type Running interface {
	// Observer reads the client's status view; nil when it offers none.
	Observer() observer.Observer
	// Exited is closed when the client stopped on its own.
	Exited() <-chan struct{}
	// Err says why it stopped, with its output tail when it has one.
	Err() error
	// Stop stops the client; afterwards no process of it is left. The
	// error says when it did not stop cleanly (it had to be killed).
	Stop() error
}

// StartTimeoutFlag is the flag that sets ClientOptions.StartTimeout.
// Every message about a launched client that was not up in time names it,
// so that whoever reads one knows what to raise.
const StartTimeoutFlag = "--start-timeout"

// StartTimeoutError says that a launched client did not get as far as
// what (a phrase such as "the client never connected to ...") within
// timeout, the value of --start-timeout, because of cause.
func StartTimeoutError(what string, timeout time.Duration, cause error) error {
	return fmt.Errorf("%s within %s %v (raise it if the client is only slow to start): %w", what, StartTimeoutFlag, timeout, cause)
}

// outputter is a Running whose client prints where the harness reads it.
type outputter interface {
	// Output is the end of what the client printed so far, stdout and
	// stderr as they came, bounded as the harness keeps it.
	Output() string
}

// output returns the end of what run's client printed so far, bounded in
// bytes as the harness keeps a process's output (process.Process.Tail) or
// a container's (Container.Logs); ok is false for a client whose output
// the harness does not read (in-process, started elsewhere, or none).
func output(run Running) (tail string, ok bool) {
	o, ok := run.(outputter)
	if !ok {
		return "", false
	}
	return o.Output(), true
}

// OutputNote is what to add to a message about a launched client that
// did not come up: the end of what it printed (bounded, see output), or
// that it printed nothing, since why a client did not come up is most
// often in what it said; "" for a client whose output the harness does
// not read, nil included. Like every message, it is scrubbed of secrets
// where it is written out (transcript.Scrub).
func OutputNote(run Running) string {
	tail, ok := output(run)
	switch {
	case !ok:
		return ""
	case strings.TrimSpace(tail) == "":
		return "\nThe client has printed nothing."
	}
	return "\nThe client's output ends with:\n" + tail
}

// Launch starts a fresh client for one scenario. Errors are the target's
// (the scenario ends with an error outcome naming them).
func (c *Clients) Launch(ctx context.Context, spec LaunchSpec) (Running, error) {
	switch {
	case c.builtin != nil:
		return c.builtin.Launch(ctx, BuiltinLaunch{LaunchSpec: spec, Profile: c.opts.Profile, Observer: c.opts.Observer, MaxStatusSize: c.opts.MaxStatusSize,
			DNETimer: c.opts.DNETimer, RESTRefresh: c.opts.RESTRefresh, StartTimeout: c.opts.StartTimeout, Faults: c.faults})
	case strings.HasPrefix(c.opts.Target, ContainerPrefix):
		return c.launchContainer(ctx, spec)
	case c.opts.Command != "":
		return c.launchCommand(ctx, spec)
	default: // Wait: the client runs elsewhere.
		obs, err := c.observerAt(c.opts.ObserverAddr)
		if err != nil {
			return nil, err
		}
		return &builtinRunning{obs: obs, done: make(chan struct{}), err: func() error { return nil }, stop: func() error { return nil }}, nil
	}
}

func (c *Clients) observerAt(addr string) (observer.Observer, error) {
	switch c.opts.Observer {
	case ObserveCSDS:
		o, err := observer.DialCSDS(addr, observer.MaxBytes(c.opts.MaxStatusSize))
		if err != nil {
			return nil, fmt.Errorf("connecting to the client's CSDS at %s: %w", addr, err)
		}
		return o, nil
	case ObserveAdmin:
		return observer.NewConfigDump(addr, observer.MaxBytes(c.opts.MaxStatusSize)), nil
	}
	return nil, nil
}

// DefaultMaxStatusSize is the largest status view the harness reads from
// a client unless configured (ClientOptions.MaxStatusSize,
// --max-status-size).
const DefaultMaxStatusSize = observer.StatusViewBytes

// builtinRunning adapts a container and the waited-for client.
type builtinRunning struct {
	obs  observer.Observer
	done <-chan struct{}
	err  func() error
	stop func() error
}

// containerRunning is a container client, whose output is its logs.
type containerRunning struct {
	builtinRunning
	logs func() string
}

// Output implements outputter.
func (r *containerRunning) Output() string { return r.logs() }

func (r *builtinRunning) Observer() observer.Observer { return r.obs }
func (r *builtinRunning) Exited() <-chan struct{}     { return r.done }
func (r *builtinRunning) Err() error                  { return r.err() }
func (r *builtinRunning) Stop() error {
	if r.obs != nil {
		_ = r.obs.Close()
	}
	return r.stop()
}

// CommandVars are the template variables a --client-cmd may use, e.g.
// `my-client --bootstrap {{.Bootstrap}} --csds {{.CSDS}}`. Values are
// shell-quoted when substituted.
var CommandVars = map[string]string{
	"Bootstrap":      "path of the gRPC bootstrap JSON (also in $GRPC_XDS_BOOTSTRAP)",
	"EnvoyBootstrap": "path of the Envoy v3 bootstrap (YAML)",
	"Server":         "host:port of the harness's management server",
	"NodeID":         "the node id the client must use",
	"Cluster":        "the node cluster",
	"Listener":       "the listener name the client must ask for",
	"Target":         "the gRPC dial target: xds:///<Listener>, or xds://AUTHORITY/NAME in federation scenarios",
	"CSDS":           "host:port the client should serve CSDS on (also $XDSCONFORM_CSDS_ADDR)",
	"Admin":          "host:port for Envoy's admin interface (also $XDSCONFORM_ADMIN_ADDR)",
	"Dir":            "a scratch directory for this scenario, removed afterwards (not the working directory: see --client-dir)",
}

// commandDir checks opts.Dir, the working directory of a --client-cmd,
// and makes it absolute: it must be an existing directory, and it applies
// to a launched command only.
func commandDir(opts ClientOptions) (string, error) {
	if opts.Command == "" {
		return "", errors.New("--client-dir only applies to --client-cmd")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return "", fmt.Errorf("--client-dir %q: %w", opts.Dir, err)
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", fmt.Errorf("--client-dir: %w", err)
	case !fi.IsDir():
		return "", fmt.Errorf("--client-dir %s: not a directory", opts.Dir)
	}
	return dir, nil
}

func checkTemplate(cmd string) error {
	vars := map[string]string{}
	for k := range CommandVars {
		vars[k] = "x"
	}
	if _, err := process.Expand(cmd, vars); err != nil {
		return fmt.Errorf("--client-cmd: %w", err)
	}
	return nil
}

func (c *Clients) launchCommand(ctx context.Context, spec LaunchSpec) (Running, error) {
	// A scratch directory the harness's Shutdown removes even if this
	// pair is abandoned (Ctrl-C) before it stops its client.
	dir, err := process.MkdirScratch("xdsconform-client-")
	if err != nil {
		return nil, err
	}
	fail := func(err error) (Running, error) {
		_ = process.RemoveScratch(dir)
		return nil, err
	}
	csds, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	admin, err := freeAddr()
	if err != nil {
		return fail(err)
	}
	p := bootstrap.Params{ServerAddr: spec.ServerAddr, NodeID: spec.NodeID, Cluster: spec.Cluster, Variant: spec.Variant, AdminAddr: admin, CDSFile: spec.CDSFile,
		RESTRefreshDelay: c.opts.RESTRefresh}
	// A gRPC bootstrap cannot ask for delta or per-type streams: gRPC
	// clients speak SotW ADS, whatever variant an Envoy is given.
	grpcJSON, err := bootstrap.GRPC(spec.grpcBootstrap())
	if err != nil {
		return fail(fmt.Errorf("rendering the gRPC bootstrap: %w", err))
	}
	if c.opts.BootstrapTemplate != "" {
		if grpcJSON, err = renderBootstrapTemplate(c.opts.BootstrapTemplate, spec, csds); err != nil {
			return fail(err)
		}
	}
	envoyYAML, err := bootstrap.Envoy(p)
	if err != nil {
		return fail(fmt.Errorf("rendering the Envoy bootstrap: %w", err))
	}
	vars := map[string]string{
		"Bootstrap": filepath.Join(dir, "bootstrap.json"), "EnvoyBootstrap": filepath.Join(dir, "envoy.yaml"),
		"Server": spec.ServerAddr, "NodeID": spec.NodeID, "Cluster": spec.Cluster, "Listener": spec.Listener,
		"Target": spec.ChannelTarget(), "CSDS": csds, "Admin": admin, "Dir": dir,
	}
	if err := os.WriteFile(vars["Bootstrap"], grpcJSON, 0o600); err != nil {
		return fail(fmt.Errorf("writing the bootstrap: %w", err))
	}
	if err := os.WriteFile(vars["EnvoyBootstrap"], envoyYAML, 0o600); err != nil {
		return fail(fmt.Errorf("writing the Envoy bootstrap: %w", err))
	}
	cmd, err := process.Expand(c.opts.Command, vars)
	if err != nil {
		return fail(fmt.Errorf("--client-cmd: %w", err))
	}
	proc, err := process.StartShell(ctx, cmd, process.Options{Env: []string{
		"GRPC_XDS_BOOTSTRAP=" + vars["Bootstrap"],
		"XDSCONFORM_CSDS_ADDR=" + csds,
		"XDSCONFORM_ADMIN_ADDR=" + admin,
		"XDSCONFORM_TARGET=" + vars["Target"],
	}, Dir: c.opts.Dir})
	if err != nil {
		return fail(fmt.Errorf("starting --client-cmd: %w", err))
	}
	addr := csds
	if c.opts.Observer == ObserveAdmin {
		addr = admin
	}
	obs, err := c.observerAt(addr)
	if err != nil {
		_ = proc.Stop(time.Second)
		return fail(err)
	}
	return &commandRunning{proc: proc, obs: obs, dir: dir}, nil
}

// commandRunning is one --client-cmd process.
type commandRunning struct {
	proc *process.Process
	obs  observer.Observer
	dir  string
}

func (r *commandRunning) Observer() observer.Observer { return r.obs }
func (r *commandRunning) Exited() <-chan struct{}     { return r.proc.Exited() }

// Output implements outputter: the process's output tail (process.Options
// StderrTail, 4 KiB by default).
func (r *commandRunning) Output() string { return r.proc.Tail() }
func (r *commandRunning) Err() error {
	select {
	case <-r.proc.Exited():
		return fmt.Errorf("client command exited (%v); its output ends with:\n%s", r.proc.ExitErr(), r.proc.Tail())
	default:
		return fmt.Errorf("client command still running; its output ends with:\n%s", r.proc.Tail())
	}
}
func (r *commandRunning) Stop() error {
	if r.obs != nil {
		_ = r.obs.Close()
	}
	err := r.proc.Stop(StopGrace)
	// Only once nothing of the client is left to write in it.
	rmErr := process.RemoveScratch(r.dir)
	switch {
	case errors.Is(err, process.ErrKilled):
		return fmt.Errorf("the client command ignored SIGTERM and had to be killed (%w); its output ends with:\n%s", err, r.proc.Tail())
	case err != nil:
		return fmt.Errorf("the client command left processes behind: %w; its output ends with:\n%s", err, r.proc.Tail())
	}
	return rmErr
}

// StopGrace is how long a launched client command has to exit after
// SIGTERM before it and everything it started are killed.
const StopGrace = 2 * time.Second

// launchContainer starts the container:IMAGE client for one scenario: the
// Envoy bootstrap points at the harness's management server through the
// port testcontainers forwards, and its admin port is published for
// /config_dump. No engine is an unreachable target (exit code 3).
func (c *Clients) launchContainer(ctx context.Context, spec LaunchSpec) (Running, error) {
	if spec.CDSFile != nil {
		// The harness writes the file on its own host; mounting it into
		// the container is not done.
		return nil, errors.New("filesystem subscriptions are not supported with container targets: the harness's files are not mounted into the container")
	}
	_, portText, err := net.SplitHostPort(spec.ServerAddr)
	if err != nil {
		return nil, fmt.Errorf("management server address %q: %w", spec.ServerAddr, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("management server port %q: %w", portText, err)
	}
	rt, err := containers(c.opts.Target)
	if err != nil {
		return nil, err
	}
	boot, err := bootstrap.Envoy(bootstrap.Params{ServerAddr: rt.HostAddr(port), NodeID: spec.NodeID, Cluster: spec.Cluster,
		Variant: spec.Variant, AdminAddr: net.JoinHostPort("0.0.0.0", strconv.Itoa(ContainerAdminPort)), RESTRefreshDelay: c.opts.RESTRefresh})
	if err != nil {
		return nil, fmt.Errorf("rendering the Envoy bootstrap: %w", err)
	}
	startCtx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout+containerPullTime) // an image pull is part of the start
	defer cancel()
	// timedOut names the flag to raise when the start's own bound, not
	// the scenario's, ended it.
	timedOut := func(what string, err error) error {
		if startCtx.Err() == nil || ctx.Err() != nil {
			return err
		}
		return fmt.Errorf("%s: %s within %v for pulling its image plus %s %v (raise it if the client is only slow to start): %w",
			c.opts.Target, what, containerPullTime, StartTimeoutFlag, c.opts.StartTimeout, err)
	}
	ct, err := rt.StartClient(startCtx, ClientContainer{Image: strings.TrimPrefix(c.opts.Target, ContainerPrefix), Bootstrap: boot, ServerPort: port})
	if err != nil {
		return nil, containerError(c.opts.Target, timedOut("the container was not ready", err))
	}
	stop := func() error { return ct.Stop(context.WithoutCancel(ctx)) }
	admin, err := ct.Addr(startCtx, ContainerAdminPort)
	if err != nil {
		_ = stop()
		return nil, timedOut("the container's admin port was not published", fmt.Errorf("%w; container output: %s", err, ct.Logs()))
	}
	obs, err := c.observerAt(admin) // nil for --observer none
	if err != nil {
		_ = stop()
		return nil, err
	}
	return &containerRunning{builtinRunning: builtinRunning{obs: obs, done: ct.Exited(), err: ct.Err, stop: stop}, logs: ct.Logs}, nil
}

// containerPullTime is what a container client's start may take beyond
// --start-timeout: pulling its image is part of the start.
const containerPullTime = time.Minute
