// Package results holds the report types shared by the engine, which
// produces them, and the report writers, which render them.
package results

import (
	"time"

	"github.com/xdsconform/xdsconform/transcript"
)

// Outcome is the verdict of one scenario in one variant. Outcomes are never
// mixed: a run that could not be carried out is an Error, not a Fail.
type Outcome string

const (
	// Pass: every expectation held.
	Pass Outcome = "pass"
	// Fail: the target broke a rule; Message says which and how.
	Fail Outcome = "fail"
	// Skip: the scenario does not apply or the target lacks what it needs;
	// Message says why.
	Skip Outcome = "skipped"
	// Error: the harness or the target could not run the scenario (target
	// unreachable, harness panic, fixture failure).
	Error Outcome = "error"
)

// Level is the strength of the rule a scenario checks.
type Level string

// The three levels of the requirements catalogue.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
	May    Level = "MAY"
)

// Result is the outcome of one (scenario × variant) pair.
type Result struct {
	// ID is the scenario ID, e.g. "server/nonce/stale-request-ignored".
	ID string `json:"id"`
	// Variant is the variant name, e.g. "sotw-ads".
	Variant string `json:"variant"`
	// Title is the scenario's one-line title.
	Title string `json:"title"`
	// Requirements lists the catalogue IDs the scenario checks.
	Requirements []string `json:"requirements"`
	// Level is the scenario's strength.
	Level Level `json:"level"`
	// Outcome is the verdict.
	Outcome Outcome `json:"outcome"`
	// Message explains a fail, skip or error (expected vs actual).
	Message string `json:"message,omitempty"`
	// KnownFailing is the reason from the known-failing file when the pair
	// is listed there; a listed failure does not fail the run.
	KnownFailing string `json:"known_failing,omitempty"`
	// Duration is the wall time of the run.
	Duration time.Duration `json:"duration_ns"`
	// Transcript is every message of the run.
	Transcript []transcript.Entry `json:"transcript,omitempty"`
}

// FullName is "ID[variant]", the name used in reports and known-failing files.
func (r Result) FullName() string { return r.ID + "[" + r.Variant + "]" }

// Run is a whole run of a suite against one target.
type Run struct {
	// SchemaVersion versions the JSON report layout.
	SchemaVersion string `json:"schema_version"`
	// HarnessVersion is the xdsconform version.
	HarnessVersion string `json:"harness_version"`
	// Role is "server" (the target is a management server) or "client".
	Role string `json:"role"`
	// Target names the target, e.g. "builtin:reference" or "10.0.0.1:18000".
	Target string `json:"target"`
	// Options records the settings that shape verdicts (timeouts, filters).
	Options map[string]string `json:"options"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration is the wall time of the whole run.
	Duration time.Duration `json:"duration_ns"`
	// Interrupted is true when the run was cut short (Ctrl-C); Results then
	// hold what finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// Results are in pair order (catalogue order, suite by suite), as
	// engine.Run returns them; the report writers sort them by ID then
	// variant.
	Results []Result `json:"results"`
}

// Summary counts results by outcome.
type Summary struct {
	Pass, Fail, Skip, Error int
	// KnownFailing counts failures excused by the known-failing file.
	KnownFailing int
	// StalePasses counts known-failing entries that passed: the file is out
	// of date, which fails the run.
	StalePasses int
}

// Summarize counts the outcomes of rs.
func Summarize(rs []Result) Summary {
	var s Summary
	for _, r := range rs {
		switch r.Outcome {
		case Pass:
			s.Pass++
			if r.KnownFailing != "" {
				s.StalePasses++
			}
		case Fail:
			if r.KnownFailing != "" {
				s.KnownFailing++
			} else {
				s.Fail++
			}
		case Skip:
			s.Skip++
		case Error:
			s.Error++
		}
	}
	return s
}

// OK reports whether the run should exit 0: no unexcused failure, no error,
// no stale known-failing entry.
func (s Summary) OK() bool { return s.Fail == 0 && s.Error == 0 && s.StalePasses == 0 }
