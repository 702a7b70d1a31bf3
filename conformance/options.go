package conformance

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// ServerOptions configure RunServerSuite: the management server under test
// and what to run against it. Only Server.Target is required; every other
// field has the default `xdsconform server` has.
type ServerOptions struct {
	// Server is the management server under test: its xDS address
	// (Server.Target, HOST:PORT) and, for the scenarios that create,
	// change and delete resources, its fixture API (Server.Fixture; see
	// docs/fixture-api.md). Without a fixture those pairs are skipped.
	Server targets.ServerOptions

	// Scenarios is the catalogue to run; nil runs scenarios.Server(). A
	// team adds its own scenarios (written with the scenarios DSL, or
	// loaded from scenario files) by appending them to scenarios.Server().
	Scenarios []*engine.Scenario
	// Run keeps only the pairs matching one of these patterns
	// (engine.MatchPair globs, as `xdsconform --run` takes them: an ID
	// or ID[variant], "*" matching anything). Empty runs every pair. go
	// test's own -run selects among what is left.
	Run []string
	// Skip drops the pairs matching one of these patterns.
	Skip []string
	// Variants keeps only these variants; empty keeps all.
	Variants []wire.Variant
	// Levels keeps only the scenarios of these levels; empty keeps all.
	Levels []results.Level
	// FailOn is the weakest level whose failures fail a pair's subtest
	// (results.Must or results.Should; empty: results.Should). A failure
	// below it is logged as a warning; a MAY rule not met is only logged
	// as an unsupported optional behaviour.
	FailOn results.Level
	// KnownFailing lists the pairs expected to fail, each with the rule
	// it breaks: such a pair's subtest is skipped with the reason, and a
	// listed pair that passes fails (a stale entry hides a regression).
	// Give the list, or its file in KnownFailingFile, not both. With
	// neither, a built-in target's shipped list applies (none otherwise).
	KnownFailing *engine.KnownFailing
	// KnownFailingFile is the path of a known-failing file (one
	// "PATTERN REASON" per line; see engine.ParseKnownFailing).
	KnownFailingFile string
	// Timeouts are the run's waits; a zero field takes its value from
	// engine.DefaultTimeouts.
	Timeouts engine.Timeouts
	// Parallel caps the pairs running at once (0: engine.DefaultParallel).
	// go test's -parallel does not apply: the pairs run together as the
	// engine schedules them, not as parallel subtests.
	Parallel int
	// JSONReport and JUnitReport, when set, are the paths the run's JSON
	// and JUnit reports are written to, as `xdsconform --json/--junit`
	// write them, once the selected pairs have run.
	JSONReport, JUnitReport string
	// Transcripts says which pairs' transcripts the report files keep
	// (empty: reports.TranscriptsFailing). A failing subtest always logs
	// its own.
	Transcripts reports.TranscriptPolicy
	// Implementation, when set, names the implementation under test in
	// the report files.
	Implementation *results.Implementation
}

// ClientOptions configure RunClientSuite: the xDS client under test and
// what to run against it. Exactly one of Client.Target (a built-in
// client), Client.Command (a command starting one fresh client per pair)
// and Client.Wait is required; every other field has the default
// `xdsconform client` has.
type ClientOptions struct {
	// Client is the xDS client under test (see targets.ClientOptions).
	Client targets.ClientOptions

	// Scenarios is the catalogue to run; nil runs scenarios.Client().
	Scenarios []*engine.Scenario
	// Run, Skip, Variants, Levels, FailOn, KnownFailing, KnownFailingFile,
	// Timeouts, Parallel, JSONReport, JUnitReport, Transcripts and
	// Implementation are as in ServerOptions. Variants selects the pairs
	// run; Client.Variants says which variants the client speaks (pairs
	// in the others are skipped).
	Run, Skip        []string
	Variants         []wire.Variant
	Levels           []results.Level
	FailOn           results.Level
	KnownFailing     *engine.KnownFailing
	KnownFailingFile string
	Timeouts         engine.Timeouts
	Parallel         int
	// JSONReport and JUnitReport are as in ServerOptions.
	JSONReport, JUnitReport string
	Transcripts             reports.TranscriptPolicy
	Implementation          *results.Implementation
}

// common are the settings both suites share, checked and defaulted.
type common struct {
	role        string
	catalogue   []*engine.Scenario
	sel         engine.Selection
	failOn      results.Level
	known       *engine.KnownFailing
	knownFile   string
	timeouts    engine.Timeouts
	parallel    int
	json, junit string
	transcripts reports.TranscriptPolicy
	impl        *results.Implementation
}

// ErrOptions marks options that cannot be used as given (the CLI's usage
// errors): RunServerSuite and RunClientSuite fail the test with it at
// once, before anything starts.
var ErrOptions = errors.New("bad options")

// optionsError is an ErrOptions error saying what is wrong.
func optionsError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrOptions, fmt.Sprintf(format, args...))
}

// check validates c and fills in the defaults; shipped is the target's
// shipped known-failing list, used when none is given.
func (c *common) check(shipped func() (*engine.KnownFailing, error)) error {
	if err := engine.Validate(c.catalogue); err != nil {
		return optionsError("scenarios: %v", err)
	}
	if bad := engine.UnmatchedPatterns(c.sel.Run, c.catalogue); len(bad) > 0 {
		return optionsError("Run %s: matches no scenario", strings.Join(bad, ","))
	}
	for _, l := range c.sel.Levels {
		if !slices.Contains(results.Levels, l) {
			return optionsError("Levels: unknown level %q (want MUST, SHOULD or MAY)", l)
		}
	}
	switch c.failOn {
	case "":
		c.failOn = results.DefaultFailOn
	case results.Must, results.Should:
	default:
		return optionsError("FailOn %q: want results.Must or results.Should", c.failOn)
	}
	t := &c.timeouts
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{{"Expect", &t.Expect, engine.DefaultTimeouts.Expect}, {"Quiet", &t.Quiet, engine.DefaultTimeouts.Quiet}, {"Scenario", &t.Scenario, engine.DefaultTimeouts.Scenario}, {"Prompt", &t.Prompt, engine.DefaultTimeouts.Prompt},
		{"TimerBudget", &t.TimerBudget, engine.DefaultTimeouts.TimerBudget}} {
		switch {
		case *d.v < 0:
			return optionsError("Timeouts.%s must not be negative", d.name)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case c.parallel < 0:
		return optionsError("Parallel must not be negative")
	case c.parallel == 0:
		c.parallel = engine.DefaultParallel
	}
	if c.transcripts == "" {
		c.transcripts = reports.TranscriptsFailing
	}
	if _, err := reports.ParseTranscriptPolicy(string(c.transcripts)); err != nil {
		return optionsError("Transcripts %v", err)
	}
	if c.json != "" && c.json == c.junit {
		return optionsError("JSONReport and JUnitReport are both %s", c.json)
	}
	switch {
	case c.known != nil && c.knownFile != "":
		return optionsError("give KnownFailing or KnownFailingFile, not both")
	case c.knownFile != "":
		kf, err := engine.LoadKnownFailing(c.knownFile)
		if err != nil {
			return optionsError("KnownFailingFile: %v", err)
		}
		c.known = kf
	case c.known == nil:
		kf, err := shipped()
		if err != nil {
			return fmt.Errorf("shipped known-failing list: %w", err)
		}
		c.known = kf
	}
	return nil
}
