// Package ginkgosuite runs the xdsconform suites as ginkgo specs: one It
// per pair (a scenario in one variant), its text "ID/variant", with
// labels a --label-filter can select on. It lives apart from package
// conformance so that a go test importer links neither ginkgo nor its
// flags.
//
//	var _ = ginkgosuite.DescribeServerSuite(conformance.ServerOptions{
//		Server:           targets.ServerOptions{Target: "127.0.0.1:18000", Fixture: "127.0.0.1:18001"},
//		KnownFailingFile: "known-failing.txt",
//	})
//
// Selecting specs:
//
//	ginkgo --focus 'server/nonce/'                      # by text: a regular expression on the spec's full text
//	ginkgo --label-filter 'MUST && nonce'                # by label
//	ginkgo --label-filter 'NONCE-7 || delta-ads'
//	go test ./... -ginkgo.focus 'server/nonce/' -ginkgo.v   # the same through go test
//
// Each It carries these labels: the role ("server" or "client"), the
// family (the ID's second part: "nonce", "ack", "wildcard", ...), the
// level ("MUST", "SHOULD", "MAY"), the variant ("sotw-ads", ...) and the
// ID of every rule the scenario cites ("NONCE-7"). Label matching is
// case-insensitive.
//
// The specs of a suite sit in one Ordered container, and the pairs do not
// run one spec at a time: the container's BeforeAll starts the target and
// runs together every pair whose It ginkgo will run (as the engine
// schedules them: hundreds at once, mostly waiting), and each It then
// reports its pair's outcome. The pairs BeforeAll runs are those whose
// text (the container texts and the It's) --focus matches and --skip
// does not, and whose labels --label-filter accepts. A spec that runs
// although BeforeAll did not foresee it (a --focus matching only the
// suite description given to RunSpecs, --focus-file) runs its pair on its
// own: correct, only slower.
//
// Outcomes map as in package conformance (docs/outcomes.md): a pass
// passes; a rule broken at or above FailOn fails the spec with the rules,
// their level and the evidence (the transcript's end is written to
// GinkgoWriter), and so does a pair blocked by such a rule (a
// precondition resting on it failed), naming that rule and its level; a
// failure or a blocked pair below FailOn and a MAY rule not met pass with
// a note; an inconclusive pair (the harness's own lag could explain its
// timing verdict) is skipped with the timing figures; a pair that does not
// apply is skipped with the reason; a known failure is skipped with
// "known failure: " and its reason; a stale known-failing entry fails; an
// error fails saying so. ginkgo's --fail-fast stops the reporting, not the
// run: the pairs have all run in BeforeAll by then. A target that cannot
// be reached fails BeforeAll, and so every spec of the container. A target
// that died during the run, a run in which nothing could run, or a report
// that could not be written fail the container's cleanup.
package ginkgosuite

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/xdsconform/xdsconform/conformance"
)

// DescribeServerSuite declares the server suite against opts.Server as a
// container "xdsconform server suite" of specs, one per pair; call it at
// the top level of a spec file (var _ = ...) or in a container. args are
// passed to the container (Label("conformance"), say). Options that cannot
// be used fail the container's one spec, "options", with the cause.
func DescribeServerSuite(opts conformance.ServerOptions, args ...any) bool {
	s, err := conformance.NewServerSuite(opts)
	return describe("xdsconform server suite", s, err, args)
}

// DescribeClientSuite declares the client suite against opts.Client, as
// DescribeServerSuite declares the server suite.
func DescribeClientSuite(opts conformance.ClientOptions, args ...any) bool {
	s, err := conformance.NewClientSuite(opts)
	return describe("xdsconform client suite", s, err, args)
}

// describe declares the container of suite s (or of err, when the options
// could not make one).
func describe(text string, s *conformance.Suite, err error, args []any) bool {
	if err != nil {
		return Describe(text, append(args, func() {
			It("options", func() { Fail(err.Error()) })
		})...)
	}
	r := &runner{s: s, outcomes: map[string]conformance.Outcome{}}
	pairs := s.Pairs()
	args = append([]any{Ordered, ContinueOnFailure}, args...)
	return Describe(text, append(args, func() {
		BeforeAll(func(ctx SpecContext) {
			r.start(ctx)
			DeferCleanup(r.finish)
			r.runForeseen(ctx, pairs)
		})
		for _, p := range pairs {
			It(p.Name, Label(PairLabels(p)...), func(ctx SpecContext) {
				r.report(ctx, p)
			})
		}
	})...)
}

// PairLabels are the ginkgo labels of a pair: its role, family, level,
// variant and the rules it cites.
func PairLabels(p conformance.Pair) []string {
	ls := []string{p.Role(), p.Family(), string(p.Level), p.Variant}
	for _, r := range p.Requirements {
		if !slices.Contains(ls, r) {
			ls = append(ls, r)
		}
	}
	return ls
}

// runner runs one container's suite.
type runner struct {
	s *conformance.Suite
	// ctx lives as long as the target: a SpecContext ends with its node,
	// and a target started in-process stops with the context it was
	// started with.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	outcomes map[string]conformance.Outcome
}

// start starts the target; a failure fails BeforeAll, and so every spec.
func (r *runner) start(spec context.Context) {
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	stop := context.AfterFunc(spec, func() { r.cancel(errInterrupted) })
	defer stop()
	if err := r.s.Start(r.ctx); err != nil {
		r.cancel(err)
		Fail("conformance: " + err.Error())
	}
}

// errInterrupted is the cause of a run ginkgo interrupted (Ctrl-C, its
// --timeout, a NodeTimeout).
var errInterrupted = errors.New("ginkgo interrupted the suite")

// finish stops the target and writes the reports.
func (r *runner) finish() {
	defer r.cancel(nil)
	if err := r.s.Finish(); err != nil {
		Fail("conformance: " + err.Error())
	}
}

// runForeseen runs, together, the pairs whose specs ginkgo will run.
func (r *runner) runForeseen(spec context.Context, pairs []conformance.Pair) {
	report := CurrentSpecReport()
	cfg, _ := GinkgoConfiguration()
	var names []string
	for _, p := range pairs {
		if willRun(cfg, report.ContainerHierarchyTexts, report.ContainerHierarchyLabels, p) {
			names = append(names, p.Name)
		}
	}
	r.run(spec, names)
}

// run runs names and keeps their outcomes; ginkgo's interrupt of the
// node running it stops the run.
func (r *runner) run(spec context.Context, names []string) {
	if len(names) == 0 {
		return
	}
	stop := context.AfterFunc(spec, func() { r.cancel(errInterrupted) })
	defer stop()
	if err := r.s.Run(r.ctx, names, func(o conformance.Outcome) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.outcomes[o.Pair.Name] = o
	}); err != nil {
		Fail("conformance: " + err.Error())
	}
}

// report ends the spec of p with its pair's outcome, running the pair
// now if BeforeAll did not.
func (r *runner) report(spec context.Context, p conformance.Pair) {
	r.mu.Lock()
	o, ok := r.outcomes[p.Name]
	r.mu.Unlock()
	if !ok {
		r.run(spec, []string{p.Name})
		r.mu.Lock()
		o = r.outcomes[p.Name]
		r.mu.Unlock()
	}
	if o.Stopped {
		Fail("did not finish: " + context.Cause(r.ctx).Error())
	}
	v := r.s.Verdict(o)
	switch v.Kind {
	case conformance.Passed:
		if v.Headline != "" {
			GinkgoWriter.Println(v.Headline + "\n" + v.Details)
		}
	case conformance.Failed:
		if v.Transcript != "" {
			GinkgoWriter.Println(v.Transcript)
		}
		Fail(v.Headline + "\n" + v.Details)
	case conformance.Skipped:
		if v.Details != "" {
			GinkgoWriter.Println(v.Details)
		}
		Skip(v.Headline)
	}
}

// willRun foresees whether ginkgo runs the spec of p, in containers of
// texts and labels, under cfg: --label-filter, --focus and --skip, as
// ginkgo applies them (internal/focus.go), but for the suite description
// and labels, which a spec cannot see.
func willRun(cfg types.SuiteConfig, texts []string, labels [][]string, p conformance.Pair) bool {
	text := strings.Join(append(slices.Clone(texts), p.Name), " ")
	if cfg.LabelFilter != "" {
		filter, err := types.ParseLabelFilter(cfg.LabelFilter)
		if err == nil {
			var all []string
			for _, ls := range labels {
				all = append(all, ls...)
			}
			if !filter(append(all, PairLabels(p)...)) {
				return false
			}
		}
	}
	if len(cfg.FocusStrings) > 0 {
		re, err := regexp.Compile(strings.Join(cfg.FocusStrings, "|"))
		if err == nil && !re.MatchString(text) {
			return false
		}
	}
	if len(cfg.SkipStrings) > 0 {
		re, err := regexp.Compile(strings.Join(cfg.SkipStrings, "|"))
		if err == nil && re.MatchString(text) {
			return false
		}
	}
	return true
}
