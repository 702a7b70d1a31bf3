// Package markdown renders JSON reports as GitHub-flavoured Markdown, for
// a CI step summary ($GITHUB_STEP_SUMMARY) or a pull-request comment: the
// verdict, a table by level, what did not pass grouped by root cause,
// every failure and blocked pair with its rules and the first line of its
// message, the inconclusive pairs with their timing figures, the
// known-failing count and the skips summarised by reason. A run that
// names its implementation is credited to it, not to a private address
// (verdict.PublishedTarget).
//
// Every string the page takes from a report (names, messages, reasons,
// the target) may come from the target or from a hand-made report, so it
// is written only inside a code span: GitHub makes no link, mention, HTML
// or emphasis of anything there. The page is bounded in size: a summary
// past GitHub's limits is cut off by GitHub mid-line, so the lists are cut
// here instead, with a note saying what was left out.
package markdown

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
)

// Size limits of the places the page is meant for, in bytes (GitHub counts
// a comment's limit in characters, which are never more than bytes).
const (
	// StepSummaryLimit is GitHub's limit on one step's summary.
	StepSummaryLimit = 1 << 20
	// CommentLimit is GitHub's limit on a pull-request comment.
	CommentLimit = 65536
	// MinLimit is the smallest limit Write accepts: room for the verdict
	// and the tables of a few reports.
	MinLimit = 4096
)

// maxField bounds, in characters, each string taken from a report, so
// that one long message cannot use up the page.
const maxField = 300

// reserve is kept back from the lists for the note saying what was cut
// and the closing tags of an open <details>.
const reserve = 512

// Options tunes Write.
type Options struct {
	// Limit is the page's largest size in bytes; 0 means
	// StepSummaryLimit. Lists are cut, with a note, to stay within it.
	Limit int
}

// Write renders runs (one or more JSON reports, server and client) as one
// Markdown page: an overall verdict, then each run's summary and lists.
func Write(w io.Writer, runs []results.Run, opts Options) error {
	limit := opts.Limit
	if limit == 0 {
		limit = StepSummaryLimit
	}
	if limit < MinLimit {
		return fmt.Errorf("markdown: limit %d bytes is below the minimum of %d", limit, MinLimit)
	}
	if len(runs) == 0 {
		return errors.New("markdown: no report to render")
	}
	_, err := io.WriteString(w, render(runs, limit))
	return err
}

// section is one run's part of the page: its summary, always shown when
// there is room, and its lists, cut to fit.
type section struct {
	summary string
	lists   []list
}

// list is a heading and its items; open and close wrap the items (a
// collapsed <details> block) when set.
type list struct {
	heading     string
	open, close string
	items       []string
}

func render(reports []results.Run, limit int) string {
	// A report of both suites (xdsconform run) reads as two: each suite
	// has its own target and verdict.
	var runs []results.Run
	for _, r := range reports {
		runs = append(runs, verdict.SplitRoles(r)...)
	}
	var head strings.Builder
	ok := 0
	for _, r := range runs {
		if passed(r) {
			ok++
		}
	}
	head.WriteString("# xdsconform conformance report\n\n")
	switch {
	case len(runs) == 1 && ok == 1:
		head.WriteString("**✅ PASS**: the suite run passed\n")
	case ok == len(runs):
		fmt.Fprintf(&head, "**✅ PASS**: all %d suite runs passed\n", len(runs))
	default:
		fmt.Fprintf(&head, "**❌ FAIL**: %d of %s failed\n", len(runs)-ok, plural(len(runs), "suite run", "suite runs"))
	}
	sections := make([]section, len(runs))
	for i, r := range runs {
		sections[i] = runSection(r)
	}

	budget := limit - head.Len() - reserve
	var body strings.Builder
	shown := 0
	for _, s := range sections {
		if len(s.summary) > budget {
			break
		}
		budget -= len(s.summary)
		shown++
	}
	cutItems := 0
	rendered := make([]string, shown)
	for i := range shown {
		var b strings.Builder
		for _, l := range sections[i].lists {
			fixed := len(l.heading) + len(l.open) + len(l.close)
			if fixed+len(firstOr(l.items)) > budget {
				cutItems += len(l.items)
				continue
			}
			budget -= fixed
			b.WriteString(l.heading + l.open)
			for j, item := range l.items {
				if len(item) > budget {
					cutItems += len(l.items) - j
					break
				}
				budget -= len(item)
				b.WriteString(item)
			}
			b.WriteString(l.close)
		}
		rendered[i] = b.String()
	}
	for i := range shown {
		body.WriteString(sections[i].summary + rendered[i])
	}
	out := head.String() + body.String()
	if cutRuns := len(runs) - shown; cutRuns > 0 || cutItems > 0 {
		var parts []string
		if cutItems > 0 {
			parts = append(parts, plural(cutItems, "list entry", "list entries"))
		}
		if cutRuns > 0 {
			parts = append(parts, plural(cutRuns, "suite run", "suite runs"))
		}
		out += fmt.Sprintf("\n> [!NOTE]\n> Cut to fit %d bytes: %s not shown. The JSON reports hold every result.\n", limit, strings.Join(parts, " and "))
	}
	return out
}

// passed is the run's verdict as its exit status gave it.
func passed(r results.Run) bool {
	return !r.Interrupted && results.SummarizeFor(r.Results, r.FailOn).OK()
}

// runSection renders one run.
func runSection(r results.Run) section {
	var b strings.Builder
	name, version := verdict.Implementation(r)
	title := r.Role + " suite"
	if name != "" {
		title += " of " + Code(name)
		if version != "" {
			title += " " + Code(version)
		}
	}
	fmt.Fprintf(&b, "\n## %s\n\n", title)
	status := "**✅ PASS**"
	if !passed(r) {
		status = "**❌ FAIL**"
	}
	failOn := r.FailOn
	if failOn == "" {
		failOn = results.DefaultFailOn
	}
	s := results.SummarizeFor(r.Results, failOn)
	// A private address says nothing to a reader once the implementation
	// is named in the title; an unnamed run has nothing else.
	against := ""
	if t := verdict.PublishedTarget(r); t != "" {
		against = " against " + Code(t)
	}
	fmt.Fprintf(&b, "%s%s: %s", status, against, plural(len(r.Results), "scenario run", "scenario runs"))
	var counts []string
	for _, c := range []struct {
		n         int
		one, many string
	}{
		{s.Fail, "failed", "failed"}, {s.Blocked, "blocked", "blocked"}, {s.Error, "errored", "errored"},
		{s.StalePasses, "known-failing entry did not fail", "known-failing entries did not fail"},
		{s.Tolerated, "failure below the fail-on level", "failures below the fail-on level"},
		{s.KnownFailing, "known failing", "known failing"},
		{s.Inconclusive, "inconclusive", "inconclusive"},
	} {
		if c.n > 0 {
			counts = append(counts, plural(c.n, c.one, c.many))
		}
	}
	if len(counts) > 0 {
		b.WriteString(", " + strings.Join(counts, ", "))
	}
	fmt.Fprintf(&b, "; fail-on %s", failOn)
	if r.Interrupted {
		b.WriteString("; **interrupted**: only what finished is counted")
	}
	fmt.Fprintf(&b, ". Harness %s, %s.\n\n", Code(r.HarnessVersion), r.Duration.Round(100*time.Millisecond))

	byLevel := verdict.ByLevel(r.Results, failOn)
	var total verdict.LevelCount
	for _, c := range byLevel {
		total = add(total, c)
	}
	cols := []struct {
		name string
		get  func(verdict.LevelCount) int
	}{
		{"pass", func(c verdict.LevelCount) int { return c.Pass }},
		{"fail", func(c verdict.LevelCount) int { return c.Fail }},
		{"blocked", func(c verdict.LevelCount) int { return c.Blocked }},
		{"error", func(c verdict.LevelCount) int { return c.Error }},
		{"stale known-failing", func(c verdict.LevelCount) int { return c.Stale }},
		{"below fail-on", func(c verdict.LevelCount) int { return c.Warn }},
		{"known failing", func(c verdict.LevelCount) int { return c.KnownFailing }},
		{"MAY unsupported", func(c verdict.LevelCount) int { return c.Unsupported }},
		{"inconclusive", func(c verdict.LevelCount) int { return c.Inconclusive }},
		{"skipped", func(c verdict.LevelCount) int { return c.Skip }},
	}
	// The rare columns appear only when they count something.
	rare := map[string]bool{"blocked": true, "error": true, "stale known-failing": true, "below fail-on": true, "inconclusive": true}
	cols = slices.DeleteFunc(cols, func(c struct {
		name string
		get  func(verdict.LevelCount) int
	}) bool {
		return rare[c.name] && c.get(total) == 0
	})
	b.WriteString("| level |")
	for _, c := range cols {
		b.WriteString(" " + c.name + " |")
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(cols)) + "\n")
	levels := slices.Clone(results.Levels)
	for l := range byLevel {
		if !slices.Contains(levels, l) {
			levels = append(levels, l)
		}
	}
	for _, l := range levels {
		name := string(l)
		if !slices.Contains(results.Levels, l) {
			// A hand-made report's level could be anything.
			name = Cell(name)
		}
		b.WriteString("| " + name + " |")
		for _, c := range cols {
			fmt.Fprintf(&b, " %d |", c.get(byLevel[l]))
		}
		b.WriteString("\n")
	}
	b.WriteString("| **total** |")
	for _, c := range cols {
		fmt.Fprintf(&b, " **%d** |", c.get(total))
	}
	b.WriteString("\n")
	causes := verdict.Causes(r.Results, failOn)
	if line := verdict.CausesLine(causes, Code); line != "" {
		b.WriteString("\n" + line + ".\n")
	}

	var failures, warnings, known, incons []string
	for _, res := range sorted(r.Results) {
		switch verdict.Classify(res, failOn) {
		case verdict.ClassFail:
			failures = append(failures, item(res, "", res.Message))
		case verdict.ClassBlocked:
			failures = append(failures, item(res, "", res.Message))
		case verdict.ClassInconclusive:
			incons = append(incons, item(res, "", verdict.TimingDoubts(res)))
		case verdict.ClassError:
			failures = append(failures, item(res, "error", res.Message))
		case verdict.ClassStale:
			failures = append(failures, item(res, "known-failing entry did not fail", res.KnownFailing))
		case verdict.ClassWarn:
			warnings = append(warnings, item(res, "", res.Message))
		case verdict.ClassKnownFailing:
			known = append(known, item(res, "", res.KnownFailing))
		}
	}
	var lists []list
	if len(causes) > 1 {
		items := make([]string, len(causes))
		for i, c := range causes {
			items[i] = causeItem(c)
		}
		lists = append(lists, list{heading: fmt.Sprintf("\n### By root cause (%d)\n\n", len(causes)), items: items})
	}
	if len(failures) > 0 {
		lists = append(lists, list{heading: fmt.Sprintf("\n### Failures (%d)\n\n", len(failures)), items: failures})
	}
	if len(warnings) > 0 {
		lists = append(lists, list{heading: fmt.Sprintf("\n### Below the fail-on level (%d)\n\n", len(warnings)), items: warnings})
	}
	if len(incons) > 0 {
		lists = append(lists, list{
			heading: fmt.Sprintf("\n### Inconclusive (%d)\n\n", len(incons)),
			open:    "Timing verdicts the harness's own lag could explain either way, even run again alone: not counted against the run.\n\n",
			items:   incons,
		})
	}
	if len(known) > 0 {
		lists = append(lists, list{
			heading: fmt.Sprintf("\n### Known failing (%d)\n\n", len(known)),
			open:    fmt.Sprintf("<details><summary>%s listed in the known-failing file</summary>\n\n", plural(len(known), "failure", "failures")),
			close:   "\n</details>\n",
			items:   known,
		})
	}
	if reasons := verdict.SkipReasons(r.Results); len(reasons) > 0 {
		slices.SortStableFunc(reasons, func(a, b verdict.Reason) int { return b.Count - a.Count })
		items := make([]string, len(reasons))
		for i, reason := range reasons {
			items[i] = fmt.Sprintf("- %d × %s\n", reason.Count, Code(verdict.FirstLine(reason.Text)))
		}
		lists = append(lists, list{heading: fmt.Sprintf("\n### Skipped (%d), by reason\n\n", s.Skip), items: items})
	}
	return section{summary: b.String(), lists: lists}
}

// causeItem is one root cause as a list entry: the rule and its level (or
// the error), how many pairs it took and how, and where it was first seen
// with the first line it showed there.
func causeItem(c verdict.Cause) string {
	name := Code(c.Rule) + " " + Code(string(c.Level))
	if c.Rule == "" {
		name = "error " + Code(c.Error)
	}
	s := fmt.Sprintf("- %s in %s, first seen in %s", name, c.Breakdown(), Code(c.First))
	if c.Example != "" && c.Example != c.Error {
		s += ": " + Code(c.Example)
	}
	return s + "\n"
}

// item is one list entry: the pair, its level and broken rules (or the
// rule that blocked it), and the first line of text (a message, timing
// figures or a known-failing reason).
func item(r results.Result, label, text string) string {
	var b strings.Builder
	b.WriteString("- " + Code(r.FullName()) + " " + Code(string(r.FailureLevel())))
	if r.Outcome == results.Blocked && r.BlockedBy != "" {
		b.WriteString(" blocked by " + Code(r.BlockedBy))
	} else if len(r.RulesBroken) > 0 {
		ids := make([]string, len(r.RulesBroken))
		for i, id := range r.RulesBroken {
			ids[i] = Code(id)
		}
		b.WriteString(" broke " + strings.Join(ids, ", "))
	}
	if label != "" {
		b.WriteString(" (" + label + ")")
	}
	if line := verdict.FirstLine(text); line != "" {
		b.WriteString(": " + Code(line))
	}
	b.WriteString("\n")
	return b.String()
}

// sorted is rs by ID then variant, as every report lists results.
func sorted(rs []results.Result) []results.Result {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b results.Result) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Variant, b.Variant)
	})
	return out
}

func add(a, b verdict.LevelCount) verdict.LevelCount {
	return verdict.LevelCount{Pass: a.Pass + b.Pass, Fail: a.Fail + b.Fail, Blocked: a.Blocked + b.Blocked, Warn: a.Warn + b.Warn,
		KnownFailing: a.KnownFailing + b.KnownFailing, Stale: a.Stale + b.Stale, Unsupported: a.Unsupported + b.Unsupported,
		Inconclusive: a.Inconclusive + b.Inconclusive, Skip: a.Skip + b.Skip, Error: a.Error + b.Error}
}

func firstOr(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return items[0]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Code renders s as an inline code span, the only way a string from a
// report reaches the page. Inside a code span GitHub renders no link,
// autolink, mention, emphasis or HTML; the fence is one backtick longer
// than any run of backticks in s, so s cannot close it. s is first made
// one line (a line break could start a new block), stripped of control and
// bidirectional-formatting characters (which could make the text read
// differently from what it is) and cut to maxField characters.
func Code(s string) string {
	s = clean(s)
	if s == "" {
		return "(empty)"
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		// A space on each side is stripped by the renderer and keeps a
		// backtick at the edge from joining the fence.
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// Cell is Code for a table cell. GitHub splits a row at every pipe, even
// inside a code span, unless it is escaped; and it reads "\\|" as an
// escaped backslash and then a boundary, so backslashes are replaced
// first and cannot undo an escape.
func Cell(s string) string {
	s = strings.ReplaceAll(clean(s), `\`, "∖")
	return Code(strings.ReplaceAll(s, "|", `\|`))
}

// clean makes s one line of at most maxField printable characters.
func clean(s string) string { return oneLine(s, maxField) }

// oneLine makes s one line of printable characters: runs of spaces and
// control characters become one space, invalid UTF-8 and bidirectional
// formatting characters go, and past limit characters (when limit > 0)
// an ellipsis ends it.
func oneLine(s string, limit int) string {
	var b strings.Builder
	n := 0
	space := false
	for _, r := range s {
		switch {
		case r == utf8.RuneError, isBidi(r):
			continue
		case unicode.IsSpace(r) || unicode.IsControl(r):
			space = b.Len() > 0
			continue
		}
		if limit > 0 && n == limit {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// autolinkScheme reports whether before ends in a scheme GitHub links
// bare (http, https, ftp) as a word of its own.
func autolinkScheme(before string) bool {
	for _, scheme := range []string{"http", "https", "ftp"} {
		n := len(before) - len(scheme)
		if n >= 0 && strings.EqualFold(before[n:], scheme) && (n == 0 || !isWordByte(before[n-1])) {
			return true
		}
	}
	return false
}

// isWordByte reports whether c is an ASCII letter, digit or underscore.
func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// isBidi reports whether r is a bidirectional formatting character: it
// can make text display in another order than it reads.
func isBidi(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// rawHTML matches what CommonMark reads as raw HTML or an autolink at a
// "<": an open or closing tag, a comment, a processing instruction, a
// declaration, CDATA, or <scheme:…> and <user@host>. A "<" that starts
// none of them is shown as it is (std::map<const K*, V*> stays readable).
var rawHTML = regexp.MustCompile(`^<(?:` +
	`[A-Za-z][A-Za-z0-9-]*(?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:[^"'=<>` + "`" + `\s]+|'[^']*'|"[^"]*"))?)*\s*/?>` +
	`|/[A-Za-z][A-Za-z0-9-]*\s*>` +
	`|!--|\?|![A-Za-z]|!\[CDATA\[` +
	`|[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*>` +
	`|[A-Za-z0-9.!#$%&'*+/=?^_` + "`" + `{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>)`)

// Inline renders s as one line of Markdown prose (a table cell, a list
// entry) that shows as written as far as structure goes: it cannot open a
// link or an image, insert HTML or an autolink (in angle brackets or
// bare), end a table cell or start a block, and it carries no control or
// bidirectional-formatting characters. Unlike Code it leaves the text
// alone otherwise (inline code and emphasis a writer meant still work), so
// that documents written before it (COMPATIBILITY.md) stay byte for byte
// what they were. It does not cut s.
func Inline(s string) string {
	// Escaping looks at the neighbours a reader sees: a dropped
	// character between "]" and "(" must not hide a link.
	s = oneLine(s, 0)
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == '|':
			b.WriteString(`\|`)
		case r == '\\' && strings.HasPrefix(s[i+1:], "|"):
			// "\\|" would be an escaped backslash and a cell boundary.
			b.WriteString(`\\`)
		case r == '<' && rawHTML.MatchString(s[i:]):
			b.WriteString("&lt;")
		case r == '(' && i > 0 && s[i-1] == ']':
			// "](" closes a link's text and opens its destination.
			b.WriteString(`\(`)
		case r == '[' && i > 0 && s[i-1] == '!':
			b.WriteString(`\[`)
		case r == ':' && strings.HasPrefix(s[i+1:], "//") && autolinkScheme(s[:i]),
			r == '.' && i >= 3 && strings.EqualFold(s[i-3:i], "www") && (i == 3 || !isWordByte(s[i-4])),
			r == '@' && i > 0 && (isWordByte(s[i-1]) || strings.IndexByte(".+-", s[i-1]) >= 0):
			// GitHub links a bare URL, www. name or e-mail address;
			// escaping the character it keys on leaves the text as is.
			b.WriteString(`\` + string(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
