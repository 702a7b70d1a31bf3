//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/docker"
	"github.com/xdsconform/xdsconform/e2e/consulfixture"
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/process"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

// The heavy peers take minutes to build (make e2e-heavy builds them first)
// and are not part of make e2e.
var _ = Describe("heavy management servers", Label("server", "heavy"), func() {
	describe(peer{Name: "consul", Version: "Consul " + consulVersion(), Role: "server",
		Start: startConsul, Catalogue: scenarios.Server}, "consul")
})

// consulBinary is where make e2e-heavy-deps builds Consul.
func consulBinary() string { return peerDir("consul") + "/bin/consul" }

// consulVersion is the version the peer module pins.
func consulVersion() string { return moduleVersion(peerDir("consul"), "github.com/hashicorp/consul") }

// startConsul runs `consul agent -dev` on free loopback ports, waits until
// it has a leader and a Connect CA, and serves the fixture adapter for it.
func startConsul() (engine.Env, string, func(), error) {
	if _, err := os.Stat(consulBinary()); err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w (run make e2e-heavy-deps)", consulBinary(), err)
	}
	ports := make([]int, 5)
	for i := range ports {
		p, err := targets.FreePort() // Consul binds them itself, after this returns
		if err != nil {
			return nil, "", nil, err
		}
		ports[i] = p
	}
	httpPort, grpcPort := ports[0], ports[1]
	argv := []string{consulBinary(), "agent", "-dev", "-log-level", "warn",
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-advertise", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-grpc-port", strconv.Itoa(grpcPort), "-grpc-tls-port", "-1",
		"-dns-port", "-1", "-server-port", strconv.Itoa(ports[2]), "-serf-lan-port", strconv.Itoa(ports[3]),
		"-serf-wan-port", strconv.Itoa(ports[4])}
	proc, err := process.Start(context.Background(), argv, process.Options{StderrTail: 16 << 10})
	if err != nil {
		return nil, "", nil, err
	}
	stops := []func(){func() { _ = proc.Stop(5 * time.Second) }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fx, err := awaitConsul(ctx, proc, httpAddr)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	g := grpc.NewServer()
	fixturepb.RegisterFixtureServer(g, fx)
	go func() { _ = g.Serve(lis) }()
	stops = append(stops, g.Stop)
	s, err := targets.StartServer(context.Background(), targets.ServerOptions{
		Target: net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), Fixture: lis.Addr().String()})
	if err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("consul: %w; output: %s", err, proc.Tail())
	}
	stops = append(stops, s.Close)
	return s, s.Name, stop, nil
}

// awaitConsul polls the agent until it has elected itself leader and its
// Connect CA is up (the adapter needs the trust domain), bounded by ctx.
func awaitConsul(ctx context.Context, proc *process.Process, httpAddr string) (*consulfixture.Fixture, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		var leader string
		if lastErr = getJSON(ctx, "http://"+httpAddr+"/v1/status/leader", &leader); lastErr == nil && leader != "" {
			fx, err := consulfixture.New(ctx, httpAddr)
			if err == nil {
				return fx, nil
			}
			lastErr = err
		}
		select {
		case <-proc.Exited():
			return nil, fmt.Errorf("consul exited: %v; output: %s", proc.ExitErr(), proc.Tail())
		case <-ctx.Done():
			return nil, fmt.Errorf("consul not ready: %v (last: %v); output: %s", ctx.Err(), lastErr, proc.Tail())
		case <-tick.C:
		}
	}
}

func getJSON(ctx context.Context, url string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// Envoy runs only as a container (nothing installable here bundles it).
// Where no Docker engine is reachable the spec skips with the reason;
// on a Docker host it runs the client suite against the image
// (XDSCONFORM_ENVOY_IMAGE, default envoyproxy/envoy:v1.36-latest).
var _ = Describe("containerised xDS clients", Label("client", "container", "envoy"), func() {
	image := cmp.Or(os.Getenv("XDSCONFORM_ENVOY_IMAGE"), "envoyproxy/envoy:v1.36-latest")
	p := peer{Name: "envoy", Version: image, Role: "client", Catalogue: scenarios.Client,
		Start: clientEnv(targets.ClientOptions{Target: docker.Prefix + image})}
	It("runs the client suite when a Docker engine is reachable", func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := docker.Available(ctx); err != nil {
			Skip(fmt.Sprintf("Envoy container: %v", err))
		}
		env, target, stop, err := p.Start()
		require.NoError(GinkgoT(), err)
		defer stop()
		for _, fam := range families(p.Catalogue()) {
			run(p, env, target, fam)
		}
	})
})
