// Package engine runs conformance scenarios: it expands every scenario into
// its (scenario × variant) pairs, selects them, runs each pair isolated and
// bounded, concurrently, and turns what happened into results. It knows
// nothing about the xDS roles: a role plugs in through Env.
package engine

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// Need is something a scenario requires of the target beyond the variant
// (e.g. "fixture", "wildcard"); the Env decides whether the target has it.
type Need string

// Scenario is one behaviour checked in one or more variants.
type Scenario struct {
	// ID is a slash path: "<role>/<area>/<behaviour>".
	ID string
	// Title says in one line what must hold.
	Title string
	// Requirements are the catalogue IDs the scenario checks.
	Requirements []string
	// Level is the strength of the rule checked.
	Level results.Level
	// Variants lists the variants the scenario applies to.
	Variants []wire.Variant
	// Needs lists what the target must offer; pairs lacking one are skipped.
	Needs []Need
	// Alone marks a scenario that may crash or wedge the target (the
	// robustness scenarios): its pairs run after every other pair, one
	// at a time, so a target that dies or stops answering is seen by the
	// pair that caused it and by no other. The death is charged to that
	// pair only if it sent the target a scenario message (T.SentToTarget):
	// one that got no further than a fixture call errors with the death
	// as its cause. Against an Env that starts a fresh target for every
	// pair (FreshTargets) they run with the rest.
	Alone bool
	// Timed once marked a scenario whose verdict rests on durations it
	// measures, to run it apart from the crowd.
	//
	// Deprecated: timing verdicts weigh the harness's own lag instead
	// (T.Within, T.Covers), and a pair the lag leaves in doubt runs again
	// by itself; such pairs run with the rest. The field has no effect.
	Timed bool
	// First marks a calibrating scenario: its pairs run before every
	// other pair of a Run, and what they find out of the target decides
	// how the pairs resting on it are judged (see Calibration).
	First bool
	// Run is the scenario body.
	Run func(t *T)
}

var idPattern = regexp.MustCompile(`^(server|client)/[a-z0-9-]+/[a-z0-9-]+$`)

// Validate checks a catalogue: well-formed unique IDs, known requirement
// IDs, a level, at least one variant and a body.
func Validate(cat []*Scenario) error {
	seen := map[string]bool{}
	for _, s := range cat {
		switch {
		case !idPattern.MatchString(s.ID):
			return fmt.Errorf("scenario ID %q is not <role>/<area>/<behaviour>", s.ID)
		case seen[s.ID]:
			return fmt.Errorf("scenario ID %q is defined twice", s.ID)
		case s.Title == "":
			return fmt.Errorf("scenario %s has no title", s.ID)
		case len(s.Requirements) == 0:
			return fmt.Errorf("scenario %s cites no requirement", s.ID)
		case !slices.Contains(results.Levels, s.Level):
			return fmt.Errorf("scenario %s has level %q", s.ID, s.Level)
		case len(s.Variants) == 0:
			return fmt.Errorf("scenario %s runs in no variant", s.ID)
		case s.Run == nil:
			return fmt.Errorf("scenario %s has no body", s.ID)
		}
		if err := requirements.Validate(s.Requirements); err != nil {
			return fmt.Errorf("scenario %s: %w", s.ID, err)
		}
		if err := checkCitations(s); err != nil {
			return fmt.Errorf("scenario %s: %w", s.ID, err)
		}
		seen[s.ID] = true
	}
	return nil
}

// checkCitations keeps a scenario's citations consistent with the
// catalogue: its level is its headline rule's level (so a report's level
// means what the catalogue says), and every rule it cites binds the side
// its role observes.
func checkCitations(s *Scenario) error {
	role, _, _ := strings.Cut(s.ID, "/")
	for i, id := range s.Requirements {
		r, _ := requirements.Lookup(id)
		if i == 0 && results.Level(r.Strength) != s.Level {
			return fmt.Errorf("level %s, but its headline rule %s is %s", s.Level, id, r.Strength)
		}
		if r.Binds != role && r.Binds != "both" {
			return fmt.Errorf("cites %s, which binds the %s, not the %s the %s role observes", id, r.Binds, role, role)
		}
	}
	return nil
}

// Pair is one scenario in one variant: the unit the engine runs.
type Pair struct {
	Scenario *Scenario
	Variant  wire.Variant
}

// FullName is "ID[variant]".
func (p Pair) FullName() string { return p.Scenario.ID + "[" + p.Variant.String() + "]" }

// matches reports whether the selection pattern selects p (see MatchPair).
func (p Pair) matches(pattern string) bool {
	return MatchPair(pattern, p.Scenario.ID, p.Variant.String())
}
