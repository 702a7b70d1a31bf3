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

	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/reports/verdict"
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
	// Verbose prints a line for every skipped pair as it arrives, with the
	// full message, and the detail block (level, requirements, message,
	// transcript tail) under each fail, error and known-failing line,
	// instead of waiting for the summary. Without it skips are only
	// counted, by reason, in the summary. The summary is the same either
	// way.
	Verbose bool
	// TranscriptTail is how many of the last transcript entries are shown
	// per failure; 0 means DefaultTranscriptTail, a negative value shows
	// none.
	TranscriptTail int
	// Color wraps outcome labels and the verdict in ANSI colours. Leave it
	// off when the output is not a terminal.
	Color bool
	// Live keeps a status line under the result lines, redrawn in place:
	// pairs done of the total given to Start, the time elapsed and an
	// estimate of the time left. Only for a terminal: it moves the cursor
	// with a carriage return and erases the line.
	Live bool
	// Width, if positive, is the terminal's width: the status line is cut
	// to it, since a line that wraps cannot be redrawn in place.
	Width int
	// FailOn is the weakest level whose failures fail the run (default
	// results.DefaultFailOn); weaker failures are labelled WARN.
	FailOn results.Level
	// Rerun, if set, returns the command line that runs r's pair again:
	// it is printed under every failure, blocked pair, error, warning,
	// inconclusive pair and stale known-failing entry, as it arrives and
	// in the summary.
	Rerun func(r results.Result) string
}

// etaAfter is how many pairs must have run (not been skipped) before the
// status line shows an estimate: skips finish at once, and the first pairs
// to finish are the quick ones, so an earlier estimate is mostly noise.
const etaAfter = 5

// statusEvery is how often the status line is redrawn while nothing
// finishes, so that the elapsed time and the estimate keep moving during a
// long wait (a client's 15 s does-not-exist timer).
const statusEvery = time.Second

// Console prints one line per finished scenario as results arrive, and a
// summary at the end. It is safe for concurrent use: each call writes its
// whole text with one Write under a lock, so lines of concurrently finishing
// scenarios never interleave.
//
// Every text it prints, much of which the target chose (messages, names,
// a client's output), is escaped with Sanitize; the only escape sequences
// that reach the writer are the console's own colours and the status
// line's carriage return and erase. A writer made by Terminal is written
// through for that reason, not wrapped a second time.
type Console struct {
	mu   sync.Mutex
	w    io.Writer
	opts ConsoleOptions
	now  func() time.Time

	// The counter behind the status line.
	total, done, ran, failed int
	started                  time.Time
	// status is the status line on screen ("" for none).
	status string
	// stopTicker ends the goroutine redrawing the status line; tickerDone
	// is closed when it has.
	stopTicker, tickerDone chan struct{}
}

// NewConsole returns a Console writing to w.
func NewConsole(w io.Writer, opts ConsoleOptions) *Console {
	if opts.TranscriptTail == 0 {
		opts.TranscriptTail = DefaultTranscriptTail
	}
	if t, ok := w.(*terminal); ok {
		w = t.w
	}
	return &Console{w: w, opts: opts, now: time.Now}
}

// Start sets the number of pairs the run has, for the counter, and with
// ConsoleOptions.Live draws the status line and keeps it moving until
// Stop or Summary. Results of several suites run at once share the one
// counter.
func (c *Console) Start(total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total, c.started = total, c.now()
	if !c.opts.Live || c.stopTicker != nil {
		return
	}
	var sc screen
	c.redraw(&sc)
	c.flush(&sc)
	c.stopTicker, c.tickerDone = make(chan struct{}), make(chan struct{})
	go c.tick(c.stopTicker, c.tickerDone)
}

// tick redraws the status line every statusEvery until stop is closed.
func (c *Console) tick(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			c.mu.Lock()
			var sc screen
			c.redraw(&sc)
			c.flush(&sc)
			c.mu.Unlock()
		}
	}
}

// Stop erases the status line and stops redrawing it. It is safe to call
// more than once, and without Start.
func (c *Console) Stop() {
	c.mu.Lock()
	stop, done := c.stopTicker, c.tickerDone
	c.stopTicker = nil
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done // the ticker only waits on the lock, which is free
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var sc screen
	c.erase(&sc)
	c.flush(&sc)
}

// Finished prints the progress line for r, e.g.
//
//	PASS  server/nonce/stale-request-ignored[sotw-ads] (12ms)
//	FAIL  server/nonce/stale-request-ignored[sotw-ads] (12ms): <first line of message>
//	      re-run: xdsconform server --target 127.0.0.1:18000 --run 'server/nonce/stale-request-ignored[sotw-ads]'
//	BLOCK client/ack/every-response[sotw-ads] (12ms): blocked by RES-1 (MUST): a precondition failed: <what>
//	WARN  server/nonce/stale-request-ignored[sotw-ads] (12ms): <a failure below --fail-on>
//	UNSUP server/delta/reconnect-unchanged-not-resent[delta-ads] (12ms): not supported: <first line>
//	INCON client/ack/prompt[sotw-ads] (12ms): inconclusive: UPD-2: the ACK took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); …
//	XFAIL server/nonce/stale-request-ignored[sotw-ads] (12ms): known failing: <reason>
//	XPASS server/nonce/stale-request-ignored[sotw-ads] (12ms): stale known-failing entry: <reason>
//
// The name is ID[variant], the form --run and --skip take. A failure's
// message starts with the rule its failing step checks and that rule's
// level ("RES-4 (MUST): ..."); a blocked pair's with the rule its failed
// precondition rests on, which it counts against; an inconclusive pair's
// line gives the timing figures the harness's own lag could explain. A
// skipped pair prints nothing unless ConsoleOptions.Verbose: skips are
// counted by reason in the summary. docs/outcomes.md has every label.
//
// Write errors are ignored: progress output is best effort and must not
// abort a run.
func (c *Console) Finished(r results.Result) {
	r = scrubbed(r)
	var b screen
	lbl := label(r, failOnOf(c.opts.FailOn))
	if lbl != "SKIP" || c.opts.Verbose {
		c.paint(&b, lbl, fmt.Sprintf("%-5s", lbl))
		fmt.Fprintf(&b, " %s (%s)", clean(r.FullName()), formatDuration(r.Duration))
		switch {
		case r.Outcome == results.Blocked && (lbl == "BLOCK" || lbl == "WARN"):
			// What blocked it, whatever the message's first line says.
			b.WriteString(": " + clean(verdict.BlockedHeadline(r)))
		case lbl == "INCON":
			b.WriteString(": inconclusive: " + clean(verdict.TimingDoubts(r)))
		case lbl == "FAIL" || lbl == "WARN" || lbl == "ERROR" || lbl == "SKIP":
			if m := firstLine(r.Message); m != "" {
				b.WriteString(": " + m)
			}
		case lbl == "UNSUP":
			b.WriteString(": not supported: " + firstLine(r.Message))
		case lbl == "XFAIL":
			b.WriteString(": known failing: " + firstLine(r.KnownFailing))
		case lbl == "XPASS":
			b.WriteString(": stale known-failing entry: " + firstLine(r.KnownFailing))
		}
		b.WriteByte('\n')
		c.writeRerun(&b, r, lbl, "      ")
		if c.opts.Verbose {
			switch lbl {
			case "FAIL", "BLOCK", "WARN", "ERROR", "INCON", "XFAIL":
				c.writeDetails(&b, r)
			case "SKIP":
				if strings.Contains(strings.TrimRight(r.Message, "\n"), "\n") {
					writeIndented(&b, r.Message, "    ")
				}
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done++
	if lbl != "SKIP" {
		c.ran++
	}
	if lbl == "FAIL" || lbl == "BLOCK" || lbl == "ERROR" || lbl == "XPASS" {
		c.failed++
	}
	if len(b.parts) == 0 && c.status == "" {
		return
	}
	var out screen
	if len(b.parts) > 0 {
		c.erase(&out)
		out.parts = append(out.parts, b.parts...)
	}
	if c.stopTicker != nil {
		c.redraw(&out)
	}
	c.flush(&out)
}

// writeRerun writes the line that runs r's pair again, under a label that
// calls for one (see ConsoleOptions.Rerun).
func (c *Console) writeRerun(b *screen, r results.Result, lbl, indent string) {
	if c.opts.Rerun == nil {
		return
	}
	switch lbl {
	case "FAIL", "BLOCK", "WARN", "ERROR", "INCON", "XPASS":
		if cmd := c.opts.Rerun(r); cmd != "" {
			b.WriteString(indent + "re-run: " + clean(transcript.Scrub(cmd)) + "\n")
		}
	}
}

// statusLine is the text of the status line: pairs done of the total, how
// many of them failed, the time elapsed and, once etaAfter pairs have run,
// the time left at the pace so far. c.mu must be held.
func (c *Console) statusLine() string {
	elapsed := c.now().Sub(c.started)
	line := fmt.Sprintf("[%d/%d] %s elapsed", c.done, c.total, elapsed.Round(time.Second))
	if c.failed > 0 {
		line += ", " + wording.N(c.failed, "failure")
	}
	if c.ran >= etaAfter && c.done < c.total {
		left := time.Duration(float64(elapsed) / float64(c.done) * float64(c.total-c.done))
		line += ", about " + max(left.Round(time.Second), time.Second).String() + " left"
	}
	if c.opts.Width > 1 && len(line) >= c.opts.Width {
		line = line[:c.opts.Width-1] // ASCII only: no rune is cut
	}
	return line
}

// redraw writes the status line over the one on screen. c.mu must be held.
func (c *Console) redraw(b *screen) {
	c.erase(b)
	c.status = c.statusLine()
	b.text(c.status)
}

// erase writes what clears the status line, if one is on screen, leaving
// the cursor at the start of the empty line. c.mu must be held.
func (c *Console) erase(b *screen) {
	if c.status != "" {
		b.ctl("\r\x1b[K")
		c.status = ""
	}
}

// flush writes b. c.mu must be held.
func (c *Console) flush(b *screen) {
	if len(b.parts) > 0 {
		_, _ = io.WriteString(c.w, b.String())
	}
}

// Summary prints, in this order: totals by outcome (pass, fail, blocked,
// warn, unsupported, inconclusive, known-failing, stale, skipped, error;
// "pass" leaves out stale known-failing passes, which have their own row,
// so the rows add up to the number of results) and by scenario level;
// every failure and error in detail (sorted by ID then variant), and every
// blocked pair, the first of each blocking rule in detail; the warnings
// below --fail-on in detail; the MAY behaviours not supported, the
// inconclusive pairs with their timing figures, the known-failing
// failures and the stale known-failing entries by name; skip reasons with
// counts; when the pairs that did not pass have more than one root cause,
// the causes (verdict.Causes); and two last lines: the causes in one line,
// and the verdict. The output depends only on run, so two runs with the
// same results print the same summary apart from durations.
func (c *Console) Summary(run results.Run) {
	c.Stop()
	run = scrubbedRun(run)
	rs := sortedResults(run.Results)
	failOn := failOnOf(run.FailOn, c.opts.FailOn)
	s := results.SummarizeFor(rs, failOn)
	var b screen

	fmt.Fprintf(&b, "\n=== Summary: %s against %s (%s in %s)\n",
		clean(suites(run.Role)), clean(orDash(run.Target)), wording.N(len(rs), "result"), formatDuration(run.Duration))
	for _, row := range []struct {
		name string
		n    int
	}{
		{"pass", s.Pass},
		{"fail", s.Fail},
		{"blocked", s.Blocked},
		{"warn", s.Tolerated},
		{"unsupported", s.Unsupported},
		{"inconclusive", s.Inconclusive},
		{"known-failing", s.KnownFailing},
		{"stale", s.StalePasses},
		{"skipped", s.Skip},
		{"error", s.Error},
	} {
		fmt.Fprintf(&b, "  %-14s %d\n", row.name, row.n)
	}
	writeByLevel(&b, verdict.ByLevel(rs, failOn))

	var fails, blocked, warns, errs, incons, xfails, xpasses []results.Result
	var unsupported []results.Result
	skips := map[string]int{}
	for _, r := range rs {
		switch label(r, failOn) {
		case "FAIL":
			fails = append(fails, r)
		case "BLOCK":
			blocked = append(blocked, r)
		case "WARN":
			warns = append(warns, r)
		case "UNSUP":
			unsupported = append(unsupported, r)
		case "INCON":
			incons = append(incons, r)
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
	}{
		{"Failures", fails},
		{"Blocked: a precondition failed, so the scenario never reached what it checks; each counts against the rule its precondition rests on", blocked},
		{"Errors", errs},
		{"Warnings: failures below --fail-on " + string(failOn) + ", not counted against the run", warns},
	} {
		if len(sec.rs) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n=== %s (%d)\n", sec.title, len(sec.rs))
		// One blocked pair shows what blocked the others of its rule:
		// a base resource not served blocks hundreds of scenarios the
		// same way, and their transcripts would bury everything else.
		detailed := map[string]bool{}
		for _, r := range sec.rs {
			lbl := label(r, failOn)
			b.WriteString("\n--- ")
			c.paint(&b, lbl, lbl)
			fmt.Fprintf(&b, " %s", clean(r.FullName()))
			if lbl == "BLOCK" {
				if detailed[r.BlockedBy] {
					fmt.Fprintf(&b, ": blocked by %s, as above\n", clean(r.BlockedBy))
					c.writeRerun(&b, r, lbl, "    ")
					continue
				}
				detailed[r.BlockedBy] = true
			}
			b.WriteString("\n")
			c.writeRerun(&b, r, lbl, "    ")
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
	if len(incons) > 0 {
		// The harness, not the target, could not judge these: the figures
		// say how far its own lag went, and the re-run line tries again.
		fmt.Fprintf(&b, "\n=== Inconclusive: timing verdicts the harness's own lag could explain, or windows the run's budget cut shorter than the timer they are about; not counted against the run (%d)\n", len(incons))
		for _, r := range incons {
			fmt.Fprintf(&b, "  %s: %s\n", clean(r.FullName()), clean(verdict.TimingDoubts(r)))
			c.writeRerun(&b, r, "INCON", "    ")
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
			c.writeRerun(&b, r, "XPASS", "    ")
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
		more := ""
		if !c.opts.Verbose {
			more = ", by reason; -v lists each"
		}
		fmt.Fprintf(&b, "\n=== Skipped (%d%s)\n", s.Skip, more)
		for _, k := range reasons {
			fmt.Fprintf(&b, "  %4d  %s\n", skips[k], k)
		}
	}
	causes := verdict.Causes(rs, failOn)
	writeCauses(&b, causes)

	b.WriteByte('\n')
	if line := verdict.CausesLine(causes, clean); line != "" {
		b.WriteString(line + "\n")
	}
	c.verdict(&b, run, s, failOn)
	b.WriteByte('\n')
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flush(&b)
}

// writeCauses lists the root causes of what did not pass when there is
// more than one (one is said in full by the line above the verdict).
func writeCauses(b *screen, causes []verdict.Cause) {
	if len(causes) < 2 {
		return
	}
	fmt.Fprintf(b, "\n=== Causes: what did not pass, by root cause (%d)\n", len(causes))
	b.WriteString(causesText(causes, clean))
}

// causeTextBytes bounds an error's text and an example line in a list of
// causes: a summary line, not the evidence, which each pair's own detail
// block has whole.
const causeTextBytes = 512

// causesText lists causes as the console and JUnit show them: those that
// fail the run, then those below --fail-on, then those the known-failing
// file excused, each under a heading, with how many pairs it took, the
// first it was seen in and the first line it showed there. esc escapes
// what comes from a report for where the text goes.
func causesText(causes []verdict.Cause, esc func(string) string) string {
	var b strings.Builder
	heading := ""
	for _, c := range causes {
		h := "  failing the run:\n"
		switch {
		case c.KnownFailing:
			h = "  excused by the known-failing file:\n"
		case !c.FailsRun():
			h = "  below --fail-on, not counted against the run:\n"
		}
		if h != heading {
			b.WriteString(h)
			heading = h
		}
		name := c.Rule + " (" + string(c.Level) + ")"
		if c.Rule == "" {
			name = "error \"" + transcript.Clip(c.Error, causeTextBytes) + "\""
		}
		fmt.Fprintf(&b, "    %s in %s, first seen in %s\n", esc(name), c.Breakdown(), esc(c.First))
		if c.Example != "" && c.Example != c.Error {
			fmt.Fprintf(&b, "        e.g. %s\n", esc(transcript.Clip(c.Example, causeTextBytes)))
		}
	}
	return b.String()
}

// verdict writes the last line, for summary s of run at level failOn. An
// interrupted run is never called a pass even when what finished was
// clean, because unfinished scenarios were not judged.
func (c *Console) verdict(b *screen, run results.Run, s results.Summary, failOn results.Level) {
	var problems []string
	add := func(n int, noun string) {
		if n > 0 {
			problems = append(problems, wording.N(n, noun))
		}
	}
	add(s.Fail, "failure")
	add(s.Blocked, "blocked pair")
	add(s.Error, "error")
	add(s.StalePasses, "stale known-failing entry")
	extra := ""
	if s.Tolerated > 0 {
		extra += fmt.Sprintf(", %d below --fail-on %s", s.Tolerated, failOn)
	}
	if s.Unsupported > 0 {
		extra += fmt.Sprintf(", %d MAY not supported", s.Unsupported)
	}
	if s.Inconclusive > 0 {
		extra += fmt.Sprintf(", %d inconclusive", s.Inconclusive)
	}
	switch {
	case run.Interrupted:
		problems = append([]string{"run interrupted, results are partial"}, problems...)
		c.paint(b, "ERROR", "INTERRUPTED")
		b.WriteString(": " + strings.Join(problems, ", "))
	case !s.OK():
		c.paint(b, "FAIL", "FAIL")
		b.WriteString(": " + strings.Join(problems, ", "))
	default:
		c.paint(b, "PASS", "PASS")
		fmt.Fprintf(b, ": %d passed, %d known failing, %d skipped%s", s.Pass, s.KnownFailing, s.Skip, extra)
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

// writeByLevel writes the outcome counts per scenario level, MUST first,
// counted as the summary counts them (verdict.ByLevel): a failure the
// known-failing file excused is "known failing", never "fail", so that a
// level's row agrees with a PASS verdict. Warnings, blocked,
// inconclusive and stale pairs are counted only when a level has some.
func writeByLevel(b *screen, byLevel map[results.Level]verdict.LevelCount) {
	b.WriteString("  by level:\n")
	for _, l := range results.Levels {
		lc := byLevel[l]
		line := fmt.Sprintf("    %-7s %d pass, %d fail", l, lc.Pass, lc.Fail)
		if l == results.May {
			line = fmt.Sprintf("    %-7s %d supported, %d not supported, %d fail", l, lc.Pass, lc.Unsupported, lc.Fail)
		}
		for _, rare := range []struct {
			n    int
			what string
		}{{lc.Blocked, "blocked"}, {lc.Warn, "warn"}, {lc.KnownFailing, "known failing"}, {lc.Inconclusive, "inconclusive"}, {lc.Stale, "stale"}} {
			if rare.n > 0 {
				line += fmt.Sprintf(", %d %s", rare.n, rare.what)
			}
		}
		fmt.Fprintf(b, "%s, %d skipped, %d error\n", line, lc.Skip, lc.Error)
	}
}

// writeDetails writes the indented detail block of a failing result.
func (c *Console) writeDetails(b *screen, r results.Result) {
	fmt.Fprintf(b, "    level:        %s\n", clean(orDash(string(r.Level))))
	fmt.Fprintf(b, "    requirements: %s\n", clean(orDash(strings.Join(r.Requirements, ", "))))
	switch {
	case r.Outcome == results.Blocked:
		fmt.Fprintf(b, "    blocked by:   %s (%s): the rule its failed precondition rests on, which it counts against\n",
			clean(orDash(r.BlockedBy)), clean(string(r.FailureLevel())))
	case len(r.RulesBroken) > 0:
		fmt.Fprintf(b, "    rules broken: %s (%s)\n", clean(strings.Join(r.RulesBroken, ", ")), clean(string(r.FailureLevel())))
	}
	if r.KnownFailing != "" {
		fmt.Fprintf(b, "    known failing: %s\n", firstLine(r.KnownFailing))
	}
	writeTiming(b, r.Timing)
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

// writeTiming writes a pair's timing verdicts, one a line, with the
// harness's own lag in each window: the evidence of an inconclusive pair,
// and of a timing failure that stood whatever the lag.
func writeTiming(b *screen, t *results.Timing) {
	if t == nil || len(t.Checks) == 0 {
		return
	}
	head := "    timing:"
	if t.Reruns > 0 {
		head = fmt.Sprintf("    timing (of its last run; it ran again alone %s):", wording.Count(t.Reruns, "time", "times"))
	}
	b.WriteString(head + "\n")
	d := wording.Duration
	for _, ch := range t.Checks {
		fmt.Fprintf(b, "      %s %s: %s: %s against %s, harness stalled %s (longest %s): %s\n",
			clean(ch.Rule), clean(ch.Kind), clean(ch.What), d(ch.Measured), d(ch.Limit), d(ch.Lag), d(ch.LagMax), clean(ch.Verdict))
	}
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
// label of passes, failures, blocked pairs and unsupported MAY behaviours,
// mirroring results.Summarize: a listed scenario that errors, is skipped
// or is inconclusive is reported as such. A failure or blocked pair below
// failOn (set; see failOnOf) is a WARN. docs/outcomes.md lists them all.
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
	case results.Fail, results.Blocked:
		// A blocked pair is a failure of the rule it was blocked by,
		// excused and tolerated as a failure is.
		switch {
		case r.KnownFailing != "":
			return "XFAIL"
		case !r.FailureLevel().AtLeast(failOn):
			return "WARN"
		case r.Outcome == results.Blocked:
			return "BLOCK"
		}
		return "FAIL"
	case results.Inconclusive:
		return "INCON"
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

// labelColors are the colours of the labels: red for what fails the run,
// yellow for what is reported without failing it (an inconclusive pair
// among them: the harness, not the target, could not judge it), green for
// a pass.
var labelColors = map[string]string{
	"PASS": ansiGreen, "FAIL": ansiRed, "BLOCK": ansiRed, "ERROR": ansiRed, "XPASS": ansiRed,
	"SKIP": ansiYellow, "XFAIL": ansiYellow, "WARN": ansiYellow, "UNSUP": ansiYellow, "INCON": ansiYellow,
}

// paint writes text, coloured by the label's meaning when colour is
// enabled.
func (c *Console) paint(b *screen, lbl, text string) {
	col := labelColors[lbl]
	if !c.opts.Color || col == "" {
		b.text(text)
		return
	}
	b.ctl(col)
	b.text(text)
	b.ctl(ansiReset)
}

// screen collects what one call of the console prints: text, escaped with
// Sanitize on its way out whatever its source, and the console's own escape
// sequences (colours, the status line's carriage return and erase), which
// only ctl writes and which come from this file's constants.
type screen struct{ parts []screenPart }

type screenPart struct {
	s   string
	ctl bool
}

// text adds s as text.
func (sc *screen) text(s string) {
	if s != "" {
		sc.parts = append(sc.parts, screenPart{s: s})
	}
}

// ctl adds an escape sequence of the console's own.
func (sc *screen) ctl(seq string) { sc.parts = append(sc.parts, screenPart{s: seq, ctl: true}) }

// Write adds p as text, for fmt.Fprintf.
func (sc *screen) Write(p []byte) (int, error) {
	sc.text(string(p))
	return len(p), nil
}

// WriteString adds s as text.
func (sc *screen) WriteString(s string) (int, error) {
	sc.text(s)
	return len(s), nil
}

// WriteByte adds c as text.
func (sc *screen) WriteByte(c byte) error {
	sc.text(string(c))
	return nil
}

// String is what reaches the writer: every text part escaped, the
// sequences as they are.
func (sc *screen) String() string {
	var b strings.Builder
	for _, p := range sc.parts {
		if p.ctl {
			b.WriteString(p.s)
		} else {
			b.WriteString(Sanitize(p.s))
		}
	}
	return b.String()
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
func writeIndented(b *screen, s, prefix string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + clean(l) + "\n")
	}
}

// clean makes control characters visible. Messages and transcript notes can
// carry text chosen by the target under test (NACK details, gRPC status
// messages); escaping keeps them from moving the cursor or recolouring the
// terminal, and (bidirectional controls such as U+202E) from reordering
// what a line shows. Tabs are kept since they are harmless layout.
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
	return r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || r == '\u2028' || r == '\u2029')
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
