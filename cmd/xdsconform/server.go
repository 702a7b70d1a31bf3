package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

const serverLong = `Run the server suite: xdsconform plays an xDS client against your management
server, in every variant it serves (SotW and Delta, ADS and per-type), and
checks each rule of the protocol it can observe on the wire.

Point --target at your server's xDS gRPC port. Most scenarios need to create,
change and delete resources on the server: implement the fixture API
(docs/fixture-api.md) in a test build of your server and point --fixture at
it. Without a fixture those scenarios are reported as skipped, not failed.

Built-in targets need no setup:
  builtin:reference                our conformant reference server
  builtin:go-control-plane         go-control-plane v0.14.0, SnapshotCache
  builtin:go-control-plane-linear  go-control-plane v0.14.0, LinearCache

Built-in go-control-plane targets use their shipped known-failing list unless
--known-failing is given.`

const serverExample = `  # your server, with its fixture, in CI
  xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001 --junit report.xml

  # only the nonce rules, delta variants, with more patience for a remote server
  xdsconform server --target xds.example.com:443 --tls --run 'server/nonce/*' \
      --variant delta-ads,delta-pertype --timeout 10s

  # the reference server with one rule deliberately broken
  xdsconform server --target builtin:reference --fault answer-stale-nonce`

type serverFlags struct {
	suite          suiteFlags
	target         string
	fixture        string
	rest           string
	restHold       time.Duration
	restHoldSet    bool // --rest-hold was given: 0s then means none, not the default
	tls            targets.TLSOptions
	metadata       []string
	redactHeaders  []string
	faults         []string
	connectTimeout time.Duration
	containerXDS   int
	containerFx    int
	nodeCluster    string
	nodeID         string
	nodeMetadata   []string
	fixturePlain   bool
	containerEnv   []string
	maxRecv        byteSize
	files          scenarioFiles
}

func newServerCmd(out io.Writer) *cobra.Command {
	f := &serverFlags{}
	c := &cobra.Command{
		Use:     "server --target HOST:PORT|builtin:NAME [flags]",
		Short:   "Run the server suite against a management server",
		Long:    serverLong,
		Example: serverExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runServer(c, out, f)
		},
	}
	f.suite.register(c)
	f.files.register(c)
	f.registerTarget(c)
	c.Flags().StringVar(&f.rest, "rest-target", "", "base URL of the server's REST-JSON endpoints, http://HOST:PORT or https://HOST:PORT (runs the rest variant)")
	c.Flags().DurationVar(&f.restHold, "rest-hold", 0, fmt.Sprintf("the server's REST long-poll hold: how long it holds a poll at the current version before ending it without a response. The long-poll check (REST-4) watches at least that long, within --timer-budget (default %v for a server of yours; builtin:reference is run with it, and with %v unless given)", targets.DefaultRESTHold, targets.ReferenceRESTHold))
	registerCompletions(c, serverCatalogue)
	return c
}

// registerTarget registers the flags that say how to reach a server
// target and its fixture: the server suite's and load's.
func (f *serverFlags) registerTarget(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.target, "target", "", "xDS address HOST:PORT, or builtin:reference, builtin:go-control-plane, builtin:go-control-plane-linear, or container:IMAGE (needs a Docker engine)")
	fs.StringVar(&f.fixture, "fixture", "", "fixture API address HOST:PORT (see docs/fixture-api.md)")
	fs.BoolVar(&f.tls.Enabled, "tls", false, "connect with TLS (verified against the system roots unless --tls-ca)")
	fs.StringVar(&f.tls.CAFile, "tls-ca", "", "PEM file of the CA that signed the server certificate")
	fs.StringVar(&f.tls.CertFile, "tls-cert", "", "PEM client certificate for mutual TLS")
	fs.StringVar(&f.tls.KeyFile, "tls-key", "", "PEM client key for mutual TLS")
	fs.StringVar(&f.tls.ServerName, "tls-server-name", "", "name to verify in the server certificate")
	fs.StringVar(&f.nodeCluster, "node-cluster", targets.DefaultNodeCluster, "node.cluster sent on every stream; {{.NodeID}} stands for the pair's node id (Envoy Gateway: envoy-gateway-system/GATEWAY)")
	fs.StringVar(&f.nodeID, "node-id", "", "node.id sent on every stream, naming the pair's own node id as {{.NodeID}}, which it must (Istio, Cilium: sidecar~127.0.0.1~{{.NodeID}}~ns.svc.cluster.local); the fixture is told the same id (default: the pair's node id)")
	fs.StringArrayVar(&f.nodeMetadata, "node-metadata", nil, "node.metadata KEY=VALUE, a string value, sent on every stream (repeatable; Istio: NAMESPACE=ns)")
	fs.BoolVar(&f.fixturePlain, "fixture-plaintext", false, "connect to --fixture without TLS even when the xDS connection uses it")
	fs.StringArrayVar(&f.metadata, "metadata", nil, "gRPC call metadata KEY=VALUE sent on every stream (repeatable)")
	fs.StringArrayVar(&f.redactHeaders, "redact-header", nil, "a header NAME whose values are secrets, redacted in every report: in --metadata, echoed back by the target, in resources (repeatable; authorization, cookies and names with token, secret, password, api-key or credential always are)")
	fs.StringSliceVar(&f.faults, "fault", nil, "builtin:reference only: switch on a fault (xdsconform faults server lists them)")
	fs.DurationVar(&f.connectTimeout, "connect-timeout", 5*time.Second, "how long to wait for the target to accept a connection")
	fs.IntVar(&f.containerXDS, "container-xds-port", targets.DefaultContainerXDSPort, "with --target container:IMAGE: the xDS port inside the container")
	fs.StringArrayVar(&f.containerEnv, "container-env", nil, "with --target container:IMAGE: KEY=VALUE in the container's environment (repeatable)")
	fs.IntVar(&f.containerFx, "container-fixture-port", 0, "with --target container:IMAGE: the fixture API port inside the container (0: none)")
	f.maxRecv = targets.DefaultMaxRecvSize
	fs.Var(&f.maxRecv, "max-recv-size", maxRecvSizeHelp("the server"))
}

// joinNames lists names (faults, states) for a flag's help.
func joinNames[S ~string](names []S) string {
	ss := make([]string, len(names))
	for i, n := range names {
		ss[i] = string(n)
	}
	return strings.Join(ss, ", ")
}

// startServer starts a server target; one that cannot be reached exits
// with exitUnreachable, any other failure is a configuration error.
func startServer(ctx context.Context, opts targets.ServerOptions) (*targets.Server, error) {
	srv, err := targets.StartServer(ctx, opts)
	switch {
	case errors.Is(err, targets.ErrUnreachable):
		return nil, &exitError{code: exitUnreachable, err: err}
	case err != nil:
		return nil, usageError("%v", err)
	}
	return srv, nil
}

func runServer(c *cobra.Command, out io.Writer, f *serverFlags) error {
	if err := f.suite.prepareReports(); err != nil {
		return err
	}
	if err := f.validate(c); err != nil {
		return err
	}
	opts, err := f.targetOptions()
	if err != nil {
		return err
	}
	if _, _, err := f.suite.selection(); err != nil {
		return err
	}
	catalogue, err := f.files.catalogue("server", scenarios.Server)
	if err != nil {
		return err
	}
	known, err := f.suite.loadKnownFailing(func() (*engine.KnownFailing, error) { return knownfailing.For(f.target) })
	if err != nil {
		return err
	}
	srv, err := startServer(c.Context(), opts)
	if err != nil {
		return err
	}
	defer srv.Close()
	var options map[string]string
	if srv.REST != nil {
		options = map[string]string{"rest_hold": srv.REST.Hold.String()}
	}
	if found := srv.Services(); found != nil {
		// Without a fixture the variants run are the ones the probe found.
		if options == nil {
			options = map[string]string{}
		}
		options["target_serves"] = found.String()
		if found.All() {
			fmt.Fprintf(out, "no --fixture: the target serves every discovery service (%s)\n", found)
		} else {
			fmt.Fprintf(out, "no --fixture: the target serves only %s; the pairs that need another service are skipped\n", found)
		}
	}
	err = runSuite(c.Context(), out, &f.suite, suiteRun{
		role: "server", target: srv.Name, catalogue: catalogue, env: srv, known: known, options: options,
	})
	return diedDuringRun(srv, err)
}

// diedDuringRun is the run's outcome err, unless the target died during
// the run, or could no longer be driven (its fixture stopped answering:
// engine.ErrUnusable): then the one line naming the cause, and the exit
// code of an unreachable target (the report of what ran is written
// already). An interrupt, or reports that could not be written, stay what
// they are.
func diedDuringRun(srv *targets.Server, err error) error {
	died := srv.Died()
	var ee *exitError
	if died == nil || err != nil && !(errors.As(err, &ee) && ee.code == exitFailures) {
		return err
	}
	if errors.Is(died, engine.ErrUnusable) {
		return &exitError{code: exitUnreachable, err: fmt.Errorf("the run stopped early, so the scenarios after it errored: %w", died)}
	}
	return &exitError{code: exitUnreachable, err: fmt.Errorf("the target died during the run, so the scenarios after it errored: %w", died)}
}

// targetOptions are the options of the target the flags name. It
// registers the metadata as secrets, so a target that echoes them back
// puts none in a report.
// restHold is --rest-hold as targets takes it: 0s given means a server
// that holds no poll (targets.NoRESTHold), not given the default.
func restHold(d time.Duration, given bool) time.Duration {
	if given && d == 0 {
		return targets.NoRESTHold
	}
	return d
}

func (f *serverFlags) targetOptions() (targets.ServerOptions, error) {
	opts := targets.ServerOptions{Target: f.target, Fixture: f.fixture, REST: f.rest, RESTHold: restHold(f.restHold, f.restHoldSet), TLS: f.tls, ConnectTimeout: f.connectTimeout,
		ContainerXDSPort: f.containerXDS, ContainerFixturePort: f.containerFx, NodeCluster: f.nodeCluster, FixturePlaintext: f.fixturePlain,
		MaxRecvSize: int(f.maxRecv), NodeID: f.nodeID}
	if err := targets.CheckNodeOptions(opts); err != nil {
		return targets.ServerOptions{}, usageError("%v", err)
	}
	var err error
	if opts.NodeMetadata, err = keyValues("node-metadata", f.nodeMetadata, false); err != nil {
		return targets.ServerOptions{}, err
	}
	if opts.Metadata, err = keyValues("metadata", f.metadata, true); err != nil {
		return targets.ServerOptions{}, err
	}
	if err := markSensitiveHeaders(f.redactHeaders); err != nil {
		return targets.ServerOptions{}, err
	}
	// A target that echoes a token back (in a status, a NACK detail, a
	// resource) must not put it in a report.
	transcript.RememberHeaders(opts.Metadata)
	if opts.ContainerEnv, err = keyValues("container-env", f.containerEnv, false); err != nil {
		return targets.ServerOptions{}, err
	}
	for _, name := range f.faults {
		fault, err := targets.ParseFault(targets.ServerFaults(targets.BuiltinReference), name)
		if err != nil {
			return targets.ServerOptions{}, usageError("--fault: %v", err)
		}
		opts.Faults = append(opts.Faults, fault.Name)
	}
	return opts, nil
}

// validate rejects flag combinations that would otherwise be ignored in
// silence, each with one line: a flag that does not apply to the target
// given, TLS half configured, an address that cannot be one.
func (f *serverFlags) validate(c *cobra.Command) error {
	f.restHoldSet = c.Flags().Changed("rest-hold")
	if f.target == "" {
		return usageError("--target is required: HOST:PORT, %sIMAGE, or one of %s", targets.ContainerPrefix, strings.Join(targets.BuiltinServers, ", "))
	}
	set := func(names ...string) []string {
		var out []string
		for _, n := range names {
			if c.Flags().Changed(n) {
				out = append(out, "--"+n)
			}
		}
		return out
	}
	tlsFlags := set("tls-ca", "tls-cert", "tls-key", "tls-server-name", "fixture-plaintext")
	if f.tls.Enabled {
		tlsFlags = append([]string{"--tls"}, tlsFlags...) // --tls=false asks for nothing
	}
	containerFlags := set("container-xds-port", "container-fixture-port", "container-env")
	builtin := strings.HasPrefix(f.target, "builtin:")
	container := strings.HasPrefix(f.target, targets.ContainerPrefix)
	switch {
	case builtin && len(tlsFlags) > 0:
		return usageError("%s: %s is served in-process without TLS; TLS flags apply to HOST:PORT and container targets", strings.Join(tlsFlags, ", "), f.target)
	case builtin && f.fixture != "":
		return usageError("--fixture: %s brings its own fixture", f.target)
	case (builtin || container) && f.rest != "":
		return usageError("--rest-target applies to HOST:PORT targets (%s brings its own REST endpoint, if any)", f.target)
	case c.Flags().Changed("rest-hold") && f.restHold < 0:
		return usageError("--rest-hold must not be negative (0s: the server holds no poll)")
	case c.Flags().Changed("rest-hold") && f.restHold == 0 && f.target == targets.BuiltinReference:
		return usageError("--rest-hold 0s: %s always holds a poll at the current version; give how long", f.target)
	case c.Flags().Changed("rest-hold") && f.target != targets.BuiltinReference && f.rest == "":
		return usageError("--rest-hold applies to a server with a REST endpoint: builtin:reference, or HOST:PORT with --rest-target")
	case !container && len(containerFlags) > 0:
		return usageError("%s: only apply to --target container:IMAGE", strings.Join(containerFlags, ", "))
	case f.connectTimeout <= 0:
		return usageError("--connect-timeout must be positive")
	case (f.tls.CertFile == "") != (f.tls.KeyFile == ""):
		return usageError("--tls-cert and --tls-key go together (mutual TLS needs both)")
	case f.fixturePlain && f.fixture == "":
		return usageError("--fixture-plaintext needs --fixture")
	}
	// A CA or a client certificate turns TLS on (targets.TLSOptions); a
	// server name or a plaintext fixture alone would be ignored in silence.
	tlsOn := f.tls.Enabled || f.tls.CAFile != "" || f.tls.CertFile != ""
	switch {
	case f.tls.ServerName != "" && !tlsOn:
		return usageError("--tls-server-name needs TLS: add --tls (or --tls-ca)")
	case f.fixturePlain && !tlsOn:
		return usageError("--fixture-plaintext only matters when the xDS connection uses TLS (--tls)")
	}
	if !builtin && !container {
		if err := checkHostPort("--target", f.target); err != nil {
			return err
		}
	}
	if f.fixture != "" {
		if err := checkHostPort("--fixture", f.fixture); err != nil {
			return err
		}
	}
	if f.rest != "" {
		u, err := url.Parse(f.rest)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return usageError("--rest-target %q: want http://HOST:PORT or https://HOST:PORT", f.rest)
		}
	}
	return nil
}

// checkHostPort checks that addr is HOST:PORT with a port that can exist
// (a number from 1 to 65535, or a service name), so that a typo is a usage
// error rather than an unreachable target.
func checkHostPort(flag, addr string) error { return checkAddr(flag, addr, 1) }

// checkAddr is checkHostPort with the lowest port allowed: 0 for an
// address the harness listens on, where it picks a free port.
func checkAddr(flag, addr string, lowest int) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError("%s %q: want HOST:PORT", flag, addr)
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < lowest || n > 65535 {
			return usageError("%s %q: port %d is out of range (%d-65535)", flag, addr, n, lowest)
		}
		return nil
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageError("%s %q: port %q is neither a number nor a known service", flag, addr, port)
	}
	return nil
}

// keyValues reads the KEY=VALUE values of a repeatable --flag (gRPC
// metadata keys lowered, as gRPC sends them); one without a key or an
// equals sign is bad input.
func keyValues(flag string, kvs []string, lower bool) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError("--%s %q: want KEY=VALUE", flag, kv)
		}
		if lower {
			k = strings.ToLower(k)
		}
		out[k] = v
	}
	return out, nil
}
