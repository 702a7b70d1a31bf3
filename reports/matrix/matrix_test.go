package matrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
)

// writeReport writes run as the CLI's JSON report at dir/name.
func writeReport(t *testing.T, path string, run results.Run) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, reports.WriteFiles(run, "", path))
}

// cliRun is what `xdsconform run --impl-name NAME --json` writes: both
// suites in one report, no e2e options.
func cliRun(name, version string) results.Run {
	return results.Run{
		Role: results.RoleBoth, Target: "server: a; client: b", Options: map[string]string{"timeout": "5s"},
		Implementation: &results.Implementation{Name: name, Version: version},
		Results: []results.Result{
			{ID: "server/ack/x", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass, Requirements: []string{"ACK-1"}},
			{ID: "server/ack/x", Variant: "delta-ads", Level: results.Must, Outcome: results.Fail, Requirements: []string{"ACK-1"}, RulesBroken: []string{"ACK-1"}, Message: "ACK-1 (MUST): broken\nmore"},
			{ID: "client/ack/y", Variant: "sotw-ads", Level: results.Must, Outcome: results.Skip, Message: "the client does not speak sotw-ads"},
		},
	}
}

// TestCLIReports checks that reports written by the CLI are accepted,
// credited to their implementation metadata and split by role.
func TestCLIReports(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, filepath.Join(dir, "mine", "run.json"), cliRun("my-cp", "v1.2"))
	single := filepath.Join(t.TempDir(), "other.json")
	writeReport(t, single, cliRun("other", "v3"))
	runs, err := Load(dir + "," + single)
	require.NoError(t, err)
	require.Len(t, runs, 4, "two implementations, two roles each")
	page := Render(runs)
	assert.Contains(t, page, "| my-cp | v1.2 | no | 1 | 1 | 0 | 0 |")
	assert.Contains(t, page, "| other | v3 | no | 1 | 1 | 0 | 0 |")
	assert.Contains(t, page, "| `server/ack/x` | ✓ 1 ✗ delta-ads | ✓ 1 ✗ delta-ads |")
	assert.Contains(t, page, "- `server/ack/x[delta-ads]` [broke ACK-1, MUST]: not in the known-failing list: ACK-1 (MUST): broken")
	assert.Contains(t, page, "- my-cp: 1 × the client does not speak sotw-ads")
}

// TestUnnamedReport checks that a report naming no implementation is
// refused with the flag that names one.
func TestUnnamedReport(t *testing.T) {
	dir := t.TempDir()
	writeReport(t, filepath.Join(dir, "x", "run.json"), cliRun("", ""))
	_, err := Load(dir)
	assert.ErrorContains(t, err, "--impl-name")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x", "run.json"), []byte(`{"schema_version": "7"}`), 0o644))
	_, err = Load(dir)
	assert.ErrorContains(t, err, "not an xdsconform JSON report")
}

// TestHostileNames checks that names and messages from a report cannot
// add table cells, links or HTML to the matrix.
func TestHostileNames(t *testing.T) {
	dir := t.TempDir()
	run := cliRun("a | b <img src=x onerror=alert(1)> [x](https://evil.example)", "v1\n| injected |")
	run.Results[1].Message = "x | y <script>z</script>"
	writeReport(t, filepath.Join(dir, "h", "run.json"), run)
	runs, err := Load(dir)
	require.NoError(t, err)
	page := Render(runs)
	assert.Contains(t, page, `| a \| b &lt;img src=x onerror=alert(1)> [x]\(https\://evil.example) | v1 \| injected \| | no |`)
	assert.Contains(t, page, `x \| y &lt;script>z&lt;/script>`)
	assert.NotContains(t, page, "\n| injected")
}

// TestCommittedResults checks the committed heavy results still load:
// the e2e reports name their peer in their options, not in metadata.
func TestCommittedResults(t *testing.T) {
	dir := filepath.Join("..", "..", "e2e", "heavy-results")
	runs, err := Load(dir)
	require.NoError(t, err)
	var names []string
	for _, r := range runs {
		names = append(names, r.Options["peer"])
	}
	// One run per peer directory, named as the directory is.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var peers []string
	for _, e := range entries {
		if e.IsDir() {
			peers = append(peers, e.Name())
		}
	}
	require.NotEmpty(t, peers)
	assert.Equal(t, peers, names)
	assert.True(t, strings.HasPrefix(Render(runs), "# Compatibility\n"))
}

// TestBlockedAndInconclusive checks that a blocked pair shows as failing
// the rule that blocked it, and an inconclusive one as neither a pass nor
// a failure, in a column and a mark of its own; and that a pair a peer's
// list marks timing-dependent shows as its usual failure even when the
// run found it inconclusive, so that the same peers give the same file.
func TestBlockedAndInconclusive(t *testing.T) {
	run := cliRun("my-cp", "v1.2")
	run.Results = append(run.Results,
		results.Result{ID: "server/ack/z", Variant: "sotw-ads", Level: results.May, Outcome: results.Blocked, Requirements: []string{"ACK-8"},
			RulesBroken: []string{"RES-1"}, BrokenLevel: results.Must, BlockedBy: "RES-1", Message: "blocked by RES-1 (MUST): a precondition failed: no CDS response"},
		results.Result{ID: "server/ack/w", Variant: "delta-ads", Level: results.Should, Outcome: results.Inconclusive, Requirements: []string{"UPD-2"},
			Message: "the harness's own lag could explain a timing verdict either way"},
	)
	dir := t.TempDir()
	writeReport(t, filepath.Join(dir, "mine", "run.json"), run)
	runs, err := Load(dir)
	require.NoError(t, err)
	page := Render(runs)
	assert.Contains(t, page, "| peer | version | patched | pass | fail | MAY not supported | inconclusive | skipped |\n")
	assert.Contains(t, page, "| my-cp | v1.2 | no | 1 | 2 | 0 | 1 | 0 |\n", "the blocked pair counts as a failure")
	assert.Contains(t, page, "| `server/ack/z` | ✗ sotw-ads |")
	assert.Contains(t, page, "| `server/ack/w` | ? delta-ads |")
	assert.Contains(t, page, "\n? marks the variants in which the harness's own scheduling lag")
	assert.Contains(t, page, "- `server/ack/z[sotw-ads]` [blocked by RES-1, MUST]: not in the known-failing list: blocked by RES-1 (MUST): a precondition failed: no CDS response")
	assert.NotContains(t, page, "server/ack/w[delta-ads]` [", "an inconclusive pair is no failure to explain")
	assert.NotContains(t, strings.SplitN(page, "## xDS clients", 2)[1], "inconclusive |", "the client suite has none: its table is as before")

	// consul's list marks server/nack/no-resend-loop[delta-ads] timing-dependent.
	e2e := results.Run{Role: "server", Target: "127.0.0.1:18000", Options: map[string]string{"peer": "consul", "version": "v1"},
		Results: []results.Result{{ID: "server/nack/no-resend-loop", Variant: "delta-ads", Level: results.Should, Outcome: results.Inconclusive,
			Requirements: []string{"ACK-5"}, Message: "lag", Timing: &results.Timing{Reruns: 1}}}}
	dir = t.TempDir()
	writeReport(t, filepath.Join(dir, "consul", "nack.json"), e2e)
	runs, err = Load(dir)
	require.NoError(t, err)
	got := runs[0].Results[0]
	assert.Equal(t, results.Fail, got.Outcome)
	assert.Equal(t, []string{"ACK-5", "UPD-1"}, got.RulesBroken)
	assert.Nil(t, got.Timing)
	assert.NotContains(t, Render(runs), "inconclusive")
}
