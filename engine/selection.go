package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// Selection chooses which pairs run.
type Selection struct {
	// Run keeps only pairs matching one of these patterns (all if empty).
	Run []string
	// Skip drops pairs matching one of these patterns.
	Skip []string
	// Levels keeps only scenarios of these levels (all if empty).
	Levels []results.Level
	// Variants keeps only these variants (all if empty).
	Variants []wire.Variant
}

// ErrNothingSelected is returned when a selection matches no pair; running
// nothing is never a success.
var ErrNothingSelected = errors.New("no scenario matched the selection")

// Expand lists the selected pairs of cat, in catalogue and variant order.
func Expand(cat []*Scenario, sel Selection) ([]Pair, error) {
	var out []Pair
	for _, s := range cat {
		if len(sel.Levels) > 0 && !slices.Contains(sel.Levels, s.Level) {
			continue
		}
		for _, v := range s.Variants {
			if len(sel.Variants) > 0 && !slices.Contains(sel.Variants, v) {
				continue
			}
			p := Pair{Scenario: s, Variant: v}
			if len(sel.Run) > 0 && !matchAny(sel.Run, p) {
				continue
			}
			if matchAny(sel.Skip, p) {
				continue
			}
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w (run %q, skip %q, levels %q)", ErrNothingSelected, sel.Run, sel.Skip, sel.Levels)
	}
	return out, nil
}

func matchAny(patterns []string, p Pair) bool { return slices.ContainsFunc(patterns, p.matches) }

// MatchPair reports whether pattern selects scenario id in variant. A
// pattern is a glob in which "*" matches any run of characters (slashes
// included) and "?" one character; everything else, brackets too, is
// literal. It is matched against "id[variant]" and against id alone, so
// "server/nonce/*" selects every variant, "*[delta-*]" every delta pair and
// "server/wildcard/explicit-star[sotw-ads]" exactly one pair.
func MatchPair(pattern, id, variant string) bool {
	return Glob(pattern, id+"["+variant+"]") || Glob(pattern, id)
}

// Glob matches s against pattern ("*" any run, "?" one character).
func Glob(pattern, s string) bool {
	// Iterative wildcard matching with backtracking to the last star: linear
	// in practice and never recursive, so hostile patterns cannot blow up.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// ParseLevels reads a comma-separated list of levels ("MUST,SHOULD"),
// case-insensitive.
func ParseLevels(s string) ([]results.Level, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []results.Level
	for _, f := range strings.Split(s, ",") {
		l := results.Level(strings.ToUpper(strings.TrimSpace(f)))
		if !slices.Contains(results.Levels, l) {
			return nil, fmt.Errorf("unknown level %q (want MUST, SHOULD or MAY)", f)
		}
		out = append(out, l)
	}
	return out, nil
}

// UnmatchedPatterns returns the patterns that match no pair of any of
// cats, whatever the other filters: a mistyped --run pattern would
// otherwise be dropped in silence and the run check less than was asked.
func UnmatchedPatterns(patterns []string, cats ...[]*Scenario) []string {
	var out []string
	for _, pat := range patterns {
		found := false
		for _, cat := range cats {
			found = found || slices.ContainsFunc(cat, func(s *Scenario) bool {
				return slices.ContainsFunc(s.Variants, func(v wire.Variant) bool { return Pair{Scenario: s, Variant: v}.matches(pat) })
			})
		}
		if !found {
			out = append(out, pat)
		}
	}
	return out
}
