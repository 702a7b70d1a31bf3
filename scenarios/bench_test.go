package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
)

// benchSuite runs the whole server suite against a built-in target with the
// CLI's default timeouts, as a user would, and reports the wall time per
// run (ns/op) and the pairs run.
func benchSuite(b *testing.B, target string) {
	ctx := context.Background()
	srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: target})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	pairs, err := engine.Expand(Server(), engine.Selection{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rs, _ := engine.Run(ctx, pairs, engine.Config{Env: srv, Timeouts: engine.DefaultTimeouts})
		if s := results.Summarize(rs); target == targets.BuiltinReference && !s.OK() {
			b.Fatalf("reference run not clean: %+v", s)
		}
	}
	b.ReportMetric(float64(len(pairs)), "pairs/op")
}

// BenchmarkServerSuiteReference is the bar of issue 2: the full server suite
// against builtin:reference in under 5 s wall on two cores.
func BenchmarkServerSuiteReference(b *testing.B) { benchSuite(b, targets.BuiltinReference) }

// BenchmarkServerSuiteGoControlPlane is what `xdsconform run` costs; its
// known failures wait out the expect timeout, which dominates.
func BenchmarkServerSuiteGoControlPlane(b *testing.B) { benchSuite(b, targets.BuiltinGoControlPlane) }

// benchClientSuite runs the client suite against a built-in client with
// the CLI's default timeouts. skipDNE leaves out the scenarios that wait on
// the client's does-not-exist timer, which set a floor of their own.
func benchClientSuite(b *testing.B, opts targets.ClientOptions, skipDNE bool) {
	clients, err := targets.NewClients(opts)
	if err != nil {
		b.Fatal(err)
	}
	sel := engine.Selection{}
	if skipDNE {
		sel.Skip = []string{"client/dne/timer", "client/dne/late-resource-accepted", "client/dne/held-survive-reconnect",
			"client/dne/timer-restarts-on-reconnect",
			"client/errors/timer-cancelled"} // waits the timer out, to see it never fire
	}
	pairs, err := engine.Expand(Client(), sel)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		rs, _ := engine.Run(context.Background(), pairs, engine.Config{Env: clients, Timeouts: engine.DefaultTimeouts})
		if s := results.Summarize(rs); opts.Target == targets.BuiltinReference && !s.OK() {
			b.Fatalf("reference run not clean: %+v", s)
		}
	}
	b.ReportMetric(float64(len(pairs)), "pairs/op")
}

// BenchmarkClientSuiteReference is the bar of issue 3: the client suite
// against builtin:reference, without the timer scenarios, under 5 s.
func BenchmarkClientSuiteReference(b *testing.B) {
	benchClientSuite(b, targets.ClientOptions{Target: targets.BuiltinReference}, true)
}

// BenchmarkClientSuiteReferenceWithDNE adds the timer scenarios, with the
// reference client's timer set to 3 s: as on the CLI, the timer must be
// longer than the quiet window (1.5 s), which some of them watch inside it.
func BenchmarkClientSuiteReferenceWithDNE(b *testing.B) {
	benchClientSuite(b, targets.ClientOptions{Target: targets.BuiltinReference, DNETimer: 3 * time.Second}, false)
}

// BenchmarkClientSuiteGRPCGo is the client half of `xdsconform run`:
// grpc-go's fixed 15 s timer sets its length.
func BenchmarkClientSuiteGRPCGo(b *testing.B) {
	benchClientSuite(b, targets.ClientOptions{Target: targets.BuiltinGRPCGo}, false)
}

// BenchmarkClientSuiteReferenceEnvoy is the Envoy profile's part of the
// client suite against builtin:reference in that profile (the gRPC
// profile's scenarios are skipped at no cost).
func BenchmarkClientSuiteReferenceEnvoy(b *testing.B) {
	benchClientSuite(b, targets.ClientOptions{Target: targets.BuiltinReference, Profile: targets.ProfileEnvoy}, true)
}
