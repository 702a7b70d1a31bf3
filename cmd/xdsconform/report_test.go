package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/internal/infile"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/reports/certify"
	"github.com/xdsconform/xdsconform/reports/htmlpage"
	"github.com/xdsconform/xdsconform/reports/matrix"
	"github.com/xdsconform/xdsconform/results"
)

// nonceReport runs the reference server's nonce scenarios, one rule
// broken, with the implementation flags given, and returns the JSON
// report's path.
func nonceReport(t *testing.T, dir string, impl ...string) string {
	t.Helper()
	path := filepath.Join(dir, "server.json")
	args := append([]string{"server", "--target", "builtin:reference", "--fault", "answer-stale-nonce",
		"--run", "server/nonce/*", "--json", path}, impl...)
	code, _, stderr := run(t, args...)
	require.Equal(t, exitFailures, code, stderr)
	return path
}

// TestImplementationRecorded checks that the suite commands record the
// implementation flags and file, and the catalogue version, in the JSON
// report.
func TestImplementationRecorded(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "impl.yaml")
	require.NoError(t, os.WriteFile(file, []byte("name: from-file\norganization: Org\nversion: v1\ncontact: team@example.com\ncapabilities: [delta-ads, xdstp]\n"), 0o644))
	got := readRun(t, nonceReport(t, dir, "--implementation", file, "--impl-version", "v2", "--impl-url", "https://example.com/cp"))
	assert.Equal(t, &results.Implementation{Name: "from-file", Organization: "Org", Version: "v2", URL: "https://example.com/cp",
		Contact: []string{"team@example.com"}, Capabilities: []string{"delta-ads", "xdstp"}}, got.Implementation)
	assert.Equal(t, requirements.CatalogueVersion(), got.CatalogueVersion)

	got = readRun(t, nonceReport(t, dir))
	assert.Nil(t, got.Implementation, "no flags, no implementation object")
	b, err := os.ReadFile(filepath.Join(dir, "server.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"implementation"`)
}

// TestReportCommand renders a report of a real run as Markdown and as a
// certification report, which validates against its schema.
func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	js := nonceReport(t, dir, "--impl-name", "ref-server", "--impl-version", "v0.1")
	md, cert := filepath.Join(dir, "summary.md"), filepath.Join(dir, "cert.yaml")
	code, stdout, stderr := run(t, "report", "--markdown", md, "--certification", cert, "--impl-organization", "Example", js)
	require.Equal(t, exitOK, code, stderr)
	assert.Empty(t, stdout)

	page, err := os.ReadFile(md)
	require.NoError(t, err)
	assert.Contains(t, string(page), "**❌ FAIL**: 1 of 1 suite run failed")
	assert.Contains(t, string(page), "## server suite of `ref-server` `v0.1`")
	assert.Contains(t, string(page), "broke `NONCE-7`")

	doc, err := os.ReadFile(cert)
	require.NoError(t, err)
	require.NoError(t, certify.Validate(doc))
	var rep certify.Report
	require.NoError(t, yaml.Unmarshal(doc, &rep))
	assert.Equal(t, certify.Implementation{Organization: "Example", Project: "ref-server", Version: "v0.1"}, rep.Implementation)
	require.Len(t, rep.Profiles, 1)
	assert.Equal(t, []string{"NONCE-7"}, rep.Profiles[0].Rules.Should.Failed)
	assert.Equal(t, []string{"--run=server/nonce/*"}, rep.Profiles[0].Selection, "a partial run says so")
	assert.Contains(t, rep.Profiles[0].Rules.Must.Passed, "NONCE-1")
	assert.Equal(t, "server.json", rep.Evidence.Reports[0].File)

	// The HTML page is the one reports/htmlpage renders of the same
	// runs, its browser test's subject.
	html := filepath.Join(dir, "report.html")
	code, _, stderr = run(t, "report", "--html", html, js)
	require.Equal(t, exitOK, code, stderr)
	got, err := os.ReadFile(html)
	require.NoError(t, err)
	r := readRun(t, js)
	var want bytes.Buffer
	require.NoError(t, htmlpage.Write(&want, []results.Run{r}))
	assert.Equal(t, want.String(), string(got))
	assert.Contains(t, string(got), "server/nonce/stale-request-ignored[sotw-ads]")

	// "-" is standard output; the flags override the report's name.
	code, stdout, stderr = run(t, "report", "--certification", "-", "--impl-name", "renamed", js)
	require.Equal(t, exitOK, code, stderr)
	require.NoError(t, certify.Validate([]byte(stdout)))
	assert.Contains(t, stdout, "project: renamed")
}

// TestReportBadInput checks that every bad invocation of the report
// command is one line and exit 2, and leaves no output file.
func TestReportBadInput(t *testing.T) {
	dir := t.TempDir()
	good := nonceReport(t, dir, "--impl-name", "a")
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	raw, err := os.ReadFile(good)
	require.NoError(t, err)
	other := write("other.json", strings.Replace(string(raw), `"name": "a"`, `"name": "b"`, 1))
	anon := write("anon.json", strings.Replace(string(raw), `"name": "a"`, `"organization": "a"`, 1))
	out := filepath.Join(dir, "out.md")
	// Inputs that would cost the reader a gigabyte, or hold it: refused
	// before reading, or as the limit is crossed.
	huge := write("huge.json", "")
	require.NoError(t, os.Truncate(huge, reports.MaxJSONReportSize+1))
	var many strings.Builder
	many.WriteString(`{"schema_version": "3", "role": "server", "results": [`)
	for i := range reports.MaxResults + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `{"id": "server/x/%d", "outcome": "pass"}`, i)
	}
	many.WriteString("]}")
	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	silent, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that never writes
	require.NoError(t, err)
	defer silent.Close()
	defer func(d time.Duration) { infile.PipeIdle = d }(infile.PipeIdle)
	infile.PipeIdle = 100 * time.Millisecond
	checkExitCodes(t, []exitCase{
		{"too large", []string{"report", "--html", out, huge}, exitUsage, "larger than 256 MiB"},
		{"too many results", []string{"report", "--html", out, write("many.json", many.String())}, exitUsage, fmt.Sprintf("more than %d results", reports.MaxResults)},
		{"a directory", []string{"report", "--html", out, dir}, exitUsage, "is a directory"},
		{"a device", []string{"report", "--html", out, "/dev/zero"}, exitUsage, "not a regular file, nor a pipe"},
		{"a silent pipe", []string{"report", "--html", out, fifo}, exitUsage, "nothing more was written to it"},
		{"no reports", []string{"report", "--markdown", out}, exitUsage, "name one or more JSON reports"},
		{"no output", []string{"report", good}, exitUsage, "nothing to write"},
		{"two to stdout", []string{"report", "--markdown", "-", "--certification", "-", good}, exitUsage, "only one output"},
		{"missing", []string{"report", "--markdown", out, filepath.Join(dir, "nope.json")}, exitUsage, "no such file"},
		{"not json", []string{"report", "--markdown", out, write("x.json", "<html>")}, exitUsage, "not an xdsconform JSON report"},
		{"not a report", []string{"report", "--markdown", out, write("y.json", `{"a": 1}`)}, exitUsage, "no schema_version"},
		{"no results", []string{"report", "--markdown", out, write("z.json", `{"schema_version": "2", "role": "server"}`)}, exitUsage, "no results"},
		{"unknown version", []string{"report", "--markdown", out, write("v.json", `{"schema_version": "99", "role": "server", "results": []}`)}, exitUsage, `schema_version "99"`},
		{"limit too small", []string{"report", "--markdown", out, "--markdown-limit", "100", good}, exitUsage, "--markdown-limit 100"},
		{"impl newline", []string{"report", "--markdown", out, "--impl-name", "a\nb", good}, exitUsage, "--impl-name"},
		{"impl url", []string{"report", "--certification", out, "--impl-url", "javascript:alert(1)", good}, exitUsage, "--impl-url: \"javascript:alert(1)\": want an http:// or https:// URL"},
		{"impl file url", []string{"report", "--markdown", out, "--implementation", write("u.yaml", "name: x\nurl: data:text/html,x\n"), good}, exitUsage, "url: \"data:text/html,x\": want an http:// or https:// URL"},
		{"impl file key", []string{"report", "--markdown", out, "--implementation", write("i.yaml", "nmae: x\n"), good}, exitUsage, "field nmae not found"},
		{"impl file empty", []string{"report", "--markdown", out, "--implementation", write("e.yaml", ""), good}, exitUsage, "names nothing"},
		{"impl file missing", []string{"report", "--markdown", out, "--implementation", filepath.Join(dir, "none.yaml"), good}, exitUsage, "--implementation"},
		{"names differ", []string{"report", "--certification", out, good, other}, exitUsage, "different implementations"},
		{"no name", []string{"report", "--certification", out, anon}, exitUsage, "no implementation name"},
		{"suite impl file", []string{"server", "--target", "builtin:reference", "--implementation", filepath.Join(dir, "i.yaml")}, exitUsage, "field nmae not found"},
	})
	_, err = os.Stat(out)
	assert.ErrorIs(t, err, os.ErrNotExist, "no output left behind")
}

// TestCompatAcceptsCLIReport checks that the compatibility matrix
// generator (e2e/compat, package reports/matrix) accepts a report written
// by `xdsconform server --impl-name`, credited to that name and version.
func TestCompatAcceptsCLIReport(t *testing.T) {
	dir := t.TempDir()
	peerDir := filepath.Join(dir, "ref-server")
	require.NoError(t, os.Mkdir(peerDir, 0o755))
	nonceReport(t, peerDir, "--impl-name", "ref-server", "--impl-version", "v0.1")
	runs, err := matrix.Load(dir)
	require.NoError(t, err)
	page := matrix.Render(runs)
	assert.Contains(t, page, "| ref-server | v0.1 | no | 14 | 2 | 0 | 0 |")
	assert.Contains(t, page, "- `server/nonce/stale-request-ignored[sotw-ads]` [broke NONCE-7, SHOULD]: not in the known-failing list")
}

// An interrupted report writes nothing and exits 130: reading and
// rendering stop as soon as the context ends (here, before they start).
func TestReportInterrupted(t *testing.T) {
	dir := t.TempDir()
	good := nonceReport(t, dir, "--impl-name", "a")
	out := filepath.Join(dir, "page.html")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := execute(ctx, []string{"report", "--html", out, good}, &stdout, &stderr)
	assert.Equal(t, exitInterrupted, code, stderr.String())
	assert.Contains(t, stderr.String(), "interrupted; nothing written")
	_, err := os.Stat(out)
	assert.ErrorIs(t, err, os.ErrNotExist)
}
