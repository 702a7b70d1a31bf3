package main

import (
	"context"
	"errors"
	"github.com/xdsconform/xdsconform/internal/infile"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

const clientLong = `Run the client suite: xdsconform plays the management server and checks what
your xDS client sends and what it does with what it receives, in every
variant the client speaks.

Each scenario starts a fresh client pointed at a fresh fake management
server, serves it a listener → route → cluster → endpoints chain one hop at a
time, and checks the client's requests, ACKs and NACKs. Scenarios about what
the client accepted, deleted or considers non-existent read its status view:
the Client Status Discovery Service (CSDS), or Envoy's admin /config_dump
with --observer admin. The client/status/* scenarios run first and find out
whether the view shows each state the others rest on; those resting on a
state it never shows are blocked by OBS-1, unless --status-lacks declares it.

Profiles (--client-profile) say which chain the client follows, and so
which scenarios apply; the others are skipped, with the reason:
  grpc    a gRPC client (default): the API listener it was pointed at, then
          its route, clusters and endpoints, each by name
  envoy   an Envoy (default for container:IMAGE): listeners and clusters by
          wildcard, routes and endpoints by name; checks wildcard
          re-declaration, warming and VHDS. Observed through /config_dump
          by default. builtin:reference runs in this profile too.

Targets:
  --target builtin:reference   our conformant reference client (all four variants, and rest)
  --target builtin:grpc-go     grpc-go's xDS client (SotW ADS), a child process
  --client-cmd 'COMMAND'       your client: one fresh process per scenario
  --client-wait                your client, started elsewhere, connects to --listen
  --target container:IMAGE     an Envoy image, one container per scenario (needs a
                               Docker engine; observed through /config_dump)

A --client-cmd is run by sh, in the current directory (or --client-dir), in
its own process group (and its own cgroup where the system allows one) and
stopped after each scenario with everything it started, detached or not:
SIGTERM, then SIGKILL 2 s later. A client that
had to be killed ends its scenario with an error. It may use these template
variables, shell-quoted when substituted:
` + "{{vars}}" + `
A client whose bootstrap has another shape than the gRPC JSON written to
{{.Bootstrap}} gives --bootstrap-template FILE: a Go text/template rendered
into {{.Bootstrap}} instead, per scenario, over these variables (federation
scenarios point the client at several servers, one per authority):
` + "{{bootvars}}" + `
Clients that wait on their does-not-exist timer (15 s in gRPC) make the
scenarios client/dne/* take that long; they run concurrently with the rest.
Set --dne-timer if your client's timer differs.`

const clientExample = `  # grpc-go's xDS client, built in
  xdsconform client --target builtin:grpc-go --junit client.xml

  # your gRPC client binary, one process per scenario, status through CSDS
  xdsconform client --client-cmd 'my-client --target {{.Target}} --csds {{.CSDS}}'

  # the reference client with one rule deliberately broken
  xdsconform client --target builtin:reference --fault ack-duplicates --run 'client/nack/*'

  # the reference client following Envoy: wildcards, warming, VHDS
  xdsconform client --target builtin:reference --client-profile envoy`

// defaultStartTimeout is --start-timeout's default.
const defaultStartTimeout = 10 * time.Second

type clientFlags struct {
	suite    suiteFlags
	files    scenarioFiles
	opts     targets.ClientOptions
	variants []string
	lacks    []string
	features []string
	faults   []string
	maxRecv  byteSize
	// maxStatus is --max-status-size, the cap on one read of the
	// client's status view.
	maxStatus byteSize
	// bootstrapTemplate is the --bootstrap-template file.
	bootstrapTemplate string
	// redactHeaders are header names whose values are secrets.
	redactHeaders []string
}

func newClientCmd(out io.Writer) *cobra.Command {
	f := &clientFlags{}
	c := &cobra.Command{
		Use:     "client --target builtin:NAME | --client-cmd COMMAND | --client-wait [flags]",
		Short:   "Run the client suite against an xDS client",
		Long:    strings.NewReplacer("{{vars}}", commandVarsHelp(), "{{bootvars}}", bootstrapVarsHelp()).Replace(clientLong),
		Example: clientExample,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return runClient(c, out, f)
		},
	}
	f.suite.register(c)
	f.files.register(c)
	f.register(c)
	registerCompletions(c, clientCatalogue)
	return c
}

func (f *clientFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.StringVar(&f.opts.Target, "target", "", "built-in client: builtin:reference or builtin:grpc-go; or container:IMAGE, an Envoy image run with testcontainers (needs a Docker engine)")
	fs.StringVar(&f.opts.Command, "client-cmd", "", "shell command starting your client, run once per scenario (template variables: see above)")
	fs.StringVar(&f.opts.Dir, "client-dir", "", "with --client-cmd: the directory the command runs in (default: the current directory)")
	fs.BoolVar(&f.opts.Wait, "client-wait", false, "your client is started elsewhere and connects to --listen; scenarios run one at a time")
	fs.StringVar(&f.opts.Listen, "listen", "", "address of the harness's management server (default: a fresh 127.0.0.1 port per scenario; required with --client-wait)")
	fs.StringVar(&f.opts.Listener, "listener", "", "with --client-wait: the listener name your client asks for")
	fs.StringVar(&f.opts.Profile, "client-profile", "", "the client profile your client follows: grpc or envoy (default: envoy for a container target, grpc otherwise; see above)")
	fs.StringSliceVar(&f.variants, "client-variants", nil, "variants your client speaks (default sotw-ads; the reference client speaks all four and rest)")
	fs.StringVar(&f.opts.Observer, "observer", "", "how to read the client's status: csds, admin (Envoy /config_dump) or none (default: admin in the envoy profile, csds otherwise)")
	fs.StringSliceVar(&f.lacks, "status-lacks", nil, "states your client's status view never reports ("+joinNames(targets.StatusStates)+"): it is not calibrated, and scenarios whose verdict rests on one are skipped instead of blocked by its calibration (admin always lacks DOES_NOT_EXIST)")
	fs.StringSliceVar(&f.features, "client-features", nil, "optional protocol features your client implements ("+strings.Join(targets.ClientFeatures, ", ")+"): scenarios about one it does not claim are skipped with that reason (default: a built-in client's own list, none otherwise)")
	fs.StringVar(&f.bootstrapTemplate, "bootstrap-template", "", "with --client-cmd: a Go text/template FILE rendered into {{.Bootstrap}} instead of the gRPC bootstrap (variables: see above)")
	fs.StringVar(&f.opts.ObserverAddr, "observer-addr", "", "with --client-wait: the client's CSDS or admin address")
	fs.StringSliceVar(&f.faults, "fault", nil, "builtin:reference only: switch on a fault (xdsconform faults client lists them, and the ones that act in the envoy profile only)")
	fs.DurationVar(&f.opts.DNETimer, "dne-timer", targets.DefaultDNETimer, "the client's does-not-exist timer; the reference client is configured with it")
	fs.DurationVar(&f.opts.RESTRefresh, "rest-refresh", bootstrap.RESTRefreshDelay, "a REST-JSON client's refresh delay (bootstrap refresh_delay), the wait before it polls again: the bootstraps the harness writes and the reference client are configured with it, a client configured elsewhere states its own. The check that a client waits for its poll outstanding (REST-1) watches at least that long, within --timer-budget")
	fs.DurationVar(&f.opts.StartTimeout, "start-timeout", defaultStartTimeout, "how long a launched client may take to connect")
	f.maxRecv = targets.DefaultMaxRecvSize
	fs.Var(&f.maxRecv, "max-recv-size", maxRecvSizeHelp("the client"))
	f.maxStatus = targets.DefaultMaxStatusSize
	fs.Var(&f.maxStatus, "max-status-size", maxStatusSizeHelp)
	fs.StringArrayVar(&f.redactHeaders, "redact-header", nil, "a header NAME whose values are secrets, redacted in every report wherever resources or status views carry it (repeatable; authorization, cookies and names with token, secret, password, api-key or credential always are)")
}

// markSensitiveHeaders marks the --redact-header names for the run's
// redaction; an empty name is a usage error, not a silent no-op.
func markSensitiveHeaders(names []string) error {
	for _, n := range names {
		if strings.TrimSpace(n) == "" {
			return usageError("--redact-header: a header name is empty")
		}
	}
	transcript.MarkSensitiveHeaders(names...)
	return nil
}

func bootstrapVarsHelp() string {
	var b strings.Builder
	for _, k := range targets.BootstrapTemplateVarOrder {
		b.WriteString("  {{." + k + "}}")
		b.WriteString(strings.Repeat(" ", max(1, 26-len(k))))
		b.WriteString(targets.BootstrapTemplateVars[k] + "\n")
	}
	return b.String()
}

func commandVarsHelp() string {
	var b strings.Builder
	for _, k := range []string{"Bootstrap", "EnvoyBootstrap", "Server", "NodeID", "Cluster", "Listener", "Target", "CSDS", "Admin", "Dir"} {
		b.WriteString("  {{." + k + "}}")
		b.WriteString(strings.Repeat(" ", max(1, 17-len(k))))
		b.WriteString(targets.CommandVars[k] + "\n")
	}
	return b.String()
}

// clientSuite validates the client flags and returns the suite to run.
// maxBootstrapTemplate bounds a --bootstrap-template file; a bootstrap is
// a few KiB.
const maxBootstrapTemplate = 1 << 20

func (f *clientFlags) clientSuite(ctx context.Context) (suiteRun, error) {
	catalogue, err := f.files.catalogue("client", scenarios.Client)
	if err != nil {
		return suiteRun{}, err
	}
	f.opts.Faults = f.faults
	f.opts.MaxRecvSize = int(f.maxRecv)
	f.opts.MaxStatusSize = int(f.maxStatus)
	if f.bootstrapTemplate != "" {
		text, err := infile.ReadAll(ctx, f.bootstrapTemplate, maxBootstrapTemplate)
		if err != nil {
			return suiteRun{}, usageError("--bootstrap-template: %v", err)
		}
		f.opts.BootstrapTemplate = string(text)
	}
	if err := markSensitiveHeaders(f.redactHeaders); err != nil {
		return suiteRun{}, err
	}
	for _, s := range f.variants {
		v, err := wire.ParseVariant(s)
		if err != nil {
			return suiteRun{}, usageError("--client-variants: %v", err)
		}
		f.opts.Variants = append(f.opts.Variants, v)
	}
	if f.features != nil {
		f.opts.Features = append([]string{}, f.features...) // given, even empty: exactly these
	}
	// NewClients validates the states and features; an unknown one is its
	// usage error.
	for _, l := range f.lacks {
		f.opts.StatusLacks = append(f.opts.StatusLacks, observer.State(strings.ToUpper(strings.ReplaceAll(l, "-", "_"))))
	}
	if f.opts.Listen != "" {
		if err := checkAddr("--listen", f.opts.Listen, 0); err != nil {
			return suiteRun{}, err
		}
	}
	if f.opts.DNETimer <= 0 {
		return suiteRun{}, usageError("--dne-timer must be positive")
	}
	if f.opts.StartTimeout <= 0 {
		return suiteRun{}, usageError("--start-timeout must be positive")
	}
	if f.opts.RESTRefresh <= 0 {
		return suiteRun{}, usageError("--rest-refresh must be positive")
	}
	// A quiet window as long as the timer would watch the timer itself; a
	// scenario bound shorter than the timer would cut the timer scenarios.
	if f.suite.quiet >= f.opts.DNETimer {
		return suiteRun{}, usageError("--quiet (%v) must be shorter than --dne-timer (%v)", f.suite.quiet, f.opts.DNETimer)
	}
	if need := f.opts.DNETimer + 2*f.suite.timeout; f.suite.scenarioTimeout < need {
		return suiteRun{}, usageError("--scenario-timeout (%v) must be at least --dne-timer + 2 × --timeout (%v)", f.suite.scenarioTimeout, need)
	}
	clients, err := targets.NewClients(f.opts)
	if err != nil {
		return suiteRun{}, usageError("%v", err)
	}
	if err := clients.Preflight(ctx); err != nil {
		return suiteRun{}, &exitError{code: exitUnreachable, err: err}
	}
	known, err := f.suite.loadKnownFailing(func() (*engine.KnownFailing, error) { return knownfailing.ForClient(f.opts.Target) })
	if err != nil {
		return suiteRun{}, err
	}
	return suiteRun{role: "client", target: clients.Name(), catalogue: catalogue, env: clients, known: known,
		maxParallel: clients.MaxParallel(), calibrations: scenarios.ClientCalibrations(), options: map[string]string{
			"dne_timer": f.opts.DNETimer.String(), "rest_refresh": f.opts.RESTRefresh.String(), "client_profile": clients.Options().Profile,
		}}, nil
}

func runClient(c *cobra.Command, out io.Writer, f *clientFlags) error {
	if err := f.suite.prepareReports(); err != nil {
		return err
	}
	s, err := f.clientSuite(c.Context())
	if err != nil {
		return err
	}
	err = runSuite(c.Context(), out, &f.suite, s)
	clients := s.env.(*targets.Clients)
	var ee *exitError
	if died := clients.Died(); died != nil && (err == nil || errors.As(err, &ee) && ee.code == exitFailures) {
		// The report of what ran is written; the one line says why the
		// rest could not.
		return &exitError{code: exitUnreachable, err: died}
	}
	return err
}
