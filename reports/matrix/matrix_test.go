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
		Role: "server+client", Target: "server: a; client: b", Options: map[string]string{"timeout": "5s"},
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
	runs, err := Load(filepath.Join("..", "..", "e2e", "heavy-results"))
	require.NoError(t, err)
	var names []string
	for _, r := range runs {
		names = append(names, r.Options["peer"])
	}
	assert.Equal(t, []string{"consul", "envoy-gateway"}, names)
	assert.True(t, strings.HasPrefix(Render(runs), "# Compatibility\n"))
}
