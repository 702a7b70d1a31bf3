//go:build !linux

package process

import (
	"errors"
	"os"
	"syscall"
)

// EnableSubreaper is Linux only; elsewhere the process group and the
// launch marker are all there is.
func EnableSubreaper() error { return errors.New("a child subreaper is Linux only") }

// Containment says how the programs the harness starts are kept from
// escaping it.
func Containment() string { return "process group, " + LaunchEnv + " marker" }

// cgroup is Linux only.
type cgroup struct{}

func newCgroup(string) (*cgroup, *os.File)      { return nil, nil }
func intoCgroup(*syscall.SysProcAttr, *os.File) {}
func disableCgroups(string)                     {}
func (*cgroup) procs() []int                    { return nil }
func (*cgroup) populated() bool                 { return false }
func (*cgroup) signal(syscall.Signal)           {}
func (*cgroup) remove() error                   { return nil }
