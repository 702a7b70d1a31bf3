//go:build linux

// Package netns runs peers in a private network namespace and reaches them
// there. Envoy Gateway binds fixed ports on 0.0.0.0; a namespace of its own
// (loopback only) keeps it off the machine's network and lets several run
// at once, and the namespace goes away with the process, so nothing is
// left behind.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// Command wraps argv so that it runs in a new network namespace whose
// loopback is up. The wrapper execs argv in place, so the process id the
// caller starts is the peer's, and /proc/PID/ns/net is its namespace.
func Command(argv ...string) []string {
	return append([]string{"unshare", "--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "netns"}, argv...)
}

// Available says why Command cannot work here, or nil: it needs unshare,
// ip and the right to create a network namespace (root, or
// CAP_SYS_ADMIN).
func Available(ctx context.Context) error {
	for _, tool := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("a private network namespace needs %s: %w", tool, err)
		}
	}
	argv := Command("true")
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("cannot create a network namespace (needs root): %v: %s", err, out)
	}
	return nil
}

// Dialer returns a dialer whose connections are opened inside the network
// namespace of process pid, for grpc.WithContextDialer. It takes IP
// addresses only: a name that resolves to several addresses makes the
// net package dial them from goroutines of its own, on threads outside
// the namespace.
func Dialer(pid int) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) == nil {
			return nil, fmt.Errorf("dialing %s in a network namespace: want an IP address, not a name", addr)
		}
		var conn net.Conn
		err = Do(pid, func() error {
			var d net.Dialer
			var err error
			// The socket is created on this thread, in the namespace; it
			// stays there whichever thread uses it afterwards.
			conn, err = d.DialContext(ctx, "tcp", addr)
			return err
		})
		return conn, err
	}
}

// Do runs fn on an OS thread switched into the network namespace of
// process pid. Sockets fn creates belong to that namespace.
func Do(pid int, fn func() error) error {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return fmt.Errorf("network namespace of process %d: %w", pid, err)
	}
	defer target.Close()
	done := make(chan error, 1)
	go func() {
		// A goroutine of its own, locked to its thread: if the thread
		// cannot be switched back, the goroutine exits still locked and
		// the runtime discards the thread instead of reusing it.
		runtime.LockOSThread()
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		defer own.Close()
		ownLink, err := os.Readlink("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("own network namespace: %w", err)
			return
		}
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("entering the network namespace of process %d: %w", pid, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- errors.Join(ferr, fmt.Errorf("leaving the network namespace of process %d: %w", pid, err))
			return
		}
		// Checked, not assumed: a thread back in the pool must be in the
		// harness's namespace, or its next sockets would land in the peer's.
		if after, err := os.Readlink("/proc/thread-self/ns/net"); err != nil || after != ownLink {
			done <- errors.Join(ferr, fmt.Errorf("the thread did not leave the network namespace of process %d (%s)", pid, after))
			return
		}
		runtime.UnlockOSThread()
		done <- ferr
	}()
	return <-done
}
