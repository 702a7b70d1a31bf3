// Package docker runs containerised peers with testcontainers-go: an xDS
// client image (Envoy first) that the harness plays the management server
// for, and a control-plane image that the harness plays the client for.
// The image of xdsconform itself is built from the Dockerfile next to this
// file.
//
// Importing it registers the container targets (container:IMAGE, server
// and client) with package targets; the xdsconform command does:
//
//	import _ "github.com/xdsconform/xdsconform/docker"
//
// It is a package of its own so that testcontainers-go, and the moby
// client, OpenTelemetry and gopsutil it brings, are linked only into
// programs that run containers.
//
// Everything here needs a Docker engine. Available says whether one is
// reachable; callers turn its error into a skip (tests) or exit code 3
// (the CLI), never a hang.
package docker

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/xdsconform/xdsconform/targets"
)

func init() { targets.RegisterContainers(runtime{}) }

// runtime runs the container targets of package targets.
type runtime struct{}

func (runtime) Available(ctx context.Context) error { return Available(ctx) }
func (runtime) HostAddr(port int) string            { return HostAddr(port) }

func (runtime) StartServer(ctx context.Context, r targets.ServerContainer) (targets.Container, error) {
	c, err := StartServer(ctx, ServerRequest(r))
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (runtime) StartClient(ctx context.Context, r targets.ClientContainer) (targets.Container, error) {
	c, err := StartClient(ctx, ClientRequest(r))
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Prefix marks a containerised target: "container:IMAGE".
const Prefix = targets.ContainerPrefix

// EnvoyAdminPort is the admin port the generated Envoy bootstrap binds in
// the container; it is published on a free host port.
const EnvoyAdminPort = targets.ContainerAdminPort

// DefaultEnvoyImage is the Envoy image the container tests run unless
// XDSCONFORM_ENVOY_IMAGE names another.
const DefaultEnvoyImage = "envoyproxy/envoy:v1.36-latest"

// EnvoyImage is the Envoy image the container tests run.
func EnvoyImage() string {
	if img := os.Getenv("XDSCONFORM_ENVOY_IMAGE"); img != "" {
		return img
	}
	return DefaultEnvoyImage
}

// Available reports whether a Docker engine answers; the error is one line
// saying why not. The testcontainers provider panics on some broken
// set-ups, which is turned into an error too.
func Available(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", ErrNoEngine, r)
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return fmt.Errorf("%w: %s", ErrNoEngine, oneLine(err))
	}
	defer p.Close()
	if err := p.Health(ctx); err != nil {
		return fmt.Errorf("%w: %s", ErrNoEngine, oneLine(err))
	}
	return nil
}

// HostAddr is how a container reaches port on the harness's host
// (testcontainers forwards it).
func HostAddr(port int) string {
	return net.JoinHostPort(testcontainers.HostInternal, strconv.Itoa(port))
}

// Container is one running peer container.
type Container struct {
	c       testcontainers.Container
	exited  chan struct{}
	stop    chan struct{}
	watched chan struct{} // closed when watch returns
	once    sync.Once
	err     error
}

// ClientRequest describes an xDS client container, Envoy's by default.
type ClientRequest struct {
	// Image, e.g. "envoyproxy/envoy:v1.36-latest".
	Image string
	// Bootstrap is the Envoy bootstrap (YAML), mounted at
	// /etc/envoy/envoy.yaml; its xDS server is HostAddr(ServerPort) and its
	// admin interface 0.0.0.0:EnvoyAdminPort.
	Bootstrap []byte
	// ServerPort is the host port of the harness's management server.
	ServerPort int
}

// StartClient starts a client container and waits until its admin port
// answers.
func StartClient(ctx context.Context, r ClientRequest) (*Container, error) {
	admin := strconv.Itoa(EnvoyAdminPort) + "/tcp"
	req := testcontainers.ContainerRequest{
		Image:           r.Image,
		Cmd:             []string{"envoy", "-c", "/etc/envoy/envoy.yaml", "--log-level", "info"},
		ExposedPorts:    []string{admin},
		HostAccessPorts: []int{r.ServerPort},
		Files: []testcontainers.ContainerFile{{
			Reader: bytes.NewReader(r.Bootstrap), ContainerFilePath: "/etc/envoy/envoy.yaml", FileMode: 0o644,
		}},
		WaitingFor: wait.ForHTTP("/ready").WithPort(admin).WithStatusCodeMatcher(func(int) bool { return true }),
	}
	return start(ctx, req)
}

// AdminAddr is the host address of the client container's admin port.
func (c *Container) AdminAddr(ctx context.Context) (string, error) {
	return c.mapped(ctx, strconv.Itoa(EnvoyAdminPort)+"/tcp")
}

// ServerRequest describes a control-plane container.
type ServerRequest struct {
	// Image of the control plane.
	Image string
	// XDSPort is the xDS port inside the container.
	XDSPort int
	// FixturePort is the fixture API port inside the container; 0 if the
	// image serves none.
	FixturePort int
	// Env is passed to the container.
	Env map[string]string
}

// StartServer starts a control-plane container and waits until its xDS
// port accepts connections.
func StartServer(ctx context.Context, r ServerRequest) (*Container, error) {
	xds := strconv.Itoa(r.XDSPort) + "/tcp"
	req := testcontainers.ContainerRequest{
		Image:        r.Image,
		ExposedPorts: []string{xds},
		Env:          r.Env,
		WaitingFor:   wait.ForListeningPort(xds),
	}
	if r.FixturePort != 0 {
		fx := strconv.Itoa(r.FixturePort) + "/tcp"
		req.ExposedPorts = append(req.ExposedPorts, fx)
		// Both, or the fixture's first call can meet a port not yet open.
		req.WaitingFor = wait.ForAll(wait.ForListeningPort(xds), wait.ForListeningPort(fx))
	}
	return start(ctx, req)
}

// Addr is the host address of a port the container exposes.
func (c *Container) Addr(ctx context.Context, port int) (string, error) {
	return c.mapped(ctx, strconv.Itoa(port)+"/tcp")
}

func start(ctx context.Context, req testcontainers.ContainerRequest) (*Container, error) {
	if err := Available(ctx); err != nil {
		return nil, err
	}
	tc, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{ContainerRequest: req, Started: true})
	if err != nil {
		if tc != nil {
			// What it printed is most often why it never got ready: read
			// before it goes, bounded as Logs bounds it.
			out := (&Container{c: tc}).Logs()
			_ = tc.Terminate(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("starting container %s: %s; output: %s", req.Image, oneLine(err), out)
		}
		return nil, fmt.Errorf("starting container %s: %s", req.Image, oneLine(err))
	}
	c := &Container{c: tc, exited: make(chan struct{}), stop: make(chan struct{}), watched: make(chan struct{})}
	go c.watch()
	return c, nil
}

// watch closes exited when the container stops running on its own. The
// engine offers no exit notification through testcontainers, so it asks
// every quarter second until Stop. A failed question (a slow engine) is
// asked again: only a container seen not running has exited.
func (c *Container) watch() {
	defer close(c.watched)
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.c.State(ctx)
		cancel()
		if err != nil || st.Running {
			continue
		}
		select {
		case <-c.stop: // stopped by us while asking: not an exit of its own
			return
		default:
		}
		c.err = fmt.Errorf("container exited with code %d; output: %s", st.ExitCode, c.Logs())
		close(c.exited)
		return
	}
}

// Exited is closed when the container stopped on its own.
func (c *Container) Exited() <-chan struct{} { return c.exited }

// Err says why the container stopped, with its output tail.
func (c *Container) Err() error {
	select {
	case <-c.exited:
		return c.err
	default:
		return nil
	}
}

// Logs is the tail of the container's output (4 KiB).
func (c *Container) Logs() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rc, err := c.c.Logs(ctx)
	if err != nil {
		return "(no logs: " + oneLine(err) + ")"
	}
	defer rc.Close()
	// Keep the last 4 KiB however long the output is.
	tail := make([]byte, 0, 8192)
	buf := make([]byte, 4096)
	for {
		n, err := rc.Read(buf)
		tail = append(tail, buf[:n]...)
		if len(tail) > 4096 {
			tail = append(tail[:0], tail[len(tail)-4096:]...)
		}
		if err != nil {
			return string(tail)
		}
	}
}

// stopTimeout bounds removing a container: a stuck engine must not hang
// the run's cleanup.
const stopTimeout = 30 * time.Second

// Stop removes the container, within stopTimeout; afterwards nothing of it
// is left, and its watch has ended.
func (c *Container) Stop(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		close(c.stop)
		<-c.watched // returns within one State call (5 s)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		err = c.c.Terminate(ctx)
	})
	return err
}

func (c *Container) mapped(ctx context.Context, port string) (string, error) {
	host, err := c.c.Host(ctx)
	if err != nil {
		return "", fmt.Errorf("container host: %w", err)
	}
	p, err := c.c.MappedPort(ctx, port)
	if err != nil {
		return "", fmt.Errorf("container port %s: %w", port, err)
	}
	return net.JoinHostPort(host, strconv.Itoa(int(p.Num()))), nil
}

// oneLine keeps the first line of an error: Docker errors can run to
// pages, and the brief wants one line.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	s := strings.TrimSpace(err.Error())
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// ErrNoEngine is wrapped by the errors of Available; it is
// targets.ErrNoContainerEngine, so that the harness, which does not import
// this package, tells an unreachable engine (exit 3) from other failures.
var ErrNoEngine = targets.ErrNoContainerEngine
