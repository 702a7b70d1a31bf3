package targets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

func TestClients_NameHoldsNoArguments(t *testing.T) {
	for _, tc := range []struct{ command, want string }{
		{"my-client --token s3cr3t {{.Target}}", "client-cmd: my-client …"},
		{"TOKEN=s3cr3t OTHER=x /opt/bin/my-client {{.Target}}", "client-cmd: my-client …"},
		{"'/usr/bin/node' driver.js", "client-cmd: node …"},
		{"my-client", "client-cmd: my-client"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			c, err := targets.NewClients(targets.ClientOptions{Command: tc.command})
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Name())
		})
	}
}

// The profile defaults by target, is validated, and decides which
// scenarios apply: those written for the other profile are skipped, with
// the reason.
func TestClients_Profile(t *testing.T) {
	for _, tc := range []struct {
		opts                targets.ClientOptions
		profile, observer   string
		grpcLacks, envLacks string
	}{
		{targets.ClientOptions{Target: targets.BuiltinReference}, "grpc", "csds",
			"", "needs an Envoy-profile client (--client-profile envoy)"},
		{targets.ClientOptions{Target: targets.BuiltinGRPCGo}, "grpc", "csds",
			"", "needs an Envoy-profile client (--client-profile envoy)"},
		{targets.ClientOptions{Command: "my-client"}, "grpc", "csds",
			"", "needs an Envoy-profile client (--client-profile envoy)"},
		{targets.ClientOptions{Target: "container:envoyproxy/envoy:v1"}, "envoy", "admin",
			"written for the gRPC client profile; the client runs the envoy profile", ""},
		{targets.ClientOptions{Target: targets.BuiltinReference, Profile: "envoy"}, "envoy", "admin",
			"written for the gRPC client profile; the client runs the envoy profile", ""},
		{targets.ClientOptions{Command: "envoy -c {{.EnvoyBootstrap}}", Profile: "envoy"}, "envoy", "admin",
			"written for the gRPC client profile; the client runs the envoy profile", ""},
		{targets.ClientOptions{Target: "container:envoyproxy/envoy:v1", Profile: "grpc", Observer: "admin"}, "grpc", "admin",
			"", "needs an Envoy-profile client (--client-profile envoy)"},
	} {
		c, err := targets.NewClients(tc.opts)
		require.NoError(t, err, "%+v", tc.opts)
		assert.Equal(t, tc.profile, c.Options().Profile, "%+v", tc.opts)
		assert.Equal(t, tc.observer, c.Options().Observer, "%+v", tc.opts)
		grpc := &engine.Scenario{Needs: []engine.Need{targets.NeedObserver, targets.NeedGRPCProfile}}
		envoy := &engine.Scenario{Needs: []engine.Need{targets.NeedEnvoyProfile}}
		assert.Equal(t, tc.grpcLacks, c.Lacks(grpc, wire.SotWADS), "%+v", tc.opts)
		assert.Equal(t, tc.envLacks, c.Lacks(envoy, wire.SotWADS), "%+v", tc.opts)
		assert.Empty(t, c.Lacks(&engine.Scenario{}, wire.SotWADS), "a scenario of neither profile runs anywhere")
	}
	for _, tc := range []struct {
		opts targets.ClientOptions
		want string
	}{
		{targets.ClientOptions{Target: targets.BuiltinReference, Profile: "istio"}, `unknown client profile "istio" (want grpc or envoy)`},
		{targets.ClientOptions{Target: targets.BuiltinGRPCGo, Profile: "envoy"}, "builtin:grpc-go follows the grpc client profile only"},
		{targets.ClientOptions{Target: targets.BuiltinReference, Faults: []string{"no-warming"}}, "fault no-warming acts in the envoy profile only (--client-profile envoy)"},
		{targets.ClientOptions{Target: targets.BuiltinReference, Observer: "admin"}, "builtin:reference serves /config_dump in the envoy profile only"},
	} {
		_, err := targets.NewClients(tc.opts)
		assert.ErrorContains(t, err, tc.want, "%+v", tc.opts)
	}
}

// builtin:reference in the Envoy profile is observed through its admin
// interface's /config_dump.
func TestClients_ReferenceEnvoyObservedThroughConfigDump(t *testing.T) {
	c, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference, Profile: targets.ProfileEnvoy})
	require.NoError(t, err)
	run, err := c.Launch(t.Context(), targets.LaunchSpec{ServerAddr: "127.0.0.1:1", NodeID: "n", Listener: "L", Variant: wire.DeltaADS})
	require.NoError(t, err)
	defer func() { assert.NoError(t, run.Stop()) }()
	require.IsType(t, &observer.ConfigDump{}, run.Observer())
	rs, err := run.Observer().Observe(t.Context())
	require.NoError(t, err)
	assert.Empty(t, rs, "nothing received yet")
}

// A scenario whose verdict rests on a state the status view never reports
// is skipped, with the state named, never run to a false failure; the
// admin observer (/config_dump) never reports DOES_NOT_EXIST.
func TestClients_StatusLacks(t *testing.T) {
	missing := &engine.Scenario{Needs: []engine.Need{targets.NeedObserver, targets.NeedStatus(observer.DoesNotExist)}}
	nacked := &engine.Scenario{Needs: []engine.Need{targets.NeedObserver, targets.NeedStatus(observer.Nacked)}}
	for _, tc := range []struct {
		opts                targets.ClientOptions
		missLacks, nackLack bool
	}{
		{targets.ClientOptions{Target: targets.BuiltinReference}, false, false},
		{targets.ClientOptions{Target: targets.BuiltinReference, StatusLacks: []observer.State{observer.DoesNotExist}}, true, false},
		{targets.ClientOptions{Target: targets.BuiltinReference, StatusLacks: []observer.State{observer.Nacked}}, false, true},
		{targets.ClientOptions{Target: targets.BuiltinReference, Profile: targets.ProfileEnvoy}, true, false},
		{targets.ClientOptions{Command: "true", Observer: targets.ObserveAdmin}, true, false},
	} {
		c, err := targets.NewClients(tc.opts)
		require.NoError(t, err, "%+v", tc.opts)
		if tc.missLacks {
			assert.Contains(t, c.Lacks(missing, wire.SotWADS), "status view does not report DOES_NOT_EXIST", "%+v", tc.opts)
		} else {
			assert.Empty(t, c.Lacks(missing, wire.SotWADS), "%+v", tc.opts)
		}
		if tc.nackLack {
			assert.Contains(t, c.Lacks(nacked, wire.SotWADS), "status view does not report NACKED", "%+v", tc.opts)
		} else {
			assert.Empty(t, c.Lacks(nacked, wire.SotWADS), "%+v", tc.opts)
		}
	}
	_, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference, StatusLacks: []observer.State{"BOGUS"}})
	assert.ErrorContains(t, err, "unknown status-view state")
}
