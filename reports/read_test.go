package reports

import (
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
	got, sum, err := ReadJSONFile(path)
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

// spaces reads as an endless run of spaces.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}
