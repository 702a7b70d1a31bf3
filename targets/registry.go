package targets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xdsconform/xdsconform/wire"
)

// The built-in targets and the container targets are not part of this
// package: they would link the reference peers, go-control-plane's caches,
// grpc-go's xDS client and testcontainers-go (with moby, OpenTelemetry and
// gopsutil) into every program that imports targets, including every test
// that embeds the suites. The packages that have them register them here
// when imported:
//
//	import _ "github.com/xdsconform/xdsconform/peers/builtin" // builtin:…
//	import _ "github.com/xdsconform/xdsconform/docker"        // container:IMAGE
//
// The xdsconform command imports both. A program that names a target whose
// package it did not import gets an error naming the import to add.

// BuiltinImport is the package whose import registers the built-in
// targets (builtin:reference, builtin:go-control-plane, …).
const BuiltinImport = "github.com/xdsconform/xdsconform/peers/builtin"

// ContainerImport is the package whose import registers the container
// targets (container:IMAGE).
const ContainerImport = "github.com/xdsconform/xdsconform/docker"

// ContainerPrefix marks a containerised target: "container:IMAGE".
const ContainerPrefix = "container:"

// BuiltinPrefix marks a built-in target: "builtin:NAME".
const BuiltinPrefix = "builtin:"

// Fault is a fault switch of a built-in target: it makes the target break
// one rule, so that a scenario can be shown to catch it.
type Fault struct {
	// Name is what --fault takes.
	Name string
	// Description says what the fault breaks, for help and completion.
	Description string
	// Profile is the client profile the fault acts in (ProfileGRPC,
	// ProfileEnvoy); empty for every one. Server faults have none.
	Profile string
}

// ParseFault is the fault of faults named s, compared without regard to
// case; the error points at xdsconform faults, which lists them (more than
// a hundred names do not fit a one-line error).
func ParseFault(faults []Fault, s string) (Fault, error) {
	for _, f := range faults {
		if strings.EqualFold(s, f.Name) {
			return f, nil
		}
	}
	return Fault{}, fmt.Errorf("unknown fault %q (xdsconform faults lists them)", s)
}

// ServerBuiltin is a built-in server target: a management server run
// inside the harness, with its fixture API.
type ServerBuiltin struct {
	// Name is the target's name, "builtin:NAME".
	Name string
	// Faults are the fault switches it takes; none for most.
	Faults []Fault
	// New makes the server as l says; the harness serves it
	// (ServeInProcess).
	New func(ctx context.Context, l ServerLaunch) (InProcess, error)
}

// ServerLaunch is what a built-in server is made with.
type ServerLaunch struct {
	// Faults are the faults to switch on, each one of the target's Faults
	// by its Name.
	Faults []string
	// RESTHold is the REST long-poll hold to run with (ServerOptions.RESTHold);
	// 0 leaves it to the built-in. A server that serves REST states the
	// hold it runs with through RESTHolder.
	RESTHold time.Duration
}

// ClientBuiltin is a built-in client target.
type ClientBuiltin struct {
	// Name is the target's name, "builtin:NAME".
	Name string
	// Variants are the variants it speaks.
	Variants []wire.Variant
	// Profiles are the client profiles it follows; nil means both.
	Profiles []string
	// AdminProfile, when set, is the only profile in which it serves
	// /config_dump (ObserveAdmin); empty leaves the observer to it.
	AdminProfile string
	// Features are the optional features it implements (ClientFeatures).
	Features []string
	// Faults are the fault switches it takes.
	Faults []Fault
	// InProcess says it runs inside the harness's process, so its pairs
	// are not capped at ProcessParallel.
	InProcess bool
	// Launch starts one client for one scenario.
	Launch func(ctx context.Context, l BuiltinLaunch) (Running, error)
}

// BuiltinLaunch is what a built-in client is started with for one
// scenario: the scenario's LaunchSpec and the target's options, with
// defaults filled in.
type BuiltinLaunch struct {
	LaunchSpec
	// Profile is the client profile to follow.
	Profile string
	// Observer is how the harness reads the client's status (ObserveCSDS,
	// ObserveAdmin, ObserveNone).
	Observer string
	// DNETimer is the does-not-exist timer the scenarios expect.
	DNETimer time.Duration
	// RESTRefresh is the REST-JSON refresh delay the scenarios expect.
	RESTRefresh time.Duration
	// StartTimeout bounds how long the client may take to start.
	StartTimeout time.Duration
	// Faults are the faults to switch on, by their Name.
	Faults []string
	// MaxStatusSize caps each read of the client's status view, in bytes
	// (0: DefaultMaxStatusSize); see ClientOptions.MaxStatusSize.
	MaxStatusSize int
}

// ContainerRuntime runs container:IMAGE targets. Package docker registers
// one (testcontainers-go) when imported.
type ContainerRuntime interface {
	// Available says whether containers can run here: nil, or one line
	// wrapping ErrNoContainerEngine.
	Available(ctx context.Context) error
	// StartServer starts a control-plane container and waits until its
	// xDS port (and fixture port) accept connections.
	StartServer(ctx context.Context, r ServerContainer) (Container, error)
	// StartClient starts an Envoy client container with the bootstrap
	// mounted at /etc/envoy/envoy.yaml, and waits until its admin port
	// (ContainerAdminPort) answers.
	StartClient(ctx context.Context, r ClientContainer) (Container, error)
	// HostAddr is how a container reaches port on the harness's host.
	HostAddr(port int) string
}

// ServerContainer describes a control-plane container.
type ServerContainer struct {
	// Image of the control plane.
	Image string
	// XDSPort is the xDS port inside the container.
	XDSPort int
	// FixturePort is the fixture API port inside the container; 0 if the
	// image serves none.
	FixturePort int
	// Env is passed to the container.
	Env map[string]string
}

// ClientContainer describes an xDS client container, Envoy's.
type ClientContainer struct {
	// Image, e.g. "envoyproxy/envoy:v1.36-latest".
	Image string
	// Bootstrap is the Envoy bootstrap (YAML); its xDS server is
	// HostAddr(ServerPort) and its admin interface
	// 0.0.0.0:ContainerAdminPort.
	Bootstrap []byte
	// ServerPort is the host port of the harness's management server.
	ServerPort int
}

// Container is one running peer container.
type Container interface {
	// Addr is the host address of a port the container exposes.
	Addr(ctx context.Context, port int) (string, error)
	// Exited is closed when the container stopped on its own.
	Exited() <-chan struct{}
	// Err says why it stopped, with its output tail.
	Err() error
	// Logs is the tail of its output.
	Logs() string
	// Stop removes it, in bounded time; afterwards nothing of it is left.
	Stop(ctx context.Context) error
}

// ContainerAdminPort is the admin port the generated Envoy bootstrap binds
// in a client container; the runtime publishes it on a free host port.
const ContainerAdminPort = 9901

// ErrNoContainerEngine is wrapped by a ContainerRuntime's errors when no
// engine runs containers here; the target is then unreachable (exit 3).
var ErrNoContainerEngine = errors.New("no Docker engine reachable")

var registry struct {
	sync.RWMutex
	servers    []ServerBuiltin
	clients    []ClientBuiltin
	containers ContainerRuntime
}

// RegisterServer makes a built-in server target known. It is called from
// the init function of the package that has it; registering a name twice
// panics, as two packages claiming one name is a bug in the program.
func RegisterServer(b ServerBuiltin) {
	checkRegistration(b.Name, b.New == nil)
	registry.Lock()
	defer registry.Unlock()
	if slices.ContainsFunc(registry.servers, func(s ServerBuiltin) bool { return s.Name == b.Name }) {
		panic("targets: server target " + b.Name + " registered twice")
	}
	registry.servers = append(registry.servers, b)
}

// RegisterClient makes a built-in client target known; see RegisterServer.
func RegisterClient(b ClientBuiltin) {
	checkRegistration(b.Name, b.Launch == nil)
	registry.Lock()
	defer registry.Unlock()
	if slices.ContainsFunc(registry.clients, func(c ClientBuiltin) bool { return c.Name == b.Name }) {
		panic("targets: client target " + b.Name + " registered twice")
	}
	registry.clients = append(registry.clients, b)
}

func checkRegistration(name string, noFunc bool) {
	if !strings.HasPrefix(name, BuiltinPrefix) || name == BuiltinPrefix || noFunc {
		panic(fmt.Sprintf("targets: a built-in target needs a name builtin:NAME and a function to start it (got %q)", name))
	}
}

// RegisterContainers makes container:IMAGE targets run on rt; package
// docker calls it when imported. A second runtime panics.
func RegisterContainers(rt ContainerRuntime) {
	registry.Lock()
	defer registry.Unlock()
	if registry.containers != nil {
		panic("targets: container runtime registered twice")
	}
	registry.containers = rt
}

// RegisteredServers are the names of the built-in server targets this
// program has, in the order they were registered.
func RegisteredServers() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for _, s := range registry.servers {
		out = append(out, s.Name)
	}
	return out
}

// RegisteredClients are the names of the built-in client targets this
// program has, in the order they were registered.
func RegisteredClients() []string {
	registry.RLock()
	defer registry.RUnlock()
	var out []string
	for _, c := range registry.clients {
		out = append(out, c.Name)
	}
	return out
}

// ServerFaults are the fault switches of built-in server target name; nil
// when it takes none or is not registered.
func ServerFaults(name string) []Fault {
	b, _ := serverBuiltin(name)
	return b.Faults
}

// ClientFaults are the fault switches of built-in client target name; nil
// when it takes none or is not registered.
func ClientFaults(name string) []Fault {
	b, _ := clientBuiltin(name)
	return b.Faults
}

func serverBuiltin(name string) (ServerBuiltin, bool) {
	registry.RLock()
	defer registry.RUnlock()
	i := slices.IndexFunc(registry.servers, func(s ServerBuiltin) bool { return s.Name == name })
	if i < 0 {
		return ServerBuiltin{}, false
	}
	return registry.servers[i], true
}

func clientBuiltin(name string) (ClientBuiltin, bool) {
	registry.RLock()
	defer registry.RUnlock()
	i := slices.IndexFunc(registry.clients, func(c ClientBuiltin) bool { return c.Name == name })
	if i < 0 {
		return ClientBuiltin{}, false
	}
	return registry.clients[i], true
}

// containers is the registered container runtime, or an error naming the
// import that registers one, for target.
func containers(target string) (ContainerRuntime, error) {
	registry.RLock()
	defer registry.RUnlock()
	if registry.containers == nil {
		return nil, fmt.Errorf("--target %q: container targets are not linked into this program (import _ %q)", target, ContainerImport)
	}
	return registry.containers, nil
}

// notLinked is the error for a builtin:NAME target that is not registered
// in a program that has none of the built-ins, or that names one of the
// built-ins the harness ships: the program did not import the package
// that registers them. known are the built-ins of the role registered.
func notLinked(target string, shipped, known []string) error {
	if len(known) == 0 || slices.Contains(shipped, target) {
		return fmt.Errorf("--target %q: the built-in targets are not linked into this program (import _ %q)", target, BuiltinImport)
	}
	return nil
}
