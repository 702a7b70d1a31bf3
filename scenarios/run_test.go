package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	// The built-in targets the tests run against.
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
)

// testTimeouts keep the self-proof quick: built-in targets answer in
// microseconds, so a second is ample for anything that must happen.
var testTimeouts = engine.Timeouts{Expect: 2 * time.Second, Quiet: 200 * time.Millisecond, Scenario: 30 * time.Second}

// runServerSuite runs the selected server scenarios against a built-in target.
func runServerSuite(t testing.TB, target string, faults []refserver.Fault, sel engine.Selection) []results.Result {
	t.Helper()
	return runTarget(t, targets.ServerOptions{Target: target, Faults: faultNames(faults...)}, engine.Config{Timeouts: testTimeouts}, sel)
}

// faultNames are the names of faults, as targets takes them.
func faultNames(faults ...refserver.Fault) []string {
	var out []string
	for _, f := range faults {
		out = append(out, string(f))
	}
	return out
}

// runServerSuiteWith runs the selection against the reference server with
// one fault switched on.
func runServerSuiteWith(t testing.TB, to engine.Timeouts, fault refserver.Fault, sel engine.Selection) []results.Result {
	t.Helper()
	return runTarget(t, targets.ServerOptions{Target: targets.BuiltinReference, Faults: faultNames(fault)}, engine.Config{Timeouts: to}, sel)
}

// runTarget starts the built-in target opts describes and runs the
// selected server scenarios against it with cfg (its Env set here).
func runTarget(t testing.TB, opts targets.ServerOptions, cfg engine.Config, sel engine.Selection) []results.Result {
	t.Helper()
	srv, err := targets.StartServer(context.Background(), opts)
	require.NoError(t, err)
	defer srv.Close()
	return runOn(t, srv, cfg, sel)
}

// runOn runs the selected server scenarios against srv with cfg.
func runOn(t testing.TB, srv *targets.Server, cfg engine.Config, sel engine.Selection) []results.Result {
	t.Helper()
	ctx := context.Background()
	pairs, err := engine.Expand(Server(), sel)
	require.NoError(t, err)
	cfg.Env = srv
	rs, interrupted := engine.Run(ctx, pairs, cfg)
	require.False(t, interrupted)
	return rs
}
