package scenariofile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/infile"
)

// A scenario file that is not a regular file cannot hold the harness: a
// FIFO no one writes to is empty at once, one whose writer never finishes
// is given up once it has been idle for infile.PipeIdle, and a device is
// refused.
func TestNonRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	_, err := Load(fifo)
	assert.ErrorContains(t, err, "no scenario in the file", "a FIFO without a writer reads as empty")

	defer func(d time.Duration) { infile.PipeIdle = d }(infile.PipeIdle)
	infile.PipeIdle = 50 * time.Millisecond
	// A writer that opens the FIFO and never closes it.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	require.NoError(t, err)
	defer w.Close()
	_, err = w.WriteString("apiVersion: xdsconform.io/v1alpha1\n")
	require.NoError(t, err)
	_, err = Load(fifo)
	assert.ErrorContains(t, err, "nothing more was written to it within 50ms")

	_, err = Load(os.DevNull)
	assert.ErrorContains(t, err, "not a regular file, nor a pipe")
	_, err = Load(dir)
	assert.ErrorContains(t, err, "is a directory")
}
