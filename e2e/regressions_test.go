//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/regressions"
	"github.com/xdsconform/xdsconform/results"
)

// regressionsDir holds the scenario files of real bugs in real peers, one
// per bug, named after the peer (scenarios/regressions/README.md).
var regressionsDir = filepath.Join("..", "scenarios", "regressions")

// regressionFiles are the files, read once as the specs are built; a file
// that does not load fails the spec below, and no peer runs any.
var regressionFiles, regressionsErr = regressions.Load(regressionsDir)

var _ = Describe("scenarios/regressions", Label(regressions.Area), func() {
	It("loads", func() {
		require.NoError(GinkgoT(), regressionsErr)
	})
})

// regressionsOf is the regression files of peer.
func regressionsOf(peer string) []regressions.File {
	return regressions.For(regressionFiles, peer)
}

// runRegressions runs p's regression files against the running peer. The
// bug a file reproduces is still there as long as p's list beside the
// files says so: the file then fails, breaking the listed rule. A listed
// file that passes fails the spec, saying the bug looks fixed.
func runRegressions(p peer, env engine.Env, target string, files []regressions.File) {
	t := GinkgoT()
	known, err := regressions.KnownFailing(regressionsDir, p.Name)
	require.NoError(t, err)
	pairs, err := engine.Expand(regressions.Scenarios(files), engine.Selection{})
	require.NoError(t, err)
	started := time.Now()
	rs := runPairs(p, env, pairs, known)
	writeReport(p, filepath.Join(regressions.Area, "report"), target, started, rs)
	list := filepath.Join("scenarios", "regressions", regressions.KnownFailingDir, p.Name+".txt")
	judge(rs, known, func(r results.Result, reason string) string {
		return fmt.Sprintf("%s: the bug looks fixed in %s: %s lists it (%s), but its outcome is %s: %s\n"+
			"If the peer now does what the rule asks (read the transcript: XDSCONFORM_E2E_TRANSCRIPTS=DIR), "+
			"delete the entry and keep the file, which now guards the fix.",
			r.FullName(), p.Version, list, reason, r.Outcome, r.Message)
	})
}
