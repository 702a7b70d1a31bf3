package infile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadsARegularFileWithinItsLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(path, []byte("twelve bytes"), 0o644))
	b, err := ReadAll(context.Background(), path, 12)
	require.NoError(t, err)
	require.Equal(t, "twelve bytes", string(b))
}

// A file over the limit is refused before a byte of it is read: a sparse
// file of a gigabyte costs nothing to make, and would cost a gigabyte to
// read.
func TestRefusesALargerFileBeforeReadingIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	require.NoError(t, os.Truncate(path, 1<<30))
	_, err := Open(context.Background(), path, 1<<20)
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
	require.Equal(t, path+": larger than 1 MiB, the most this reader accepts", err.Error())
}

func TestRefusesDirectoriesAndDevices(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(context.Background(), dir, 1<<20)
	require.ErrorContains(t, err, "is a directory")
	_, err = Open(context.Background(), "/dev/zero", 1<<20)
	require.ErrorContains(t, err, "not a regular file, nor a pipe")
}

func fifo(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	return path
}

func shortIdle(t *testing.T, d time.Duration) {
	t.Helper()
	old := PipeIdle
	PipeIdle = d
	t.Cleanup(func() { PipeIdle = old })
}

// silentWriter holds path open for writing without writing to it, as a
// stalled producer would.
func silentWriter(t *testing.T, path string) {
	t.Helper()
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
}

// A FIFO no one has opened to write reads as empty at once (opening it
// blocking would wait, in the kernel, where no signal reaches the
// harness); one whose writer stalls is given up once PipeIdle passes.
func TestAPipeCannotHoldTheReader(t *testing.T) {
	path := fifo(t)
	b, err := ReadAll(context.Background(), path, 1<<20)
	require.NoError(t, err)
	require.Empty(t, b)

	shortIdle(t, 100*time.Millisecond)
	silentWriter(t, path)
	_, err = ReadAll(context.Background(), path, 1<<20)
	require.ErrorContains(t, err, "nothing more was written to it within 100ms")
}

// writer opens path for writing before the reader does (a reader that
// opens a FIFO first, with no writer, reads it as empty) and writes n
// bytes, then closes it.
func writer(t *testing.T, path string, n int) <-chan error {
	t.Helper()
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := w.WriteString(strings.Repeat("x", n))
		w.Close()
		done <- err
	}()
	return done
}

func TestAPipeIsReadToItsEnd(t *testing.T) {
	path := fifo(t)
	done := writer(t, path, 100_000) // more than a pipe's buffer
	b, err := ReadAll(context.Background(), path, 1<<20)
	require.NoError(t, err)
	require.Len(t, b, 100_000)
	require.NoError(t, <-done)
}

func TestAPipeOverTheLimitIsRefused(t *testing.T) {
	path := fifo(t)
	writer(t, path, 100_000) // blocks until the reader has opened the FIFO
	_, err := ReadAll(context.Background(), path, 1000)
	var tooLarge *TooLargeError
	require.ErrorAs(t, err, &tooLarge)
}

// A read blocked on a pipe whose writer is silent ends when the context
// does, not when the idle deadline passes.
func TestAReadEndsWithItsContext(t *testing.T) {
	shortIdle(t, time.Hour)
	path := fifo(t)
	silentWriter(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := ReadAll(ctx, path, 1<<20)
	require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
}
