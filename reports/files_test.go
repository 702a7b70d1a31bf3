package reports

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrepareRemovesOldReportsAndChecksPaths(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "report.json")
	require.NoError(t, os.WriteFile(old, []byte("yesterday's green"), 0o644))
	require.NoError(t, Prepare(old, "", filepath.Join(dir, "new.xml")))
	assert.NoFileExists(t, old)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "the write probe must not stay behind")

	err = Prepare(filepath.Join(dir, "missing", "report.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot write to")
	assert.ErrorContains(t, Prepare(dir), "is a directory")
}
