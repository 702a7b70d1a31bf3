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
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/docker"
	"github.com/xdsconform/xdsconform/e2e/consulfixture"
	"github.com/xdsconform/xdsconform/e2e/egfixture"
	"github.com/xdsconform/xdsconform/e2e/netns"
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
	// Envoy Gateway validates every object in its folder again on each
	// change (about 70 ms apiece on 2 cores) and handles one change at a
	// time, so a change takes seconds to reach xDS once a few pairs run:
	// fewer pairs at once, and longer waits for what must happen.
	// Its snapshot cache also keeps SotW and delta streams in one map keyed
	// by a stream id that go-control-plane counts separately per protocol,
	// so a delta stream can take a SotW stream's place (see
	// knownfailing/envoy-gateway.txt): the protocols run one at a time.
	eg := timeouts
	eg.Expect, eg.Scenario = 20*time.Second, 2*time.Minute
	describe(peer{Name: "envoy-gateway", Version: "Envoy Gateway " + envoyGatewayVersion() + " (standalone, file provider)", Role: "server",
		Start: startEnvoyGateway, Catalogue: scenarios.Server, Timeouts: eg, Parallel: 4, OneProtocolAtATime: true,
		Note: "4 pairs at a time, 20 s to wait for what must happen (each folder change reaches xDS after a reload of the whole folder); " +
			"SotW pairs and delta pairs in turn, because its snapshot cache keys SotW and delta streams in one map by an id go-control-plane " +
			"counts per protocol, so a delta stream can take the place of a SotW stream of the same id, which then never hears of its gateway again " +
			"(internal/xds/cache/snapshotcache.go: one streamIDNodeInfo map, line 69, reset on OnStreamOpen and OnDeltaStreamOpen, lines 176 and 298, " +
			"read by getNodeIDs when a snapshot is generated, lines 159-167; go-control-plane counts pkg/server/sotw/v3/xds.go:23 and pkg/server/delta/v3/server.go:95 apart)"}, "envoy-gateway")
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
	fixtureAddr, stopFixture, err := serveFixture(fx)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	stops = append(stops, stopFixture)
	s, err := targets.StartServer(context.Background(), targets.ServerOptions{
		Target: net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort)), Fixture: fixtureAddr})
	if err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("consul: %w; output: %s", err, proc.Tail())
	}
	stops = append(stops, s.Close)
	return s, s.Name, stop, nil
}

// serveFixture serves a fixture adapter on a loopback port of the
// harness's own, as a vendor's test build would next to its server.
func serveFixture(fx fixturepb.FixtureServer) (addr string, stop func(), err error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	g := grpc.NewServer()
	fixturepb.RegisterFixtureServer(g, fx)
	go func() { _ = g.Serve(lis) }()
	return lis.Addr().String(), g.Stop, nil
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

// envoyGatewayBinary is where make e2e-heavy-deps builds Envoy Gateway.
func envoyGatewayBinary() string { return peerDir("envoy-gateway") + "/bin/envoy-gateway" }

// envoyGatewayVersion is the version the peer module pins.
func envoyGatewayVersion() string {
	return moduleVersion(peerDir("envoy-gateway"), "github.com/envoyproxy/gateway")
}

// envoyGatewayConfig is the EnvoyGateway configuration of a standalone run:
// the file provider watching one folder, host infrastructure under home
// (it tries to download Envoy and fails harmlessly, offline), and the
// Backend API the adapter's routes point at.
const envoyGatewayConfig = `apiVersion: gateway.envoyproxy.io/v1alpha1
kind: EnvoyGateway
gateway:
  controllerName: gateway.envoyproxy.io/gatewayclass-controller
provider:
  type: Custom
  custom:
    resource:
      type: File
      file:
        paths: [%q]
    infrastructure:
      type: Host
      host:
        configHome: %q
        dataHome: %q
        stateHome: %q
        runtimeDir: %q
logging:
  level:
    default: warn
extensionApis:
  enableBackend: true
`

// startEnvoyGateway runs Envoy Gateway in a private network namespace (it
// binds 0.0.0.0:18000 and more), serves the folder adapter, and returns a
// target that dials xDS inside the namespace over mutual TLS, with
// node.cluster naming the node's gateway.
func startEnvoyGateway() (engine.Env, string, func(), error) {
	if _, err := os.Stat(envoyGatewayBinary()); err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w (run make e2e-heavy-deps)", envoyGatewayBinary(), err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := netns.Available(ctx); err != nil {
		return nil, "", nil, fmt.Errorf("envoy gateway: %w", err)
	}
	tmp, err := os.MkdirTemp("", "xdsconform-eg-")
	if err != nil {
		return nil, "", nil, err
	}
	stops := []func(){func() { _ = os.RemoveAll(tmp) }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	dir := func(name string) string { return filepath.Join(tmp, name) }
	for _, d := range []string{"home", "data", "state", "run", "resources", "stage"} {
		if err := os.MkdirAll(dir(d), 0o755); err != nil {
			stop()
			return nil, "", nil, err
		}
	}
	if out, err := exec.CommandContext(ctx, envoyGatewayBinary(), "certgen", "--local", "--config-home", dir("home")).CombinedOutput(); err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("envoy-gateway certgen: %v: %s", err, out)
	}
	cfg := fmt.Sprintf(envoyGatewayConfig, dir("resources"), dir("home"), dir("data"), dir("state"), dir("run"))
	fx, err := egfixture.New(dir("resources"), dir("stage"), envoyGatewayVersion())
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	argv := []string{envoyGatewayBinary(), "server", "--config-path", dir("eg.yaml")}
	if os.Getenv("XDSCONFORM_E2E_EG_LOG") != "" {
		// For whoever reads a verdict against Envoy Gateway's code: its
		// whole output, its xDS cache at debug level.
		argv = append([]string{"sh", "-c", `exec "$0" "$@" >"$XDSCONFORM_E2E_EG_LOG" 2>&1`}, argv...)
		cfg = strings.Replace(cfg, "    default: warn\n", "    default: info\n    xds: debug\n", 1)
	}
	if err := os.WriteFile(dir("eg.yaml"), []byte(cfg), 0o644); err != nil {
		stop()
		return nil, "", nil, err
	}
	proc, err := process.Start(context.Background(), netns.Command(argv...), process.Options{StderrTail: 16 << 10})
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	stops = append(stops, func() { _ = proc.Stop(5 * time.Second) })
	dial := netns.Dialer(proc.Pid())
	if err := awaitEnvoyGateway(ctx, proc, dial); err != nil {
		stop()
		return nil, "", nil, err
	}
	fixtureAddr, stopFixture, err := serveFixture(fx)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	stops = append(stops, stopFixture)
	certs := dir("home") + "/certs/envoy/"
	s, err := targets.StartServer(ctx, targets.ServerOptions{
		Target: "127.0.0.1:18000", Fixture: fixtureAddr, FixturePlaintext: true,
		TLS:    targets.TLSOptions{CAFile: certs + "ca.crt", CertFile: certs + "tls.crt", KeyFile: certs + "tls.key", ServerName: "envoy-gateway"},
		Dialer: dial, NodeCluster: egfixture.NodeCluster, ConnectTimeout: 30 * time.Second,
	})
	if err != nil {
		stop()
		return nil, "", nil, fmt.Errorf("envoy gateway: %w; output: %s", err, proc.Tail())
	}
	stops = append(stops, s.Close)
	return s, s.Name, stop, nil
}

// awaitEnvoyGateway polls Envoy Gateway's readiness probe (port 8081 in its
// namespace), bounded by ctx. It turns ready once the file provider
// watches its folder: a file written earlier may never be noticed.
func awaitEnvoyGateway(ctx context.Context, proc *process.Process, dial func(context.Context, string) (net.Conn, error)) error {
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
	}}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:8081/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("readyz: %s", resp.Status)
		}
		lastErr = err
		select {
		case <-proc.Exited():
			return fmt.Errorf("envoy gateway exited: %v; output: %s", proc.ExitErr(), proc.Tail())
		case <-ctx.Done():
			return fmt.Errorf("envoy gateway not ready: %v (last: %v); output: %s", ctx.Err(), lastErr, proc.Tail())
		case <-tick.C:
		}
	}
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
