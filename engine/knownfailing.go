package engine

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/requirements"
)

// TimingDependent marks a known-failing reason whose failure depends on
// timing (or another source of nondeterminism in the peer): such a pair
// fails in most runs and may pass in some, and a pass is not a stale
// entry to the tests that check the shipped lists.
const TimingDependent = "(timing-dependent)"

// ReasonRules returns the rule IDs a known-failing reason starts with, as
// the shipped lists write them: "DELTA-3: ...", "ACK-5/UPD-1 (timing-
// dependent): ...". Only IDs of the catalogue count. The tests that check
// the shipped lists require a listed failure to break one of them, so an
// entry cannot hide a failure of another rule.
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
		kf.entries = append(kf.entries, knownEntry{pattern: pattern, reason: reason, line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return kf, nil
}

// LoadKnownFailing reads a known-failing file.
func LoadKnownFailing(path string) (*KnownFailing, error) {
	f, err := os.Open(path)
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
	if k == nil {
		return ""
	}
	for _, e := range k.entries {
		if MatchPair(e.pattern, id, variant) {
			return e.reason
		}
	}
	return ""
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
