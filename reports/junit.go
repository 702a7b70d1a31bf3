package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// The JUnit layout is valid against the common JUnit schema, the one
// Jenkins' xUnit plugin validates against (reports/schema/junit.xsd, with
// its provenance), which GitLab (unit test reports) and the common GitHub
// actions read too:
//
//	<testsuites name tests failures errors time>
//	  <testsuite name="xdsconform <role> suite: <target> [<LEVEL>]" tests failures errors skipped time timestamp>
//	                                    (xdsconform run: "xdsconform server and client suites: …")
//	    <properties><property name value/>...</properties>
//	    <testcase classname="<role>.<area>" name="<id>[<variant>]" time="seconds">
//	      <skipped>reason</skipped> | <error message type>...</error> | <failure message type>...</failure>
//	      <system-out>transcript</system-out>
//	    </testcase>
//	    <system-out>what did not pass, by root cause</system-out>
//	  </testsuite>
//
// The schema allows no skipped count on the root (each suite has one) and
// no attribute on <skipped>: its reason is its text, which Jenkins shows
// as the skip message when there is no message attribute. A testcase's
// children come in the schema's order: skipped, error, failure,
// system-out.
//
// Results are grouped by level, one <testsuite> per level that has
// results (MUST, SHOULD, MAY, in that order), so a CI page shows the MUST
// verdict apart from the rest; the variant is part of every testcase name
// and CI tools group by classname within a suite. The counts of the
// <testsuites> root are those of the console summary and the exit status.
// A suite whose pairs did not all pass ends with a <system-out> grouping
// them by root cause (verdict.Causes), as the console summary does: the
// common schema has no other place for free text on a suite, and CI tools
// that show a suite's output (Jenkins does) show it there.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  *junitText      `xml:"system-out"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitText    `xml:"skipped"`
	Error     *junitProblem `xml:"error"`
	Failure   *junitProblem `xml:"failure"`
	SystemOut *junitText    `xml:"system-out"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",innerxml"` // escaped by text()
}

// junitText is element content escaped by text().
type junitText struct {
	Body string `xml:",innerxml"`
}

// text escapes s for use as element content. encoding/xml's own chardata
// escaping turns every newline and quote into a character reference, which
// makes messages and transcripts unreadable to anyone opening the file; this
// escapes only what XML requires, keeps newlines and tabs, and replaces
// characters XML 1.0 cannot carry (most control characters, which a target
// could smuggle into a message) with U+FFFD, as encoding/xml would.
func text(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '\r':
			b.WriteString("&#xD;")
		case r == '\n' || r == '\t' ||
			r >= 0x20 && r <= 0xD7FF ||
			r >= 0xE000 && r <= 0xFFFD ||
			r >= 0x10000 && r <= 0x10FFFF:
			b.WriteRune(r)
		default:
			b.WriteRune('\uFFFD')
		}
	}
	return b.String()
}

// SystemOutBytes bounds one testcase's <system-out>: the transcript's
// first SystemOutBytes/4 and last 3*SystemOutBytes/4, cut on line ends,
// with a line between them saying what was left out. The JSON report has
// every entry the transcript kept; CI pages stay small whatever a target
// floods.
const SystemOutBytes = 64 << 10

func systemOut(s string) *junitText {
	if s == "" {
		return nil
	}
	return &junitText{Body: text(headTail(s, SystemOutBytes/4, SystemOutBytes-SystemOutBytes/4,
		fmt.Sprintf("system-out keeps a transcript's first %d and last %d bytes; the JSON report keeps every entry", SystemOutBytes/4, SystemOutBytes-SystemOutBytes/4)))}
}

// skipped is a <skipped> element: its first line, then body (if any).
func skipped(first, body string) *junitText {
	if body != "" {
		first += "\n\n" + body
	}
	return &junitText{Body: text(first)}
}

// headTail returns s when it is at most head+tail bytes long, otherwise
// its lines in the first head bytes and in the last tail bytes (a line
// longer than either is cut, on a character boundary), with one line
// between them counting the bytes and lines left out and saying why.
func headTail(s string, head, tail int, why string) string {
	if len(s) <= head+tail {
		return s
	}
	h := head
	if i := strings.LastIndexByte(s[:h], '\n'); i >= 0 {
		h = i + 1
	}
	for h > 0 && h < len(s) && !utf8.RuneStart(s[h]) {
		h--
	}
	t := len(s) - tail
	if i := strings.IndexByte(s[t:], '\n'); i >= 0 && t+i+1 < len(s) {
		t += i + 1
	}
	for t < len(s) && !utf8.RuneStart(s[t]) {
		t++
	}
	left := s[h:t]
	return fmt.Sprintf("%s... %d bytes, %d lines, left out here (%s)\n%s", s[:h], len(left), strings.Count(left, "\n"), why, s[t:])
}

// WriteJUnit writes run as JUnit XML (see the layout above). Mapping
// (docs/outcomes.md has every outcome, and how the other reports show it):
//
//   - fail: <failure message="first line" type="<level> <rules broken>">
//     with the message and the transcript tail; the full transcript goes to
//     <system-out>.
//   - blocked: <failure message="blocked by RULE (LEVEL): …" type="blocked
//     <level> <rule>">, same contents: a failure of the rule its failed
//     precondition rests on, which fails the run like any other.
//   - error: <error>, same contents.
//   - skip: <skipped>reason</skipped>.
//   - inconclusive: <skipped>inconclusive, not counted: the timing
//     figures</skipped>, followed in its text by the message and the
//     transcript tail: the harness's own lag could explain its timing
//     verdict, which fails neither a rule nor the run, so it must not turn
//     a CI gate red.
//   - failure or blocked pair below --fail-on: <skipped>, saying so.
//   - known-failing failure (or blocked pair): <skipped>known failing:
//     reason</skipped>, followed in its text by the failure and transcript
//     tail, and the transcript in <system-out>.
//     It is a skip, not a failure, because the run's exit status excuses it
//     (results.Summary.OK): a <failure> would turn the CI job red or
//     "unstable" while the harness itself reports success.
//   - known-failing entry that passed: <failure message="stale known-failing
//     entry: reason" type="stale known-failing entry">, because a stale
//     entry fails the run and the list must be cleaned up.
//
// Counts come from results.Summarize, so failures = fail + blocked +
// stale, errors = error, skipped = skipped + known-failing + below
// fail-on + unsupported + inconclusive (per suite: the root has no
// skipped count in the common schema).
func WriteJUnit(w io.Writer, run results.Run) error {
	run = scrubbedRun(run)
	rs := sortedResults(run.Results)
	failOn := failOnOf(run.FailOn)
	name := fmt.Sprintf("xdsconform %s: %s", suites(run.Role), orDash(run.Target))
	total := junitCounts(rs, failOn)
	doc := junitSuites{
		Name:     name,
		Tests:    len(rs),
		Failures: total.Failures,
		Errors:   total.Errors,
		Time:     seconds(run.Duration),
	}
	// One suite per level, strongest first; a level nobody has is left
	// out, and so is a result of a level outside the catalogue's three
	// (shown under a suite of its own name, so nothing is lost).
	groups := map[results.Level][]results.Result{}
	var order []results.Level
	for _, r := range rs {
		if _, ok := groups[r.Level]; !ok {
			order = append(order, r.Level)
		}
		groups[r.Level] = append(groups[r.Level], r)
	}
	slices.SortStableFunc(order, results.Compare)
	for _, l := range order {
		g := groups[l]
		c := junitCounts(g, failOn)
		suite := junitSuite{
			Name:       fmt.Sprintf("%s [%s]", name, orDash(string(l))),
			Tests:      len(g),
			Failures:   c.Failures,
			Errors:     c.Errors,
			Skipped:    c.Skipped,
			Time:       seconds(sumDurations(g)),
			Properties: junitProperties(run, failOn),
		}
		if !run.Started.IsZero() {
			suite.Timestamp = run.Started.UTC().Format(time.RFC3339)
		}
		for _, r := range g {
			suite.Cases = append(suite.Cases, junitTestCase(run.Role, r, failOn))
		}
		if causes := verdict.Causes(g, failOn); len(causes) > 0 {
			id := func(s string) string { return s }
			suite.SystemOut = &junitText{Body: text(verdict.CausesLine(causes, id) + "\n\nBy root cause:\n" + causesText(causes, id))}
		}
		doc.Suites = append(doc.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// junitTotals are the JUnit counts of a group of results.
type junitTotals struct{ Failures, Errors, Skipped int }

// junitCounts counts rs as WriteJUnit writes them: failures = fail +
// blocked + stale, errors = error (and outcomes this package does not
// know), skipped = skipped + known-failing + failures below fail-on + MAY
// behaviours not supported + inconclusive.
func junitCounts(rs []results.Result, failOn results.Level) junitTotals {
	s := results.SummarizeFor(rs, failOn)
	t := junitTotals{
		Failures: s.Fail + s.Blocked + s.StalePasses,
		Errors:   s.Error,
		Skipped:  s.Skip + s.KnownFailing + s.Tolerated + s.Unsupported + s.Inconclusive,
	}
	for _, r := range rs {
		if !knownOutcome(r.Outcome) {
			t.Errors++ // written as <error>; keep the counts consistent
		}
	}
	return t
}

func sumDurations(rs []results.Result) time.Duration {
	var d time.Duration
	for _, r := range rs {
		d += r.Duration
	}
	return d
}

func junitProperties(run results.Run, failOn results.Level) []junitProperty {
	ps := []junitProperty{
		{"harness_version", run.HarnessVersion},
		{"role", run.Role},
		{"target", run.Target},
		{"interrupted", strconv.FormatBool(run.Interrupted)},
		{"fail_on", string(failOn)},
	}
	keys := make([]string, 0, len(run.Options))
	for k := range run.Options {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ps = append(ps, junitProperty{"option." + k, run.Options[k]})
	}
	return ps
}

func junitTestCase(role string, r results.Result, failOn results.Level) junitCase {
	tc := junitCase{ClassName: className(role, r.ID), Name: r.FullName(), Time: seconds(r.Duration)}
	full := transcript.Format(r.Transcript)
	switch label(r, failOn) {
	case "PASS":
		// Passing cases carry no transcript here, whatever --transcripts
		// says (the JSON report has them with --transcripts all): CI
		// pages stay small.
	case "FAIL":
		tc.Failure = &junitProblem{Message: firstLineRaw(r.Message), Type: problemType(r), Body: text(problemBody(r))}
		tc.SystemOut = systemOut(full)
	case "BLOCK":
		tc.Failure = &junitProblem{Message: verdict.BlockedHeadline(r), Type: problemType(r), Body: text(problemBody(r))}
		tc.SystemOut = systemOut(full)
	case "WARN":
		if r.Outcome == results.Blocked {
			tc.Skipped = skipped(fmt.Sprintf("blocked below --fail-on %s, not counted: %s", failOn, verdict.BlockedHeadline(r)), problemBody(r))
		} else {
			tc.Skipped = skipped(fmt.Sprintf("failure below --fail-on %s, not counted: %s", failOn, firstLineRaw(r.Message)), problemBody(r))
		}
		tc.SystemOut = systemOut(full)
	case "INCON":
		tc.Skipped = skipped("inconclusive, not counted (the harness's own lag could explain a timing verdict): "+verdict.TimingDoubts(r), problemBody(r))
		tc.SystemOut = systemOut(full)
	case "UNSUP":
		tc.Skipped = skipped("not supported (MAY): "+firstLineRaw(r.Message), problemBody(r))
	case "ERROR":
		tc.Error = &junitProblem{Message: firstLineRaw(r.Message), Type: problemType(r), Body: text(problemBody(r))}
		tc.SystemOut = systemOut(full)
	case "SKIP":
		tc.Skipped = skipped(firstLineRaw(r.Message), "")
	case "XFAIL":
		tc.Skipped = skipped("known failing: "+firstLineRaw(r.KnownFailing), problemBody(r))
		tc.SystemOut = systemOut(full)
	case "XPASS":
		tc.Failure = &junitProblem{
			Message: "stale known-failing entry: " + firstLineRaw(r.KnownFailing),
			Type:    "stale known-failing entry",
			Body: text(fmt.Sprintf("%s passed but is listed as known failing (%s).\nRemove it from the known-failing file.\n",
				r.FullName(), r.KnownFailing)),
		}
	default:
		tc.Error = &junitProblem{Message: fmt.Sprintf("unknown outcome %q", r.Outcome), Body: text(problemBody(r))}
		tc.SystemOut = systemOut(full)
	}
	return tc
}

func knownOutcome(o results.Outcome) bool {
	return slices.Contains(results.Outcomes, o)
}

// className is "<role>.<area>" from an ID such as
// "server/nonce/stale-request-ignored": every segment but the last, joined
// with dots, with the run's role prepended when the ID does not start with
// it. CI tools show classname as the package-like grouping level.
func className(role, id string) string {
	segs := strings.Split(id, "/")
	segs = segs[:len(segs)-1]
	// A combined run's role is "both"; its IDs already start with their
	// own role.
	if role != "" && (len(segs) == 0 || !coversRole(role, segs[0])) {
		segs = append([]string{role}, segs...)
	}
	if len(segs) == 0 {
		return "xdsconform"
	}
	return strings.Join(segs, ".")
}

// coversRole reports whether a run of role runs scenarios of role id:
// a combined run (RoleBoth) runs the server's and the client's.
func coversRole(role, id string) bool {
	if role == results.RoleBoth {
		return id == results.RoleServer || id == results.RoleClient
	}
	return id == role
}

// problemType is "<level> <rules broken>", e.g. "MUST RES-4": the level
// of the strongest rule broken and every rule whose step failed, so CI
// failure listings show what broke (JUnit's common schema has no
// per-testcase properties). A blocked pair's is "blocked <level> <rule>",
// e.g. "blocked MUST RES-1": the rule it was blocked by. A result without
// rules broken (an error) shows the scenario's level and citations.
func problemType(r results.Result) string {
	if r.Outcome == results.Blocked && r.BlockedBy != "" {
		return "blocked " + string(r.FailureLevel()) + " " + r.BlockedBy
	}
	if len(r.RulesBroken) > 0 {
		return strings.TrimSpace(string(r.FailureLevel()) + " " + strings.Join(r.RulesBroken, " "))
	}
	return strings.TrimSpace(string(r.Level) + " " + strings.Join(r.Requirements, " "))
}

// ProblemTranscriptBytes bounds the transcript tail in a failure's,
// error's or skip's text: its last entries are each up to
// transcript.EntryBytes long.
const ProblemTranscriptBytes = 16 << 10

// problemBody is the message followed by the transcript tail (its last
// ProblemTranscriptBytes); the full transcript is in <system-out>, which
// some CI views fold away.
func problemBody(r results.Result) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(r.Message, "\n"))
	b.WriteString("\n")
	if len(r.Transcript) == 0 {
		return b.String()
	}
	entries, heading := transcriptTail(r.Transcript, DefaultTranscriptTail)
	if len(entries) < len(r.Transcript) {
		heading += "; full transcript in system-out"
	}
	fmt.Fprintf(&b, "\ntranscript (%s):\n", heading)
	b.WriteString(headTail(transcript.Format(entries), 0, ProblemTranscriptBytes,
		fmt.Sprintf("only the tail's last %d bytes are shown here", ProblemTranscriptBytes)))
	return b.String()
}

// firstLineRaw is the first non-empty line, for attributes. Unlike the
// console it needs no escaping: encoding/xml escapes markup and replaces
// characters XML cannot carry.
func firstLineRaw(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// seconds is the JUnit time format: decimal seconds, millisecond precision.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
