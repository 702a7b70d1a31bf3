package builtin_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// TestMain lets builtin:grpc-go re-execute this test binary as its client.
func TestMain(m *testing.M) {
	builtin.RunChildIfRequested()
	os.Exit(m.Run())
}

// Importing the package registers every built-in target the harness ships,
// under the names targets documents, in both roles.
func TestRegistersEveryShippedBuiltin(t *testing.T) {
	assert.Equal(t, targets.BuiltinServers, targets.RegisteredServers())
	assert.Equal(t, targets.BuiltinClients, targets.RegisteredClients())
}

// The fault lists are the reference peers' own, with their descriptions
// and (for the client) the profile each acts in.
func TestFaultsAreTheReferencePeers(t *testing.T) {
	require.Len(t, targets.ServerFaults(targets.BuiltinReference), len(refserver.AllFaults))
	for i, f := range targets.ServerFaults(targets.BuiltinReference) {
		assert.Equal(t, string(refserver.AllFaults[i]), f.Name)
		assert.Equal(t, refserver.AllFaults[i].Description(), f.Description)
	}
	require.Len(t, targets.ClientFaults(targets.BuiltinReference), len(refclient.AllFaults))
	for i, f := range targets.ClientFaults(targets.BuiltinReference) {
		assert.Equal(t, string(refclient.AllFaults[i]), f.Name)
		assert.Equal(t, refclient.AllFaults[i].Profile(), f.Profile)
	}
	assert.Nil(t, targets.ServerFaults(targets.BuiltinGoControlPlane))
	assert.Nil(t, targets.ClientFaults(targets.BuiltinGRPCGo))
}

// targets names the client profiles itself, so as not to import the
// reference client; they must be the reference client's.
func TestProfilesAreTheReferenceClients(t *testing.T) {
	assert.Equal(t, refclient.ProfileGRPC, targets.ProfileGRPC)
	assert.Equal(t, refclient.ProfileEnvoy, targets.ProfileEnvoy)
}

// Every registered server starts, serves its fixture and stops; a fault
// reaches the reference server by name.
func TestServersStart(t *testing.T) {
	for _, name := range targets.BuiltinServers {
		t.Run(name, func(t *testing.T) {
			s, err := targets.StartServer(context.Background(), targets.ServerOptions{Target: name})
			require.NoError(t, err)
			defer s.Close()
			assert.NotNil(t, s.Fixture)
			assert.NotNil(t, s.Caps)
		})
	}
	fault := string(refserver.AllFaults[0])
	s, err := targets.StartServer(context.Background(), targets.ServerOptions{Target: targets.BuiltinReference, Faults: []string{fault}})
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, targets.BuiltinReference+" (faults: "+fault+")", s.Name)
}

// A grpc-go client that does not serve CSDS within the start timeout is
// told of with the flag that raises it (what the child printed comes
// with the wait's error, process.AwaitLine).
func TestGRPCGoStartTimeoutNamesTheFlag(t *testing.T) {
	c, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinGRPCGo, StartTimeout: time.Millisecond})
	require.NoError(t, err)
	run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.SotWADS})
	if err == nil {
		_ = run.Stop()
	}
	assert.ErrorContains(t, err, "grpc-go's xDS client did not serve CSDS within --start-timeout 1ms (raise it")
}
