package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
)

const runLong = `Run the embedded default: both suites at once, with one combined report.
  - the server suite against go-control-plane v0.14.0 (SnapshotCache),
    started in-process;
  - the client suite against grpc-go v1.85.0's xDS client, run as a child
    process of this binary.
Each uses its shipped known-failing list. It needs no setup and shows what
the harness reports: every known failure is printed with the rule it
breaks, and the command exits 0 unless something new fails. The client
suite's does-not-exist scenarios wait out grpc-go's 15 s timer, which sets
the run's length.`

func newRunCmd(out io.Writer) *cobra.Command {
	f := &suiteFlags{}
	c := &cobra.Command{
		Use:     "run [flags]",
		Short:   "Run the embedded default: server suite vs go-control-plane, client suite vs grpc-go",
		Long:    runLong,
		Example: "  xdsconform run\n  xdsconform run --junit report.xml --json report.json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := f.prepareReports(); err != nil {
				return err
			}
			if _, _, err := f.selection(); err != nil {
				return err
			}
			known, err := f.loadKnownFailing(func() (*engine.KnownFailing, error) { return knownfailing.For(targets.BuiltinGoControlPlane) })
			if err != nil {
				return err
			}
			srv, err := startServer(c.Context(), targets.ServerOptions{Target: targets.BuiltinGoControlPlane})
			if err != nil {
				return err
			}
			defer srv.Close()
			cf := &clientFlags{suite: *f, opts: targets.ClientOptions{Target: targets.BuiltinGRPCGo, DNETimer: targets.DefaultDNETimer, RESTRefresh: bootstrap.RESTRefreshDelay, StartTimeout: defaultStartTimeout}}
			client, err := cf.clientSuite(c.Context())
			if err != nil {
				return err
			}
			// The built-in server does not die, but its fixture could stop
			// answering: the run then ends as server's does (exit 3).
			return diedDuringRun(srv, runSuites(c.Context(), out, f, []suiteRun{
				{role: "server", target: srv.Name, catalogue: scenarios.Server(), env: srv, known: known},
				client,
			}))
		},
	}
	f.register(c)
	registerCompletions(c, bothCatalogues)
	return c
}
