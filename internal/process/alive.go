package process

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether process group pgid has a member that is not
// a zombie. Zombies are ignored on purpose: an orphan whose new parent
// never reaps it (PID 1 in many containers and VMs does not) stays a
// zombie for ever, yet holds no sockets, files or CPU. kill(-pgid, 0)
// counts zombies, so it is only the fallback when /proc is unreadable.
func groupAlive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		// EPERM still means the group exists.
		err := syscall.Kill(-pgid, 0)
		return err == nil || !errors.Is(err, syscall.ESRCH)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, pgrp, ok := procStat(pid)
		if ok && pgrp == pgid && state != 'Z' && state != 'X' {
			return true
		}
	}
	return false
}

// Alive reports whether pid is a live (not zombie) process.
func Alive(pid int) bool {
	if state, _, ok := procStat(pid); ok {
		return state != 'Z' && state != 'X'
	}
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		return false // /proc works and pid is not in it
	}
	return syscall.Kill(pid, 0) == nil
}

// procStat reads the state and process group of pid from /proc/PID/stat.
func procStat(pid int) (state byte, pgrp int, ok bool) {
	f, ok := procStatFields(pid)
	if !ok {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], pg, true
}

// procStatFields returns the fields of /proc/PID/stat after the command
// name: state, ppid, pgrp, and so on.
func procStatFields(pid int) ([][]byte, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	// "pid (comm) state ppid pgrp ..."; comm may hold spaces and
	// parentheses, so parse from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return nil, false
	}
	return f, true
}
