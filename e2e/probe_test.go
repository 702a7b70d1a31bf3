//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
)

// A control plane without a test build serves no fixture API: the harness
// must find out which variants it serves, and skip the others with that
// reason rather than fail them. go-control-plane with ADS alone is such a
// server; the CLI is run against it as a user would run it.
var _ = Describe("a server without a fixture", Ordered, Label("server", "go-control-plane", "probe"), func() {
	var bin, addr string
	BeforeAll(func() {
		bin = buildCLI()
		proc, line, err := startAnnouncing([]string{peerDir("go-control-plane") + "/bin/gcp-server", "-flavour", "snapshot", "-ads-only"}, "xds=")
		require.NoError(GinkgoT(), err, "starting gcp-server (did make e2e-deps run?)")
		DeferCleanup(func() { _ = proc.Stop(2 * time.Second) })
		addr, _, _ = strings.Cut(line, " ")
	})

	It("runs the variants it serves and skips the others, naming the service", func() {
		out := filepath.Join(GinkgoT().TempDir(), "report.json")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "xdsconform"), "server", "--target", addr,
			"--known-failing", "internal/knownfailing/go-control-plane-snapshot.txt", "--json", out)
		cmd.Dir = repoRoot()
		console, err := cmd.CombinedOutput()
		require.NoError(GinkgoT(), err, "%s", console)
		b, err := os.ReadFile(out)
		require.NoError(GinkgoT(), err)
		var run results.Run
		require.NoError(GinkgoT(), json.Unmarshal(b, &run))
		assert.Equal(GinkgoT(), "sotw-ads, delta-ads", run.Options["target_serves"])
		var ran, notServed int
		for _, r := range run.Results {
			switch {
			case r.Outcome != results.Skip:
				ran++
				assert.Contains(GinkgoT(), r.Variant, "-ads", "%s ran in a variant the server does not serve", r.FullName())
			case strings.HasPrefix(r.Message, "the target does not serve "):
				notServed++
				assert.Contains(GinkgoT(), r.Variant, "-pertype", r.FullName())
				assert.Contains(GinkgoT(), r.Message, "(Unimplemented)")
			}
		}
		assert.NotZero(GinkgoT(), ran, "nothing ran")
		assert.NotZero(GinkgoT(), notServed, "no pair skipped for a service the server does not serve")
	})
})
