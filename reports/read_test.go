package reports

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestReadJSONRoundTrip checks that a report reads back as written, with
// its implementation metadata scrubbed of remembered secrets like every
// other free text, and that the file's digest is of its bytes.
func TestReadJSONRoundTrip(t *testing.T) {
	const secret = "MARKER-impl-91c2"
	transcript.RememberSecret(secret)
	impl := &results.Implementation{Name: "cp", Version: "v1", Contact: []string{"token " + secret}, Capabilities: []string{"delta-ads"}}
	run := results.Run{Role: "server", Target: "t", CatalogueVersion: "sha256:x", Implementation: impl,
		Results: []results.Result{{ID: "server/a", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass}}}
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, WriteFiles(run, "", path))
	got, sum, err := ReadJSONFile(context.Background(), path)
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, sha256.Sum256(b), sum)
	assert.NotContains(t, string(b), secret)
	assert.Equal(t, []string{"token " + transcript.RedactedSecret}, got.Implementation.Contact)
	assert.Equal(t, "token "+secret, impl.Contact[0], "the caller's metadata was modified")
	assert.Equal(t, "sha256:x", got.CatalogueVersion)
	assert.Len(t, got.Results, 1)
}

// TestReadJSONRejects checks what ReadJSON refuses, each as ErrNotAReport,
// and that a version 1 report still reads.
func TestReadJSONRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":      "<html>",
		"array":         "[]",
		"no version":    `{"role": "server", "results": []}`,
		"future":        `{"schema_version": "99", "role": "server", "results": []}`,
		"no role":       `{"schema_version": "2", "results": []}`,
		"no results":    `{"schema_version": "2", "role": "server"}`,
		"wrong type":    `{"schema_version": "2", "role": "server", "results": {}}`,
		"trailing data": `{"schema_version": "2", "role": "server", "results": []} {}`,
		// Values no harness writes, which every reader would count
		// nowhere or link to unsafely.
		"bad role":       `{"schema_version": "3", "role": "proxy", "results": []}`,
		"bad fail_on":    `{"schema_version": "3", "role": "server", "fail_on": "NEVER", "results": []}`,
		"bad outcome":    `{"schema_version": "3", "role": "server", "results": [{"id": "server/a", "outcome": "passed"}]}`,
		"bad level":      `{"schema_version": "3", "role": "server", "results": [{"id": "server/a", "outcome": "pass", "level": "must"}]}`,
		"bad broken":     `{"schema_version": "3", "role": "server", "results": [{"id": "server/a", "outcome": "fail", "level": "MUST", "broken_level": "X"}]}`,
		"javascript url": `{"schema_version": "3", "role": "server", "implementation": {"name": "a", "url": "javascript:alert(1)"}, "results": []}`,
		"hostless url":   `{"schema_version": "3", "role": "server", "implementation": {"name": "a", "url": "https:///x"}, "results": []}`,
	} {
		_, err := ReadJSON(strings.NewReader(doc))
		assert.ErrorIs(t, err, ErrNotAReport, name)
	}
	// Spaces are valid JSON padding: only the size is wrong.
	_, err := ReadJSON(io.MultiReader(strings.NewReader(`{"schema_version": "2", "role": "server", "results": []`),
		io.LimitReader(spaces{}, MaxJSONReportSize), strings.NewReader("}")))
	assert.ErrorContains(t, err, "larger than")
	run, err := ReadJSON(strings.NewReader(`{"schema_version": "1", "role": "client", "results": [{"id": "client/a", "outcome": "pass"}]}`))
	require.NoError(t, err)
	assert.Equal(t, results.Pass, run.Results[0].Outcome)
}

// TestReadJSONVersions checks that the layouts before this one still read,
// and that the current one reads back what version 3 added.
func TestReadJSONVersions(t *testing.T) {
	v2, err := ReadJSON(strings.NewReader(`{"schema_version": "2", "role": "server", "results": [{"id": "server/a", "outcome": "fail", "rules_broken": ["RES-4"]}],
		"summary": {"pass": 0, "fail": 1, "by_level": {"MUST": {"pass": 0, "fail": 1}}}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"RES-4"}, v2.Results[0].RulesBroken)

	blocked := results.Result{ID: "server/a", Variant: "sotw-ads", Level: results.May, Outcome: results.Blocked,
		RulesBroken: []string{"RES-1"}, BrokenLevel: results.Must, BlockedBy: "RES-1", Message: "blocked by RES-1 (MUST): x"}
	incon := results.Result{ID: "server/b", Variant: "sotw-ads", Level: results.Should, Outcome: results.Inconclusive, Message: "lag",
		Timing: &results.Timing{Reruns: 1, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the ACK", Kind: results.TimingWithin,
			Measured: 2, Limit: 1, Lag: 1, LagMax: 1, Verdict: results.TimingDoubt}}}}
	var b strings.Builder
	require.NoError(t, WriteJSON(&b, results.Run{Role: "server", Results: []results.Result{blocked, incon}}))
	v3, err := ReadJSON(strings.NewReader(b.String()))
	require.NoError(t, err)
	assert.Equal(t, JSONSchemaVersion, v3.SchemaVersion)
	blocked.Requirements, incon.Requirements = []string{}, []string{}
	assert.Equal(t, []results.Result{blocked, incon}, v3.Results)
}

// spaces reads as an endless run of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// WithoutTranscripts reads everything but the transcripts.
func TestReadJSONWithoutTranscripts(t *testing.T) {
	doc := `{"schema_version": "3", "role": "server", "results": [{"id": "server/a", "variant": "sotw-ads", "outcome": "fail", "level": "MUST",
		"rules_broken": ["RES-4"], "transcript": [{"at_ns": 1, "stream": "ads#1", "direction": "sent", "kind": "DiscoveryRequest", "message": {"type_url": "x"}}]}]}`
	full, err := ReadJSON(strings.NewReader(doc))
	require.NoError(t, err)
	require.Len(t, full.Results[0].Transcript, 1)
	lean, err := ReadJSONContext(context.Background(), strings.NewReader(doc), WithoutTranscripts())
	require.NoError(t, err)
	assert.Nil(t, lean.Results[0].Transcript)
	full.Results[0].Transcript = nil
	assert.Equal(t, full, lean, "everything else is read alike")
}
