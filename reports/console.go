package reports

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// DefaultTranscriptTail is the number of transcript entries shown per
// failure when ConsoleOptions.TranscriptTail is zero: enough to see the last
// request/response exchanges around the failure without flooding the
// terminal.
const DefaultTranscriptTail = 12

// ConsoleOptions shape the console output.
type ConsoleOptions struct {
	// Verbose prints the detail block (level, requirements, message,
	// transcript tail) under each fail, error and known-failing line as it
	// arrives, and the full message under skips, instead of waiting for the
	// summary. The summary itself is the same either way.
	Verbose bool
	// TranscriptTail is how many of the last transcript entries are shown
	// per failure; 0 means DefaultTranscriptTail, a negative value shows
	// none.
	TranscriptTail int
	// Color wraps outcome labels and the verdict in ANSI colours. Leave it
	// off when the output is not a terminal.
	Color bool
	// FailOn is the weakest level whose failures fail the run (default
	// results.DefaultFailOn); weaker failures are labelled WARN.
	FailOn results.Level
}

// Console prints one line per finished scenario as results arrive, and a
// summary at the end. It is safe for concurrent use: each call writes its
// whole text with one Write under a lock, so lines of concurrently finishing
// scenarios never interleave.
type Console struct {
	mu   sync.Mutex
	w    io.Writer
	opts ConsoleOptions
}

// NewConsole returns a Console writing to w.
func NewConsole(w io.Writer, opts ConsoleOptions) *Console {
	if opts.TranscriptTail == 0 {
		opts.TranscriptTail = DefaultTranscriptTail
	}
	return &Console{w: w, opts: opts}
}

// Finished prints the progress line for r, e.g.
//
//	PASS  server/nonce/stale-request-ignored [sotw-ads] (12ms)
//	FAIL  server/nonce/stale-request-ignored [sotw-ads] (12ms): <first line of message>
//	WARN  server/nonce/stale-request-ignored [sotw-ads] (12ms): <a failure below --fail-on>
//	UNSUP server/delta/reconnect-unchanged-not-resent [delta-ads] (12ms): not supported: <first line>
//	XFAIL server/nonce/stale-request-ignored [sotw-ads] (12ms): known failing: <reason>
//	XPASS server/nonce/stale-request-ignored [sotw-ads] (12ms): stale known-failing entry: <reason>
//
// A failure's message starts with the rule its failing step checks and
// that rule's level ("RES-4 (MUST): ...").
//
// Write errors are ignored: progress output is best effort and must not
// abort a run.
func (c *Console) Finished(r results.Result) {
	r = scrubbed(r)
	var b strings.Builder
	lbl := label(r, failOnOf(c.opts.FailOn))
	b.WriteString(c.paint(lbl, fmt.Sprintf("%-5s", lbl)))
	fmt.Fprintf(&b, " %s [%s] (%s)", clean(r.ID), clean(r.Variant), formatDuration(r.Duration))
	switch lbl {
	case "FAIL", "WARN", "ERROR", "SKIP":
		if m := firstLine(r.Message); m != "" {
			b.WriteString(": " + m)
		}
	case "UNSUP":
		b.WriteString(": not supported: " + firstLine(r.Message))
	case "XFAIL":
		b.WriteString(": known failing: " + firstLine(r.KnownFailing))
	case "XPASS":
		b.WriteString(": stale known-failing entry: " + firstLine(r.KnownFailing))
	}
	b.WriteByte('\n')
	if c.opts.Verbose {
		switch lbl {
		case "FAIL", "WARN", "ERROR", "XFAIL":
			c.writeDetails(&b, r)
		case "SKIP":
			if strings.Contains(strings.TrimRight(r.Message, "\n"), "\n") {
				writeIndented(&b, r.Message, "    ")
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.w, b.String())
}

// Summary prints, in this order: totals by outcome (pass, fail,
// known-failing, stale, skipped, error; "pass" leaves out stale
// known-failing passes, which have their own row, so the rows add up to the
// number of results); every failure and error
// in detail (sorted by ID then variant); known-failing failures and stale
// known-failing entries by name; skip reasons with counts; and a one-line
// verdict. The output depends only on run, so two runs with the same results
// print the same summary apart from durations.
func (c *Console) Summary(run results.Run) {
	run = scrubbedRun(run)
	rs := sortedResults(run.Results)
	failOn := failOnOf(run.FailOn, c.opts.FailOn)
	s := results.SummarizeFor(rs, failOn)
	var b strings.Builder

	fmt.Fprintf(&b, "\n=== Summary: %s against %s (%d results in %s)\n",
		clean(suites(run.Role)), clean(orDash(run.Target)), len(rs), formatDuration(run.Duration))
	for _, row := range []struct {
		name string
		n    int
	}{
		{"pass", s.Pass},
		{"fail", s.Fail},
		{"warn", s.Tolerated},
		{"unsupported", s.Unsupported},
		{"known-failing", s.KnownFailing},
		{"stale", s.StalePasses},
		{"skipped", s.Skip},
		{"error", s.Error},
	} {
		fmt.Fprintf(&b, "  %-14s %d\n", row.name, row.n)
	}
	writeByLevel(&b, s)

	var fails, warns, errs, xfails, xpasses []results.Result
	var unsupported []results.Result
	skips := map[string]int{}
	for _, r := range rs {
		switch label(r, failOn) {
		case "FAIL":
			fails = append(fails, r)
		case "WARN":
			warns = append(warns, r)
		case "UNSUP":
			unsupported = append(unsupported, r)
		case "ERROR":
			errs = append(errs, r)
		case "XFAIL":
			xfails = append(xfails, r)
		case "XPASS":
			xpasses = append(xpasses, r)
		case "SKIP":
			reason := firstLine(r.Message)
			if reason == "" {
				reason = "(no reason given)"
			}
			skips[reason]++
		}
	}
	for _, sec := range []struct {
		title string
		rs    []results.Result
	}{{"Failures", fails}, {"Errors", errs}, {"Warnings: failures below --fail-on " + string(failOn) + ", not counted against the run", warns}} {
		if len(sec.rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n=== %s (%d)\n", sec.title, len(sec.rs))
		for _, r := range sec.rs {
			lbl := label(r, failOn)
			fmt.Fprintf(&b, "\n--- %s %s\n", c.paint(lbl, lbl), clean(r.FullName()))
			c.writeDetails(&b, r)
		}
	}
	if len(unsupported) > 0 {
		// MAY behaviours: what the target does not implement, for the
		// record, never against the run.
		fmt.Fprintf(&b, "\n=== Not supported: optional (MAY) behaviours the target does not implement (%d)\n", len(unsupported))
		for _, r := range unsupported {
			fmt.Fprintf(&b, "  %s: %s\n", clean(r.FullName()), firstLine(r.Message))
		}
	}
	if len(xfails) > 0 {
		fmt.Fprintf(&b, "\n=== Known failing, not counted against the run (%d)\n", len(xfails))
		for _, r := range xfails {
			fmt.Fprintf(&b, "  %s: %s\n", clean(r.FullName()), firstLine(r.KnownFailing))
		}
	}
	if len(xpasses) > 0 {
		// A stale entry fails the run; naming it tells the user exactly which
		// line to delete from the known-failing file.
		fmt.Fprintf(&b, "\n=== Stale known-failing entries: these passed, remove them from the known-failing file (%d)\n", len(xpasses))
		for _, r := range xpasses {
			fmt.Fprintf(&b, "  %s: %s\n", clean(r.FullName()), firstLine(r.KnownFailing))
		}
	}
	if len(skips) > 0 {
		reasons := make([]string, 0, len(skips))
		for k := range skips {
			reasons = append(reasons, k)
		}
		// Most frequent first, ties by text, so the order is deterministic.
		sort.Slice(reasons, func(i, j int) bool {
			if skips[reasons[i]] != skips[reasons[j]] {
				return skips[reasons[i]] > skips[reasons[j]]
			}
			return reasons[i] < reasons[j]
		})
		fmt.Fprintf(&b, "\n=== Skipped (%d)\n", s.Skip)
		for _, k := range reasons {
			fmt.Fprintf(&b, "  %4d  %s\n", skips[k], k)
		}
	}

	b.WriteString("\n" + c.verdict(run, s, failOn) + "\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = io.WriteString(c.w, b.String())
}

// verdict is the last line, for summary s of run at level failOn. An
// interrupted run is never called a pass even when what finished was
// clean, because unfinished scenarios were not judged.
func (c *Console) verdict(run results.Run, s results.Summary, failOn results.Level) string {
	var problems []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			problems = append(problems, "1 "+one)
		case n > 1:
			problems = append(problems, strconv.Itoa(n)+" "+many)
		}
	}
	add(s.Fail, "failure", "failures")
	add(s.Error, "error", "errors")
	add(s.StalePasses, "stale known-failing entry", "stale known-failing entries")
	extra := ""
	if s.Tolerated > 0 {
		extra += fmt.Sprintf(", %d below --fail-on %s", s.Tolerated, failOn)
	}
	if s.Unsupported > 0 {
		extra += fmt.Sprintf(", %d MAY not supported", s.Unsupported)
	}
	switch {
	case run.Interrupted:
		problems = append([]string{"run interrupted, results are partial"}, problems...)
		return c.paint("ERROR", "INTERRUPTED") + ": " + strings.Join(problems, ", ")
	case !s.OK():
		return c.paint("FAIL", "FAIL") + ": " + strings.Join(problems, ", ")
	default:
		return c.paint("PASS", "PASS") + fmt.Sprintf(": %d passed, %d known failing, %d skipped", s.Pass, s.KnownFailing, s.Skip) + extra
	}
}

// failOnOf is the first fail-on level given that is set (the run's, then
// the console's), or results.DefaultFailOn: labels and texts name the
// level the summary counts by.
func failOnOf(levels ...results.Level) results.Level {
	for _, l := range levels {
		if l != "" {
			return l
		}
	}
	return results.DefaultFailOn
}

// writeByLevel writes the outcome counts per level, MUST first.
func writeByLevel(b *strings.Builder, s results.Summary) {
	b.WriteString("  by level:\n")
	for _, l := range results.Levels {
		lc := s.ByLevel[l]
		line := fmt.Sprintf("    %-7s %d pass, %d fail", l, lc.Pass, lc.Fail)
		if l == results.May {
			line = fmt.Sprintf("    %-7s %d supported, %d not supported, %d fail", l, lc.Pass, lc.Unsupported, lc.Fail)
		}
		fmt.Fprintf(b, "%s, %d skipped, %d error\n", line, lc.Skip, lc.Error)
	}
}

// writeDetails writes the indented detail block of a failing result.
func (c *Console) writeDetails(b *strings.Builder, r results.Result) {
	fmt.Fprintf(b, "    level:        %s\n", clean(orDash(string(r.Level))))
	fmt.Fprintf(b, "    requirements: %s\n", clean(orDash(strings.Join(r.Requirements, ", "))))
	if len(r.RulesBroken) > 0 {
		fmt.Fprintf(b, "    rules broken: %s (%s)\n", clean(strings.Join(r.RulesBroken, ", ")), clean(string(r.FailureLevel())))
	}
	if r.KnownFailing != "" {
		fmt.Fprintf(b, "    known failing: %s\n", firstLine(r.KnownFailing))
	}
	b.WriteString("    message:\n")
	if strings.TrimSpace(r.Message) == "" {
		b.WriteString("        (none)\n")
	} else {
		// The engine's message (expected vs actual) is printed line for line,
		// only indented, so that its own alignment survives.
		writeIndented(b, r.Message, "        ")
	}
	if c.opts.TranscriptTail < 0 {
		return
	}
	if len(r.Transcript) == 0 {
		b.WriteString("    transcript: (empty)\n")
		return
	}
	entries, heading := transcriptTail(r.Transcript, c.opts.TranscriptTail)
	fmt.Fprintf(b, "    transcript (%s):\n", heading)
	writeIndented(b, transcript.Format(entries), "      ")
}

// transcriptTail returns the last n entries and how many of how many they
// are: "last 12 of 40 entries", or "3 entries" when that is all of them.
func transcriptTail(entries []transcript.Entry, n int) ([]transcript.Entry, string) {
	if len(entries) > n {
		return entries[len(entries)-n:], fmt.Sprintf("last %d of %d entries", n, len(entries))
	}
	return entries, fmt.Sprintf("%d entries", len(entries))
}

// label is the progress-line label. Known-failing status only changes the
// label of passes, failures and unsupported MAY behaviours, mirroring
// results.Summarize: a listed scenario that errors or is skipped is
// reported as such. A failure below failOn (set; see failOnOf) is a WARN.
func label(r results.Result, failOn results.Level) string {
	switch r.Outcome {
	case results.Pass:
		if r.KnownFailing != "" {
			return "XPASS"
		}
		return "PASS"
	case results.Unsupported:
		if r.KnownFailing != "" {
			return "XPASS"
		}
		return "UNSUP"
	case results.Fail:
		switch {
		case r.KnownFailing != "":
			return "XFAIL"
		case !r.FailureLevel().AtLeast(failOn):
			return "WARN"
		}
		return "FAIL"
	case results.Skip:
		return "SKIP"
	case results.Error:
		return "ERROR"
	}
	// An outcome this package does not know is shown rather than hidden.
	return strings.ToUpper(clean(string(r.Outcome)))
}

const (
	ansiReset  = "\x1b[0m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
)

// paint colours text by the label's meaning when colour is enabled.
func (c *Console) paint(lbl, text string) string {
	if !c.opts.Color {
		return text
	}
	col := map[string]string{
		"PASS": ansiGreen, "FAIL": ansiRed, "ERROR": ansiRed, "XPASS": ansiRed,
		"SKIP": ansiYellow, "XFAIL": ansiYellow, "WARN": ansiYellow, "UNSUP": ansiYellow,
	}[lbl]
	if col == "" {
		return text
	}
	return col + text + ansiReset
}

// formatDuration renders durations compactly and at a fixed precision so
// that lines stay easy to scan: "12ms" below ten seconds, "12.3s" above.
func formatDuration(d time.Duration) string {
	if d < 10*time.Second {
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + "s"
}

// firstLine returns the first non-empty line of s, cleaned for the terminal.
func firstLine(s string) string { return clean(firstLineRaw(s)) }

// writeIndented writes every line of s with prefix, dropping trailing
// newlines so blocks end cleanly.
func writeIndented(b *strings.Builder, s, prefix string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + clean(l) + "\n")
	}
}

// clean makes control characters visible. Messages and transcript notes can
// carry text chosen by the target under test (NACK details, gRPC status
// messages); escaping keeps them from moving the cursor or recolouring the
// terminal. Tabs are kept since they are harmless layout.
func clean(s string) string {
	if strings.IndexFunc(s, isUnsafe) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isUnsafe(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isUnsafe(r rune) bool {
	return r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029')
}

// sortedResults returns a copy of rs ordered by ID then variant. Runs hold
// their results in pair order (catalogue order, suite by suite); the
// reports sort them so that they read the same whatever that order.
func sortedResults(rs []results.Result) []results.Result {
	out := append([]results.Result(nil), rs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].ID != out[j].ID {
			return out[i].ID < out[j].ID
		}
		return out[i].Variant < out[j].Variant
	})
	return out
}

// suites names the suites of a run of role: "server suite", "client
// suite", "server and client suites" for RoleBoth.
func suites(role string) string {
	if role == results.RoleBoth {
		return "server and client suites"
	}
	return orDash(role) + " suite"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
