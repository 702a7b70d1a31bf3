//go:build e2e

package e2e

import (
	"context"
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
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/docker"
	"github.com/xdsconform/xdsconform/e2e/consulfixture"
	"github.com/xdsconform/xdsconform/e2e/egfixture"
	"github.com/xdsconform/xdsconform/e2e/netns"
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

// The heavy peers take minutes to build (make e2e-heavy builds them first)
// and are not part of make e2e.
var _ = Describe("heavy management servers", Label("server", "heavy"), func() {
	// Consul is not open source (the Business Source License since 1.17):
	// the project no longer builds it, and runs it only from a binary the
	// user supplies.
	describe(peer{Name: "consul", Version: consulVersion(), Role: "server",
		Start: startConsul, Catalogue: scenarios.Server, SkipUnless: consulSupplied,
		Note: "Consul is under the Business Source License (BUSL-1.1) since 1.17, which is not open source, so the project no longer builds it: " +
			"this column comes from a consul binary supplied through CONSUL_BIN, last run on " + time.Now().UTC().Format("2006-01-02")}, "consul")
	// Cilium's xDS server builds in minutes from a module graph of 138
	// modules, and some of its verdicts depend on timing (a nonce shared by
	// two answers at one version), so it is a heavy peer.
	cilium := peerDir("cilium")
	describe(peer{Name: "cilium", Version: "Cilium " + moduleVersion(cilium, "github.com/cilium/cilium") + " (pkg/envoy/xds, per-type SotW)", Role: "server",
		// Cilium parses node ids as TYPE~IP~ID~DOMAIN and ends a stream
		// whose first request carries any other (pkg/envoy/xds/node.go:26-40).
		Start: serverProcessWith(targets.ServerOptions{NodeID: "sidecar~127.0.0.1~{{.NodeID}}~cilium"}, cilium+"/bin/cilium-server"),
		// One pair at a time: every node shares Cilium's cache, whose version
		// moves with every pair's change, and Cilium answers a subscription
		// change only when that version moves (RES-4 in its known-failing
		// list), so pairs running beside each other would answer one
		// another's requests, differently each run.
		Parallel: 1, Catalogue: scenarios.Server,
		Note: "one pair at a time (Cilium's cache, shared by every node, answers a subscription change only when its version moves, which other pairs' changes would do at random); " +
			"node ids in Cilium's TYPE~IP~ID~DOMAIN form (--node-id 'sidecar~127.0.0.1~{{.NodeID}}~cilium'); its per-type SotW services as pkg/envoy/grpc.go registers them (no ADS, no delta), LDS held until the node ACKed CDS"}, "cilium")
	// Envoy Gateway validates every object in its folder again on each
	// change (about 70 ms apiece on 2 cores) and handles one change at a
	// time, so a change takes seconds to reach xDS once a few pairs run:
	// fewer pairs at once, and longer waits for what must happen.
	// Its snapshot cache also keeps SotW and delta streams in one map keyed
	// by a stream id that go-control-plane counts separately per protocol,
	// so a delta stream can take a SotW stream's place (see
	// internal/knownfailing/envoy-gateway.txt): the protocols run one at a time.
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

// consulBinary is the consul binary the user supplies in CONSUL_BIN.
func consulBinary() string { return os.Getenv("CONSUL_BIN") }

// consulSupplied says why Consul's specs are skipped, or "" when a binary
// was supplied.
func consulSupplied() string {
	if consulBinary() == "" {
		return "CONSUL_BIN is not set: Consul is not open source (BUSL-1.1 since 1.17), so the project does not build it; " +
			"set CONSUL_BIN to a consul binary to run the suite against it"
	}
	return ""
}

// consulVersion is what the supplied binary says it is (`consul version`
// prints "Consul v1.22.0" first): read from the binary, since no go.mod
// of the project pins Consul any more.
func consulVersion() string {
	if consulBinary() == "" {
		return "Consul (not supplied)"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, consulBinary(), "version").Output()
	first, _, _ := strings.Cut(string(out), "\n")
	if err != nil || !strings.HasPrefix(first, "Consul v") {
		return "Consul (version unknown: " + consulBinary() + " version did not say)"
	}
	return strings.TrimSpace(first)
}

// startConsul runs `consul agent -dev` on free loopback ports, waits until
// its Connect CA is up (the adapter needs the trust domain, which needs a
// leader), and serves the fixture adapter for it.
func startConsul() (env engine.Env, name string, stop func(), err error) {
	if _, err := os.Stat(consulBinary()); err != nil {
		return nil, "", nil, fmt.Errorf("CONSUL_BIN=%q: %w", consulBinary(), err)
	}
	var stops teardown
	defer stops.onError(&err)
	ports := make([]int, 5)
	for i := range ports {
		if ports[i], err = targets.FreePort(); err != nil { // Consul binds them itself, after this returns
			return nil, "", nil, err
		}
	}
	httpPort, grpcPort := ports[0], ports[1]
	argv := []string{consulBinary(), "agent", "-dev", "-log-level", "warn",
		"-bind", "127.0.0.1", "-client", "127.0.0.1", "-advertise", "127.0.0.1",
		"-http-port", strconv.Itoa(httpPort), "-grpc-port", strconv.Itoa(grpcPort), "-grpc-tls-port", "-1",
		"-dns-port", "-1", "-server-port", strconv.Itoa(ports[2]), "-serf-lan-port", strconv.Itoa(ports[3]),
		"-serf-wan-port", strconv.Itoa(ports[4])}
	proc, err := startPeer(&stops, argv)
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	httpAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(httpPort))
	var fx *consulfixture.Fixture
	if err := awaitReady(ctx, proc, "consul", 200*time.Millisecond, func(ctx context.Context) (err error) {
		fx, err = consulfixture.New(ctx, httpAddr)
		return err
	}); err != nil {
		return nil, "", nil, err
	}
	s, err := serveAdapter(ctx, &stops, proc, fx, targets.ServerOptions{Target: net.JoinHostPort("127.0.0.1", strconv.Itoa(grpcPort))})
	if err != nil {
		return nil, "", nil, err
	}
	return s, s.Name, stops.run, nil
}

// teardown is what a peer's start has set up so far, undone in reverse.
type teardown []func()

func (t *teardown) add(f func()) { *t = append(*t, f) }

// run undoes everything, last first.
func (t *teardown) run() {
	for i := len(*t) - 1; i >= 0; i-- {
		(*t)[i]()
	}
}

// onError undoes everything if the start failed (deferred with the start's
// named error).
func (t *teardown) onError(err *error) {
	if *err != nil {
		t.run()
	}
}

// startPeer runs a heavy peer's process; stops stops it.
func startPeer(stops *teardown, argv []string) (*process.Process, error) {
	proc, err := process.Start(context.Background(), argv, process.Options{StderrTail: 16 << 10})
	if err != nil {
		return nil, err
	}
	stops.add(func() { _ = proc.Stop(5 * time.Second) })
	return proc, nil
}

// serveAdapter serves a fixture adapter on a loopback port of the
// harness's own, as a vendor's test build would next to its server, and
// connects to the peer as a server target with it.
func serveAdapter(ctx context.Context, stops *teardown, proc *process.Process, fx fixturepb.FixtureServer, opts targets.ServerOptions) (*targets.Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	g := grpc.NewServer()
	fixturepb.RegisterFixtureServer(g, fx)
	go func() { _ = g.Serve(lis) }()
	stops.add(g.Stop)
	opts.Fixture = lis.Addr().String()
	s, err := targets.StartServer(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; output: %s", opts.Target, err, proc.Tail())
	}
	stops.add(s.Close)
	return s, nil
}

// awaitReady polls probe every interval until it succeeds, the peer exits
// or ctx ends.
func awaitReady(ctx context.Context, proc *process.Process, peer string, interval time.Duration, probe func(context.Context) error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		lastErr := probe(ctx)
		if lastErr == nil {
			return nil
		}
		select {
		case <-proc.Exited():
			return fmt.Errorf("%s exited: %v; output: %s", peer, proc.ExitErr(), proc.Tail())
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %v (last: %v); output: %s", peer, ctx.Err(), lastErr, proc.Tail())
		case <-tick.C:
		}
	}
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
func startEnvoyGateway() (env engine.Env, name string, stop func(), err error) {
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
	var stops teardown
	defer stops.onError(&err)
	stops.add(func() { _ = os.RemoveAll(tmp) })
	dir := func(name string) string { return filepath.Join(tmp, name) }
	for _, d := range []string{"home", "data", "state", "run", "resources", "stage"} {
		if err := os.MkdirAll(dir(d), 0o755); err != nil {
			return nil, "", nil, err
		}
	}
	if out, err := exec.CommandContext(ctx, envoyGatewayBinary(), "certgen", "--local", "--config-home", dir("home")).CombinedOutput(); err != nil {
		return nil, "", nil, fmt.Errorf("envoy-gateway certgen: %v: %s", err, out)
	}
	cfg := fmt.Sprintf(envoyGatewayConfig, dir("resources"), dir("home"), dir("data"), dir("state"), dir("run"))
	fx, err := egfixture.New(dir("resources"), dir("stage"), envoyGatewayVersion())
	if err != nil {
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
		return nil, "", nil, err
	}
	proc, err := startPeer(&stops, netns.Command(argv...))
	if err != nil {
		return nil, "", nil, err
	}
	dial := netns.Dialer(proc.Pid())
	// Ready once the file provider watches its folder (port 8081 in its
	// namespace): a file written earlier may never be noticed.
	probe := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
	}}
	defer probe.CloseIdleConnections()
	if err := awaitReady(ctx, proc, "envoy gateway", 100*time.Millisecond, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:8081/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := probe.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("readyz: %s", resp.Status)
		}
		return nil
	}); err != nil {
		return nil, "", nil, err
	}
	certs := dir("home") + "/certs/envoy/"
	s, err := serveAdapter(ctx, &stops, proc, fx, targets.ServerOptions{
		Target: "127.0.0.1:18000", FixturePlaintext: true,
		TLS:    targets.TLSOptions{CAFile: certs + "ca.crt", CertFile: certs + "tls.crt", KeyFile: certs + "tls.key", ServerName: "envoy-gateway"},
		Dialer: dial, NodeCluster: egfixture.NodeCluster, ConnectTimeout: 30 * time.Second,
	})
	if err != nil {
		return nil, "", nil, err
	}
	return s, s.Name, stops.run, nil
}

// Envoy runs only as a container (nothing installable here bundles it).
// Where no Docker engine is reachable its specs skip with the reason; on a
// Docker host they run the client suite against the image
// (XDSCONFORM_ENVOY_IMAGE, default docker.DefaultEnvoyImage). Not heavy:
// make e2e runs it (and skips it here).
var _ = Describe("containerised xDS clients", func() {
	image := docker.EnvoyImage()
	describe(peer{Name: "envoy", Version: image, Role: "client", Catalogue: scenarios.Client, SkipUnreachable: true,
		Start: clientEnv(targets.ClientOptions{Target: docker.Prefix + image})}, "container")
})
