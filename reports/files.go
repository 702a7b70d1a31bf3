package reports

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/xdsconform/xdsconform/results"
)

// WriteFiles writes the JUnit report to junitPath and the JSON report to
// jsonPath, skipping either when its path is empty. Each file is rendered
// into a temporary file in the same directory and renamed into place, so a
// reader (a CI uploader, a watching tool) sees the previous file
// or the complete new one, never a partial one. Both files are attempted even
// if one fails; the error names every path that could not be written.
func WriteFiles(run results.Run, junitPath, jsonPath string) error {
	var errs []error
	if junitPath != "" {
		if err := writeAtomic(junitPath, func(w io.Writer) error { return WriteJUnit(w, run) }); err != nil {
			errs = append(errs, fmt.Errorf("writing JUnit report %s: %w", junitPath, err))
		}
	}
	if jsonPath != "" {
		if err := writeAtomic(jsonPath, func(w io.Writer) error { return WriteJSON(w, run) }); err != nil {
			errs = append(errs, fmt.Errorf("writing JSON report %s: %w", jsonPath, err))
		}
	}
	return errors.Join(errs...)
}

// writesThrough reports whether path names something other than a
// regular file or a directory (a device such as /dev/null, a pipe such as
// /dev/stdout in CI, directly or through links): a report is written into
// it, never put in its place.
func writesThrough(path string) bool {
	fi, err := os.Stat(path) // through links
	return err == nil && !fi.Mode().IsRegular() && !fi.IsDir()
}

// resolved is the file a report path names, through symbolic links (also
// one whose file Prepare removed): a report written to a link replaces the
// file it points to, not the link.
func resolved(path string) string {
	for range 40 { // the kernel's own bound on a chain of links
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path
		}
		to, err := os.Readlink(path)
		if err != nil {
			return path
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(path), to)
		}
		path = to
	}
	return path
}

func writeAtomic(path string, render func(io.Writer) error) (err error) {
	if writesThrough(path) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return err
		}
		if err := WriteSpooled(f, render); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
	path = resolved(path)
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	// The report is rendered straight into the temporary file, not into
	// memory: a page of a large run can be hundreds of megabytes.
	bw := bufio.NewWriterSize(tmp, writeBuffer)
	if err = render(bw); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	// Sync before rename so a crash cannot leave the new name pointing at
	// unwritten data.
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; reports are meant to be read by CI
	// uploaders and other users, like any file os.Create would make.
	if err = os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeBuffer is the buffer between a renderer's many small writes and
// the file.
const writeBuffer = 256 << 10

// WriteSpooled renders a report into a temporary file and copies it to w
// once it is complete, so that w (standard output, a pipe) gets the whole
// report or nothing of it, without the report being held in memory.
func WriteSpooled(w io.Writer, render func(io.Writer) error) error {
	spool, err := os.CreateTemp("", "xdsconform-report-*")
	if err != nil {
		return err
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	bw := bufio.NewWriterSize(spool, writeBuffer)
	if err := render(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err = io.Copy(w, spool)
	return err
}

// Prepare readies the report paths before a run: each non-empty path must
// name a file (not a directory) in a directory the harness can write to,
// and whatever report is there already is removed. A run that then ends
// early (a usage error, an unreachable target, a crash) leaves no report
// at all, never the previous run's: a CI step uploading the path must not
// publish yesterday's green. A path naming a device or a pipe
// (/dev/stdout) is left as it is, and a symbolic link stays: the file it
// points to is the report. The error names the path and the problem.
func Prepare(paths ...string) error {
	for _, path := range paths {
		if path == "" || writesThrough(path) {
			continue
		}
		path := resolved(path)
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			return fmt.Errorf("report path %s is a directory", path)
		}
		dir := filepath.Dir(path)
		probe, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe-*")
		if err != nil {
			return fmt.Errorf("report path %s: cannot write to %s: %w", path, dir, errors.Unwrap(err))
		}
		probe.Close()
		os.Remove(probe.Name())
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("report path %s: cannot remove the previous report: %w", path, errors.Unwrap(err))
		}
	}
	return nil
}
