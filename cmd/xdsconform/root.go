package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/transcript"
)

const rootLong = `xdsconform checks an xDS implementation against the xDS transport protocol
(envoyproxy's xds_protocol.rst and the numbered rules of its requirements
catalogue) and reports, rule by rule, what it breaks.

Roles:
  server   the harness plays an xDS client against your management server
  client   the harness plays the management server against your xDS client
  run      the embedded default: the server suite against go-control-plane
           and the client suite against grpc-go, both built in, with their
           known-failing lists; needs no setup
  list     the scenario catalogue
  scaffold turn a transcript (recorded, or a report's pair) into a scenario file
  coverage which catalogue rules the scenarios check, per role and level
  explain  one rule: its text, source, testability and the scenarios checking it
  report   render JSON reports as a Markdown summary or a certification report;
           report merge: merge the load reports of the shards of a run,
           render them, and judge them against an SLO
  record   sit between a real client and server as an xDS proxy and write
           their conversation to a transcript file
  replay   replay one side of a transcript against a server or a client and
           report where it now behaves differently

Exit codes (docs/outcomes.md has every outcome and what it does to them):
  0    every selected scenario passed, or did not pass only in ways that do
       not fail the run (listed as known-failing, below --fail-on, MAY
       unsupported, inconclusive for the harness's own lag)
  1    at least one scenario failed, was blocked or errored, or a
       known-failing entry passed; replay: the target behaves differently
       from the recording; record: nothing was recorded; load and report
       merge: an objective was broken, or the run measured nothing (the
       error line says why)
  2    usage or configuration error (bad flag or flag combination, unreadable
       file, unwritable report path), or nothing could run (every selected
       scenario was skipped; the error line says why), or --target
       answers but serves no xDS service (a gRPC server without it, such
       as the fixture API's port, or not a gRPC server at all; the error
       line names what answered)
  3    no usable connection to the target or its fixture (refused, timed
       out, TLS or handshake failure), or the target died during the run, or
       its fixture API stopped answering (3 calls in a row past their
       deadline); the error line gives the cause
  130  interrupted (Ctrl-C); the reports of what ran are still written
       (load: with no verdict). Except record, whose normal stop Ctrl-C is:
       it writes the recording and exits 0 (1 if nothing was recorded)`

func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// Much of what is printed comes from the target; none of it may drive
	// the terminal.
	stdout, stderr = reports.Terminal(stdout), reports.Terminal(stderr)
	root := &cobra.Command{
		Use:           "xdsconform",
		Short:         "xDS protocol conformance harness",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetArgs(args)
	root.AddCommand(newScaffoldCmd(stdout))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A bad flag ends the run before any command runs: the reports
		// named before it must not be left from a previous run either.
		var paths []string
		for _, name := range []string{"junit", "json"} {
			if f := c.Flags().Lookup(name); f != nil {
				paths = append(paths, f.Value.String())
			}
		}
		_ = reports.Prepare(paths...)
		return usageError("%v (see '%s --help')", err, c.CommandPath())
	})
	root.AddCommand(newServerCmd(stdout), newLoadCmd(stdout), newClientCmd(stdout), newRunCmd(stdout), newListCmd(stdout), newCoverageCmd(stdout), newExplainCmd(stdout), newReportCmd(stdout), newRecordCmd(stdout), newReplayCmd(stdout), newVersionCmd(stdout), newFaultsCmd(stdout))
	if err := root.ExecuteContext(ctx); err != nil {
		code := codeOf(err)
		if code != exitFailures && code != exitInterrupted {
			// The line may quote what the target said (a status message
			// echoing call metadata, say): it goes through the run's
			// secret memory like every other artefact.
			fmt.Fprintf(stderr, "xdsconform: %s\n", oneLine(transcript.Scrub(err.Error())))
		}
		return code
	}
	return exitOK
}

// oneLine keeps error output to a single line, as operators grep for it.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
