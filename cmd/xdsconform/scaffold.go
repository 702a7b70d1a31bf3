package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/internal/scaffold"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/transcript"
)

const scaffoldLong = `Turn a transcript into a scenario file a person then trims.

The transcript is a file (xdsconform record writes one), or, with --report
and --pair, the transcript a JSON report kept of one pair (--transcripts
failing, the default, keeps those of the pairs that did not pass).

Against a server (the default for a transcript taken from the client's side,
as record's and every server-suite pair's are), the server's responses become
fixture changes — set each resource it served at a revision, delete what it
removed — placed before the requests that got them; the client's requests
become subscribe, unsubscribe, ack and nack steps; each response becomes an
expect step. Against a client (the default for a client-suite pair), the
responses become serve steps and the requests expect steps. Nonce and version
literals become references to the messages they came from, so the file runs
against any implementation. The file's header says what was generalised.

The file is checked before it is written: it validates against the scenario
schema and loads. Run it with xdsconform server|client --scenario-file FILE
(docs/scenario-files.md).`

const scaffoldExample = `  # a failing pair of a CI run
  xdsconform scaffold --report report.json --pair 'server/nonce/stale-request-ignored[sotw-ads]' -o bug.yaml

  # a recording, replayed against the server it recorded
  xdsconform scaffold recorded.json -o bug.yaml
  xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001 --scenario-file bug.yaml`

type scaffoldFlags struct {
	output, report, pair, against, id string
}

func newScaffoldCmd(out io.Writer) *cobra.Command {
	f := &scaffoldFlags{}
	c := &cobra.Command{
		Use:     "scaffold TRANSCRIPT -o FILE.yaml | scaffold --report REPORT.json --pair 'ID[variant]' -o FILE.yaml",
		Short:   "Turn a transcript (recorded, or a pair's from a JSON report) into a scenario file",
		Long:    scaffoldLong,
		Example: scaffoldExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return runScaffold(c.Context(), out, f, args)
		},
	}
	fs := c.Flags()
	fs.StringVarP(&f.output, "output", "o", "", "write the scenario file here (- for stdout)")
	fs.StringVar(&f.report, "report", "", "take the transcript of --pair out of this JSON report")
	fs.StringVar(&f.pair, "pair", "", "with --report: the pair, ID[variant] as the report prints it")
	fs.StringVar(&f.against, "against", "", "the side under test: server or client (default: the side the transcript was not taken from)")
	fs.StringVar(&f.id, "id", "", "the scenario's ID, <role>/<area>/<behaviour> (default: made up of the transcript's scenario)")
	_ = c.MarkFlagFilename("report", "json")
	_ = c.MarkFlagFilename("output", "yaml", "yml")
	return c
}

func runScaffold(ctx context.Context, out io.Writer, f *scaffoldFlags, args []string) error {
	switch {
	case f.output == "":
		return usageError("-o FILE.yaml is required (- for stdout)")
	case len(args) == 1 && f.report != "":
		return usageError("give a TRANSCRIPT or --report, not both")
	case len(args) == 0 && f.report == "":
		return usageError("give a TRANSCRIPT file, or --report REPORT.json --pair 'ID[variant]'")
	case (f.report == "") != (f.pair == ""):
		return usageError("--report and --pair go together")
	case f.against != "" && f.against != scaffold.AgainstServer && f.against != scaffold.AgainstClient:
		return usageError("--against %q: want server or client", f.against)
	}
	var tf *transcript.File
	opts := scaffold.Options{Against: f.against, ID: f.id}
	if f.report != "" {
		run, _, err := reports.ReadJSONFile(ctx, f.report)
		if err != nil {
			return usageError("--report: %v", err)
		}
		tf, opts.Requirements, err = scaffold.Pair(run, f.pair, f.report)
		if err != nil {
			return usageError("%v", err)
		}
	} else {
		var err error
		if tf, err = transcript.ReadFile(ctx, args[0]); err != nil {
			return usageError("%v", err)
		}
	}
	res, err := scaffold.Scaffold(tf, opts)
	if err != nil {
		return usageError("%v", err)
	}
	text, err := res.File()
	if err != nil {
		return usageError("%v", err)
	}
	if f.output == "-" {
		_, err := out.Write(text)
		return err
	}
	if err := os.WriteFile(f.output, text, 0o644); err != nil {
		return usageError("-o: %v", err)
	}
	fmt.Fprintf(out, "wrote %s: %s, %d steps; trim it, then run it with xdsconform %s --scenario-file %s\n",
		f.output, res.Doc.ID, len(res.Doc.ServerSteps)+len(res.Doc.ClientSteps), res.Doc.Role(), f.output)
	return nil
}
