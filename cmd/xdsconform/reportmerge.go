package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/reports/loadreport"
)

const reportMergeLong = `Merge the JSON load reports of the shards of one run (xdsconform load
--shard I/N --json FILE, one per shard) into the report one process running
the whole plan would have written, and render it:

  --json FILE       the merged load report (format xdsconform.load/v1)
  --markdown FILE   a Markdown summary for a CI step summary
  --html FILE       one self-contained HTML page with plots (no network, no
                    script)
  --slo SPEC        judge the merged run against objectives, such as
                    p99<500ms,missed=0,convergence.p99<3s; exit 1 when one
                    is broken (docs/reports.md gives the grammar)

"-" writes one of them to standard output; with none of them, the Markdown
summary goes to standard output. Counts add up and latency histograms merge
bucket by bucket, never by averaging percentiles; shards missing from the
merge are named in a note. Reports of another run, plan or target, or
covering the same shard twice, are refused (exit 2). A single report is
accepted too: it is rendered (and judged) as it is.`

const reportMergeExample = `  xdsconform report merge --json run.json --html run.html shard-0.json shard-1.json
  xdsconform report merge --slo 'p99<500ms,missed=0' --markdown "$GITHUB_STEP_SUMMARY" shard-*.json`

// loadOutputs are the output flags of a load report, which report merge
// and load share: --json, --markdown, --html and --slo.
type loadOutputs struct {
	json, markdown, html, slo string
}

func newReportMergeCmd(out io.Writer) *cobra.Command {
	f := &loadOutputs{}
	c := &cobra.Command{
		Use:     "merge [--json FILE] [--markdown FILE] [--html FILE] [--slo SPEC] SHARD.json...",
		Short:   "Merge the JSON load reports of the shards of one run, render them, and judge them against an SLO",
		Long:    reportMergeLong,
		Example: reportMergeExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("name one or more JSON load reports (written by xdsconform load --json)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runReportMerge(c.Context(), out, c.ErrOrStderr(), f, args)
		},
	}
	f.register(c, "the merged")
	return c
}

func runReportMerge(ctx context.Context, stdout, stderr io.Writer, f *loadOutputs, args []string) error {
	outs, slo, err := f.prepare("--markdown")
	if err != nil {
		return err
	}
	shards := make([]*loadreport.Report, len(args))
	for i, path := range args {
		r, err := loadreport.ReadJSONFile(ctx, path)
		if err != nil {
			return usageError("%v", err)
		}
		shards[i] = r
	}
	merged, err := loadreport.Merge(shards...)
	if err != nil {
		return usageError("merging %s: %v", strings.Join(args, ", "), err)
	}
	return f.write(stdout, stderr, merged, outs, slo, true)
}

// register registers the output flags on c (the report's role: "merged"
// or "the run's").
func (f *loadOutputs) register(c *cobra.Command, whose string) {
	fs := c.Flags()
	fs.StringVar(&f.json, "json", "", `write `+whose+` JSON load report to this file ("-": standard output)`)
	fs.StringVar(&f.markdown, "markdown", "", `write a Markdown summary to this file ("-": standard output)`)
	fs.StringVar(&f.html, "html", "", `write a self-contained HTML page to this file ("-": standard output)`)
	fs.StringVar(&f.slo, "slo", "", "objectives the run must meet, comma-separated METRIC OP VALUE (p99<500ms,missed=0); exit 1 when one is broken")
}

// prepare checks the output flags, parses --slo and clears the files
// named (so a failed run leaves none from an earlier one). With no output
// named, fallback (a flag) goes to standard output; "" names none.
func (f *loadOutputs) prepare(fallback string) ([]output, loadreport.SLO, error) {
	var outs []output
	stdoutUsers := 0
	for _, o := range []output{
		{flag: "--json", path: f.json},
		{flag: "--markdown", path: f.markdown},
		{flag: "--html", path: f.html},
	} {
		if o.path == "" {
			continue
		}
		if o.path == "-" {
			stdoutUsers++
		}
		outs = append(outs, o)
	}
	switch {
	case stdoutUsers > 1:
		return nil, loadreport.SLO{}, usageError(`only one output can go to standard output ("-")`)
	case len(outs) == 0 && fallback != "":
		outs = append(outs, output{flag: fallback, path: "-"})
	}
	var slo loadreport.SLO
	if f.slo != "" {
		var err error
		if slo, err = loadreport.ParseSLO(f.slo); err != nil {
			return nil, slo, usageError("--slo: %v", err)
		}
	}
	for _, o := range outs {
		if o.path != "-" {
			if err := reports.Prepare(o.path); err != nil {
				return nil, slo, usageError("%s: %v", o.flag, err)
			}
		}
	}
	return outs, slo, nil
}

// toStdout reports whether one of outs goes to standard output.
func toStdout(outs []output) bool {
	for _, o := range outs {
		if o.path == "-" {
			return true
		}
	}
	return false
}

// write judges rep against slo (when --slo was given and judge is set),
// writes outs, and says the verdict on stderr: exit 1 when an objective
// is broken, or when the run measured nothing (rep.Unmeasured), judged
// by an SLO or not. Unless judge is set (a run interrupted, or stopped by
// its target: the caller says why), it only writes the reports.
func (f *loadOutputs) write(stdout, stderr io.Writer, rep *loadreport.Report, outs []output, slo loadreport.SLO, judge bool) error {
	if f.slo != "" && judge {
		rep.SLO = slo.Evaluate(rep)
	}
	for i := range outs {
		switch outs[i].flag {
		case "--json":
			outs[i].render = func(w io.Writer) error { return loadreport.WriteJSON(w, rep) }
		case "--markdown":
			outs[i].render = func(w io.Writer) error { return loadreport.WriteMarkdown(w, rep) }
		case "--html":
			outs[i].render = func(w io.Writer) error { return loadreport.WriteHTML(w, rep) }
		}
	}
	for _, o := range outs {
		var err error
		if o.path == "-" {
			err = o.render(stdout)
		} else {
			err = reports.WriteFile(o.path, o.render)
		}
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: %w", o.flag, o.path, err)}
		}
	}
	if !judge {
		return nil
	}
	// The verdict goes to standard error: standard output may be a report.
	if rep.SLO == nil {
		if len(rep.Unmeasured) == 0 {
			return nil
		}
		// Not judged against objectives (a shard, --slo not given to a
		// merge), and yet no pass: there was nothing to judge.
		line := "nothing measured, so the run fails: " + oneLine(strings.Join(rep.Unmeasured, "; "))
		fmt.Fprintf(stderr, "xdsconform: %s\n", line)
		return &exitError{code: exitFailures, err: fmt.Errorf("%s", line)}
	}
	if rep.SLO.OK {
		fmt.Fprintf(stderr, "xdsconform: SLO met: %s\n", sloLine(rep.SLO, true))
		return nil
	}
	line := "SLO broken: " + sloLine(rep.SLO, false)
	fmt.Fprintf(stderr, "xdsconform: %s\n", line)
	return &exitError{code: exitFailures, err: fmt.Errorf("%s", line)}
}

// sloLine lists the objectives that held (ok) or did not, with what was
// measured: "p99<500ms (812ms), missed=0 (3)".
func sloLine(res *loadreport.SLOResult, ok bool) string {
	var parts []string
	for _, o := range res.Objectives {
		if o.OK == ok {
			parts = append(parts, fmt.Sprintf("%s (%s)", o.Text, o.Value))
		}
	}
	return oneLine(strings.Join(parts, ", "))
}
