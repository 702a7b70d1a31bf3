// Package verdict says what a set of results means, rule by rule and
// scenario by scenario. The Markdown summary, the certification report and
// the compatibility matrix (e2e/compat) all take their verdicts from here,
// so that no two of them can disagree about whether a rule passed.
//
// Everything here reads results as they were recorded; it decides nothing
// a run did not (the run's known-failing file, fail-on level and broken
// rules stand as written in the report).
package verdict

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// The roles a result can belong to, from its scenario ID's first segment.
const (
	Server = "server"
	Client = "client"
)

// RoleOf is the role whose suite r belongs to: the first segment of its
// scenario ID ("server/nonce/…"), or "" for an ID outside both suites.
// It is read from the ID, not the run, because one run may hold both
// suites (xdsconform run).
func RoleOf(r results.Result) string {
	role, _, _ := strings.Cut(r.ID, "/")
	if role == Server || role == Client {
		return role
	}
	return ""
}

// SplitRoles returns one run per role among run's results, server first,
// each a copy of run with Role set and only that role's results. Results
// of neither role stay with the run's own role when it names one of them,
// and are dropped otherwise: no scenario of the catalogue is such.
func SplitRoles(run results.Run) []results.Run {
	var out []results.Run
	for _, role := range []string{Server, Client} {
		var rs []results.Result
		for _, r := range run.Results {
			if got := RoleOf(r); got == role || got == "" && run.Role == role {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 && !(run.Role == role && len(run.Results) == 0) {
			continue
		}
		part := run
		part.Role, part.Results = role, rs
		out = append(out, part)
	}
	return out
}

// Implementation is the name and version a run's verdicts are credited
// to: its implementation metadata, or, for the e2e suite's reports, which
// predate it, their "peer" and "version" options.
func Implementation(run results.Run) (name, version string) {
	if i := run.Implementation; i != nil && i.Name != "" {
		return i.Name, i.Version
	}
	return run.Options["peer"], run.Options["version"]
}

// PrivateTarget reports whether target names the target by an address
// that means nothing outside the machine or network the run was made on:
// a loopback, private, link-local or unspecified IP address, localhost,
// or a Unix socket, anywhere in it ("127.0.0.1:18000", "client-wait on
// [::1]:19000", "server: 10.0.0.7:18000; client: builtin:grpc-go").
// Built-in and container targets ("builtin:go-control-plane",
// "container:envoyproxy/envoy:v1.33") and public addresses are not.
func PrivateTarget(target string) bool {
	for _, tok := range strings.FieldsFunc(target, func(r rune) bool { return strings.ContainsRune(" \t;,()\"'", r) }) {
		if strings.HasPrefix(tok, "unix:") || strings.HasPrefix(tok, "unix-abstract:") {
			return true
		}
		if _, rest, ok := strings.Cut(tok, "://"); ok {
			tok = strings.TrimPrefix(rest, "/")
			tok, _, _ = strings.Cut(tok, "/")
		}
		host := tok
		if h, _, err := net.SplitHostPort(tok); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			return true
		}
		if ip := net.ParseIP(host); ip != nil && (ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsUnspecified()) {
			return true
		}
	}
	return false
}

// PublishedTarget is what a report meant to be published (a
// certification report, a Markdown summary, an HTML page) names run's
// target by: the target as recorded, unless the run names its
// implementation (see Implementation) and the target is a private address
// (PrivateTarget). Then it is "": the implementation's name and version
// credit the verdicts, and "127.0.0.1:18000" would tell a reader nothing
// but where the vendor's test build listened. The JSON report, the
// evidence, keeps the address.
func PublishedTarget(run results.Run) string {
	if name, _ := Implementation(run); name != "" && PrivateTarget(run.Target) {
		return ""
	}
	return run.Target
}

// Class is what one result counts as in a run's verdict, with the run's
// fail-on level. Each result has exactly one class; results.SummarizeFor
// counts the same classes. docs/outcomes.md says what each means and how
// every report shows it.
type Class int

// The classes, in the order reports list them.
const (
	// ClassFail is a failure that fails the run.
	ClassFail Class = iota
	// ClassBlocked is a blocked pair that fails the run: a failure of the
	// rule its failed precondition rests on (Result.BlockedBy).
	ClassBlocked
	// ClassError is a pair the harness or the target could not run.
	ClassError
	// ClassStale is a known-failing entry whose pair did not fail: the
	// list is out of date, which fails the run.
	ClassStale
	// ClassWarn is a failure (or a blocked pair) of a rule weaker than
	// the fail-on level.
	ClassWarn
	// ClassKnownFailing is a failure (or a blocked pair) excused by the
	// known-failing file.
	ClassKnownFailing
	// ClassUnsupported is a MAY behaviour the target does not implement.
	ClassUnsupported
	// ClassInconclusive is a pair whose timing verdict the harness's own
	// lag could explain either way, even when it ran again alone: the
	// harness could not judge it, which fails neither a rule nor the run.
	ClassInconclusive
	// ClassSkip is a pair that did not run.
	ClassSkip
	// ClassPass is a pair that passed.
	ClassPass
)

// Classify is r's class in a run failing on failOn ("" for the default).
func Classify(r results.Result, failOn results.Level) Class {
	if failOn == "" {
		failOn = results.DefaultFailOn
	}
	switch r.Outcome {
	case results.Pass, results.Unsupported:
		switch {
		case r.KnownFailing != "":
			return ClassStale
		case r.Outcome == results.Pass:
			return ClassPass
		}
		return ClassUnsupported
	case results.Fail, results.Blocked:
		// A blocked pair is a failure of the rule it was blocked by,
		// excused and tolerated as a failure is.
		switch {
		case r.KnownFailing != "":
			return ClassKnownFailing
		case !r.FailureLevel().AtLeast(failOn):
			return ClassWarn
		case r.Outcome == results.Blocked:
			return ClassBlocked
		}
		return ClassFail
	case results.Inconclusive:
		return ClassInconclusive
	case results.Skip:
		return ClassSkip
	}
	return ClassError
}

// Cell is one scenario's pairs grouped by outcome: the variants that
// passed, failed (a failure, a blocked pair, which fails the rule its
// precondition rests on, or an error), did not implement a MAY behaviour,
// were inconclusive (a timing verdict the harness's own lag could
// explain) and were skipped, each sorted by name.
type Cell struct {
	Pass, Fail, Unsupported, Inconclusive, Skip []string
}

// Scenarios groups rs by scenario: the scenario IDs, sorted, and each
// one's Cell.
func Scenarios(rs []results.Result) ([]string, map[string]Cell) {
	cells := map[string]Cell{}
	for _, r := range rs {
		c := cells[r.ID]
		switch r.Outcome {
		case results.Pass:
			c.Pass = append(c.Pass, r.Variant)
		case results.Skip:
			c.Skip = append(c.Skip, r.Variant)
		case results.Unsupported:
			c.Unsupported = append(c.Unsupported, r.Variant)
		case results.Inconclusive:
			c.Inconclusive = append(c.Inconclusive, r.Variant)
		default:
			c.Fail = append(c.Fail, r.Variant)
		}
		cells[r.ID] = c
	}
	for _, c := range cells {
		for _, vs := range [][]string{c.Pass, c.Fail, c.Unsupported, c.Inconclusive, c.Skip} {
			slices.Sort(vs)
		}
	}
	ids := make([]string, 0, len(cells))
	for id := range cells {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids, cells
}

// Reason is one skip reason and how many pairs it skipped.
type Reason struct {
	Text  string
	Count int
}

// SkipReasons counts the skipped pairs of rs by their message, sorted by
// the message's text.
func SkipReasons(rs []results.Result) []Reason {
	count := map[string]int{}
	for _, r := range rs {
		if r.Outcome == results.Skip {
			count[r.Message]++
		}
	}
	out := make([]Reason, 0, len(count))
	for text, n := range count {
		out = append(out, Reason{text, n})
	}
	slices.SortFunc(out, func(a, b Reason) int { return strings.Compare(a.Text, b.Text) })
	return out
}

// Variants lists the variants rs ran in or were meant to: the known ones
// in the order reports list them (wire.KnownVariants), then any other
// name a report holds, sorted.
func Variants(rs []results.Result) []string {
	seen := map[string]bool{}
	for _, r := range rs {
		seen[r.Variant] = true
	}
	var out []string
	for _, v := range wire.KnownVariants {
		if seen[v.String()] {
			out = append(out, v.String())
			delete(seen, v.String())
		}
	}
	rest := make([]string, 0, len(seen))
	for v := range seen {
		rest = append(rest, v)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// Status is a rule's verdict over a set of pairs.
type Status string

// The statuses of a rule, from the worst. A rule passes only when every
// pair that cites it and ran passed: one pair failing on another rule, or
// one the harness could not run, leaves it inconclusive, never passed.
// How each pair outcome reaches a rule's status is in docs/outcomes.md.
const (
	// Failed: some pair broke the rule (a failure naming it, or naming
	// no rule at all), or was blocked by it (a precondition resting on
	// it failed).
	Failed Status = "failed"
	// Unsupported: a MAY rule some pair showed the target does not
	// implement, and no pair broke.
	Unsupported Status = "unsupported"
	// Inconclusive: no pair broke the rule, but some pair citing it did
	// not pass. The rule-level status is not the pair outcome of the same
	// name: a pair that is blocked (by another rule), errored, or
	// inconclusive (a timing verdict the harness's lag could explain)
	// leaves every rule it cites inconclusive, and so does a pair that
	// failed on another rule.
	Inconclusive Status = "inconclusive"
	// Passed: at least one pair citing the rule ran, and every one that
	// ran passed.
	Passed Status = "passed"
	// Skipped: every pair citing the rule was skipped.
	Skipped Status = "skipped"
)

// Statuses lists the statuses from the worst, the order Rule verdicts
// combine in and reports list them.
var Statuses = []Status{Failed, Unsupported, Inconclusive, Passed, Skipped}

// Rule is one catalogue rule's verdict over a set of results.
type Rule struct {
	// ID is the rule's catalogue ID, e.g. "NONCE-7".
	ID string
	// Level is the rule's strength in the catalogue (the citing
	// scenario's level for an ID the catalogue lacks).
	Level results.Level
	// Status is the verdict.
	Status Status
	// KnownFailing is set when the rule failed and every pair that broke
	// it is listed in the run's known-failing file.
	KnownFailing bool
	// Pairs counts the pairs citing or breaking the rule; Ran those that
	// were not skipped, and Passed those that passed.
	Pairs, Ran, Passed int
}

// Rules is the verdict of every rule that rs cite (Requirements) or
// broke (RulesBroken), in catalogue order (IDs the catalogue lacks last,
// sorted). A pair's verdict applies to a rule as follows: a pass passes
// it; a failure or an unsupported outcome counts against the rules it
// broke (all it cites, when it names none) and leaves the others it
// cites inconclusive; an error leaves them all inconclusive; a skip says
// nothing. A blocked pair counts against the rule it was blocked by (its
// RulesBroken) and leaves the rules it cites inconclusive, as a failure on
// another rule does; an inconclusive pair leaves them all inconclusive.
// The worst of its pairs' verdicts is the rule's.
func Rules(rs []results.Result) []Rule {
	byID := map[string]*Rule{}
	knownOnly := map[string]bool{}
	get := func(id string, level results.Level) *Rule {
		if r, ok := byID[id]; ok {
			return r
		}
		if req, ok := requirements.Lookup(id); ok {
			level = results.Level(req.Strength)
		}
		r := &Rule{ID: id, Level: level, Status: Skipped}
		byID[id] = r
		knownOnly[id] = true
		return r
	}
	worse := func(r *Rule, s Status) {
		if slices.Index(Statuses, s) < slices.Index(Statuses, r.Status) {
			r.Status = s
		}
	}
	for _, res := range rs {
		ids := append(slices.Clone(res.Requirements), res.RulesBroken...)
		slices.Sort(ids)
		for _, id := range slices.Compact(ids) {
			rule := get(id, res.Level)
			rule.Pairs++
			if res.Outcome == results.Skip {
				continue
			}
			rule.Ran++
			broke := len(res.RulesBroken) == 0 || slices.Contains(res.RulesBroken, id)
			switch {
			case res.Outcome == results.Pass:
				rule.Passed++
				worse(rule, Passed)
			case res.Failed() && broke:
				worse(rule, Failed)
				knownOnly[id] = knownOnly[id] && res.KnownFailing != ""
			case res.Outcome == results.Unsupported && broke:
				worse(rule, Unsupported)
			default:
				worse(rule, Inconclusive)
			}
		}
	}
	out := make([]Rule, 0, len(byID))
	for id, r := range byID {
		r.KnownFailing = r.Status == Failed && knownOnly[id]
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Rule) int { return compareIDs(a.ID, b.ID) })
	return out
}

// catalogueOrder ranks rule IDs by their place in the catalogue.
var catalogueOrder = func() map[string]int {
	m := map[string]int{}
	for i, r := range requirements.All() {
		m[r.ID] = i
	}
	return m
}()

// compareIDs orders rule IDs as the catalogue does, IDs it lacks last.
func compareIDs(a, b string) int {
	ra, oka := catalogueOrder[a]
	rb, okb := catalogueOrder[b]
	switch {
	case oka && okb:
		return cmp.Compare(ra, rb)
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// LevelCount is the pairs of one scenario level by class.
type LevelCount struct {
	Pass, Fail, Blocked, Warn, KnownFailing, Stale, Unsupported, Inconclusive, Skip, Error int
}

// ByLevel counts rs by scenario level and class in a run failing on
// failOn; every level of results.Levels is present.
func ByLevel(rs []results.Result, failOn results.Level) map[results.Level]LevelCount {
	out := map[results.Level]LevelCount{}
	for _, l := range results.Levels {
		out[l] = LevelCount{}
	}
	for _, r := range rs {
		c := out[r.Level]
		switch Classify(r, failOn) {
		case ClassPass:
			c.Pass++
		case ClassFail:
			c.Fail++
		case ClassBlocked:
			c.Blocked++
		case ClassInconclusive:
			c.Inconclusive++
		case ClassWarn:
			c.Warn++
		case ClassKnownFailing:
			c.KnownFailing++
		case ClassStale:
			c.Stale++
		case ClassUnsupported:
			c.Unsupported++
		case ClassSkip:
			c.Skip++
		case ClassError:
			c.Error++
		}
		out[r.Level] = c
	}
	return out
}

// FirstLine is s's first non-empty line, trimmed: the line a summary shows
// of a multi-line failure message.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// NoneRan reports whether no pair of rs ran: every one was skipped. A
// run that checked nothing is not a success, whatever the reason.
func NoneRan(rs []results.Result) bool {
	return !slices.ContainsFunc(rs, func(r results.Result) bool { return r.Outcome != results.Skip })
}

// CommonestSkips says in one line why the pairs of rs were skipped: the
// three commonest messages, commonest first (ties in the order met), each
// with how many pairs it skipped, then how many other reasons there were.
func CommonestSkips(rs []results.Result) string {
	count := map[string]int{}
	var order []string
	for _, r := range rs {
		if count[r.Message] == 0 {
			order = append(order, r.Message)
		}
		count[r.Message]++
	}
	slices.SortStableFunc(order, func(a, b string) int { return count[b] - count[a] })
	parts := make([]string, 0, 4)
	for _, m := range order[:min(len(order), 3)] {
		parts = append(parts, fmt.Sprintf("%s (%d)", m, count[m]))
	}
	if len(order) > 3 {
		parts = append(parts, "and "+wording.N(len(order)-3, "other reason"))
	}
	return strings.Join(parts, "; ")
}
