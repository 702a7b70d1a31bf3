package scenariofile

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/scenarios"
)

// builtinFiles are the re-expressions of built-in scenarios.
func builtinFiles(t *testing.T) []string {
	files, err := filepath.Glob("testdata/builtin/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// builtin finds the built-in scenario with id.
func builtin(id string) *engine.Scenario {
	for _, s := range slices.Concat(scenarios.Server(), scenarios.Client()) {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Each re-expressed scenario cites what its built-in cites, at its level,
// in its variants, and needs at least what it needs.
func TestBuiltinFilesSayWhatTheBuiltinsSay(t *testing.T) {
	ss, err := Load(builtinFiles(t)...)
	require.NoError(t, err)
	for _, s := range ss {
		b := builtin(s.ID)
		require.NotNil(t, b, "%s re-expresses no built-in scenario", s.ID)
		assert.Equal(t, b.Requirements, s.Requirements, s.ID)
		assert.Equal(t, b.Level, s.Level, s.ID)
		assert.Equal(t, b.Variants, s.Variants, s.ID)
		for _, n := range b.Needs {
			assert.Contains(t, s.Needs, n, s.ID)
		}
	}
}
