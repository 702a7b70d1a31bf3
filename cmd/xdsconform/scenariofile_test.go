package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scenarioFileDir holds the scenario files of package scenariofile's
// tests.
const scenarioFileDir = "../../scenarios/scenariofile/testdata/"

// --scenario-file runs a file's scenarios with the engine's exit codes: 0
// against a server that keeps the rule, 1 naming the rule against one
// that breaks it (the reference server with a fault, go-control-plane).
func TestScenarioFileFlag(t *testing.T) {
	file := scenarioFileDir + "delta-repeat-subscribe.yaml"
	dir := t.TempDir()

	code, out, stderr := run(t, "server", "--target", "builtin:reference", "--scenario-file", file, "--json", filepath.Join(dir, "pass.json"))
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "PASS  server/files/delta-repeat-subscribe[delta-ads]")
	run0 := readRun(t, filepath.Join(dir, "pass.json"))
	assert.Len(t, run0.Results, 2, "only the file's scenario, in its two variants")

	code, out, stderr = run(t, "server", "--target", "builtin:reference", "--fault", "no-resend-on-resubscribe", "--scenario-file", file)
	assert.Equal(t, 1, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "rules broken: DELTA-3")

	code, out, stderr = run(t, "server", "--target", "builtin:go-control-plane", "--scenario-file", file, "--variant", "delta-ads")
	assert.Equal(t, 1, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "FAIL  server/files/delta-repeat-subscribe[delta-ads]")
	assert.Contains(t, out, "rules broken: DELTA-3")

	// A re-expressed built-in against go-control-plane: it runs, and
	// passes where the built-in passes.
	code, out, stderr = run(t, "server", "--target", "builtin:go-control-plane", "--scenario-file", scenarioFileDir+"builtin/ack.yaml", "--run", "server/ack/*")
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "PASS  server/ack/no-resend-after-ack[sotw-ads]")

	// Client role, and the selection flags among a file's scenarios.
	code, out, stderr = run(t, "client", "--target", "builtin:reference", "--client-variants", "sotw-ads,delta-ads", "--scenario-file", scenarioFileDir+"builtin/client.yaml", "--run", "client/nack/recovery")
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "PASS  client/nack/recovery[sotw-ads]")
	assert.NotContains(t, out, "unsolicited-push")
}

// A scenario file that cannot run is a usage error of one line naming the
// file and line, before anything starts.
func TestScenarioFileErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\nid: server/x/y\ntitle: t\nsteps:\n  - expect: {type: EDS, rule: NOPE-1}\n"), 0o644))
	checkExitCodes(t, []exitCase{
		{"unknown rule", []string{"server", "--target", "builtin:reference", "--scenario-file", bad}, exitUsage, bad + `:6: unknown rule "NOPE-1"`},
		{"missing file", []string{"server", "--target", "builtin:reference", "--scenario-file", filepath.Join(dir, "nope.yaml")}, exitUsage, "nope.yaml"},
		{"other role", []string{"client", "--target", "builtin:reference", "--scenario-file", scenarioFileDir + "delta-repeat-subscribe.yaml"}, exitUsage, "server/files/delta-repeat-subscribe is a server-role scenario: run it with xdsconform server"},
		{"run matches none of the file's", []string{"server", "--target", "builtin:reference", "--scenario-file", scenarioFileDir + "delta-repeat-subscribe.yaml", "--run", "server/nonce/*"}, exitUsage, "matches no scenario"},
	})
}

// The bug-report loop through the CLI: a pair's transcript out of a JSON
// report is scaffolded into a file that runs again (exit 0), and fails
// against the fault that breaks what was recorded (exit 1).
func TestScaffoldFromReport(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "run.json")
	pair := "server/nack/new-version-after-nack[sotw-ads]"
	code, out, stderr := run(t, "server", "--target", "builtin:reference", "--run", pair, "--json", report, "--transcripts", "all")
	require.Equal(t, 0, code, "%s\n%s", out, stderr)

	file := filepath.Join(dir, "bug.yaml")
	code, out, stderr = run(t, "scaffold", "--report", report, "--pair", pair, "-o", file)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "wrote "+file+": server/scaffold/nack-new-version-after-nack")
	text, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(text), "# - The transcript is of scenario server/nack/new-version-after-nack[sotw-ads],")
	assert.Contains(t, string(text), "which cites ACK-9.")
	assert.Contains(t, string(text), "- nack: {of: r1")

	code, out, stderr = run(t, "server", "--target", "builtin:reference", "--scenario-file", file)
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	code, out, stderr = run(t, "server", "--target", "builtin:reference", "--fault", "close-on-nack", "--scenario-file", file)
	assert.Equal(t, 1, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "rules broken: ACK-9")

	code, out, _ = run(t, "scaffold", "--report", report, "--pair", pair, "-o", "-")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "apiVersion: xdsconform.io/v1alpha1")

	notTranscript := filepath.Join(dir, "not.json")
	require.NoError(t, os.WriteFile(notTranscript, []byte(`{"format":"something else"}`), 0o644))
	checkExitCodes(t, []exitCase{
		{"no output", []string{"scaffold", "--report", report, "--pair", pair}, exitUsage, "-o FILE.yaml is required"},
		{"nothing to read", []string{"scaffold", "-o", file}, exitUsage, "give a TRANSCRIPT file"},
		{"pair without report", []string{"scaffold", notTranscript, "--pair", pair, "-o", file}, exitUsage, "--report and --pair go together"},
		{"transcript and report", []string{"scaffold", notTranscript, "--report", report, "--pair", pair, "-o", file}, exitUsage, "give a TRANSCRIPT or --report, not both"},
		{"report without pair", []string{"scaffold", "--report", report, "-o", file}, exitUsage, "--report and --pair go together"},
		{"unknown pair", []string{"scaffold", "--report", report, "--pair", "server/x/y[sotw-ads]", "-o", file}, exitUsage, "no such pair in the report"},
		{"bad pair", []string{"scaffold", "--report", report, "--pair", "server/x/y", "-o", file}, exitUsage, "want ID[variant]"},
		{"not a report", []string{"scaffold", "--report", notTranscript, "--pair", pair, "-o", file}, exitUsage, "not an xdsconform JSON report"},
		{"not a transcript", []string{"scaffold", notTranscript, "-o", file}, exitUsage, "transcript file"},
		{"bad against", []string{"scaffold", "--report", report, "--pair", pair, "--against", "proxy", "-o", file}, exitUsage, `--against "proxy"`},
	})
}

// list --scenario-file lists a file's scenarios of both roles, with what
// they cite and need, and refuses a bad file as a run would: a check of a
// file that needs no target.
func TestListScenarioFile(t *testing.T) {
	code, out, stderr := run(t, "list", "--json", "--scenario-file", scenarioFileDir+"builtin/client.yaml", "--scenario-file", scenarioFileDir+"delta-repeat-subscribe.yaml")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `"id": "client/nack/recovery"`)
	assert.Contains(t, out, `"id": "server/files/delta-repeat-subscribe"`)
	assert.Contains(t, out, `"requirements": [
      "DELTA-3"
    ]`)
	assert.NotContains(t, out, "server/nonce/", "only the files' scenarios")

	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\nid: server/x/y\ntitle: t\nsteps:\n  - ack: {of: nothing}\n"), 0o644))
	checkExitCodes(t, []exitCase{{"bad file", []string{"list", "--scenario-file", bad}, exitUsage, bad + `:6: undefined label "nothing"`}})
}
