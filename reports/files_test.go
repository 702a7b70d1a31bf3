package reports

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
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

// A report path that is a pipe (/dev/stdout in CI) or a device is written
// into, never replaced, and one that is a symbolic link stays a link: the
// report lands in the file it points to. A FIFO in a temporary directory
// stands for /dev/stdout, so a regression cannot touch the machine's /dev.
func TestReportPathsThroughLinksAndPipes(t *testing.T) {
	dir := t.TempDir()
	run := results.Run{SchemaVersion: JSONSchemaVersion, Role: results.RoleServer, Results: []results.Result{}}

	fifo := filepath.Join(dir, "stdout")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	viaLink := filepath.Join(dir, "dev-stdout")
	require.NoError(t, os.Symlink(fifo, viaLink))
	got := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // until the writer closes
		got <- b
	}()
	require.NoError(t, Prepare(viaLink))
	require.NoError(t, WriteFiles(run, "", viaLink))
	assert.Contains(t, string(<-got), `"schema_version": "3"`)
	fi, err := os.Lstat(viaLink)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link stays a link")
	fi, err = os.Stat(fifo)
	require.NoError(t, err)
	assert.Equal(t, os.ModeNamedPipe, fi.Mode().Type(), "the pipe stays a pipe")

	file := filepath.Join(dir, "kept", "report.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte("old"), 0o644))
	link := filepath.Join(dir, "report.json")
	require.NoError(t, os.Symlink(file, link))
	require.NoError(t, Prepare(link))
	_, err = os.Stat(file)
	assert.ErrorIs(t, err, os.ErrNotExist, "the old report behind the link is gone before the run")
	require.NoError(t, WriteFiles(run, "", link))
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"schema_version": "3"`)
	fi, err = os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link stays a link")
}
