package htmlpage

import (
	"cmp"
	"context"
	"fmt"
	"html/template"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Bounds on what the page shows. A JSON report handed to the report
// command can be anything, so every string and list is bounded here
// again, whatever the harness bounded when it wrote the report: a report
// of the whole catalogue stays a page a browser opens at once.
const (
	// maxPairs bounds the rows of one page; the summaries still count
	// every result. Both suites together are about 650 pairs.
	maxPairs = 5000
	// maxName bounds an ID, variant, title, target or option shown.
	maxName = 1 << 10
	// maxMessage bounds a result's message and known-failing reason;
	// once the page's messages take messageBudget, each is cut to
	// maxMessageSpent.
	maxMessage      = 16 << 10
	maxMessageSpent = 512
	messageBudget   = 4 << 20
	// maxChip bounds one value shown in an entry's one-line summary.
	maxChip = 200
	// maxChipItems is how many names of a list the summary shows.
	maxChipItems = 4
	// maxEntryJSON bounds one entry's pretty-printed message.
	maxEntryJSON = 16 << 10
	// headEntries and tailEntries are how many entries of a long
	// transcript the page shows from its start and from its end.
	headEntries, tailEntries = 200, 100
	// pageBudget bounds the transcript text of the whole page, in bytes:
	// the report-side budget of one suite's transcripts. Past it, a
	// transcript is left to the JSON report and says so.
	pageBudget = transcript.DefaultBudget
)

// Display outcomes: verdict's classes, which refine results.Outcome by the
// known-failing file and the fail-on level as the console summary counts
// them (results.SummarizeFor), so that the page and the exit status agree.
// docs/outcomes.md says what each means.
const (
	oPass         = "pass"
	oFail         = "fail"
	oBlocked      = "blocked"
	oWarn         = "warn"
	oKnown        = "known-failing"
	oStale        = "stale"
	oUnsupported  = "unsupported"
	oInconclusive = "inconclusive"
	oSkipped      = "skipped"
	oError        = "error"
)

// outcomeOrder is the order of the summary's columns and of the outcome
// filter's options.
var outcomeOrder = []string{oPass, oFail, oBlocked, oWarn, oKnown, oStale, oUnsupported, oInconclusive, oSkipped, oError}

// severity orders outcomes from the most serious down, for colouring a
// summary by its worst.
var severity = []string{oError, oFail, oBlocked, oStale, oWarn, oKnown, oInconclusive, oUnsupported, oPass, oSkipped}

// alwaysShown are the outcome columns a summary shows even when no
// result has them; blocked, warn, stale and inconclusive appear only when
// some result is one.
var alwaysShown = map[string]bool{oPass: true, oFail: true, oKnown: true, oUnsupported: true, oSkipped: true, oError: true}

func outcomeLabel(o string) string {
	switch o {
	case oPass:
		return "Pass"
	case oFail:
		return "Fail"
	case oBlocked:
		return "Blocked"
	case oInconclusive:
		return "Inconclusive"
	case oWarn:
		return "Warn"
	case oKnown:
		return "Known failing"
	case oStale:
		return "Stale"
	case oUnsupported:
		return "Unsupported"
	case oSkipped:
		return "Skipped"
	case oError:
		return "Error"
	}
	return o
}

// shortLabel is an outcome's label in a summary's header, where space
// is short; the header's tooltip has the rest.
func shortLabel(o string) string {
	switch o {
	case oKnown:
		return "Known"
	case oInconclusive:
		return "Incon."
	}
	return outcomeLabel(o)
}

// outcomeHint explains an outcome in a tooltip.
var outcomeHint = map[string]string{
	oPass:         "every expectation held",
	oFail:         "a rule at or above the fail-on level was broken",
	oBlocked:      "a precondition failed, so the scenario never reached what it checks: a failure of the rule the precondition rests on, which fails the run",
	oWarn:         "a rule below the fail-on level was broken (or a precondition resting on one failed): reported, does not fail the run",
	oKnown:        "failed (or was blocked) as the known-failing file says it does: does not fail the run",
	oStale:        "listed as known-failing but did not fail: the file is out of date, which fails the run",
	oUnsupported:  "an optional (MAY) behaviour the target does not implement",
	oInconclusive: "the harness's own lag could explain a timing verdict either way, even run again alone: fails no rule, not the run",
	oSkipped:      "does not apply, or the target lacks what it needs",
	oError:        "could not be carried out (target unreachable, harness or fixture failure)",
}

// classes names verdict's classes as the page shows and filters them.
var classes = map[verdict.Class]string{
	verdict.ClassPass:         oPass,
	verdict.ClassFail:         oFail,
	verdict.ClassBlocked:      oBlocked,
	verdict.ClassInconclusive: oInconclusive,
	verdict.ClassWarn:         oWarn,
	verdict.ClassKnownFailing: oKnown,
	verdict.ClassStale:        oStale,
	verdict.ClassUnsupported:  oUnsupported,
	verdict.ClassSkip:         oSkipped,
	verdict.ClassError:        oError,
}

// displayOutcome is r's outcome as the page shows and filters it: its
// class in the verdict every report shares. An outcome this version does
// not know (a newer report's) is an error, the class that never passes
// silently.
func displayOutcome(r results.Result, failOn results.Level) string {
	if o, ok := classes[verdict.Classify(r, failOn)]; ok {
		return o
	}
	return oError
}

// page is what the template renders.
type page struct {
	CSP     string
	CSS     template.CSS
	JS      template.JS
	Title   string
	Runs    []runView
	Columns []column
	ByLevel []summaryRow
	// BySuite has a row per run, when there are several.
	BySuite  []summaryRow
	ByFamily []summaryRow
	Total    summaryRow
	Filters  filters
	Pairs    []pairView
	// Omitted is how many pairs were left out past maxPairs.
	Omitted int
	// BudgetSpent says the page's transcript budget ran out.
	BudgetSpent bool
}

// column is one outcome column of the summaries.
type column struct {
	Outcome, Label, Short, Hint string
}

// summaryRow is one line of a summary table: a label and a count per
// column, with the filter a click on a count sets.
type summaryRow struct {
	Label string
	// Level, Family and Run are the filter values of the row ("" for
	// any).
	Level, Family, Run string
	// Title is the row's tooltip (a family's rules, say).
	Title string
	Cells []cell
	Total int
	// Worst is the CSS class of the row's most serious outcome.
	Worst string
}

// summaryTable is what the summary template renders: one table.
type summaryTable struct {
	Columns []column
	Rows    []summaryRow
	Total   summaryRow
	Name    string
}

func newSummaryTable(cols []column, rows []summaryRow, total summaryRow, name string) summaryTable {
	return summaryTable{cols, rows, total, name}
}

// levelClass is the CSS class of a level's badge; a level this version
// does not know gets a plain one.
func levelClass(l string) string {
	switch results.Level(l) {
	case results.Must:
		return "l-must"
	case results.Should:
		return "l-should"
	case results.May:
		return "l-may"
	}
	return "l-other"
}

type cell struct {
	Outcome string
	N       int
}

// filters are the options of the filter bar.
type filters struct {
	Outcomes []option
	Levels   []option
	Families []option
	Variants []option
	Runs     []option
}

type option struct {
	Value, Label string
}

// runView is the header of one run.
type runView struct {
	Index          int
	Role           string
	Target         string
	HarnessVersion string
	Started        string
	Duration       string
	FailOn         string
	Verdict        string
	VerdictClass   string
	Counts         []cell
	// Causes are what did not pass, by root cause (verdict.Causes), and
	// CausesLine sums them up in one line.
	Causes     []causeView
	CausesLine string
	Options    []keyValue
	// ImplName and ImplVersion name the implementation under test, when
	// the run says; Implementation is the rest of what it says.
	ImplName, ImplVersion string
	Implementation        []keyValue
	// Catalogue is the catalogue version the verdicts were judged
	// against ("" in reports older than it).
	Catalogue string
	Pairs     int
}

type keyValue struct {
	Key, Value string
}

// causeView is one root cause of what did not pass in a run.
type causeView struct {
	// Name is the rule and its level, or the error.
	Name, Breakdown, First, Example string
	// Group is what the cause means for the run: "fails the run",
	// "below fail-on" or "known failing".
	Group string
}

// pairView is one row: a scenario in one variant.
type pairView struct {
	Anchor   string
	Run      int
	Name     string
	Title    string
	Level    string
	Variant  string
	Outcome  string
	Families string
	RuleIDs  []string
	Duration string
	Message  string
	Known    string
	// BlockedBy is, for a blocked pair, the rule and level it was
	// blocked by; Timing its timing verdicts, when it judged by time.
	BlockedBy string
	Timing    []string
	Rules     []ruleView
	// Transcript is nil when the page shows none for the pair; Note then
	// says why, when there was one to show.
	Transcript *transcriptView
	Note       string
}

// ruleView is a rule cited by a pair, with its catalogue text.
type ruleView struct {
	ID       string
	Strength string
	Title    []segment
	Text     []segment
	Broken   bool
	// BlockedBy marks the rule a blocked pair counts against: a
	// precondition resting on it failed.
	BlockedBy bool
	Unknown   bool
}

// segment is a run of rule text: plain, or code (the catalogue's
// backticks).
type segment struct {
	Code bool
	Text string
}

// build state: the transcript budget left, shared by every pair.
type builder struct {
	budget   int // transcript bytes left
	messages int // message bytes left
	spent    bool
}

func buildPage(runs []results.Run) page {
	p, _ := buildPageContext(context.Background(), runs)
	return p
}

// buildPageContext builds the page, stopping with ctx's error once ctx
// ends: reading the transcripts the page shows can take a while.
func buildPageContext(ctx context.Context, runs []results.Run) (page, error) {
	runs = bySuite(runs)
	b := &builder{budget: pageBudget, messages: messageBudget}
	p := page{
		CSP:   csp,
		CSS:   template.CSS(pageCSS),
		JS:    template.JS(pageJS),
		Title: pageTitle(runs),
	}
	present := map[string]bool{}
	var suites []map[string]int
	levels := map[string]map[string]int{}
	families := map[string]map[string]int{}
	variants := map[string]bool{}
	total := map[string]int{}
	shown := 0
	for i, run := range runs {
		rs := sortedResults(run.Results)
		rv := runHeader(i, run)
		counts := map[string]int{}
		for _, r := range rs {
			if err := ctx.Err(); err != nil {
				return page{}, err
			}
			o := displayOutcome(r, run.FailOn)
			present[o] = true
			counts[o]++
			total[o]++
			lvl := clip(string(r.Level), maxName)
			if levels[lvl] == nil {
				levels[lvl] = map[string]int{}
			}
			levels[lvl][o]++
			fams := familiesOf(r)
			for _, f := range fams {
				if families[f] == nil {
					families[f] = map[string]int{}
				}
				families[f][o]++
			}
			variants[clip(r.Variant, maxName)] = true
			if shown == maxPairs {
				p.Omitted++
				continue
			}
			shown++
			p.Pairs = append(p.Pairs, b.pair(len(p.Pairs), i, run, r, o, fams))
		}
		for _, o := range outcomeOrder {
			if counts[o] > 0 {
				rv.Counts = append(rv.Counts, cell{o, counts[o]})
			}
		}
		rv.Pairs = len(rs)
		suites = append(suites, counts)
		p.Runs = append(p.Runs, rv)
		label := fmt.Sprintf("%s · %s", rv.Role, rv.Target)
		p.Filters.Runs = append(p.Filters.Runs, option{fmt.Sprint(i), label})
	}
	p.BudgetSpent = b.spent

	for _, o := range outcomeOrder {
		if alwaysShown[o] || present[o] {
			p.Columns = append(p.Columns, column{o, outcomeLabel(o), shortLabel(o), outcomeHint[o]})
		}
		if present[o] {
			p.Filters.Outcomes = append(p.Filters.Outcomes, option{o, outcomeLabel(o)})
		}
	}
	row := func(label, level, family, title string, counts map[string]int) summaryRow {
		r := summaryRow{Label: label, Level: level, Family: family, Title: title}
		for _, c := range p.Columns {
			r.Cells = append(r.Cells, cell{c.Outcome, counts[c.Outcome]})
			r.Total += counts[c.Outcome]
		}
		for _, o := range severity {
			if counts[o] > 0 {
				r.Worst = "worst-" + o
				break
			}
		}
		return r
	}
	for _, l := range levelOrder(levels) {
		label := l
		if label == "" {
			label = "(none)"
		}
		p.ByLevel = append(p.ByLevel, row(label, l, "", "", levels[l]))
		p.Filters.Levels = append(p.Filters.Levels, option{l, label})
	}
	for _, f := range sortedKeys(families) {
		p.ByFamily = append(p.ByFamily, row(f, "", f, familyTitle(f), families[f]))
		p.Filters.Families = append(p.Filters.Families, option{f, f})
	}
	p.Total = row("All", "", "", "", total)
	if len(runs) > 1 {
		for i, counts := range suites {
			r := row(clip(runs[i].Role, maxName), "", "", p.Filters.Runs[i].Label, counts)
			r.Run = p.Filters.Runs[i].Value
			p.BySuite = append(p.BySuite, r)
		}
	}
	for _, v := range sortedKeys(variants) {
		p.Filters.Variants = append(p.Filters.Variants, option{v, v})
	}
	if len(runs) < 2 {
		p.Filters.Runs = nil
	}
	return p, nil
}

// pageTitle is the page's title: the implementation the runs credit, when
// they all name the same one, then what the page is.
func pageTitle(runs []results.Run) string {
	const what = "xdsconform conformance report"
	name, version := verdict.Implementation(runs[0])
	for _, r := range runs[1:] {
		if n, v := verdict.Implementation(r); n != name || v != version {
			return what
		}
	}
	if name == "" {
		return what
	}
	return clip(transcript.Scrub(strings.TrimSpace(name+" "+version)), maxName) + " · " + what
}

// bySuite splits every run that holds both suites (xdsconform run) into
// a server run and a client run, as verdict does for every other report,
// so that each suite has its own header, verdict and lane labels.
func bySuite(runs []results.Run) []results.Run {
	var out []results.Run
	for _, run := range runs {
		parts := verdict.SplitRoles(run)
		n := 0
		for _, p := range parts {
			n += len(p.Results)
		}
		// SplitRoles drops a result of neither suite from a run of both;
		// such a run is shown whole, so that no row goes missing.
		if len(parts) == 0 || n != len(run.Results) {
			parts = []results.Run{run}
		}
		out = append(out, parts...)
	}
	return out
}

// levelOrder is the levels present, strongest first, then any others
// (a newer report's) by name.
func levelOrder(m map[string]map[string]int) []string {
	ls := sortedKeys(m)
	slices.SortStableFunc(ls, func(a, b string) int {
		return results.Compare(results.Level(a), results.Level(b))
	})
	return ls
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// sortedResults is rs sorted by ID, then variant, as every report lists
// them; rs itself is left alone.
func sortedResults(rs []results.Result) []results.Result {
	out := slices.Clone(rs)
	slices.SortStableFunc(out, func(a, b results.Result) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.Variant, b.Variant))
	})
	return out
}

// familiesOf is the rule families r cites or broke, sorted: the catalogue's
// family of each rule, or the part of an unknown ID before its last "-".
func familiesOf(r results.Result) []string {
	set := map[string]bool{}
	for _, id := range append(slices.Clone(r.Requirements), r.RulesBroken...) {
		set[familyOf(id)] = true
	}
	return sortedKeys(set)
}

func familyOf(id string) string {
	if req, ok := requirements.Lookup(id); ok {
		return req.Family
	}
	if i := strings.LastIndexByte(id, '-'); i > 0 {
		id = id[:i]
	}
	// The page's filter keeps a pair's families space-separated.
	return clip(strings.Join(strings.Fields(id), "_"), maxName)
}

// familyTitle names a family's rules for a tooltip: how many the
// catalogue has.
func familyTitle(f string) string {
	n := 0
	for _, r := range requirements.All() {
		if r.Family == f {
			n++
		}
	}
	if n == 0 {
		return "not in this catalogue"
	}
	return fmt.Sprintf("%d rules in the catalogue", n)
}

func runHeader(i int, run results.Run) runView {
	s := results.SummarizeFor(run.Results, run.FailOn)
	rv := runView{
		Index:          i,
		Role:           clip(run.Role, maxName),
		Target:         clip(transcript.Scrub(verdict.PublishedTarget(run)), maxName),
		HarnessVersion: clip(run.HarnessVersion, maxName),
		Duration:       formatDuration(run.Duration),
		FailOn:         string(cmp.Or(run.FailOn, results.DefaultFailOn)),
	}
	if !run.Started.IsZero() {
		rv.Started = run.Started.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	switch {
	case run.Interrupted:
		rv.Verdict, rv.VerdictClass = "Interrupted", "bad"
	case s.OK():
		rv.Verdict, rv.VerdictClass = "Passed", "good"
	default:
		rv.Verdict, rv.VerdictClass = "Failed", "bad"
	}
	for _, k := range sortedKeys(run.Options) {
		if v := run.Options[k]; v != "" {
			rv.Options = append(rv.Options, keyValue{clip(k, maxName), clip(transcript.Scrub(v), maxName)})
		}
	}
	rv.Implementation = implementation(run)
	if rv.Target == "" && run.Target != "" {
		// The implementation heads the card; the private address it ran
		// at is a fact among the others, not its name.
		rv.Implementation = append(rv.Implementation, keyValue{"target", clip(transcript.Scrub(run.Target), maxName)})
	}
	causes := verdict.Causes(run.Results, run.FailOn)
	rv.CausesLine = clip(transcript.Scrub(verdict.CausesLine(causes, func(s string) string { return s })), maxMessageSpent)
	for _, c := range causes {
		group := "fails the run"
		switch {
		case c.KnownFailing:
			group = "known failing"
		case !c.FailsRun():
			group = "below fail-on"
		}
		rv.Causes = append(rv.Causes, causeView{Name: clip(transcript.Scrub(c.Name()), maxChip), Breakdown: c.Breakdown(),
			First: clip(c.First, maxName), Example: clip(transcript.Scrub(c.Example), maxChip), Group: group})
	}
	if i := run.Implementation; i != nil {
		rv.ImplName = clip(transcript.Scrub(i.Name), maxName)
		rv.ImplVersion = clip(transcript.Scrub(i.Version), maxName)
	}
	if v := run.CatalogueVersion; v != "" {
		rv.Catalogue = clip(v, maxName)
	}
	return rv
}

// implementation is the run's implementation metadata but its name and
// version (which head the run's card), as its maintainers gave it (flags
// or a file); none when the run has none.
func implementation(run results.Run) []keyValue {
	i := run.Implementation
	if i.Empty() {
		return nil
	}
	var kvs []keyValue
	for _, f := range []struct{ k, v string }{
		{"organization", i.Organization},
		{"url", i.URL},
		{"contact", strings.Join(i.Contact, ", ")},
		{"capabilities", strings.Join(i.Capabilities, ", ")},
	} {
		if f.v != "" {
			kvs = append(kvs, keyValue{f.k, clip(transcript.Scrub(f.v), maxName)})
		}
	}
	return kvs
}

func (b *builder) pair(n, run int, rv results.Run, r results.Result, o string, fams []string) pairView {
	pv := pairView{
		Anchor:   fmt.Sprintf("p%d", n),
		Run:      run,
		Name:     clip(r.ID, maxName) + "[" + clip(r.Variant, maxName) + "]",
		Title:    clip(r.Title, maxName),
		Level:    clip(string(r.Level), maxName),
		Variant:  clip(r.Variant, maxName),
		Outcome:  o,
		Families: strings.Join(fams, " "),
		Duration: formatDuration(r.Duration),
		Message:  b.message(r.Message),
		Known:    b.message(r.KnownFailing),
	}
	if r.Outcome == results.Blocked {
		pv.BlockedBy = clip(r.BlockedBy, maxName) + " (" + clip(string(r.FailureLevel()), maxName) + ")"
	}
	if t := r.Timing; t != nil {
		d := wording.Duration
		for _, c := range t.Checks {
			pv.Timing = append(pv.Timing, transcript.Scrub(fmt.Sprintf("%s %s: %s: %s against %s, harness stalled %s (longest %s): %s",
				clip(c.Rule, maxChip), clip(c.Kind, maxChip), clip(c.What, maxName), d(c.Measured), d(c.Limit), d(c.Lag), d(c.LagMax), clip(c.Verdict, maxChip))))
		}
		if t.Reruns > 0 {
			pv.Timing = append(pv.Timing, fmt.Sprintf("These are its last run's: it ran again alone %s.", wording.Count(t.Reruns, "time", "times")))
		}
	}
	broken := map[string]bool{}
	for _, id := range r.RulesBroken {
		broken[id] = true
	}
	ids := slices.Clone(r.Requirements)
	for _, id := range r.RulesBroken {
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	full := o != oPass && o != oSkipped
	for _, id := range ids {
		id = clip(id, maxName)
		pv.RuleIDs = append(pv.RuleIDs, id)
		rule := ruleView{ID: id, Broken: broken[id] && r.Outcome != results.Blocked, BlockedBy: broken[id] && r.Outcome == results.Blocked}
		if req, ok := requirements.Lookup(id); ok {
			rule.Strength = req.Strength
			rule.Title = segments(req.Title)
			if full {
				rule.Text = segments(req.Text)
			}
		} else {
			rule.Unknown = true
		}
		pv.Rules = append(pv.Rules, rule)
	}
	entries, total, err := transcriptOf(r, full && b.budget > 0)
	switch {
	case err != nil:
		pv.Note = transcript.Scrub(clip("The transcript in the JSON report could not be read: "+err.Error(), maxMessageSpent))
	case total == 0:
	case !full:
		pv.Note = fmt.Sprintf("The transcript (%d entries) is in the JSON report; the page shows those of pairs that did not pass.", total)
	default:
		pv.Transcript = b.transcript(entries, total, r, rv.Role)
		if pv.Transcript == nil {
			b.spent = true
			pv.Note = fmt.Sprintf("The transcript (%d entries) is in the JSON report: this page's transcripts already take %d MiB.", total, pageBudget>>20)
		}
	}
	return pv
}

// transcriptOf is what the page may show of r's transcript, its first
// headEntries and its last tailEntries entries (none unless shown), and
// how many it holds. A transcript read undecoded (reports.LazyTranscripts)
// is decoded here, that part of it only: however many entries it holds,
// the page keeps no more than it shows.
func transcriptOf(r results.Result, shown bool) ([]transcript.Entry, int, error) {
	if r.RawTranscript == nil {
		return r.Transcript, len(r.Transcript), nil
	}
	if !shown {
		_, total, err := transcript.DecodeBounded(r.RawTranscript, 0, 0)
		return nil, total, err
	}
	return transcript.DecodeBounded(r.RawTranscript, headEntries, tailEntries)
}

// message clips a result's message or reason for the page, shorter once
// the page's messages have taken messageBudget.
func (b *builder) message(s string) string {
	n := maxMessage
	if b.messages <= 0 {
		n = maxMessageSpent
	}
	s = clip(transcript.Scrub(s), n)
	b.messages -= len(s)
	return s
}

// segments splits catalogue Markdown into plain text and code spans.
func segments(s string) []segment {
	var out []segment
	for i, part := range strings.Split(s, "`") {
		if part != "" {
			out = append(out, segment{Code: i%2 == 1, Text: part})
		}
	}
	return out
}

// clip bounds s to n bytes on a UTF-8 boundary, saying how much was left
// out, the way every report clips what a peer chose.
func clip(s string, n int) string { return transcript.Clip(s, n) }

// short cuts s to n runes with an ellipsis, for a badge; the whole text
// goes in its tooltip.
func short(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n-1]) + "…"
}

// formatDuration renders d for reading: milliseconds under 10 s, tenths
// of a second above.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Millisecond:
		return d.String()
	case d < 10*time.Second:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
