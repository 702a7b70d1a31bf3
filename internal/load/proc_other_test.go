//go:build !linux

package load_test

import "os/exec"

// dieWithParent does nothing where the kernel cannot tie a child's life
// to its parent's: the clean-ups alone stop the child.
func dieWithParent(*exec.Cmd) {}
