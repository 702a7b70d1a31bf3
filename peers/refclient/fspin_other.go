//go:build !linux

package refclient

import (
	"errors"
	"os"
)

// pin opens the regular file at path: while it is open its inode is not
// freed, so no file moved in later can reuse its number and pass for it
// (fs.go). Other entries (symlinks) cannot be opened as themselves here;
// they are compared by Lstat alone.
func pin(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return os.Open(path)
}
