package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
)

// suiteFlags are the flags shared by every command that runs scenarios.
type suiteFlags struct {
	timeout, quiet, scenarioTimeout time.Duration
	prompt                          time.Duration
	timerBudget                     time.Duration
	run, skip, variants             []string
	level                           string
	failOn                          string
	knownFailing                    string
	junit, json                     string
	transcripts                     string
	parallel                        int
	verbose                         bool
	impl                            implFlags
	color                           string
	// cmd is the command these flags belong to: its changed flags make
	// the re-run command printed under a failure.
	cmd *cobra.Command
}

func (f *suiteFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.DurationVar(&f.timeout, "timeout", engine.DefaultTimeouts.Expect, "how long to wait for anything that must happen (a response)")
	fs.DurationVar(&f.quiet, "quiet", engine.DefaultTimeouts.Quiet, "how long to watch for anything that must NOT happen")
	fs.DurationVar(&f.scenarioTimeout, "scenario-timeout", engine.DefaultTimeouts.Scenario, "upper bound for one scenario in one variant")
	fs.DurationVar(&f.prompt, "prompt", engine.DefaultTimeouts.Prompt, "how soon a client's ACK or NACK counts as prompt (UPD-2)")
	fs.DurationVar(&f.timerBudget, "timer-budget", engine.DefaultTimeouts.TimerBudget, "the longest a must-NOT-happen window may watch to outlast a peer's own timer (--rest-hold, --dne-timer): a window cut shorter than its timer is watched as long as this allows and then proves nothing (inconclusive), never passes")
	fs.StringSliceVar(&f.run, "run", nil, "run only scenarios matching these glob patterns (ID or ID[variant]; * matches anything)")
	fs.StringSliceVar(&f.skip, "skip", nil, "skip scenarios matching these glob patterns")
	fs.StringSliceVar(&f.variants, "variant", nil, "run only these variants: sotw-ads, sotw-pertype, delta-ads, delta-pertype, rest (server: REST-JSON polling)")
	fs.StringVar(&f.level, "level", "", "run only these levels, comma-separated: MUST,SHOULD,MAY")
	fs.StringVar(&f.failOn, "fail-on", "should", "which failures fail the run: must (MUST only) or should (MUST and SHOULD); MAY behaviours are only reported as supported or not")
	fs.StringVar(&f.knownFailing, "known-failing", "", "file of expected failures, one 'PATTERN REASON' per line")
	fs.StringVar(&f.junit, "junit", "", "write a JUnit XML report to this file")
	fs.StringVar(&f.json, "json", "", "write a JSON report (with the transcripts --transcripts keeps) to this file")
	fs.StringVar(&f.transcripts, "transcripts", string(reports.TranscriptsFailing), "which pairs' transcripts the reports keep: failing (every pair that did not pass), all, or none")
	fs.IntVar(&f.parallel, "parallel", engine.DefaultParallel, "how many scenario runs at once (launched client processes are capped lower)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print failure details as they happen, and a line for every skipped pair (otherwise counted by reason in the summary)")
	fs.StringVar(&f.color, "color", "auto", "colour the console: auto (on a terminal, unless NO_COLOR is set or TERM is dumb), always or never")
	f.impl.register(fs)
	f.cmd = c
}

// selection validates the selection flags and returns the selection and
// the --fail-on level.
func (f *suiteFlags) selection() (engine.Selection, results.Level, error) {
	sel, err := parseSelection(f.cmd, f.run, f.skip, f.variants, f.level)
	if err != nil {
		return engine.Selection{}, "", err
	}
	switch {
	case f.timeout <= 0:
		return engine.Selection{}, "", usageError("--timeout must be positive")
	case f.quiet <= 0:
		return engine.Selection{}, "", usageError("--quiet must be positive")
	case f.scenarioTimeout <= 0:
		return engine.Selection{}, "", usageError("--scenario-timeout must be positive")
	case f.prompt <= 0:
		return engine.Selection{}, "", usageError("--prompt must be positive")
	case f.timerBudget <= 0:
		return engine.Selection{}, "", usageError("--timer-budget must be positive")
	case f.parallel <= 0:
		return engine.Selection{}, "", usageError("--parallel must be positive")
	}
	failOn, err := f.failOnLevel()
	if err != nil {
		return engine.Selection{}, "", err
	}
	if _, err := colorOn(f.color, false, os.Getenv); err != nil {
		return engine.Selection{}, "", err
	}
	if _, err := f.transcriptPolicy(); err != nil {
		return engine.Selection{}, "", err
	}
	// Every command checks its flags here before it starts anything.
	if _, err := f.impl.load(); err != nil {
		return engine.Selection{}, "", err
	}
	return sel, failOn, nil
}

// noteUnmatched says, in one line, which known-failing entries select no
// pair of the run (a shipped list covers the whole catalogue, so a run of
// a few scenarios leaves most of it unused); --verbose lists every one.
func noteUnmatched(out io.Writer, patterns []string, verbose bool) {
	switch {
	case len(patterns) == 0:
	case verbose || len(patterns) == 1:
		for _, p := range patterns {
			fmt.Fprintf(out, "note: known-failing entry %q matches no selected scenario\n", p)
		}
	default:
		shown := patterns[:min(len(patterns), 2)]
		quoted := make([]string, len(shown))
		for i, p := range shown {
			quoted[i] = strconv.Quote(p)
		}
		fmt.Fprintf(out, "note: %d known-failing entries match no selected scenario (%s, …; --verbose lists them)\n", len(patterns), strings.Join(quoted, ", "))
	}
}

// nonEmptyPatterns refuses a --run or --skip given an empty pattern, as a
// script's unset variable gives it: it is no wish to run everything (or to
// skip nothing), which leaving the flag out says.
func nonEmptyPatterns(c *cobra.Command, name string) error {
	fl := c.Flags().Lookup(name)
	if fl == nil || !fl.Changed {
		return nil
	}
	patterns, _ := c.Flags().GetStringSlice(name)
	if len(patterns) == 0 || slices.Contains(patterns, "") {
		return usageError("--%s: an empty pattern (leave --%s out to %s)", name, name, map[string]string{"run": "run every scenario", "skip": "skip none"}[name])
	}
	return nil
}

// failOnLevel reads --fail-on.
func (f *suiteFlags) failOnLevel() (results.Level, error) {
	switch strings.ToLower(strings.TrimSpace(f.failOn)) {
	case "must":
		return results.Must, nil
	case "should", "":
		return results.Should, nil
	}
	return "", usageError("--fail-on %q: want must or should", f.failOn)
}

// colorOn reads --color: auto colours a terminal (tty) unless NO_COLOR
// is set to anything or TERM is dumb (no-color.org; a flag given on the
// command line wins over the environment).
func colorOn(mode string, tty bool, getenv func(string) string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto", "":
		return tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb", nil
	}
	return false, usageError("--color %q: want auto, always or never", mode)
}

// consoleOptions are the console's settings for a run writing to out:
// colour and a live status line only on a terminal (the status line moves
// the cursor, which a dumb terminal cannot), the re-run command of the
// flags given.
func (f *suiteFlags) consoleOptions(out io.Writer, failOn results.Level) (reports.ConsoleOptions, error) {
	tty, width := reports.IsTerminal(out)
	color, err := colorOn(f.color, tty, os.Getenv)
	if err != nil {
		return reports.ConsoleOptions{}, err
	}
	opts := reports.ConsoleOptions{Verbose: f.verbose, FailOn: failOn, Color: color,
		Live: tty && os.Getenv("TERM") != "dumb", Width: width}
	if f.cmd != nil {
		opts.Rerun = rerunCommand(f.cmd)
	}
	return opts, nil
}

// transcriptPolicy reads --transcripts.
func (f *suiteFlags) transcriptPolicy() (reports.TranscriptPolicy, error) {
	p, err := reports.ParseTranscriptPolicy(f.transcripts)
	if err != nil {
		return "", usageError("--transcripts %v", err)
	}
	return p, nil
}

// prepareReports checks the report paths and removes the reports a
// previous run left there, before anything else happens: a run that ends
// in a usage error or an unreachable target then leaves no report, never
// yesterday's.
func (f *suiteFlags) prepareReports() error {
	if err := reports.Prepare(f.junit, f.json); err != nil {
		return usageError("%v", err)
	}
	return nil
}

// loadKnownFailing reads the --known-failing file; without the flag it
// returns the target's shipped list, as shipped gives it (nil for none).
func (f *suiteFlags) loadKnownFailing(shipped func() (*engine.KnownFailing, error)) (*engine.KnownFailing, error) {
	if f.knownFailing == "" {
		return shipped()
	}
	kf, err := engine.LoadKnownFailing(f.knownFailing)
	if err != nil {
		return nil, usageError("--known-failing: %v", err)
	}
	return kf, nil
}

// suiteRun is one suite against one target, ready to go.
type suiteRun struct {
	role, target string
	catalogue    []*engine.Scenario
	env          engine.Env
	known        *engine.KnownFailing
	// maxParallel caps --parallel for this suite (0: no cap).
	maxParallel int
	// calibrations are the calibrating scenarios the selected pairs may
	// rest on; those they do rest on join the run (engine.WithCalibrations).
	calibrations []*engine.Scenario
	// options are the suite's own settings, recorded in the report with
	// the shared flags.
	options map[string]string
}

// runSuite expands, runs and reports one suite and returns the exit code
// as an error (nil for 0).
func runSuite(ctx context.Context, out io.Writer, f *suiteFlags, s suiteRun) error {
	return runSuites(ctx, out, f, []suiteRun{s})
}

// runSuites runs several suites at once (each against its own target) and
// writes one combined report: `xdsconform run` checks a server and a client
// in one go, and CI wants one JUnit file and one exit code.
func runSuites(ctx context.Context, out io.Writer, f *suiteFlags, suites []suiteRun) error {
	sel, failOn, err := f.selection()
	if err != nil {
		return err
	}
	if err := f.prepareReports(); err != nil {
		return err
	}
	var catalogues [][]*engine.Scenario
	for _, s := range suites {
		catalogues = append(catalogues, s.catalogue)
	}
	if bad := engine.UnmatchedPatterns(f.run, catalogues...); len(bad) > 0 {
		return usageError("--run %s: matches no scenario (see 'xdsconform list')", strings.Join(bad, ","))
	}
	pairs := make([][]engine.Pair, len(suites))
	selected := 0
	for i, s := range suites {
		ps, err := engine.Expand(s.catalogue, sel)
		if err != nil && !(len(suites) > 1 && errors.Is(err, engine.ErrNothingSelected)) {
			return usageError("%v", err)
		}
		ps = engine.WithCalibrations(ps, s.calibrations, sel, s.env)
		pairs[i] = ps
		selected += len(ps)
		noteUnmatched(out, s.known.Unmatched(ps), f.verbose)
	}
	if selected == 0 {
		return usageError("%v", engine.ErrNothingSelected)
	}
	copts, err := f.consoleOptions(out, failOn)
	if err != nil {
		return err
	}
	console := reports.NewConsole(out, copts)
	var names []string
	role := suites[0].role
	if len(suites) > 1 {
		role = results.RoleBoth
	}
	for i, s := range suites {
		names = append(names, s.target)
		if len(suites) > 1 {
			names[i] = s.role + ": " + s.target
		}
		fmt.Fprintf(out, "xdsconform %s: %s suite, %s against %s\n", version, s.role, wording.N(len(pairs[i]), "scenario run"), s.target)
	}
	impl, err := f.impl.load()
	if err != nil {
		return err
	}
	// Both suites of `run` count on one status line.
	console.Start(selected)
	defer console.Stop()
	run := results.Run{
		SchemaVersion:  reports.JSONSchemaVersion,
		HarnessVersion: version,
		Role:           role,
		Target:         strings.Join(names, "; "),
		Started:        time.Now().UTC(),
		FailOn:         failOn,
		Options: map[string]string{
			"timeout": f.timeout.String(), "quiet": f.quiet.String(), "scenario_timeout": f.scenarioTimeout.String(), "prompt": f.prompt.String(),
			"timer_budget": f.timerBudget.String(),
			"run":          strings.Join(f.run, ","), "skip": strings.Join(f.skip, ","), "level": f.level,
			"variant": strings.Join(f.variants, ","), "known_failing": f.knownFailing, "parallel": strconv.Itoa(f.parallel),
			"fail_on": string(failOn),
		},
	}
	for _, s := range suites {
		maps.Copy(run.Options, s.options)
	}
	run.Implementation, run.CatalogueVersion = impl, requirements.CatalogueVersion()
	// Each suite's results stay in catalogue order, suites in the order
	// given, so the same targets give the same report every run.
	perSuite := make([][]results.Result, len(suites))
	interrupted := make([]bool, len(suites))
	var wg sync.WaitGroup
	for i, s := range suites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			parallel := f.parallel
			if s.maxParallel > 0 {
				parallel = min(parallel, s.maxParallel)
			}
			perSuite[i], interrupted[i] = engine.Run(ctx, pairs[i], engine.Config{
				Env:          s.env,
				Timeouts:     engine.Timeouts{Expect: f.timeout, Quiet: f.quiet, Scenario: f.scenarioTimeout, Prompt: f.prompt, TimerBudget: f.timerBudget},
				Parallel:     parallel,
				KnownFailing: s.known,
				Progress:     console.Finished,
			})
		}()
	}
	wg.Wait()
	for i := range suites {
		run.Results = append(run.Results, perSuite[i]...)
		run.Interrupted = run.Interrupted || interrupted[i]
	}
	run.Duration = time.Since(run.Started)
	console.Summary(run)
	// The console had every transcript; the files keep those
	// --transcripts asks for (selection checked it).
	policy, _ := f.transcriptPolicy()
	if err := reports.WriteFiles(reports.WithTranscripts(run, policy), f.junit, f.json); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("write reports: %w", err)}
	}
	switch {
	case run.Interrupted:
		return &exitError{code: exitInterrupted, err: errors.New("interrupted")}
	case len(run.Results) > 0 && verdict.NoneRan(run.Results):
		return usageError("nothing could run: %s", skipReasons(run.Results))
	case !results.SummarizeFor(run.Results, failOn).OK():
		return &exitError{code: exitFailures, err: errors.New("conformance failures")}
	}
	return nil
}

// skipReasons says, in one line, why every pair was skipped: the commonest
// reasons first.
func skipReasons(rs []results.Result) string {
	what := "all " + wording.N(len(rs), "selected scenario run") + " were"
	if len(rs) == 1 {
		what = "the 1 selected scenario run was"
	}
	return fmt.Sprintf("%s skipped: %s", what, verdict.CommonestSkips(rs))
}
