package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/reports/schema"
)

// shardReport writes the load report of one shard of a two-shard run:
// client latencies of 10 ms × (shard+1) for 10 changes, one client of
// shard 1 missing the last change.
func shardReport(t *testing.T, dir string, shard int, edit ...func(*loadreport.Report)) string {
	t.Helper()
	started := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	r := &loadreport.Report{
		HarnessVersion: "dev", Target: "cp.example:18000", RunID: "run-1",
		Plan: loadreport.Plan{Clients: 4, Nodes: 4, Profile: "grpc", Resources: []string{"cds/*"}, Variant: "sotw-ads",
			StreamsPerConn: 1, Churn: 10, DurationNS: int64(time.Second), Shards: 2, Transcripts: "off"},
		Shards: []int{shard}, Started: started, DurationNS: int64(2 * time.Second),
		Harness: []loadreport.Harness{{Shard: shard, Streams: 2, CPUPercent: 12, Cores: 2, PeakRSSBytes: 1 << 20, BytesPerStream: 1 << 19, Saturated: shard == 1}},
	}
	churn := loadreport.Phase{Name: loadreport.PhaseChurn, StartNS: 0, EndNS: int64(2 * time.Second), Clients: 2, Changes: 10, Latency: loadreport.NewHistogram()}
	for id := int64(1); id <= 10; id++ {
		c := loadreport.Change{ID: id, Phase: loadreport.PhaseChurn, Resource: "cds/c", OriginUnixNS: started.Add(time.Duration(id) * 100 * time.Millisecond).UnixNano(), Expected: 2}
		for client := range 2 {
			if shard == 1 && client == 1 && id == 10 {
				churn.Missed++
				continue
			}
			lat := time.Duration(shard+1) * 10 * time.Millisecond
			churn.Latency.Record(lat)
			churn.Acks++
			churn.Responses++
			c.Acked++
			c.LastAckNS = int64(lat)
		}
		churn.Expected += c.Expected
		r.Changes = append(r.Changes, c)
	}
	churn.Convergence = loadreport.Convergence(r.Changes, loadreport.PhaseChurn)
	churn.Amplification = loadreport.Amplification(churn.Responses, churn.Expected)
	r.Phases = []loadreport.Phase{churn}
	r.Timeline = []loadreport.Second{{UnixS: started.Unix(), Responses: churn.Responses, Acks: churn.Acks, LatencySumNS: churn.Acks * int64(time.Duration(shard+1)*10*time.Millisecond), LatencyMaxNS: int64(time.Duration(shard+1) * 10 * time.Millisecond)}}
	for _, e := range edit {
		e(r)
	}
	var b bytes.Buffer
	require.NoError(t, loadreport.WriteJSON(&b, r))
	f, err := os.CreateTemp(dir, "shard-*.json")
	require.NoError(t, err)
	_, err = f.Write(b.Bytes())
	require.NoError(t, err)
	require.NoError(t, f.Close())
	return f.Name()
}

func TestReportMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := shardReport(t, dir, 0), shardReport(t, dir, 1)
	js, md, page := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.md"), filepath.Join(dir, "run.html")
	code, stdout, stderr := run(t, "report", "merge", "--json", js, "--markdown", md, "--html", page, b, a)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stdout)
	assert.Empty(t, stderr)

	m := readLoad(t, js)
	assert.Equal(t, []int{0, 1}, m.Shards)
	churn := m.Phases[0]
	assert.Equal(t, int64(39), churn.Acks)
	assert.Equal(t, int64(1), churn.Missed)
	assert.Equal(t, int64(10), churn.Changes)
	assert.Equal(t, int64(39), churn.Latency.Count())
	assert.Equal(t, int64(9), churn.Convergence.Count(), "change 10 did not reach one client of shard 1")
	assert.Equal(t, int64(39), m.Timeline[0].Acks)

	summary, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(summary), "| churn | 4 | 10 | 39 | 39 | 0 | 0 | 1 | 0 | 0 | 0.975 |")
	assert.Contains(t, string(summary), "**SATURATED**")
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), "<svg")

	// Nothing asked: the Markdown summary on standard output.
	code, stdout, stderr = run(t, "report", "merge", a, b)
	require.Equal(t, exitOK, code, stderr)
	assert.Equal(t, string(summary), stdout)

	// "-" is standard output; one shard alone is rendered as it is, with
	// a note that the other is missing.
	code, stdout, stderr = run(t, "report", "merge", "--json", "-", a)
	require.Equal(t, exitOK, code, stderr)
	require.NoError(t, schema.ValidateLoadReport([]byte(stdout)))
	assert.Contains(t, stdout, "1 of the plan's 2 shards are not in this merge")
}

func TestReportMergeSLO(t *testing.T) {
	dir := t.TempDir()
	a, b := shardReport(t, dir, 0), shardReport(t, dir, 1)
	js := filepath.Join(dir, "run.json")

	code, stdout, stderr := run(t, "report", "merge", "--slo", "p99<50ms,missed<=1", "--json", js, a, b)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "xdsconform: SLO met: p99<50ms (20.015ms), missed<=1 (1)\n", stderr)
	m := readLoad(t, js)
	require.NotNil(t, m.SLO)
	assert.True(t, m.SLO.OK)

	code, stdout, stderr = run(t, "report", "merge", "--slo", "p99<15ms, missed=0, amplification<2", "--json", js, a, b)
	assert.Equal(t, exitFailures, code, stderr)
	assert.Empty(t, stdout)
	assert.Equal(t, "xdsconform: SLO broken: p99<15ms (20.015ms), missed=0 (1)\n", stderr)
	m = readLoad(t, js)
	assert.False(t, m.SLO.OK, "the report is written, with the verdict")
	assert.Len(t, m.SLO.Objectives, 3)

	// Standard output stays the report alone.
	code, stdout, _ = run(t, "report", "merge", "--slo", "missed=0", "--markdown", "-", a, b)
	assert.Equal(t, exitFailures, code)
	assert.Contains(t, stdout, "**❌ SLO broken**")
	assert.NotContains(t, stdout, "xdsconform:")
}

// Every bad invocation of report merge is exit 2 with one line, and
// leaves no output file; report itself still takes its reports as
// arguments.
func TestReportMergeBadInput(t *testing.T) {
	dir := t.TempDir()
	a, b := shardReport(t, dir, 0), shardReport(t, dir, 1)
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	raw, err := os.ReadFile(a)
	require.NoError(t, err)
	rawB, err := os.ReadFile(b)
	require.NoError(t, err)
	out := filepath.Join(dir, "out.json")
	checkExitCodes(t, []exitCase{
		{"no reports", []string{"report", "merge", "--json", out}, exitUsage, "name one or more JSON load reports"},
		{"two to stdout", []string{"report", "merge", "--json", "-", "--html", "-", a}, exitUsage, "only one output"},
		{"bad slo", []string{"report", "merge", "--slo", "p99<500", "--json", out, a, b}, exitUsage, `--slo: slo: "p99<500": p99 is a duration: give its unit`},
		{"unknown slo metric", []string{"report", "merge", "--slo", "p98<5ms", "--json", out, a}, exitUsage, `unknown metric "p98"`},
		{"a suite flag", []string{"report", "merge", "--certification", out, a}, exitUsage, "unknown flag: --certification"},
		{"missing", []string{"report", "merge", "--json", out, filepath.Join(dir, "nope.json")}, exitUsage, "no such file"},
		{"not json", []string{"report", "merge", "--json", out, write("x.json", "<html>")}, exitUsage, "not an xdsconform load report"},
		{"a suite report", []string{"report", "merge", "--json", out, write("s.json", `{"schema_version": "2", "role": "server", "results": []}`)}, exitUsage, "it is a suite report"},
		{"another version", []string{"report", "merge", "--json", out, write("v.json", strings.Replace(string(raw), "xdsconform.load/v1", "xdsconform.load/v9", 1))}, exitUsage, `format "xdsconform.load/v9", this build reads "xdsconform.load/v1" only`},
		{"the same shard twice", []string{"report", "merge", "--json", out, a, a}, exitUsage, "reports 1 and 2 both cover shard 0"},
		{"another run", []string{"report", "merge", "--json", out, a, shardReport(t, dir, 1, func(r *loadreport.Report) { r.RunID = "run-2" })}, exitUsage, `report 2 is of run "run-2"`},
		{"another plan", []string{"report", "merge", "--json", out, a, shardReport(t, dir, 1, func(r *loadreport.Report) { r.Plan.Clients = 8 })}, exitUsage, "report 2 ran another plan"},
		{"another target", []string{"report", "merge", "--json", out, a, shardReport(t, dir, 1, func(r *loadreport.Report) { r.Target = "x:1" })}, exitUsage, `report 2 ran against "x:1"`},
		{"out of the plan", []string{"report", "merge", "--json", out, write("o.json", strings.Replace(string(rawB), `"shards": 2`, `"shards": 1`, 1))}, exitUsage, "shards: 1 is out of the plan's 1"},
		{"an output directory", []string{"report", "merge", "--json", dir, a}, exitUsage, "is a directory"},
		// report itself: its arguments are suite reports, not a subcommand.
		{"report of a load report", []string{"report", "--markdown", out, a}, exitUsage, "not an xdsconform JSON report"},
		{"report without output", []string{"report", a}, exitUsage, "nothing to write"},
	})
	_, err = os.Stat(out)
	assert.ErrorIs(t, err, os.ErrNotExist, "no output left behind")
}
