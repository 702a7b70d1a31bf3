package conformance

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Kind is what a test framework makes of a pair: pass, fail or skip.
type Kind int

const (
	// Passed: the pair passed, or broke only rules the run tolerates (a
	// MAY rule, or a rule below FailOn); Note says which.
	Passed Kind = iota
	// Failed: the target broke a rule at or above FailOn, the pair could
	// not run (an error), or a known-failing entry is stale.
	Failed
	// Skipped: the pair did not apply to the target, or is a known
	// failure.
	Skipped
)

// String is the kind in one word.
func (k Kind) String() string {
	switch k {
	case Passed:
		return "passed"
	case Failed:
		return "failed"
	case Skipped:
		return "skipped"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Verdict is an outcome as a test framework reports it.
type Verdict struct {
	// Kind is pass, fail or skip.
	Kind Kind
	// Headline is one line: why a pair failed or was skipped, or what a
	// passing pair broke that the run tolerates (empty for a plain pass).
	Headline string
	// Details is the evidence, several lines: the level, the rules
	// broken, the engine's message (expected vs actual). Empty for a
	// plain pass.
	Details string
	// Transcript is the end of the pair's transcript, bounded
	// (TranscriptEntries entries, TranscriptBytes bytes), for the pairs
	// whose evidence it is: failures (known ones too) and errors.
	Transcript string
}

// Bounds of the transcript a verdict carries: a pair's log stays readable
// and a suite's go test output stays small, whatever the target sent.
// The report files (JSONReport) keep the whole transcript.
const (
	// TranscriptEntries is how many of the last entries are kept.
	TranscriptEntries = 40
	// TranscriptBytes bounds the rendered transcript; its end is kept.
	TranscriptBytes = 32 << 10
)

// verdictOf maps a result to a verdict at fail-on level failOn. Every
// string from the target is scrubbed of remembered secrets and escaped
// for a terminal.
func verdictOf(r results.Result, failOn results.Level) Verdict {
	msg := clean(r.Message)
	known := clean(firstLineOf(r.KnownFailing))
	switch r.Outcome {
	case results.Pass:
		if r.KnownFailing != "" {
			return Verdict{Kind: Failed, Headline: "stale known-failing entry: the pair passed, but it is listed as known-failing (" + known + "); remove the entry",
				Details: details(r, msg)}
		}
		return Verdict{Kind: Passed}
	case results.Unsupported:
		if r.KnownFailing != "" {
			return Verdict{Kind: Failed, Headline: "stale known-failing entry: the pair broke only MAY rules (" + strings.Join(r.RulesBroken, ", ") + "), but it is listed as known-failing (" + known + "); remove the entry",
				Details: details(r, msg), Transcript: tail(r)}
		}
		return Verdict{Kind: Passed, Headline: "unsupported: an optional (MAY) behaviour the target does not implement: " + strings.Join(r.RulesBroken, ", "),
			Details: details(r, msg)}
	case results.Fail, results.Blocked:
		// A blocked pair is a failure of the rule it was blocked by,
		// excused and tolerated as a failure is; its message says so.
		rules := strings.Join(r.RulesBroken, ", ")
		level := r.FailureLevel()
		switch {
		case r.KnownFailing != "":
			return Verdict{Kind: Skipped, Headline: "known failure: " + known, Details: details(r, msg), Transcript: tail(r)}
		case !level.AtLeast(failOn):
			return Verdict{Kind: Passed, Headline: fmt.Sprintf("warning: broke %s (%s), below FailOn %s", rules, level, failOn),
				Details: details(r, msg), Transcript: tail(r)}
		}
		return Verdict{Kind: Failed, Headline: fmt.Sprintf("broke %s (%s): %s", rules, level, firstLineOf(msg)),
			Details: details(r, msg), Transcript: tail(r)}
	case results.Skip:
		return Verdict{Kind: Skipped, Headline: msg}
	case results.Error:
		return Verdict{Kind: Failed, Headline: "error: the pair could not run to a verdict: " + firstLineOf(msg),
			Details: details(r, msg), Transcript: tail(r)}
	}
	return Verdict{Kind: Failed, Headline: "unknown outcome " + clean(string(r.Outcome)), Details: details(r, msg)}
}

// details is the evidence block of r, whose cleaned message is msg.
func details(r results.Result, msg string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario:     %s (%s)\n", r.FullName(), clean(r.Title))
	fmt.Fprintf(&b, "level:        %s\n", r.Level)
	fmt.Fprintf(&b, "requirements: %s\n", strings.Join(r.Requirements, ", "))
	if len(r.RulesBroken) > 0 {
		fmt.Fprintf(&b, "rules broken: %s (%s)\n", strings.Join(r.RulesBroken, ", "), r.FailureLevel())
	}
	if r.KnownFailing != "" {
		fmt.Fprintf(&b, "known failing: %s\n", clean(r.KnownFailing))
	}
	fmt.Fprintf(&b, "duration:     %v\n", r.Duration.Round(1e6))
	if msg != "" {
		b.WriteString("message:\n")
		for _, l := range strings.Split(msg, "\n") {
			b.WriteString("    " + l + "\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tail renders the end of r's transcript, bounded.
func tail(r results.Result) string {
	entries := r.Transcript
	if len(entries) == 0 {
		return "transcript: (empty)"
	}
	head := fmt.Sprintf("transcript (%d entries):", len(entries))
	if len(entries) > TranscriptEntries {
		head = fmt.Sprintf("transcript (last %d of %d entries):", TranscriptEntries, len(entries))
		entries = entries[len(entries)-TranscriptEntries:]
	}
	text := reports.Sanitize(transcript.Format(transcript.ScrubEntries(entries)))
	if len(text) > TranscriptBytes {
		cut := len(text) - TranscriptBytes
		for cut < len(text) && !utf8.RuneStart(text[cut]) {
			cut++
		}
		text = fmt.Sprintf("[%d bytes cut]\n", cut) + text[cut:]
	}
	return head + "\n" + text
}

// clean is s scrubbed of remembered secrets and escaped for a terminal.
func clean(s string) string { return reports.Sanitize(transcript.Scrub(s)) }

// firstLineOf is the first line of s.
func firstLineOf(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
