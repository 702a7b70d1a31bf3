package conformance

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// Suite is a suite ready to run against one target: its options checked
// and its pairs listed. RunServerSuite and RunClientSuite are built on it,
// and so is package ginkgosuite; another test framework can be too: Start
// the target, Run the pairs its own selection keeps, Finish.
//
// A Suite is used once: Start, then Run (as often as needed, each pair at
// most once), then Finish.
type Suite struct {
	common
	pairs  []engine.Pair
	byName map[string]int

	// start starts or reaches the target and returns its environment.
	start func(ctx context.Context) (*started, error)
	// options are the suite's own settings for the report.
	options map[string]string

	mu      sync.Mutex
	target  *started
	ran     []results.Result
	runIdx  []int
	done    []bool
	began   time.Time
	stopped bool
}

// started is a target the suite has started or reached.
type started struct {
	name        string
	env         engine.Env
	maxParallel int
	died        func() error
	close       func()
	// options are what the target adds to the report's options.
	options map[string]string
}

// Pair is one scenario in one variant, as a test framework names and
// labels it.
type Pair struct {
	// Name is "ID/variant", the pair's subtest name: go test's -run
	// selects it ("TestConformance/server/nonce/.*"), since testing
	// splits names on "/".
	Name string
	// ID is the scenario ID, "<role>/<area>/<behaviour>".
	ID string
	// Variant is the variant, e.g. "sotw-ads".
	Variant string
	// Title says in one line what must hold.
	Title string
	// Level is the scenario's level (its headline rule's).
	Level results.Level
	// Requirements are the rules the scenario checks, its headline rule
	// first.
	Requirements []string
}

// Role is "server" or "client", the first part of the ID.
func (p Pair) Role() string { role, _, _ := strings.Cut(p.ID, "/"); return role }

// Family is the scenario's area, the second part of the ID ("nonce" in
// "server/nonce/distinct").
func (p Pair) Family() string {
	parts := strings.SplitN(p.ID, "/", 3)
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

// FullName is "ID[variant]", the form `xdsconform --run` takes and the
// reports print.
func (p Pair) FullName() string { return p.ID + "[" + p.Variant + "]" }

func pairOf(p engine.Pair) Pair {
	s := p.Scenario
	return Pair{Name: s.ID + "/" + p.Variant.String(), ID: s.ID, Variant: p.Variant.String(), Title: s.Title,
		Level: s.Level, Requirements: slices.Clone(s.Requirements)}
}

// NewServerSuite checks opts and lists the pairs they select. Nothing is
// started yet: Start reaches the server. An error wraps ErrOptions when
// the options cannot be used as given.
func NewServerSuite(opts ServerOptions) (*Suite, error) {
	c := common{role: results.RoleServer, catalogue: opts.Scenarios, failOn: opts.FailOn,
		sel:   engine.Selection{Run: opts.Run, Skip: opts.Skip, Levels: opts.Levels, Variants: opts.Variants},
		known: opts.KnownFailing, knownFile: opts.KnownFailingFile, timeouts: opts.Timeouts, parallel: opts.Parallel,
		json: opts.JSONReport, junit: opts.JUnitReport, transcripts: opts.Transcripts, impl: opts.Implementation}
	if c.catalogue == nil {
		c.catalogue = scenarios.Server()
	}
	if opts.Server.Target == "" {
		return nil, optionsError("Server.Target is required (the xDS address, HOST:PORT)")
	}
	if err := c.check(func() (*engine.KnownFailing, error) { return knownfailing.For(opts.Server.Target) }); err != nil {
		return nil, err
	}
	srvOpts := opts.Server
	s := &Suite{common: c, start: func(ctx context.Context) (*started, error) {
		// A target that echoes a token back (in a status, a NACK detail,
		// a resource) must not put it in a log or a report.
		transcript.RememberHeaders(srvOpts.Metadata)
		srv, err := targets.StartServer(ctx, srvOpts)
		if err != nil {
			return nil, err
		}
		st := &started{name: srv.Name, env: srv, died: srv.Died, close: srv.Close}
		if found := srv.Services(); found != nil {
			st.options = map[string]string{"target_serves": found.String()}
		}
		return st, nil
	}}
	return s, s.expand()
}

// NewClientSuite checks opts and lists the pairs they select. Nothing is
// started yet: Start checks that the client can be launched (or, with
// Client.Wait, is awaited). An error wraps ErrOptions when the options
// cannot be used as given.
func NewClientSuite(opts ClientOptions) (*Suite, error) {
	c := common{role: results.RoleClient, catalogue: opts.Scenarios, failOn: opts.FailOn,
		sel:   engine.Selection{Run: opts.Run, Skip: opts.Skip, Levels: opts.Levels, Variants: opts.Variants},
		known: opts.KnownFailing, knownFile: opts.KnownFailingFile, timeouts: opts.Timeouts, parallel: opts.Parallel,
		json: opts.JSONReport, junit: opts.JUnitReport, transcripts: opts.Transcripts, impl: opts.Implementation}
	if c.catalogue == nil {
		c.catalogue = scenarios.Client()
	}
	if err := c.check(func() (*engine.KnownFailing, error) { return knownfailing.ForClient(opts.Client.Target) }); err != nil {
		return nil, err
	}
	clients, err := targets.NewClients(opts.Client)
	if err != nil {
		return nil, optionsError("Client: %v", err)
	}
	// The client's does-not-exist timer must fit the waits, as the CLI
	// checks it: a quiet window as long as the timer would watch the
	// timer itself, and a pair bound shorter than it would cut the timer
	// scenarios short.
	dne := clients.Options().DNETimer
	if c.timeouts.Quiet >= dne {
		return nil, optionsError("Timeouts.Quiet (%v) must be shorter than Client.DNETimer (%v)", c.timeouts.Quiet, dne)
	}
	if need := dne + 2*c.timeouts.Expect; c.timeouts.Scenario < need {
		return nil, optionsError("Timeouts.Scenario (%v) must be at least Client.DNETimer + 2 × Timeouts.Expect (%v)", c.timeouts.Scenario, need)
	}
	s := &Suite{common: c, start: func(ctx context.Context) (*started, error) {
		if err := clients.Preflight(ctx); err != nil {
			return nil, fmt.Errorf("%w: %w", targets.ErrUnreachable, err)
		}
		return &started{name: clients.Name(), env: clients, maxParallel: clients.MaxParallel(), died: clients.Died, close: func() {}}, nil
	}, options: map[string]string{"dne_timer": dne.String(), "client_profile": clients.Options().Profile}}
	return s, s.expand()
}

// expand lists the selected pairs.
func (s *Suite) expand() error {
	pairs, err := engine.Expand(s.catalogue, s.sel)
	if err != nil {
		return optionsError("%v", err)
	}
	s.pairs = pairs
	s.byName = make(map[string]int, len(pairs))
	for i, p := range pairs {
		s.byName[pairOf(p).Name] = i
	}
	s.done = make([]bool, len(pairs))
	return nil
}

// Role is "server" or "client".
func (s *Suite) Role() string { return s.role }

// Pairs lists the pairs the options select, in catalogue and variant
// order.
func (s *Suite) Pairs() []Pair {
	out := make([]Pair, len(s.pairs))
	for i, p := range s.pairs {
		out[i] = pairOf(p)
	}
	return out
}

// Start checks the report paths (removing reports a previous run left
// there) and starts or reaches the target. An error wrapping
// targets.ErrUnreachable means the target could not be reached; any other
// means it cannot be used as configured.
func (s *Suite) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target != nil {
		return errors.New("suite already started")
	}
	if err := reports.Prepare(s.junit, s.json); err != nil {
		return optionsError("%v", err)
	}
	st, err := s.start(ctx)
	if err != nil {
		return fmt.Errorf("%s target: %w", s.role, err)
	}
	s.target = st
	s.began = time.Now()
	return nil
}

// Outcome is what came of one pair.
type Outcome struct {
	// Pair is the pair.
	Pair Pair
	// Result is the engine's result, known-failing list applied.
	Result results.Result
	// Stopped says that Run's context ended before the pair finished:
	// it was cut short or never started, and Result is an error saying
	// so. The caller knows why it ended the run, and whether that is a
	// failure (a deadline) or not (-failfast after another failure).
	Stopped bool
}

// Run runs the named pairs (Pair.Name) together, as the engine schedules
// them: the shared pairs at once (up to Parallel), then the Timed ones,
// then the Alone ones, one at a time. deliver is called once for every
// name, as its pair finishes, from several goroutines at once; a pair
// that ctx ended before it could start is delivered at the end with an
// error result giving context.Cause(ctx). Run returns once every name
// has been delivered. An unknown name, or one already run, is an error,
// and nothing runs then.
func (s *Suite) Run(ctx context.Context, names []string, deliver func(Outcome)) error {
	s.mu.Lock()
	st := s.target
	idx := make([]int, 0, len(names))
	var bad []string
	for _, n := range names {
		i, ok := s.byName[n]
		if !ok || s.done[i] || slices.Contains(idx, i) {
			bad = append(bad, n)
			continue
		}
		idx = append(idx, i)
	}
	if st == nil || len(bad) > 0 {
		s.mu.Unlock()
		if st == nil {
			return errors.New("Run before Start")
		}
		return fmt.Errorf("not a pair of this suite, or run already: %s", strings.Join(bad, ", "))
	}
	for _, i := range idx {
		s.done[i] = true
	}
	s.mu.Unlock()
	slices.Sort(idx) // catalogue order, as the engine and the reports expect
	pairs := make([]engine.Pair, len(idx))
	at := make(map[string]int, len(idx))
	for k, i := range idx {
		pairs[k] = s.pairs[i]
		at[s.pairs[i].FullName()] = i
	}
	parallel := s.parallel
	if st.maxParallel > 0 {
		parallel = min(parallel, st.maxParallel)
	}
	var dmu sync.Mutex
	delivered := make(map[int]bool, len(idx))
	rs, _ := engine.Run(ctx, pairs, engine.Config{
		Env: st.env, Timeouts: s.timeouts, Parallel: parallel, KnownFailing: s.known,
		Progress: func(r results.Result) {
			i := at[r.FullName()]
			stopped := ctx.Err() != nil && r.Outcome == results.Error
			if stopped {
				r.Message += " (" + context.Cause(ctx).Error() + ")"
			}
			dmu.Lock()
			delivered[i] = true
			dmu.Unlock()
			deliver(Outcome{Pair: pairOf(s.pairs[i]), Result: r, Stopped: stopped})
		},
	})
	// The engine returns only the pairs that started; the rest are told
	// why they did not.
	var notRun []results.Result
	for _, i := range idx {
		if delivered[i] {
			continue
		}
		p := s.pairs[i]
		r := results.Result{ID: p.Scenario.ID, Variant: p.Variant.String(), Title: p.Scenario.Title,
			Requirements: slices.Clone(p.Scenario.Requirements), Level: p.Scenario.Level,
			Outcome: results.Error, Message: "not run: " + causeOf(ctx)}
		notRun = append(notRun, r)
		deliver(Outcome{Pair: pairOf(p), Result: r, Stopped: true})
	}
	s.mu.Lock()
	s.ran = append(s.ran, rs...)
	s.ran = append(s.ran, notRun...)
	s.mu.Unlock()
	return nil
}

// causeOf says why ctx ended, or that it did not.
func causeOf(ctx context.Context) string {
	if err := context.Cause(ctx); err != nil {
		return err.Error()
	}
	return "the engine did not start it"
}

// Verdict is how a test framework reports an outcome (see Suite.Verdict).
func (s *Suite) Verdict(o Outcome) Verdict { return verdictOf(o.Result, s.failOn) }

// Finish stops the target and writes the report files (when any pair
// ran). Its error is about the run as a whole, each cause on a line of
// its own: the target died during it, every pair that ran was skipped
// (nothing was checked, which is never a pass), or a report could not be
// written. A Suite that never started finishes with nil.
func (s *Suite) Finish() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.target == nil || s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if died := s.target.died(); died != nil {
		errs = append(errs, fmt.Errorf("the target died during the run, so the pairs after it errored: %w", died))
	}
	s.target.close()
	if len(s.ran) == 0 {
		return errors.Join(errs...)
	}
	rs := s.ordered()
	if verdict.NoneRan(rs) {
		errs = append(errs, fmt.Errorf("nothing could run: %s skipped: %s", wording.N(len(rs), "selected pair"), verdict.CommonestSkips(rs)))
	}
	if s.json != "" || s.junit != "" {
		run := s.report(rs)
		if err := reports.WriteFiles(reports.WithTranscripts(run, s.transcripts), s.junit, s.json); err != nil {
			errs = append(errs, fmt.Errorf("write reports: %w", err))
		}
	}
	return errors.Join(errs...)
}

// ordered is what ran, in catalogue and variant order; s.mu held.
func (s *Suite) ordered() []results.Result {
	rs := slices.Clone(s.ran)
	pos := func(r results.Result) int {
		return s.byName[r.ID+"/"+r.Variant]
	}
	slices.SortStableFunc(rs, func(a, b results.Result) int { return pos(a) - pos(b) })
	return rs
}

// report is the run as the report files record it; s.mu held.
func (s *Suite) report(rs []results.Result) results.Run {
	join := func(ss []string) string { return strings.Join(ss, ",") }
	var levels, variants []string
	for _, l := range s.sel.Levels {
		levels = append(levels, string(l))
	}
	for _, v := range s.sel.Variants {
		variants = append(variants, v.String())
	}
	run := results.Run{
		SchemaVersion:  reports.JSONSchemaVersion,
		HarnessVersion: harnessVersion(),
		Role:           s.role,
		Target:         s.target.name,
		Started:        s.began.UTC(),
		Duration:       time.Since(s.began),
		FailOn:         s.failOn,
		Options: map[string]string{
			"timeout": s.timeouts.Expect.String(), "quiet": s.timeouts.Quiet.String(), "scenario_timeout": s.timeouts.Scenario.String(), "prompt": s.timeouts.Prompt.String(),
			"timer_budget": s.timeouts.TimerBudget.String(),
			"run":          join(s.sel.Run), "skip": join(s.sel.Skip), "level": join(levels), "variant": join(variants),
			"known_failing": s.knownFile, "parallel": strconv.Itoa(s.parallel), "fail_on": string(s.failOn),
			"runner": "package conformance",
		},
		Implementation:   s.impl,
		CatalogueVersion: requirements.CatalogueVersion(),
		Results:          rs,
	}
	for k, v := range s.options {
		run.Options[k] = v
	}
	for k, v := range s.target.options {
		run.Options[k] = v
	}
	return run
}

// modulePath is this module's path, to find its version in a build.
const modulePath = "github.com/xdsconform/xdsconform"

// harnessVersion is the version of this module in the running test
// binary: the version an importer's go.mod requires, or the stamped
// revision of a build in this module itself.
func harnessVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	for _, d := range info.Deps {
		if d.Path == modulePath {
			if d.Replace != nil {
				return d.Version + " (replaced by " + d.Replace.Path + " " + d.Replace.Version + ")"
			}
			return d.Version
		}
	}
	if info.Main.Path == modulePath && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	for _, kv := range info.Settings {
		if kv.Key == "vcs.revision" {
			return "devel-" + kv.Value[:min(12, len(kv.Value))]
		}
	}
	return "devel (built in " + modulePath + " without VCS stamping)"
}
