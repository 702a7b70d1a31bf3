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

// containment says how the programs the harness starts are kept from
// escaping it.
func containment() string { return "process group, " + LaunchEnv + " marker" }

// CgroupDir is Linux only: elsewhere the harness makes no cgroup.
func CgroupDir() (string, error) { return "", errors.New("cgroups are Linux only") }

// reapOrphans has nothing to do without a subreaper.
func reapOrphans() {}

// cgroup is Linux only.
type cgroup struct{}

func newCgroup(string) (*cgroup, *os.File)      { return nil, nil }
func intoCgroup(*syscall.SysProcAttr, *os.File) {}
func disableCgroups(string)                     {}
func (*cgroup) procs() []int                    { return nil }
func (*cgroup) populated() bool                 { return false }
func (*cgroup) signal(syscall.Signal)           {}
func (*cgroup) remove() error                   { return nil }
