package engine

import (
	"fmt"
	"slices"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// Calibration is an optional interface of an Env whose pairs rest on
// something about the target that the target may not offer, and that the
// pairs of calibrating scenarios (Scenario.First) find out before the
// rest are judged: a client whose status view never shows a state would
// otherwise fail, under their own rules, every pair whose verdict rests
// on seeing that state, when the view, not the behaviour, is what is
// missing.
//
// The engine runs the pairs of First scenarios before every other pair of
// a Run, hands each result to Learn once the pair has finished, and
// consults Unmet before starting any other pair.
type Calibration interface {
	// RestsOn reports whether the verdict of s rests on what the First
	// scenario cal finds out (in the same variant). WithCalibrations
	// uses it to bring in the calibrations a selection left out.
	RestsOn(s, cal *Scenario) bool
	// Learn is given the result of a pair of a First scenario once it
	// has finished, before any pair that rests on it starts. It may be
	// called from several goroutines at once. A pair in doubt for the
	// harness's own lag (inconclusive) is learnt as such: it runs again
	// only once every other pair has run, too late to decide them.
	Learn(p Pair, r results.Result)
	// Unmet says, before a pair of s in v starts, that a precondition
	// its verdict rests on is known to have failed: nil lets it run. A
	// Failure naming a rule blocks the pair by that rule without running
	// it (as T.Block does: a failure of that rule, not of the
	// scenario's own, unless the scenario cites it); one naming no rule
	// makes it an error, with Failure.Message as the reason.
	Unmet(s *Scenario, v wire.Variant) *Failure
}

// calibrationOf is env's Calibration, nil when it has none.
func calibrationOf(env Env) Calibration {
	c, _ := env.(Calibration)
	return c
}

// learn hands the result of a pair of a First scenario to env.
func learn(env Env, p Pair, r results.Result) {
	if c := calibrationOf(env); c != nil && p.Scenario.First {
		c.Learn(p, r)
	}
}

// unmet is what env knows, before p runs, of a precondition of it that
// failed; nil when nothing is known or env calibrates nothing. A First
// pair is never held back by another: calibrations rest on nothing but
// their own steps.
func unmet(env Env, p Pair) *Failure {
	c := calibrationOf(env)
	if c == nil || p.Scenario.First {
		return nil
	}
	return c.Unmet(p.Scenario, p.Variant)
}

// decideUnmet makes r, the result of a pair of s that was not run, what
// the failed precondition f makes it: blocked by f.Rule, in the words of a
// body's T.Block, or a failure of it when s cites the rule (the
// precondition then showed broken a rule the scenario checks), or an
// error when f names no rule.
func decideUnmet(r *results.Result, s *Scenario, f Failure) {
	if f.Rule == "" {
		r.Outcome, r.Message = results.Error, f.Message
		return
	}
	if slices.Contains(s.Requirements, f.Rule) {
		r.RulesBroken, r.BrokenLevel, r.Message = judge([]Failure{f}, s.Level)
		r.Outcome = results.Fail
		if r.BrokenLevel == results.May {
			r.Outcome = results.Unsupported
		}
		return
	}
	if _, ok := requirements.Lookup(f.Rule); !ok {
		f.Message = fmt.Sprintf("(precondition names unknown rule %q) %s", f.Rule, f.Message)
		f.Rule = s.Requirements[0]
	}
	r.RulesBroken, r.BrokenLevel, _ = judge([]Failure{f}, s.Level)
	r.Outcome, r.BlockedBy = results.Blocked, f.Rule
	r.Message = fmt.Sprintf("blocked by %s (%s): a precondition failed: %s", f.Rule, r.BrokenLevel, f.Message)
}

// WithCalibrations returns pairs, the pairs a selection chose, with in
// front of them the pairs of the calibrating scenarios of cals
// (Scenario.First) that some of them rest on (Calibration.RestsOn) in
// their variant and that the selection left out, in the order of cals and
// their variants: a verdict that rests on a calibration is the same
// whether the pair runs with the whole suite or by itself (--run, --level,
// xdsconform rerun). A calibration pair sel skips by name (--skip) stays
// out: the pairs resting on it then run uncalibrated, judged as if there
// were none. pairs is returned as it is when env calibrates nothing.
func WithCalibrations(pairs []Pair, cals []*Scenario, sel Selection, env Env) []Pair {
	c := calibrationOf(env)
	if c == nil {
		return pairs
	}
	have := map[string]bool{}
	for _, p := range pairs {
		have[p.FullName()] = true
	}
	var add []Pair
	for _, cal := range cals {
		if !cal.First {
			continue
		}
		for _, v := range cal.Variants {
			cp := Pair{Scenario: cal, Variant: v}
			if have[cp.FullName()] || matchAny(sel.Skip, cp) {
				continue
			}
			if slices.ContainsFunc(pairs, func(p Pair) bool {
				return p.Variant == v && !p.Scenario.First && c.RestsOn(p.Scenario, cal)
			}) {
				add = append(add, cp)
				have[cp.FullName()] = true
			}
		}
	}
	if len(add) == 0 {
		return pairs
	}
	return append(add, pairs...)
}
