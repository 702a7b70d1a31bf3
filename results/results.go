// Package results holds the report types shared by the engine, which
// produces them, and the report writers, which render them.
package results

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/xdsconform/xdsconform/transcript"
)

// Outcome is the verdict of one scenario in one variant. Outcomes are never
// mixed: a run that could not be carried out is an Error, not a Fail. The
// outcomes, what each means for the rules a pair cites and for the exit
// code, are documented in one place, docs/outcomes.md.
type Outcome string

const (
	// Pass: every expectation held.
	Pass Outcome = "pass"
	// Fail: the target broke a rule; Message says which and how.
	Fail Outcome = "fail"
	// Skip: the scenario does not apply or the target lacks what it needs;
	// Message says why.
	Skip Outcome = "skipped"
	// Error: the harness or the target could not run the scenario (target
	// unreachable, harness panic, fixture failure).
	Error Outcome = "error"
	// Unsupported: the only rules the target did not meet are MAY rules, so
	// it does not implement an optional behaviour. It is reported, never
	// counted as a failure.
	Unsupported Outcome = "unsupported"
	// Blocked: a precondition the scenario's verdict rests on failed (the
	// base resources were not served or not ACKed, a barrier was not
	// delivered), so the scenario never reached the behaviour it checks.
	// BlockedBy names the rule that precondition rests on; the pair counts
	// as a failure of that rule, at its level, and of no other.
	Blocked Outcome = "blocked"
	// Inconclusive: a verdict that rests on time could not be told apart
	// from the harness's own scheduling lag, even after the pair ran again
	// by itself. Timing holds the figures. It fails no rule and does not
	// fail the run.
	Inconclusive Outcome = "inconclusive"
)

// Outcomes lists every outcome, in the order reports count them.
var Outcomes = []Outcome{Pass, Fail, Blocked, Unsupported, Inconclusive, Skip, Error}

// Level is the strength of the rule a scenario checks.
type Level string

// The three levels of the requirements catalogue.
const (
	Must   Level = "MUST"
	Should Level = "SHOULD"
	May    Level = "MAY"
)

// Levels lists the levels from the strongest down; it is the one ordering
// of levels (rank, Compare).
var Levels = []Level{Must, Should, May}

// rank orders levels by their place in Levels: MUST 3, SHOULD 2, MAY 1,
// anything else 0.
func (l Level) rank() int {
	if i := slices.Index(Levels, l); i >= 0 {
		return len(Levels) - i
	}
	return 0
}

// AtLeast reports whether l is as strong as o or stronger.
func (l Level) AtLeast(o Level) bool { return l.rank() >= o.rank() }

// Compare orders levels strongest first, for sorting: negative when a is
// stronger than b, positive when weaker, 0 when they rank alike (levels
// outside Levels rank alike, below MAY).
func Compare(a, b Level) int { return cmp.Compare(b.rank(), a.rank()) }

// Strongest returns the strongest of ls ("" for none).
func Strongest(ls ...Level) Level {
	var best Level
	for _, l := range ls {
		if l.rank() > best.rank() {
			best = l
		}
	}
	return best
}

// Result is the outcome of one (scenario × variant) pair.
type Result struct {
	// ID is the scenario ID, e.g. "server/nonce/stale-request-ignored".
	ID string `json:"id"`
	// Variant is the variant name, e.g. "sotw-ads".
	Variant string `json:"variant"`
	// Title is the scenario's one-line title.
	Title string `json:"title"`
	// Requirements lists the catalogue IDs the scenario checks.
	Requirements []string `json:"requirements"`
	// Level is the scenario's strength.
	Level Level `json:"level"`
	// Outcome is the verdict.
	Outcome Outcome `json:"outcome"`
	// Message explains a fail, skip or error (expected vs actual).
	Message string `json:"message,omitempty"`
	// RulesBroken lists the catalogue IDs of the rules the failing steps
	// check, in the order they first failed; set for fail and unsupported
	// outcomes. It may name a rule the scenario does not cite: a step that
	// merely sets the scene (a subscription that must be answered) checks
	// its own rule, so a target that breaks it is told which.
	RulesBroken []string `json:"rules_broken,omitempty"`
	// BrokenLevel is the strongest level among RulesBroken; it decides
	// whether the failure fails the run (Run.FailOn).
	BrokenLevel Level `json:"broken_level,omitempty"`
	// BlockedBy is, for a blocked outcome, the rule the failed precondition
	// rests on; RulesBroken holds it too. Empty otherwise.
	BlockedBy string `json:"blocked_by,omitempty"`
	// Timing records, for a pair whose verdict rests on time, the harness's
	// own lag seen during each timing window and how the verdict weighed
	// it; nil for a pair that judged nothing by time.
	Timing *Timing `json:"timing,omitempty"`
	// KnownFailing is the reason from the known-failing file when the pair
	// is listed there; a listed failure does not fail the run.
	KnownFailing string `json:"known_failing,omitempty"`
	// Duration is the wall time of the run.
	Duration time.Duration `json:"duration_ns"`
	// Transcript is every message of the run.
	Transcript []transcript.Entry `json:"transcript,omitempty"`
	// RawTranscript is, for a result read with reports.LazyTranscripts,
	// its transcript as the report holds it, not decoded (Transcript is
	// then nil): a reader that shows a part of a few transcripts decodes
	// that part (transcript.DecodeBounded), however many entries the
	// others hold. Never written.
	RawTranscript []byte `json:"-"`
}

// FullName is "ID[variant]", the name used in reports and known-failing files.
func (r Result) FullName() string { return r.ID + "[" + r.Variant + "]" }

// Failed reports whether r counts as a failure of the rules it broke: a
// fail or a blocked outcome.
func (r Result) Failed() bool { return r.Outcome == Fail || r.Outcome == Blocked }

// Timing is what the harness measured of its own lag while a pair's
// timing verdicts were taken.
type Timing struct {
	// Checks are the pair's timing verdicts, in the order taken (the last
	// run's, when it ran again).
	Checks []TimingCheck `json:"checks,omitempty"`
	// Reruns counts the times the pair ran again by itself because a
	// timing verdict could be explained by the harness's lag.
	Reruns int `json:"reruns,omitempty"`
}

// TimingCheck is one verdict that rests on time.
type TimingCheck struct {
	// Rule is the rule it judges.
	Rule string `json:"rule"`
	// What says in words what was timed.
	What string `json:"what"`
	// Kind is "within" (something had to happen within Limit: Measured is
	// how long it took) or "covers" (a window had to cover Limit of the
	// harness's running time: Measured is the window's length).
	Kind string `json:"kind"`
	// Measured and Limit are as Kind says.
	Measured time.Duration `json:"measured_ns"`
	Limit    time.Duration `json:"limit_ns"`
	// Lag is how much of the window the harness's stalls took: for
	// "within", their total, all of which is allowed for; for "covers",
	// what they took from the window's watching (their total, but no more
	// than a few times the longest, see internal/lag). LagMax is the
	// longest single stall.
	Lag    time.Duration `json:"harness_lag_ns"`
	LagMax time.Duration `json:"harness_lag_max_ns"`
	// Verdict is "pass", "fail" (it stands whatever the lag), "doubt"
	// (the lag could explain it either way), or "short" (a "covers"
	// window about a peer's own timer, Limit, that the run's budget cut to
	// Measured: it proves nothing, and the pair is inconclusive).
	Verdict string `json:"verdict"`
}

// The values of TimingCheck.Kind and TimingCheck.Verdict.
const (
	TimingWithin = "within"
	TimingCovers = "covers"

	TimingPass  = "pass"
	TimingFail  = "fail"
	TimingDoubt = "doubt"
	TimingShort = "short"
)

// The values of Run.Role.
const (
	RoleServer = "server"
	RoleClient = "client"
	RoleBoth   = "both"
)

// Run is a whole run of a suite against one target.
type Run struct {
	// SchemaVersion versions the JSON report layout.
	SchemaVersion string `json:"schema_version"`
	// HarnessVersion is the xdsconform version.
	HarnessVersion string `json:"harness_version"`
	// Role is RoleServer (the target is a management server), RoleClient
	// (the target is an xDS client) or RoleBoth (`xdsconform run`: one
	// suite of each; every result's ID starts with its own role).
	Role string `json:"role"`
	// Target names the target, e.g. "builtin:reference" or "10.0.0.1:18000".
	Target string `json:"target"`
	// Options records the settings that shape verdicts (timeouts, filters).
	Options map[string]string `json:"options"`
	// Implementation describes the target as its maintainers name it
	// (--impl-name and the other implementation flags, or an
	// --implementation file); nil when none was given. The certification
	// and Markdown reports and the compatibility matrix show it.
	Implementation *Implementation `json:"implementation,omitempty"`
	// CatalogueVersion identifies the requirements catalogue the verdicts
	// were judged against (requirements.CatalogueVersion): "sha256:" and
	// the hex digest of the shipped requirements.md. Reports written
	// before it existed omit it.
	CatalogueVersion string `json:"catalogue_version,omitempty"`
	// Started is when the run began.
	Started time.Time `json:"started"`
	// Duration is the wall time of the whole run.
	Duration time.Duration `json:"duration_ns"`
	// Interrupted is true when the run was cut short (Ctrl-C); Results then
	// hold what finished.
	Interrupted bool `json:"interrupted,omitempty"`
	// FailOn is the weakest level whose failures fail the run (empty:
	// SHOULD, the default: MUST and SHOULD failures fail it).
	FailOn Level `json:"fail_on,omitempty"`
	// Results are in pair order (catalogue order, suite by suite), as
	// engine.Run returns them; the report writers sort them by ID then
	// variant.
	Results []Result `json:"results"`
}

// Implementation is what the people who ship a target say it is: the name,
// version and contact that a certification report or a compatibility matrix
// credits the verdicts to. Every field is optional and given by the user;
// none of it shapes a verdict.
type Implementation struct {
	// Name is the project's name, e.g. "my-control-plane".
	Name string `json:"name,omitempty"`
	// Organization is who maintains it.
	Organization string `json:"organization,omitempty"`
	// Version is the version under test, e.g. "v1.4.2" or a commit.
	Version string `json:"version,omitempty"`
	// URL is the project's home page or repository.
	URL string `json:"url,omitempty"`
	// Contact lists who to ask about the results (people, teams, e-mail
	// addresses or issue trackers).
	Contact []string `json:"contact,omitempty"`
	// Capabilities lists the features and variants the implementation
	// claims (e.g. "delta-ads", "xdstp"); the certification report
	// repeats them next to what the run showed.
	Capabilities []string `json:"capabilities,omitempty"`
}

// CheckURL refuses an implementation URL that a page or a certification
// report could not link to safely: anything but an absolute http or https
// URL with a host (a javascript: or data: URL would run, or show, what
// its author chose in whoever follows the link).
func CheckURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", s)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: want an http:// or https:// URL", s)
	case u.Host == "":
		return fmt.Errorf("%q: want an http:// or https:// URL with a host", s)
	}
	return nil
}

// Empty reports whether i says nothing (nil, or every field empty).
func (i *Implementation) Empty() bool {
	return i == nil || (i.Name == "" && i.Organization == "" && i.Version == "" && i.URL == "" &&
		len(i.Contact) == 0 && len(i.Capabilities) == 0)
}

// Merge returns i with every field that o sets replaced by o's: flags over
// a file, the report command's metadata over a report's. Neither is
// changed; the result is nil when both say nothing.
func (i *Implementation) Merge(o *Implementation) *Implementation {
	var m Implementation
	if i != nil {
		m = *i
	}
	if o != nil {
		for _, f := range []struct {
			dst *string
			src string
		}{
			{&m.Name, o.Name}, {&m.Organization, o.Organization}, {&m.Version, o.Version}, {&m.URL, o.URL},
		} {
			if f.src != "" {
				*f.dst = f.src
			}
		}
		if len(o.Contact) > 0 {
			m.Contact = o.Contact
		}
		if len(o.Capabilities) > 0 {
			m.Capabilities = o.Capabilities
		}
	}
	m.Contact, m.Capabilities = slices.Clone(m.Contact), slices.Clone(m.Capabilities)
	if m.Empty() {
		return nil
	}
	return &m
}

// Summary counts results by outcome; each result is counted once.
type Summary struct {
	// Pass counts passes not listed as known-failing (those are stale).
	Pass, Fail, Skip, Error int
	// Unsupported counts MAY behaviours the target does not implement,
	// not listed as known-failing; they never fail the run.
	Unsupported int
	// Blocked counts pairs whose precondition failed, not listed as
	// known-failing and at or above the fail-on level: each is a failure
	// of the rule it was blocked by (Result.BlockedBy).
	Blocked int
	// Inconclusive counts pairs whose timing verdict the harness's own lag
	// could explain even when run again alone; they do not fail the run.
	Inconclusive int
	// Tolerated counts failures (and blocked pairs) whose broken level is
	// below the run's fail-on level: reported, not counted against the run.
	Tolerated int
	// KnownFailing counts failures (and blocked pairs) excused by the
	// known-failing file.
	KnownFailing int
	// StalePasses counts known-failing entries that did not fail (they
	// passed, or the behaviour turned out optional): the file is out of
	// date, which fails the run.
	StalePasses int
	// ByLevel counts outcomes per scenario level.
	ByLevel map[Level]LevelCount
}

// LevelCount is the outcome counts of one level's results. Fail and
// Blocked count every such pair, excused or not; KnownFailing counts
// those of them the known-failing file excused, so that a failure a
// target is known for is never shown as a plain failure, nor hidden. The
// JSON report writes it as is.
type LevelCount struct {
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Blocked      int `json:"blocked"`
	KnownFailing int `json:"known_failing"`
	Unsupported  int `json:"unsupported"`
	Inconclusive int `json:"inconclusive"`
	Skip         int `json:"skipped"`
	Error        int `json:"error"`
}

// DefaultFailOn is the fail-on level when none is given: MUST and SHOULD
// failures fail the run, MAY behaviours are only reported.
const DefaultFailOn = Should

// Summarize counts the outcomes of rs with the default fail-on level.
func Summarize(rs []Result) Summary { return SummarizeFor(rs, DefaultFailOn) }

// SummarizeFor counts the outcomes of rs; failures whose broken level is
// weaker than failOn are Tolerated.
func SummarizeFor(rs []Result, failOn Level) Summary {
	if failOn == "" {
		failOn = DefaultFailOn
	}
	s := Summary{ByLevel: map[Level]LevelCount{}}
	for _, r := range rs {
		lc := s.ByLevel[r.Level]
		switch r.Outcome {
		case Pass:
			lc.Pass++
			if r.KnownFailing != "" {
				s.StalePasses++
			} else {
				s.Pass++
			}
		case Fail, Blocked:
			if r.Outcome == Fail {
				lc.Fail++
			} else {
				lc.Blocked++
			}
			switch {
			case r.KnownFailing != "":
				lc.KnownFailing++
				s.KnownFailing++
			case !r.FailureLevel().AtLeast(failOn):
				s.Tolerated++
			case r.Outcome == Blocked:
				s.Blocked++
			default:
				s.Fail++
			}
		case Inconclusive:
			lc.Inconclusive++
			s.Inconclusive++
		case Unsupported:
			lc.Unsupported++
			if r.KnownFailing != "" {
				s.StalePasses++
			} else {
				s.Unsupported++
			}
		case Skip:
			lc.Skip++
			s.Skip++
		case Error:
			lc.Error++
			s.Error++
		}
		s.ByLevel[r.Level] = lc
	}
	return s
}

// FailureLevel is the level a failure is judged at: the strongest rule it
// broke, or the scenario's level when the rules broken are not known.
func (r Result) FailureLevel() Level {
	if r.BrokenLevel != "" {
		return r.BrokenLevel
	}
	return r.Level
}

// OK reports whether the run should exit 0: no unexcused failure or
// blocked pair, no error, no stale known-failing entry. Inconclusive pairs
// do not fail it: the harness, not the target, could not judge them.
func (s Summary) OK() bool {
	return s.Fail == 0 && s.Blocked == 0 && s.Error == 0 && s.StalePasses == 0
}
