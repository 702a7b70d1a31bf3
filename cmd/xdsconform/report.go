package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/reports/certify"
	"github.com/xdsconform/xdsconform/reports/htmlpage"
	"github.com/xdsconform/xdsconform/reports/markdown"
	"github.com/xdsconform/xdsconform/results"
)

const reportLong = `Render JSON reports (from server, client or run --json; one or several,
server and client) for people and for publishing:

  --html FILE            one self-contained HTML page (no network; a strict
                         Content-Security-Policy): summaries by level and rule
                         family, filters, each failure with its rules' text
                         and its wire transcript as a sequence of messages
  --markdown FILE        a Markdown summary for a CI step summary
                         ($GITHUB_STEP_SUMMARY) or a pull-request comment: the
                         verdict, a table by level, what did not pass by root
                         cause, each failure with its rules, skips summarised
                         by reason; cut to --markdown-limit
  --certification FILE   a certification report (YAML, apiVersion
                         xdsconform.io/v1alpha2, kind ConformanceReport): the
                         implementation, harness and catalogue versions, per
                         role a result (success, partial or failure: a known
                         failure of a MUST rule is partial, never success) and
                         the rules passed and failed by level and variant,
                         the known-failing entries claimed with their reasons,
                         and the SHA-256 of the JSON reports as evidence. It is
                         checked against its schema before it is written.

"-" writes one of them to standard output. The implementation flags name
the implementation under test; they override what the reports recorded
(the same flags on server, client and run record it). A rule passes in a
certification report only if every scenario run citing it passed, in every
variant it ran in (docs/reports.md).

Load reports (xdsconform load --json) are merged and rendered by
'xdsconform report merge' (see its --help).`

const reportExample = `  xdsconform server --target 127.0.0.1:18000 --fixture 127.0.0.1:18001 \
      --impl-name my-control-plane --impl-version v1.4.2 --json server.json
  xdsconform report --markdown "$GITHUB_STEP_SUMMARY" server.json
  xdsconform report --html report.html server.json client.json
  xdsconform report --certification conformance.yaml --implementation impl.yaml server.json client.json
  xdsconform report --markdown - --markdown-limit 65536 server.json > comment.md`

// reportFlags are the report command's flags.
type reportFlags struct {
	html, markdown, certification string
	markdownLimit                 byteSize
	impl                          implFlags
}

func newReportCmd(out io.Writer) *cobra.Command {
	f := &reportFlags{markdownLimit: markdown.StepSummaryLimit}
	c := &cobra.Command{
		Use:     "report [--html FILE] [--markdown FILE] [--certification FILE] [flags] REPORT.json...",
		Short:   "Render JSON reports as an HTML page, a Markdown summary or a certification report",
		Long:    reportLong,
		Example: reportExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("name one or more JSON reports (written by --json)")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runReport(c.Context(), out, c.ErrOrStderr(), f, args)
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.html, "html", "", `write a self-contained HTML page to this file ("-": standard output)`)
	fs.StringVar(&f.markdown, "markdown", "", `write a Markdown summary to this file ("-": standard output)`)
	fs.StringVar(&f.certification, "certification", "", `write a certification report (YAML) to this file ("-": standard output)`)
	fs.Var(&f.markdownLimit, "markdown-limit", fmt.Sprintf("largest Markdown summary, in bytes: lists past it are cut with a note (%d for a pull-request comment)", markdown.CommentLimit))
	f.impl.register(fs)
	c.AddCommand(newReportMergeCmd(out))
	return c
}

// output is one file the report command writes.
type output struct {
	flag, path string
	render     func(io.Writer) error
}

func runReport(ctx context.Context, stdout, stderr io.Writer, f *reportFlags, args []string) error {
	var outs []output
	stdoutUsers := 0
	for _, o := range []struct{ flag, path string }{{"--html", f.html}, {"--markdown", f.markdown}, {"--certification", f.certification}} {
		if o.path == "" {
			continue
		}
		if o.path == "-" {
			stdoutUsers++
		}
		outs = append(outs, output{flag: o.flag, path: o.path})
	}
	switch {
	case len(outs) == 0:
		return usageError("nothing to write: give --html FILE, --markdown FILE or --certification FILE")
	case stdoutUsers > 1:
		return usageError(`only one output can go to standard output ("-")`)
	case int(f.markdownLimit) < markdown.MinLimit:
		return usageError("--markdown-limit %d: at least %d bytes", int(f.markdownLimit), markdown.MinLimit)
	}
	impl, err := f.impl.load()
	if err != nil {
		return err
	}
	for _, o := range outs {
		if o.path != "-" {
			if err := reports.Prepare(o.path); err != nil {
				return usageError("%s: %v", o.flag, err)
			}
		}
	}
	// Interrupted, the command stops reading or writing within moments and
	// leaves no report (each is written through a temporary file).
	interrupted := func() error {
		fmt.Fprintln(stderr, "xdsconform: report: interrupted; nothing written")
		return &exitError{code: exitInterrupted, err: ctx.Err()}
	}
	roomForInputs(args)
	inputs := make([]certify.Input, len(args))
	runs := make([]results.Run, len(args))
	// Only the page shows transcripts, and of each it shows no more than
	// the first and the last entries: they are read undecoded, and the
	// page decodes what it shows.
	readOpts := []reports.ReadOption{reports.WithoutTranscripts()}
	if f.html != "" {
		readOpts = []reports.ReadOption{reports.LazyTranscripts()}
	}
	for i, path := range args {
		run, sum, err := reports.ReadJSONFile(ctx, path, readOpts...)
		if ctx.Err() != nil {
			return interrupted()
		}
		if err != nil {
			return usageError("%v", err)
		}
		inputs[i] = certify.Input{File: filepath.Base(path), SHA256: sum, Run: run}
		run.Implementation = run.Implementation.Merge(impl)
		runs[i] = run
	}
	for i := range outs {
		switch outs[i].flag {
		case "--html":
			outs[i].render = func(w io.Writer) error { return htmlpage.WriteContext(ctx, w, runs) }
		case "--markdown":
			outs[i].render = func(w io.Writer) error {
				return markdown.Write(w, runs, markdown.Options{Limit: int(f.markdownLimit)})
			}
		case "--certification":
			rep, err := certify.Build(inputs, impl)
			if err != nil {
				return usageError("--certification: %v", err)
			}
			outs[i].render = func(w io.Writer) error {
				var b bytes.Buffer
				if err := certify.Write(&b, rep); err != nil {
					return err
				}
				if err := certify.Validate(b.Bytes()); err != nil {
					return err
				}
				_, err := w.Write(b.Bytes())
				return err
			}
		}
	}
	for _, o := range outs {
		render := func(w io.Writer) error { return o.render(interruptible{ctx, w}) }
		var err error
		if o.path == "-" {
			err = reports.WriteSpooled(stdout, render)
		} else {
			err = reports.WriteFile(o.path, render)
		}
		if ctx.Err() != nil {
			return interrupted()
		}
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("%s %s: %w", o.flag, o.path, err)}
		}
	}
	return nil
}

// interruptible is a writer that fails once its context has ended, so
// that rendering a large page stops within moments of an interrupt.
type interruptible struct {
	ctx context.Context
	w   io.Writer
}

func (i interruptible) Write(p []byte) (int, error) {
	if err := i.ctx.Err(); err != nil {
		return 0, err
	}
	return i.w.Write(p)
}

// Reading a report costs memory in proportion to it: its results, then
// the page built from them. The soft memory limit that keeps a run's
// garbage in check (main) would, below what a large report keeps live,
// have the collector run without pause; room for the inputs is made
// instead, within readerMemoryCap, which keeps the command under 1 GiB.
// What a report keeps live is about 1.4 times its size (its transcripts
// undecoded, its results decoded): twice its size leaves the collector
// room without letting garbage pile up to the bound.
const (
	readerMemoryBase = 64 << 20
	readerMemoryCap  = 768 << 20
)

// roomForInputs raises the soft memory limit to readerMemoryBase plus
// twice the size of the regular files among paths, within
// readerMemoryCap (GOMEMLIMIT, when set, wins).
func roomForInputs(paths []string) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var total int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
	}
	limit := min(readerMemoryBase+2*total, readerMemoryCap)
	if limit > debug.SetMemoryLimit(-1) {
		debug.SetMemoryLimit(limit)
	}
}
