package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/targets"
)

const runLong = `Run the embedded default: the server suite against go-control-plane v0.14.0
(SnapshotCache), started in-process, with its shipped known-failing list.
It needs no setup and shows what the harness reports: every known failure is
printed with the rule it breaks, and the command exits 0 unless something
new fails.`

func newRunCmd(out io.Writer) *cobra.Command {
	f := &serverFlags{}
	c := &cobra.Command{
		Use:     "run [flags]",
		Short:   "Run the embedded default suite against built-in go-control-plane",
		Long:    runLong,
		Example: "  xdsconform run\n  xdsconform run --junit report.xml --json report.json",
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f.target = targets.BuiltinGoControlPlane
			return runServer(c, out, f)
		},
	}
	f.suite.register(c)
	return c
}
