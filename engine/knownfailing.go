package engine

import (
	"bufio"
	"context"
	"fmt"
	"github.com/xdsconform/xdsconform/internal/infile"
	"io"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/results"
)

// TimingDependent marks a known-failing reason whose failure depends on
// timing (or another source of nondeterminism in the peer): such a pair
// fails in most runs and may pass in some, and a pass is not a stale
// entry to the tests that check the shipped lists.
const TimingDependent = "(timing-dependent)"

// CrashesTarget marks a known-failing reason whose scenario crashes the
// target (a real peer's bug): a harness that runs a whole catalogue
// against one start of that peer (the e2e suite) runs such pairs after
// every other one, and a pair that the crash of an earlier such pair left
// without a target errors with that cause instead of failing.
const CrashesTarget = "(crashes the target)"

// ReasonRules returns the rule IDs a known-failing reason starts with, as
// the shipped lists write them: "DELTA-3: ...", "ACK-5/UPD-1 (timing-
// dependent): ...". Only IDs of the catalogue count. A listed failure is
// excused only if it broke one of them, so an entry cannot hide a failure
// of another rule.
func ReasonRules(reason string) []string {
	head, _, _ := strings.Cut(reason, ":")
	var out []string
	for _, f := range strings.FieldsFunc(head, func(r rune) bool { return r == '/' || r == ',' || r == ' ' || r == '(' || r == ')' }) {
		if _, ok := requirements.Lookup(f); ok {
			out = append(out, f)
		}
	}
	return out
}

// KnownFailing lists pairs expected to fail, each with the reason. A listed
// failure does not fail the run; a listed pair that passes does, because the
// entry is stale and would hide a regression later.
type KnownFailing struct {
	entries []knownEntry
}

type knownEntry struct {
	pattern, reason string
	line            int
	// rules are the catalogue IDs the reason starts with (ReasonRules): a
	// failure is excused only if it broke one of them. An entry naming
	// none excuses any failure of its pairs.
	rules []string
	// timing marks a TimingDependent entry, whose pairs may also pass.
	timing bool
}

// excuses reports whether the entry covers a failure that broke broken.
func (e knownEntry) excuses(broken []string) bool {
	return len(e.rules) == 0 || slices.ContainsFunc(e.rules, func(r string) bool { return slices.Contains(broken, r) })
}

// ParseKnownFailing reads the known-failing format: one entry per line,
// "PATTERN REASON…", where PATTERN is a selection pattern (see MatchPair)
// and REASON is required free text; blank lines and lines starting with "#"
// are ignored. name is used in error messages.
func ParseKnownFailing(r io.Reader, name string) (*KnownFailing, error) {
	kf := &KnownFailing{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		pattern, reason := fields[0], strings.TrimSpace(strings.TrimPrefix(line, fields[0]))
		if reason == "" {
			return nil, fmt.Errorf("%s:%d: entry %q has no reason (want \"PATTERN REASON\")", name, n, pattern)
		}
		if !strings.Contains(pattern, "/") {
			return nil, fmt.Errorf("%s:%d: %q is not a scenario pattern (want e.g. server/area/behaviour[variant])", name, n, pattern)
		}
		kf.entries = append(kf.entries, knownEntry{pattern: pattern, reason: reason, line: n,
			rules: ReasonRules(reason), timing: strings.Contains(reason, TimingDependent)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return kf, nil
}

// MaxKnownFailingBytes bounds a known-failing file: the longest in this
// repository is a few KiB.
const MaxKnownFailingBytes = 4 << 20

// LoadKnownFailing reads a known-failing file, its size checked before it
// is read (a FIFO under a deadline, a device refused: internal/infile).
func LoadKnownFailing(path string) (*KnownFailing, error) {
	f, err := infile.Open(context.Background(), path, MaxKnownFailingBytes)
	if err != nil {
		return nil, fmt.Errorf("known-failing file: %w", err)
	}
	defer f.Close()
	return ParseKnownFailing(f, path)
}

// Reason returns the reason a pair is listed, or "".
func (k *KnownFailing) Reason(p Pair) string { return k.ReasonFor(p.Scenario.ID, p.Variant.String()) }

// ReasonFor returns the reason scenario id in variant is listed, or "".
func (k *KnownFailing) ReasonFor(id, variant string) string {
	e, _ := k.entryFor(id, variant)
	return e.reason
}

// entryFor returns the first entry listing scenario id in variant.
func (k *KnownFailing) entryFor(id, variant string) (knownEntry, bool) {
	if k == nil {
		return knownEntry{}, false
	}
	for _, e := range k.entries {
		if MatchPair(e.pattern, id, variant) {
			return e, true
		}
	}
	return knownEntry{}, false
}

// judge sets r.KnownFailing when the list excuses r: a failure of one of
// the rules its entry names, or a pass or an unsupported MAY, which
// makes the entry stale unless it is TimingDependent and r passed. A
// failure of other rules is not excused, and its message says so.
func (k *KnownFailing) judge(r *results.Result) {
	e, ok := k.entryFor(r.ID, r.Variant)
	if !ok {
		return
	}
	switch {
	case r.Outcome == results.Pass && e.timing:
		// The peer fails this in most runs, not all: a pass is no stale entry.
	case r.Failed() && !e.excuses(r.RulesBroken):
		r.Message += fmt.Sprintf("\n(listed as known-failing for %s, line %d, but this failure broke %s)",
			strings.Join(e.rules, ", "), e.line, strings.Join(r.RulesBroken, ", "))
	case r.Failed(), r.Outcome == results.Pass, r.Outcome == results.Unsupported:
		r.KnownFailing = e.reason
	}
}

// Unmatched returns the patterns that select none of pairs, so the CLI can
// warn about entries that may be misspelled.
func (k *KnownFailing) Unmatched(pairs []Pair) []string {
	if k == nil {
		return nil
	}
	var out []string
	for _, e := range k.entries {
		if !slices.ContainsFunc(pairs, func(p Pair) bool { return p.matches(e.pattern) }) {
			out = append(out, e.pattern)
		}
	}
	return out
}
