package refclient

import (
	"os"

	"golang.org/x/sys/unix"
)

// pin opens the entry at path itself, a symlink included (O_PATH,
// O_NOFOLLOW): while it is open its inode is not freed, so no file moved
// in later can reuse its number and pass for it (fs.go).
func pin(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}
