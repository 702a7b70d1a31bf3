package scenarios

import (
	"context"
	"testing"

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
