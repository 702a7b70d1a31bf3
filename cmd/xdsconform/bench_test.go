package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkDefaultRun times `xdsconform run`, the README's first command, as
// a user runs it: the binary built as `make build` builds it, in a process
// of its own, both suites against the built-in peers with the defaults.
// It reports the median of the runs (-benchtime 3x: the median of 3), the
// figure the issue that overlapped the timed pairs with the rest is held
// to (20 s on an idle 2-core machine). grpc-go's fixed 15 s does-not-exist
// timer is its floor.
func BenchmarkDefaultRun(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "xdsconform")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("building the binary: %v\n%s", err, out)
	}
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		out, err := exec.Command(bin, "run").CombinedOutput()
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatalf("xdsconform run: %v\n%s", err, out)
		}
	}
	slices.Sort(took)
	b.ReportMetric(took[len(took)/2].Seconds(), "median-s")
}
