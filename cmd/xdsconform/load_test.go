package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/loadreport"
)

func TestLoadExitCodes(t *testing.T) {
	unreachable := closedPort(t)
	checkExitCodes(t, []exitCase{
		{"no target", []string{"load"}, exitUsage, "--target is required"},
		{"no fixture for shard 0", []string{"load", "--target", unreachable}, exitUsage, "fixture"},
		{"bad shard", []string{"load", "--target", "builtin:reference", "--shard", "2"}, exitUsage, "--shard \"2\": want I/N"},
		{"shard out of range", []string{"load", "--target", "builtin:reference", "--shard", "3/3", "--run-id", "x"}, exitUsage, "--shard 3/3"},
		{"shards without a run id", []string{"load", "--target", "builtin:reference", "--shard", "1/3"}, exitUsage, "--run-id"},
		{"bad profile", []string{"load", "--target", "builtin:reference", "--profile", "XDS=a"}, exitUsage, "--profile"},
		{"bad variant", []string{"load", "--target", "builtin:reference", "--variant", "rest-ish"}, exitUsage, "--variant"},
		{"bad transcripts", []string{"load", "--target", "builtin:reference", "--transcripts", "all"}, exitUsage, "--transcripts"},
		{"bad churn types", []string{"load", "--target", "builtin:reference", "--churn-types", "CDS,XDS"}, exitUsage, "--churn-types"},
		{"no clients", []string{"load", "--target", "builtin:reference", "--clients", "0"}, exitUsage, "--clients 0"},
		{"unreachable", []string{"load", "--target", unreachable, "--fixture", unreachable, "--connect-timeout", "1s"}, exitUnreachable, unreachable},
	})
}

// The Bar's command, at a scale a unit test affords: exit 0 and a JSON
// report giving push→ACK p99 and convergence per phase.
func TestLoadWritesJSON(t *testing.T) {
	js := filepath.Join(t.TempDir(), "out.json")
	code, stdout, stderr := run(t, "load", "--target", "builtin:go-control-plane", "--clients", "50", "--duration", "1s", "--churn", "5", "--json", js)
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "churn")
	assert.Contains(t, stderr, "load: initial-sync", "progress goes to stderr")
	rep := readLoad(t, js)
	require.NotEmpty(t, rep.Phases)
	for _, p := range rep.Phases {
		if p.Name == loadreport.PhaseChurn {
			assert.Equal(t, int64(5*50), p.Latency.Count())
			assert.Positive(t, p.Latency.Quantile(0.99))
			assert.Equal(t, int64(5), p.Convergence.Count())
		}
	}
}

// --json - puts the report, and only it, on stdout.
func TestLoadJSONToStdout(t *testing.T) {
	code, stdout, stderr := run(t, "load", "--target", "builtin:reference", "--clients", "5", "--duration", "200ms", "--json", "-")
	require.Equal(t, exitOK, code, stderr)
	var rep loadreport.Report
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep), stdout)
	assert.Equal(t, loadreport.Format, rep.Format)
}

// Ctrl-C during the churn writes the report of what ran, and exits 130.
func TestLoadInterruptWritesReport(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errw := &cancelOnWrite{marker: "load: churn", cancel: cancel}
	var out bytes.Buffer
	code := execute(ctx, []string{"load", "--target", "builtin:reference", "--clients", "10", "--duration", "1m", "--json", js}, &out, errw)
	assert.Equal(t, exitInterrupted, code, errw.String())
	rep := readLoad(t, js)
	assert.True(t, rep.Interrupted)
	assert.Equal(t, loadreport.PhaseChurn, rep.Phases[len(rep.Phases)-1].Name)
}

func readLoad(t *testing.T, path string) *loadreport.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep loadreport.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	return &rep
}
