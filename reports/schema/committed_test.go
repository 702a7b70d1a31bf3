package schema

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The JSON reports committed in the repository (the heavy peers' e2e
// results, which COMPATIBILITY.md is made of) validate too.
func TestCommittedReportsValidate(t *testing.T) {
	files, err := filepath.Glob("../../e2e/heavy-results/*/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NoError(t, ValidateJSONReport(b), f)
	}
}
