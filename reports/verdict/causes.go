package verdict

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Cause is one root cause of the pairs of a run that did not pass: the
// rule they failed or were blocked by, or what kept them from running.
// One dead target or one unreachable fixture errors every pair after it,
// and one base resource a target does not serve blocks every scenario
// that rests on it: a reader should see one cause, with how many pairs it
// took, not hundreds of failures to read one by one. Every report groups
// the pairs that did not pass with Causes, so that none can count them
// differently.
type Cause struct {
	// Rule is the rule the pairs failed or were blocked by, and Level its
	// level in the catalogue (for an ID the catalogue lacks, the
	// strongest level its pairs failed at). Both are empty for a cause
	// that is an error.
	Rule  string
	Level results.Level
	// Error is, for pairs that could not run, the first line of their
	// message with what names one pair taken out (see NormalizeError);
	// empty for a rule.
	Error string
	// Pairs counts the pairs of the cause; Failed, Blocked and Errored
	// split them by outcome.
	Pairs, Failed, Blocked, Errored int
	// Tolerated counts the pairs of Failed and Blocked whose level is
	// below the run's fail-on level: reported, not counted against the
	// run.
	Tolerated int
	// KnownFailing is set when the known-failing file excused every pair
	// of the cause. Excused pairs are a cause of their own, apart from
	// the same rule's new failures, which a known-failing entry does not
	// excuse.
	KnownFailing bool
	// First is the pair the cause was first seen in, ID[variant], in the
	// order every report lists pairs (by ID, then variant).
	First string
	// Example is the first line of First's message: what the cause
	// looked like there.
	Example string

	first int // First's place in that order
}

// Name is the cause in a few words: "RES-1 (MUST)", or the error's text.
// The error's text is the target's or the harness's: a renderer escapes
// it as it escapes every message.
func (c Cause) Name() string {
	if c.Rule != "" {
		return fmt.Sprintf("%s (%s)", c.Rule, c.Level)
	}
	return c.Error
}

// Breakdown says how many pairs the cause took and how, and what that
// means for the run: "269 pairs (268 blocked, 1 failed)", "2 pairs (2
// failed; excused as known failing)", "1 pair (1 failed; below the
// fail-on level)".
func (c Cause) Breakdown() string {
	var parts []string
	for _, p := range []struct {
		n    int
		word string
	}{{c.Blocked, "blocked"}, {c.Failed, "failed"}, {c.Errored, "errored"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.word))
		}
	}
	s := strings.Join(parts, ", ")
	switch {
	case c.KnownFailing:
		s += "; excused as known failing"
	case c.Tolerated == c.Pairs:
		s += "; below the fail-on level"
	case c.Tolerated > 0:
		s += fmt.Sprintf("; %d below the fail-on level", c.Tolerated)
	}
	return wording.N(c.Pairs, "pair") + " (" + s + ")"
}

// FailsRun reports whether some pair of c fails the run: one that errored,
// or failed or was blocked at or above the fail-on level, unexcused.
func (c Cause) FailsRun() bool {
	return !c.KnownFailing && c.Errored+c.Failed+c.Blocked > c.Tolerated
}

// Causes groups the pairs of rs that did not pass by root cause, in a run
// failing on failOn ("" for the default). A pair's cause is:
//
//   - blocked: the rule it was blocked by (BlockedBy), the rule its failed
//     precondition rests on;
//   - failed: the first rule it broke (RulesBroken[0], the one whose step
//     failed first: what came after may follow from it), or, for a result
//     that names none, the first rule it cites;
//   - errored: the first line of its message with the names that differ
//     from pair to pair taken out (NormalizeError), so that one dead
//     target or one unreachable fixture is one cause.
//
// Passes, skips, MAY behaviours not supported and inconclusive pairs have
// no cause: they failed no rule. A pair the known-failing file excused
// counts under a cause of its own, apart from the rule's new failures.
// The causes that fail the run come first, then those below the fail-on
// level, then the excused ones; within each, the cause of most pairs
// first, ties in the order first seen (pairs by ID, then variant).
func Causes(rs []results.Result, failOn results.Level) []Cause {
	if failOn == "" {
		failOn = results.DefaultFailOn
	}
	sorted := slices.Clone(rs)
	slices.SortStableFunc(sorted, func(a, b results.Result) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.Variant, b.Variant))
	})
	type key struct {
		rule, err string
		known     bool
	}
	byKey := map[key]*Cause{}
	var order []key
	for i, r := range sorted {
		class := Classify(r, failOn)
		var k key
		switch class {
		case ClassFail, ClassBlocked, ClassWarn, ClassKnownFailing:
			k = key{rule: causeRule(r), known: class == ClassKnownFailing}
			if k.rule == "" {
				k.err = NormalizeError(FirstLine(r.Message))
			}
		case ClassError:
			k.err = NormalizeError(FirstLine(r.Message))
			if k.err == "" {
				k.err = "(no message)"
			}
		default:
			continue
		}
		c, ok := byKey[k]
		if !ok {
			c = &Cause{Rule: k.rule, Error: k.err, KnownFailing: k.known, First: r.FullName(), Example: FirstLine(r.Message), first: i}
			if k.rule != "" {
				c.Level = r.FailureLevel()
				if req, ok := requirements.Lookup(k.rule); ok {
					c.Level = results.Level(req.Strength)
				}
			}
			byKey[k] = c
			order = append(order, k)
		} else if k.rule != "" {
			if _, ok := requirements.Lookup(k.rule); !ok {
				c.Level = results.Strongest(c.Level, r.FailureLevel())
			}
		}
		c.Pairs++
		switch {
		case class == ClassError:
			c.Errored++
		case r.Outcome == results.Blocked:
			c.Blocked++
		default:
			c.Failed++
		}
		if class == ClassWarn {
			c.Tolerated++
		}
	}
	out := make([]Cause, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	group := func(c Cause) int {
		switch {
		case c.FailsRun():
			return 0
		case !c.KnownFailing:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(out, func(a, b Cause) int {
		return cmp.Or(cmp.Compare(group(a), group(b)), cmp.Compare(b.Pairs, a.Pairs), cmp.Compare(a.first, b.first))
	})
	return out
}

// causeRule is the rule a failed or blocked pair is the cause of (see
// Causes); "" when it names none.
func causeRule(r results.Result) string {
	switch {
	case r.Outcome == results.Blocked && r.BlockedBy != "":
		return r.BlockedBy
	case len(r.RulesBroken) > 0:
		return r.RulesBroken[0]
	case len(r.Requirements) > 0:
		// A failure that names no rule counts against all it cites (see
		// Rules): its first is the one a reader looks up.
		return r.Requirements[0]
	}
	return ""
}

// pairNames are the parts of a message that name one pair, and what
// stands for them once taken out: the node id and the resource-name
// prefix the engine derives from the pair's name (engine.T's NodeID and
// Name), and the number a stream takes in its pair (ads#3, ads-sotw#1).
var pairNames = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`xdsconform-[0-9a-f]{8}\b`), "xdsconform-…"},
	{regexp.MustCompile(`\bx[0-9a-f]{8}-`), "x…-"},
	{regexp.MustCompile(`\b([A-Za-z][\w.-]*)#[0-9]+\b`), "${1}#…"},
}

// NormalizeError is an error's line with what names one pair taken out,
// so that the same error in two pairs reads the same: node ids
// ("xdsconform-1a2b3c4d" becomes "xdsconform-…"), resource-name prefixes
// ("x1a2b3c4d-c1" becomes "x…-c1") and stream numbers ("ads-sotw#3"
// becomes "ads-sotw#…").
func NormalizeError(line string) string {
	for _, p := range pairNames {
		line = p.re.ReplaceAllString(line, p.with)
	}
	return line
}

// causeLineBytes bounds the cause CausesLine names.
const causeLineBytes = 512

// CausesLine sums causes up in one line for the end of a summary, where a
// CI log's reader looks first: "269 pairs did not pass: 1 cause, RES-1
// (MUST) in 269 pairs (268 blocked, 1 failed), first seen in
// client/ack/every-response[sotw-ads]". It names the cause of most pairs
// among those that fail the run (or, when none does, among the others)
// and counts the rest; "" when no pair is the cause of anything. esc
// escapes the text that comes from a report (an error's text, a pair's
// name) for where the line goes.
func CausesLine(causes []Cause, esc func(string) string) string {
	if len(causes) == 0 {
		return ""
	}
	pairs := 0
	for _, c := range causes {
		pairs += c.Pairs
	}
	top := causes[0]
	// One line: an error's text is cut, as a summary's line should be.
	line := fmt.Sprintf("%s did not pass: %s, %s in %s, first seen in %s", wording.Count(pairs, "pair", "pairs"),
		wording.N(len(causes), "cause"), esc(transcript.Clip(top.Name(), causeLineBytes)), top.Breakdown(), esc(top.First))
	if len(causes) > 1 {
		line += "; " + wording.Count(len(causes)-1, "other cause", "other causes") + " listed above"
	}
	return line
}

// BlockedHeadline is the line that says what blocked r: "blocked by
// RES-1 (MUST): a precondition failed: …", the engine's first line when
// it says so, else that prefix and the first line.
func BlockedHeadline(r results.Result) string {
	line := FirstLine(r.Message)
	if strings.HasPrefix(line, "blocked by ") {
		return line
	}
	head := fmt.Sprintf("blocked by %s (%s)", orDash(r.BlockedBy), r.FailureLevel())
	if line == "" {
		return head
	}
	return head + ": " + line
}

// TimingDoubts says in one line what left r inconclusive: each timing
// verdict the harness's own lag could explain, or each window the run's
// budget cut shorter than the peer's timer it is about, with its figures (what was
// measured against what limit, and how long the harness was stalled in
// that window, longest stall in brackets), and how many times the pair
// ran again alone. It falls back on the first line of r's message for a
// result that holds no figures (a hand-made report's).
func TimingDoubts(r results.Result) string {
	var parts []string
	if r.Timing != nil {
		var doubts []results.TimingCheck
		for _, c := range r.Timing.Checks {
			if c.Verdict == results.TimingDoubt || c.Verdict == results.TimingShort {
				doubts = append(doubts, c)
			}
		}
		const shown = 2
		for _, c := range doubts[:min(len(doubts), shown)] {
			d := wording.Duration
			switch {
			case c.Verdict == results.TimingShort:
				parts = append(parts, fmt.Sprintf("%s: %s: a window of %s, all the run's budget allowed, could not cover the peer's timer of %s: it proves nothing",
					c.Rule, c.What, d(c.Measured), d(c.Limit)))
			case c.Kind == results.TimingCovers:
				parts = append(parts, fmt.Sprintf("%s: %s: a window of %s had to cover %s, harness stalled %s (longest %s)",
					c.Rule, c.What, d(c.Measured), d(c.Limit), d(c.Lag), d(c.LagMax)))
			default:
				parts = append(parts, fmt.Sprintf("%s: %s took %s, limit %s, harness stalled %s (longest %s)",
					c.Rule, c.What, d(c.Measured), d(c.Limit), d(c.Lag), d(c.LagMax)))
			}
		}
		if len(doubts) > shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(doubts)-shown))
		}
		if r.Timing.Reruns > 0 {
			parts = append(parts, "still in doubt after running again alone "+wording.Count(r.Timing.Reruns, "time", "times"))
		}
	}
	if len(parts) == 0 {
		return FirstLine(r.Message)
	}
	return strings.Join(parts, "; ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
