package engine

import (
	"context"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Env is what a role plugs into the engine: it decides which pairs the
// target can run.
type Env interface {
	// Lacks returns "" when the target can run s in v, otherwise the reason
	// the pair is skipped (e.g. "needs fixture").
	Lacks(s *Scenario, v wire.Variant) string
}

// Config shapes a run.
type Config struct {
	// Env is the role's environment.
	Env Env
	// Timeouts are the named waits.
	Timeouts Timeouts
	// Parallel caps the pairs running at once (default DefaultParallel).
	Parallel int
	// KnownFailing excuses listed failures; may be nil.
	KnownFailing *KnownFailing
	// Progress, if set, is called as each pair finishes (from several
	// goroutines at once).
	Progress func(results.Result)
	// Salt varies node ids and resource names between runs sharing one
	// server; empty keeps them stable, so repeated runs are identical.
	Salt string
	// ReportBudget bounds the bytes the run's transcripts keep for the
	// report, all pairs together; nil gives each Run its own of
	// transcript.DefaultBudget. What a transcript takes is never given
	// back.
	ReportBudget *transcript.Budget
	// QueueBudget bounds the bytes the run's fake peers queue past their
	// own floors, all pairs together; nil gives each Run its own of
	// transcript.DefaultQueueBudget. It is apart from ReportBudget and
	// only lent, so what the pairs that finished keep for the report
	// cannot starve the queues of the pairs still to run.
	QueueBudget *transcript.Budget
	// Reruns is how many times a pair whose timing verdict the harness's
	// own lag could explain runs again by itself before it is reported
	// inconclusive: 0 means DefaultReruns, a negative value none.
	Reruns int
}

// DefaultReruns is how many times a pair in doubt for the harness's lag
// runs again by itself: once is usually enough, as a pair alone has the
// harness to itself; a second try covers a burst of load from outside.
const DefaultReruns = 2

// Pairs of a Run that run again: at most a tenth of them, and at least
// minRerunPairs. Each runs by itself, so a run in which the harness was
// starved throughout (far too many pairs at once for the machine) would
// otherwise take as long again one pair at a time. The rest are reported
// inconclusive, saying why.
const (
	rerunShare    = 10
	minRerunPairs = 24
)

// DefaultParallel is how many pairs run at once unless configured: pairs
// mostly wait (for responses, and through their trailing quiet window), so
// a whole suite fits in one wave and takes about as long as its longest
// pair.
const DefaultParallel = 256

// Run runs pairs concurrently and returns one result per pair that ran, in
// the order of pairs (catalogue order when they come from Expand). Pairs
// of calibrating scenarios (First) run before all others; pairs of
// scenarios marked Alone run last, one at a time, with nothing else
// running (see runOrder); pairs whose timing verdict the harness's own lag
// could explain then run again, each by itself (see rerun). When ctx is
// cancelled (Ctrl-C), pairs not yet
// started are dropped, pairs in flight end with an error outcome, and
// interrupted is true.
func Run(ctx context.Context, pairs []Pair, cfg Config) (rs []results.Result, interrupted bool) {
	if cfg.Parallel <= 0 {
		cfg.Parallel = DefaultParallel
	}
	cfg.Timeouts = cfg.Timeouts.withDefaults()
	if cfg.ReportBudget == nil {
		cfg.ReportBudget = transcript.NewBudget(transcript.DefaultBudget)
	}
	if cfg.QueueBudget == nil {
		cfg.QueueBudget = transcript.NewBudget(transcript.DefaultQueueBudget)
	}
	if cfg.Reruns == 0 {
		cfg.Reruns = DefaultReruns
	}
	// The harness's own lag is measured throughout, for the timing
	// verdicts to weigh (engine/timing.go).
	defer lag.Start()()
	sem := make(chan struct{}, cfg.Parallel)
	var wg sync.WaitGroup
	// Each pair writes the slot of its own index; ran marks the pairs
	// that started, which are all of them unless interrupted.
	rs = make([]results.Result, len(pairs))
	ran := make([]bool, len(pairs))
	fresh := freshTargets(cfg.Env)
	prev := phaseShared
	for _, i := range runOrder(pairs, fresh) {
		ph := phaseOf(pairs[i].Scenario, fresh)
		alone := ph == phaseAlone
		if alone || ph != prev {
			wg.Wait() // everything before it has finished
		}
		prev = ph
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		if quiet.enter(ctx, classShared) != nil {
			<-sem
			break
		}
		ran[i] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer quiet.leave(classShared)
			r := runPair(ctx, pairs[i], &cfg)
			learn(cfg.Env, pairs[i], r)
			// A pair in doubt is reported once it has run again.
			if cfg.Progress != nil && (r.Outcome != results.Inconclusive || cfg.Reruns < 0) {
				cfg.Progress(r)
			}
			rs[i] = r
		}()
		if alone {
			wg.Wait() // nothing starts while it runs
		}
	}
	wg.Wait()
	rerun(ctx, pairs, rs, ran, &cfg)
	out := rs[:0]
	for i, r := range rs {
		if ran[i] {
			out = append(out, r)
		}
	}
	return out, ctx.Err() != nil
}

// rerun runs again, each by itself, the pairs that ran and ended in doubt
// for the harness's own lag (an inconclusive outcome), up to cfg.Reruns
// times each and maxRerunPairs pairs in all, and puts each one's last
// result in rs. A pair alone has the harness to itself: its timing
// verdicts are then the target's.
func rerun(ctx context.Context, pairs []Pair, rs []results.Result, ran []bool, cfg *Config) {
	if cfg.Reruns < 0 {
		return
	}
	maxRerunPairs := max(minRerunPairs, len(pairs)/rerunShare)
	n := 0
	for i := range pairs {
		if !ran[i] || rs[i].Outcome != results.Inconclusive {
			continue
		}
		if rs[i].Timing != nil && shortWindow(rs[i].Timing.Checks) {
			// A window the budget cut short of its timer is as short
			// alone: nothing to gain from running it again.
			if cfg.Progress != nil {
				cfg.Progress(rs[i])
			}
			continue
		}
		first := rs[i]
		if n++; n > maxRerunPairs {
			rs[i].Message += fmt.Sprintf("\nNot run again: more than %d pairs of this run were in doubt for the harness's own lag (the machine gave the harness less time than it needed to run them on time)", maxRerunPairs)
		}
		for try := 1; n <= maxRerunPairs && try <= cfg.Reruns && rs[i].Outcome == results.Inconclusive; try++ {
			if quiet.enter(ctx, classAlone) != nil {
				break
			}
			again := *cfg
			again.Salt = fmt.Sprintf("%s~rerun%d", cfg.Salt, try)
			r := runPair(ctx, pairs[i], &again)
			quiet.leave(classAlone)
			if r.Timing == nil {
				r.Timing = &results.Timing{}
			}
			r.Timing.Reruns = try
			r.Message = strings.TrimPrefix(r.Message+"\n"+fmt.Sprintf("(ran again by itself, %s, because in the run with the other pairs the harness's own lag could explain a timing verdict either way: %s)",
				wording.N(try, "time"), doubtOf(first)), "\n")
			rs[i] = r
		}
		if cfg.Progress != nil {
			cfg.Progress(rs[i])
		}
	}
}

// doubtOf says what left r inconclusive: its first timing check in doubt,
// as its message says it.
func doubtOf(r results.Result) string {
	if r.Timing != nil {
		for _, c := range r.Timing.Checks {
			if c.Verdict == results.TimingDoubt || c.Verdict == results.TimingShort {
				return describeDoubts([]results.TimingCheck{c})
			}
		}
	}
	line, _, _ := strings.Cut(r.Message, "\n")
	return line
}

// A phase is a group of pairs that run together; each phase starts once
// the one before it has finished.
type phase int

const (
	// phaseShared holds most pairs, all at once (up to Config.Parallel).
	phaseShared phase = iota
	// phaseAlone holds the pairs of scenarios marked Alone, one at a time.
	phaseAlone
	// phaseFirst holds the pairs of calibrating scenarios (First), all
	// at once, before every other phase.
	phaseFirst
)

// phaseOf is the phase a scenario's pairs run in. With fresh targets
// (FreshTargets) an Alone scenario has nothing to protect: a crash takes
// only the target of the pair that caused it.
func phaseOf(s *Scenario, fresh bool) phase {
	switch {
	case s.First:
		return phaseFirst
	case s.Alone && !fresh:
		return phaseAlone
	}
	return phaseShared
}

// runOrder is the order pairs start in: the calibrating phase, then the
// shared one, then the alone one, each in the order given. Calibrations
// come first, so that what they find out of the target is known before
// any pair resting on it is judged (Calibration). A scenario that may
// crash or wedge the target runs after the rest, by itself: the rest have
// their verdicts from a healthy target, and a crash is charged to the pair
// that sent the target the last scenario message before it stopped
// answering, which, with one pair at a time and the target checked alive
// before each, is the pair running then or none (chargeDeath). A scenario
// that measures durations runs with the crowd: its verdicts weigh the
// harness's own lag (T.Within).
func runOrder(pairs []Pair, fresh bool) []int {
	order := make([]int, 0, len(pairs))
	for _, ph := range []phase{phaseFirst, phaseShared, phaseAlone} {
		for i, p := range pairs {
			if phaseOf(p.Scenario, fresh) == ph {
				order = append(order, i)
			}
		}
	}
	return order
}

// FreshTargets is an optional interface of an Env that starts a fresh
// target for every pair (a client launched per scenario): a target that a
// pair crashes is that pair's alone, so scenarios marked Alone need not
// wait for the rest nor run one at a time.
type FreshTargets interface {
	// FreshTargetPerPair reports whether every pair gets a target of its
	// own.
	FreshTargetPerPair() bool
}

func freshTargets(env Env) bool {
	f, ok := env.(FreshTargets)
	return ok && f.FreshTargetPerPair()
}

// sawPrefix heads, in the message of the pair that found the target dead,
// what that pair saw of the death.
const sawPrefix = "what this pair saw: "

// runPair runs one pair to an outcome. It never panics and never outlives
// cfg.Timeouts.Scenario by more than the body's own reaction to ctx.
func runPair(parent context.Context, p Pair, cfg *Config) (r results.Result) {
	s := p.Scenario
	r = results.Result{ID: s.ID, Variant: p.Variant.String(), Title: s.Title,
		Requirements: slices.Clone(s.Requirements), Level: s.Level}
	start := time.Now()
	defer func() { r.Duration = time.Since(start) }()

	if reason := cfg.Env.Lacks(s, p.Variant); reason != "" {
		r.Outcome, r.Message = results.Skip, reason
		return r
	}
	// A target known to have died runs nothing more: the pair errors with
	// that one cause instead of an echo of it.
	if msg, died := diedBefore(cfg.Env); died {
		r.Outcome, r.Message = results.Error, msg
		return r
	}
	// What a calibration found out may already decide the pair.
	if f := unmet(cfg.Env, p); f != nil {
		decideUnmet(&r, s, *f)
		cfg.KnownFailing.judge(&r)
		return r
	}
	// A pair that runs alone is blamed for a death it saw begin (below):
	// the target must be known alive when it starts, or a death nobody
	// noticed (after a pair that failed, or between pairs) would be laid
	// at its door.
	if s.Alone {
		if msg, died := diedDuring(parent, cfg.Env); died && parent.Err() == nil {
			r.Outcome, r.Message = results.Error, msg
			return r
		}
	}
	ctx, cancel := context.WithTimeout(parent, cfg.Timeouts.Scenario)
	defer cancel()
	defer endWhenGone(cfg.Env, cancel)()
	t := newT(ctx, p, cfg)

	panicked := runBody(ctx, t, s.Run)
	timedOut := ctx.Err() != nil
	t.runAfter()

	// Repeats folded (a target in a resend loop), so that every report
	// and the console show the loop once, with how long it went on.
	r.Transcript = transcript.Fold(t.Transcript.Entries())
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case panicked != "":
		r.Outcome, r.Message = results.Error, panicked
	case parent.Err() != nil:
		r.Outcome, r.Message = results.Error, "interrupted before the scenario finished"
	case timedOut && len(t.failures) == 0 && t.blocked == nil && t.skip == "" && t.abort == "":
		r.Outcome, r.Message = results.Error, fmt.Sprintf("scenario did not finish within %v", cfg.Timeouts.Scenario)
	case len(t.failures) > 0:
		// A rule the target broke stands even when the pair could not
		// then go on (a flood that filled the harness's queue, a
		// connection lost after the violation, a precondition that then
		// failed): what was seen decides, and why the pair stopped
		// follows as a note.
		r.RulesBroken, r.BrokenLevel, r.Message = judge(t.failures, s.Level)
		r.Outcome = results.Fail
		if r.BrokenLevel == results.May {
			// Only MAY rules were not met: an optional behaviour the
			// target does not implement, reported, never a failure.
			r.Outcome = results.Unsupported
		}
		switch {
		case t.blocked != nil:
			r.Message += fmt.Sprintf("\nThen a precondition failed (%s): %s", t.blocked.Rule, t.blocked.Message)
		case t.abort != "":
			r.Message += "\nThen the pair could not go on: " + t.abort
		}
	case t.blocked != nil:
		// The scenario never reached what it checks: the pair is a
		// failure of the rule its precondition rests on, whatever the
		// scenario's own level (a MAY scenario blocked is not a MAY
		// behaviour unsupported).
		r.Outcome, r.BlockedBy = results.Blocked, t.blocked.Rule
		r.RulesBroken, r.BrokenLevel, _ = judge([]Failure{*t.blocked}, s.Level)
		r.Message = fmt.Sprintf("blocked by %s (%s): a precondition failed: %s", t.blocked.Rule, r.BrokenLevel, t.blocked.Message)
	case t.abort != "":
		r.Outcome, r.Message = results.Error, t.abort
	case t.skip != "":
		r.Outcome, r.Message = results.Skip, t.skip
	case len(t.doubts()) > 0:
		// Nothing failed, but a timing verdict could have gone either way
		// for the harness's own lag: Run runs the pair again by itself.
		r.Outcome = results.Inconclusive
		r.Message = doubtHeadline(t.doubts()) + "\n" + describeDoubts(t.doubts())
	default:
		r.Outcome = results.Pass
	}
	if len(t.timing) > 0 {
		r.Timing = &results.Timing{Checks: slices.Clone(t.timing)}
	}
	// A pair that could not run may be the first sign that the target
	// died: then that is its cause, and the rest of the run learns it
	// (Liveness). A failure stays a failure: the pair saw the target
	// break a rule, perhaps by dying of what the scenario sent. A pair
	// that runs alone (Scenario.Alone) is re-checked whatever its
	// outcome: it started against a live target (checked above) with
	// nothing else running, so a death now is charged to it if it sent
	// the target the last scenario message before it stopped answering
	// (chargeDeath).
	cutShort := timedOut && ctx.Err() == context.Canceled
	switch {
	case panicked != "" || parent.Err() != nil:
	case s.Alone:
		msg, died := diedDuring(parent, cfg.Env)
		switch {
		case died && unusable(msg):
			// Not a death the pair's xDS caused: an error, as for any
			// pair, when it could not finish.
			if r.Outcome == results.Error {
				r.Message = diedMessage(msg, r.Message, cutShort)
			}
		case died:
			chargeDeath(&r, s, t, msg, cutShort)
		}
	case r.Outcome == results.Error:
		if msg, died := diedDuring(parent, cfg.Env); died {
			r.Message = diedMessage(msg, r.Message, cutShort)
		}
	}
	// Notes (Notef) follow the verdict's own message, naming no rule.
	for _, n := range t.notes {
		r.Message = strings.TrimPrefix(r.Message+"\n"+n, "\n")
	}
	cfg.KnownFailing.judge(&r)
	return r
}

// diedMessage is the message of a pair that errored because the target
// died (msg): the death is the cause, and what the pair itself saw of it
// (saw) stays as the evidence, unless the death cut the pair short (its
// context ended before its time was up): it saw nothing then.
func diedMessage(msg, saw string, cutShort bool) string {
	if cutShort {
		return msg
	}
	return msg + "\n" + sawPrefix + saw
}

// blameDeath makes r, the result of a pair that ran alone and during which
// the target went from alive to dead (msg), a failure of its headline rule:
// added to the failures fs it already recorded when it failed, the only
// one otherwise (what an error saw of the death is kept in its message).
// A scenario citing no rule can be blamed under none: it errors with the
// death as its cause.
func blameDeath(r *results.Result, s *Scenario, fs []Failure, msg string, cutShort bool) {
	if len(s.Requirements) == 0 {
		if r.Outcome == results.Error {
			r.Message = diedMessage(msg, r.Message, cutShort)
		} else {
			r.Message = msg
		}
		r.Outcome = results.Error
		return
	}
	death := Failure{Rule: s.Requirements[0],
		Message: "the target died while this scenario ran alone against it: " + strings.TrimPrefix(msg, diedPrefix)}
	var all []Failure
	switch r.Outcome {
	case results.Fail, results.Unsupported:
		all = append(slices.Clone(fs), death)
	case results.Error:
		if !cutShort {
			death.Message += "\n" + sawPrefix + r.Message
		}
		all = []Failure{death}
	default:
		all = []Failure{death}
	}
	r.RulesBroken, r.BrokenLevel, r.Message = judge(all, s.Level)
	// Killing the target is never an optional behaviour not implemented,
	// whatever the level of the rules broken.
	r.Outcome = results.Fail
}

// judge turns the failures of a pair into the rules broken (in the order
// they first failed), the strongest of their levels, and the message, each
// failure headed by its rule and level.
func judge(fs []Failure, scenarioLevel results.Level) (rules []string, level results.Level, msg string) {
	var lines []string
	for _, f := range fs {
		l := LevelOf(f.Rule, scenarioLevel)
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
		level = results.Strongest(level, l)
		lines = append(lines, fmt.Sprintf("%s (%s): %s", f.Rule, l, f.Message))
	}
	return rules, level, strings.Join(lines, "\n")
}

// LevelOf is the catalogue strength of rule, or def when the catalogue
// does not know the rule.
func LevelOf(rule string, def results.Level) results.Level {
	if r, ok := requirements.Lookup(rule); ok {
		return results.Level(r.Strength)
	}
	return def
}

// runBody runs the scenario body in its own goroutine so that FailNow,
// Skipf and Abortf can end it with runtime.Goexit, and a panic becomes an
// error outcome instead of killing the run. It returns the panic text, if
// any, or a timeout note when the body ignores its context.
func runBody(ctx context.Context, t *T, body func(*T)) (panicked string) {
	done := make(chan string, 1)
	go func() {
		msg := ""
		defer func() { done <- msg }()
		defer func() {
			if v := recover(); v != nil {
				msg = fmt.Sprintf("harness panic: %v\n%s", v, firstFrames(debug.Stack(), 12))
			}
		}()
		defer t.runCleanups()
		body(t)
		// Only a body that ran to its end waits out the trailing window:
		// one that failed, skipped or aborted already has its verdict.
		t.linger()
	}()
	select {
	case msg := <-done:
		return msg
	case <-ctx.Done():
		// Give the body a moment to notice the cancellation and unwind; a
		// body that still does not return is abandoned.
		select {
		case msg := <-done:
			return msg
		case <-time.After(time.Second):
			return ""
		}
	}
}

func (t *T) runCleanups() {
	t.mu.Lock()
	cs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

// runAfter runs the AfterRun checks, each in its own goroutine so that a
// check calling FailNow (runtime.Goexit) or panicking ends only itself, not
// the goroutine that must still report the pair.
func (t *T) runAfter() {
	t.mu.Lock()
	checks := t.checks
	t.mu.Unlock()
	for _, c := range checks {
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer func() {
				if v := recover(); v != nil {
					t.Errorf("after-run check panicked: %v", v)
				}
			}()
			c(t)
		}()
		// The checks only read what the fake peer recorded; one that
		// blocks anyway is abandoned, like a body, rather than holding the
		// pair (and the run) for ever.
		select {
		case <-done:
		case <-time.After(afterRunLimit):
			t.Errorf("after-run check did not return within %v", afterRunLimit)
			return
		}
	}
}

// afterRunLimit bounds each AfterRun check (a variable for its test).
var afterRunLimit = 5 * time.Second

func firstFrames(stack []byte, n int) string {
	lines := strings.Split(string(stack), "\n")
	if len(lines) > n*2+1 {
		lines = lines[:n*2+1]
	}
	return strings.Join(lines, "\n")
}
