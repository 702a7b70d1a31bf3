package targets

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/wire"
)

// withRegistry replaces the registry, which the test binary's blank
// imports filled, for the length of t; the tests using it are not
// parallel, so no other test sees it.
func withRegistry(t *testing.T, servers []ServerBuiltin, clients []ClientBuiltin, rt ContainerRuntime) {
	t.Helper()
	registry.Lock()
	saved := registry.servers
	savedC := registry.clients
	savedRT := registry.containers
	registry.servers, registry.clients, registry.containers = servers, clients, rt
	registry.Unlock()
	t.Cleanup(func() {
		registry.Lock()
		registry.servers, registry.clients, registry.containers = saved, savedC, savedRT
		registry.Unlock()
	})
}

// A program that did not import the packages registering the built-in
// and container targets is told which import to add, for every shipped
// name, in both roles.
func TestUnregisteredTargetsNameTheImport(t *testing.T) {
	withRegistry(t, nil, nil, nil)
	ctx := context.Background()
	for _, name := range BuiltinServers {
		_, err := StartServer(ctx, ServerOptions{Target: name})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `import _ "`+BuiltinImport+`"`, name)
		assert.NotErrorIs(t, err, ErrUnreachable, "a program that cannot run the target is not an unreachable target")
	}
	for _, name := range BuiltinClients {
		_, err := NewClients(ClientOptions{Target: name})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), `import _ "`+BuiltinImport+`"`, name)
	}
	// A builtin: name nobody ships, in a program without built-ins, is
	// the same missing import: the program cannot know it is a typo.
	_, err := StartServer(ctx, ServerOptions{Target: "builtin:other"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), BuiltinImport)

	_, err = StartServer(ctx, ServerOptions{Target: "container:example/cp:1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `import _ "`+ContainerImport+`"`)
	_, err = NewClients(ClientOptions{Target: "container:envoyproxy/envoy:v1"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `import _ "`+ContainerImport+`"`)
}

// With the built-ins registered, a name that is not one of them is a typo,
// and the error lists the names there are.
func TestUnknownBuiltinListsTheRegistered(t *testing.T) {
	withRegistry(t, []ServerBuiltin{{Name: "builtin:fake", New: failingNew(nil)}},
		[]ClientBuiltin{{Name: "builtin:fake-client", Launch: noLaunch}}, nil)
	_, err := StartServer(context.Background(), ServerOptions{Target: "builtin:fak"})
	require.Error(t, err)
	assert.Equal(t, `--target "builtin:fak": unknown built-in (want one of builtin:fake)`, err.Error())
	_, err = NewClients(ClientOptions{Target: "builtin:fak"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown client target "builtin:fak" (built-in clients: builtin:fake-client;`)
}

var errStop = errors.New("stopped by the test")

// failingNew records the faults it is given and fails, so the test ends
// before anything is served.
func failingNew(got *[]string) func(context.Context, ServerLaunch) (InProcess, error) {
	return func(_ context.Context, l ServerLaunch) (InProcess, error) {
		if got != nil {
			*got = l.Faults
		}
		return nil, errStop
	}
}

func noLaunch(context.Context, BuiltinLaunch) (Running, error) { return nil, errStop }

// Fault names are checked against the registered target's own list,
// without regard to case, and reach it by their canonical name; a target
// without faults takes none.
func TestServerFaultsAreValidatedThroughTheRegistry(t *testing.T) {
	var got []string
	withRegistry(t, []ServerBuiltin{
		{Name: BuiltinReference, Faults: []Fault{{Name: "stale-nonce"}, {Name: "no-ack"}}, New: failingNew(&got)},
		{Name: BuiltinGoControlPlane, New: failingNew(nil)},
	}, nil, nil)
	ctx := context.Background()

	_, err := StartServer(ctx, ServerOptions{Target: BuiltinReference, Faults: []string{"Stale-Nonce", "no-ack"}})
	require.ErrorIs(t, err, errStop)
	assert.Equal(t, "start builtin:reference: stopped by the test", err.Error())
	assert.Equal(t, []string{"stale-nonce", "no-ack"}, got)

	_, err = StartServer(ctx, ServerOptions{Target: BuiltinReference, Faults: []string{"bogus"}})
	require.Error(t, err)
	assert.Equal(t, `--fault: unknown fault "bogus" (xdsconform faults lists them)`, err.Error())

	_, err = StartServer(ctx, ServerOptions{Target: BuiltinGoControlPlane, Faults: []string{"stale-nonce"}})
	require.Error(t, err)
	assert.Equal(t, "--fault only applies to builtin:reference", err.Error())
	_, err = StartServer(ctx, ServerOptions{Target: "127.0.0.1:1", Faults: []string{"stale-nonce"}})
	require.Error(t, err)
	assert.Equal(t, "--fault only applies to builtin:reference", err.Error())

	assert.Equal(t, []Fault{{Name: "stale-nonce"}, {Name: "no-ack"}}, ServerFaults(BuiltinReference))
	assert.Nil(t, ServerFaults(BuiltinGoControlPlane))
	assert.Equal(t, []string{BuiltinReference, BuiltinGoControlPlane}, RegisteredServers())
}

// A client built-in's registration decides its variants, profiles,
// status view, features, faults and parallelism, and Launch hands it the
// scenario with the options resolved.
func TestClientBuiltinRegistrationDecides(t *testing.T) {
	var launched BuiltinLaunch
	withRegistry(t, nil, []ClientBuiltin{{
		Name:         "builtin:fake",
		Variants:     []wire.Variant{wire.DeltaADS},
		Profiles:     []string{ProfileEnvoy},
		AdminProfile: ProfileEnvoy,
		Features:     []string{ClientFeatureREST},
		Faults:       []Fault{{Name: "late", Profile: ProfileEnvoy}, {Name: "early"}},
		InProcess:    true,
		Launch: func(_ context.Context, l BuiltinLaunch) (Running, error) {
			launched = l
			return nil, errStop
		},
	}, {
		Name: "builtin:plain", Launch: noLaunch,
	}}, nil)

	_, err := NewClients(ClientOptions{Target: "builtin:fake"})
	require.Error(t, err)
	assert.Equal(t, "builtin:fake follows the envoy client profile only", err.Error())

	c, err := NewClients(ClientOptions{Target: "builtin:fake", Profile: ProfileEnvoy, Faults: []string{"LATE"}})
	require.NoError(t, err)
	assert.Equal(t, "builtin:fake (faults: LATE)", c.Name())
	assert.Equal(t, []string{ClientFeatureREST}, c.Options().Features)
	assert.Equal(t, 0, c.MaxParallel(), "an in-process client is not capped")
	assert.Equal(t, "the client does not speak sotw-ads", c.Lacks(&engine.Scenario{}, wire.SotWADS))
	_, err = c.Launch(context.Background(), LaunchSpec{NodeID: "n", Listener: "l"})
	require.ErrorIs(t, err, errStop)
	assert.Equal(t, []string{"late"}, launched.Faults)
	assert.Equal(t, ProfileEnvoy, launched.Profile)
	assert.Equal(t, ObserveAdmin, launched.Observer)
	assert.Equal(t, DefaultDNETimer, launched.DNETimer)
	assert.Equal(t, "n", launched.NodeID)

	_, err = NewClients(ClientOptions{Target: "builtin:fake", Profile: ProfileEnvoy, Faults: []string{"nope"}})
	require.Error(t, err)
	assert.Equal(t, `--fault: unknown fault "nope" (xdsconform faults lists them)`, err.Error())

	c, err = NewClients(ClientOptions{Target: "builtin:plain"})
	require.NoError(t, err)
	assert.Nil(t, c.Options().Features)
	assert.Equal(t, ProcessParallel, c.MaxParallel())
	assert.Equal(t, "", c.Lacks(&engine.Scenario{}, wire.SotWADS), "SotW ADS is the default variant")
	_, err = NewClients(ClientOptions{Target: "builtin:plain", Faults: []string{"late"}})
	require.Error(t, err)
	assert.Equal(t, "--fault only applies to --target builtin:reference", err.Error())
	_, err = NewClients(ClientOptions{Target: "builtin:plain", Observer: ObserveAdmin, Profile: ProfileGRPC})
	require.NoError(t, err, "no AdminProfile: the observer is left to the target")
}

// Registering one name twice, or a registration that cannot start
// anything, is a bug in the program: it panics at init.
func TestBadRegistrationsPanic(t *testing.T) {
	withRegistry(t, nil, nil, nil)
	RegisterServer(ServerBuiltin{Name: "builtin:x", New: failingNew(nil)})
	assert.Panics(t, func() { RegisterServer(ServerBuiltin{Name: "builtin:x", New: failingNew(nil)}) })
	assert.Panics(t, func() { RegisterServer(ServerBuiltin{Name: "x", New: failingNew(nil)}) })
	assert.Panics(t, func() { RegisterServer(ServerBuiltin{Name: "builtin:y"}) })
	RegisterClient(ClientBuiltin{Name: "builtin:x", Launch: noLaunch})
	assert.Panics(t, func() { RegisterClient(ClientBuiltin{Name: "builtin:x", Launch: noLaunch}) })
	assert.Panics(t, func() { RegisterClient(ClientBuiltin{Name: "builtin:"}) })
	RegisterContainers(fakeRuntime{})
	assert.Panics(t, func() { RegisterContainers(fakeRuntime{}) })
}

// fakeRuntime is a container runtime where no engine answers.
type fakeRuntime struct{}

func (fakeRuntime) Available(context.Context) error {
	return ErrNoContainerEngine
}
func (fakeRuntime) StartServer(context.Context, ServerContainer) (Container, error) {
	return nil, ErrNoContainerEngine
}
func (fakeRuntime) StartClient(context.Context, ClientContainer) (Container, error) {
	return nil, ErrNoContainerEngine
}
func (fakeRuntime) HostAddr(int) string { return "host:1" }

// The registered runtime runs container targets: without an engine both
// roles are an unreachable target (exit 3), not a configuration error.
func TestContainersRunOnTheRegisteredRuntime(t *testing.T) {
	withRegistry(t, nil, nil, fakeRuntime{})
	_, err := StartServer(context.Background(), ServerOptions{Target: "container:example/cp:1"})
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "container:example/cp:1 needs a Docker engine")
	c, err := NewClients(ClientOptions{Target: "container:envoyproxy/envoy:v1"})
	require.NoError(t, err)
	assert.Equal(t, ProfileEnvoy, c.Options().Profile)
	err = c.Preflight(context.Background())
	require.ErrorIs(t, err, ErrUnreachable)
	_, err = c.Launch(context.Background(), LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Cluster: "c", Listener: "l", Variant: wire.SotWADS})
	require.ErrorIs(t, err, ErrUnreachable)
}
