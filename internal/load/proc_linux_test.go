package load_test

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd's process when this one dies,
// so a benchmark killed before its clean-ups run (a timeout's SIGQUIT, a
// SIGKILL) leaves no server behind. The signal goes when the thread that
// started the child exits; Go ends threads only in rare cases, so this is
// a backstop to the clean-ups, not a replacement.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
