// Package infile opens the files the harness reads (reports, transcripts,
// scenario files, load reports, known-failing and implementation files)
// so that no input can hold it: a file's size is checked against its
// reader's limit before a byte is read, a directory or a device is
// refused, a pipe (a FIFO, a shell's <(...)) is read under a deadline to
// each next byte, and every read gives up within moments of its context
// ending, so an interrupted command stops reading at once.
//
// It is a low-level helper: it knows bytes and deadlines, not what the
// bytes mean.
package infile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// PipeIdle bounds how long a pipe may keep its reader waiting for its
// first byte, and then for each next one: a FIFO that no one writes to,
// or whose writer stalls, must not hold the harness.
var PipeIdle = 3 * time.Second

// TooLargeError is the error for an input over its reader's limit. For a
// regular file it is returned by Open, before anything is read.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %s, the most this reader accepts", e.Path, Bytes(e.Limit))
}

// Bytes writes a byte count the way the limits are stated: in MiB or KiB
// when it is a whole number of them.
func Bytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// File is an input opened by Open. Reading it returns at most its limit
// in bytes (one more is a *TooLargeError), the context's error once the
// context ends, and, for a pipe, an error once it has been idle for
// PipeIdle.
type File struct {
	ctx      context.Context
	f        *os.File
	lim      io.Reader // f, within the limit (LimitReader)
	path     string
	size     int64 // a regular file's size when opened; -1 for a pipe
	stopWake func() bool
}

// Open opens path to read at most limit bytes of it, under ctx. A regular
// file larger than limit is refused here; a directory, and a file that is
// neither regular nor a pipe (a device, a socket), are refused too. The
// errors name the path.
func Open(ctx context.Context, path string, limit int64) (*File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err // os errors name the path
	}
	mode := fi.Mode()
	switch {
	case mode.IsDir():
		return nil, &os.PathError{Op: "read", Path: path, Err: errors.New("is a directory")}
	case mode.IsRegular():
		if fi.Size() > limit {
			return nil, &TooLargeError{Path: path, Limit: limit}
		}
	case mode&os.ModeNamedPipe == 0:
		return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file, nor a pipe (%v)", mode.Type())}
	}
	flags := os.O_RDONLY
	pipe := !mode.IsRegular()
	if pipe {
		// Opening a FIFO no one writes to blocks, in the kernel, where no
		// signal reaches the harness; opened without blocking, it is
		// polled by the runtime and takes deadlines.
		flags |= syscall.O_NONBLOCK
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return nil, err
	}
	in := &File{ctx: ctx, f: f, lim: LimitReader(f, path, limit), path: path, size: fi.Size()}
	if pipe {
		in.size = -1
	}
	if pipe {
		if err := f.SetReadDeadline(time.Now().Add(PipeIdle)); err != nil {
			f.Close()
			return nil, &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("not a regular file, and not one that can be read with a deadline (%v)", mode.Type())}
		}
	}
	// A read blocked on a pipe is woken when the context ends; a regular
	// file's reads return at once, and each checks the context first.
	in.stopWake = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	return in, nil
}

// Read reads as io.Reader does, within the limits Open set.
func (in *File) Read(p []byte) (int, error) {
	if err := in.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := in.lim.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		if ctxErr := in.ctx.Err(); ctxErr != nil {
			return n, ctxErr
		}
		return n, &os.PathError{Op: "read", Path: in.path, Err: fmt.Errorf("not a regular file, and nothing more was written to it within %v", PipeIdle)}
	}
	if in.size < 0 && n > 0 {
		_ = in.f.SetReadDeadline(time.Now().Add(PipeIdle))
	}
	return n, err
}

// Close closes the file.
func (in *File) Close() error {
	in.stopWake()
	return in.f.Close()
}

// LimitReader reads r as io.LimitReader would, but one byte past limit is
// a *TooLargeError (naming name), not the end of the input: a decoder
// reading it stops with that error, not with a syntax error where the
// input was cut.
func LimitReader(r io.Reader, name string, limit int64) io.Reader {
	return &limited{r: r, name: name, limit: limit}
}

type limited struct {
	r     io.Reader
	name  string
	limit int64
	read  int64
}

func (l *limited) Read(p []byte) (int, error) {
	if room := l.limit + 1 - l.read; int64(len(p)) > room {
		p = p[:room]
	}
	if len(p) == 0 {
		return 0, &TooLargeError{Path: l.name, Limit: l.limit}
	}
	n, err := l.r.Read(p)
	if l.read += int64(n); l.read > l.limit {
		return n, &TooLargeError{Path: l.name, Limit: l.limit}
	}
	return n, err
}

// ReadAll reads the whole of path, at most limit bytes, under ctx, as
// Open and Read do.
func ReadAll(ctx context.Context, path string, limit int64) ([]byte, error) {
	in, err := Open(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if in.size < 0 {
		return io.ReadAll(in)
	}
	// A regular file's size is known: one buffer of it (and the byte that
	// tells a file that grew since), not the doublings of io.ReadAll.
	b := make([]byte, 0, in.size+1)
	for {
		n, err := in.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// Size is the size of a regular file opened by Open, -1 for a pipe.
func (in *File) Size() int64 { return in.size }
