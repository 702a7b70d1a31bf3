// Package certify builds the certification report: a YAML document, with a
// versioned schema modelled on the Gateway API's ConformanceReport, that a
// vendor publishes to say which rules of the requirements catalogue an
// implementation passes, level by level and variant by variant, with the
// failures it claims as known and a content hash of the JSON reports it
// was built from.
//
// The verdicts come from reports/verdict, the same arithmetic the Markdown
// summary and the compatibility matrix use. A rule passes only when every
// pair citing it passed in every variant it ran in (see verdict.Rules).
// A profile's result is Gateway API's success, partial or failure, and no
// failure of a rule, excused or not, leaves it at success (see
// ProfileResult); docs/reports.md and docs/outcomes.md say how each pair
// outcome counts.
package certify

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
)

// The report's type, as Kubernetes-style documents name theirs. A change
// that is not backwards compatible gets a new APIVersion, and the schema
// of the one before is kept beside this one (certification.v1alpha1.schema.json).
// v1alpha2 made a profile's result success, partial or failure (it was
// pass or fail, and pass whatever the known-failing file excused), counts
// blocked and inconclusive pairs, lists the excused failed rules of each
// level, and names the target only by what a reader can use.
const (
	APIVersion = "xdsconform.io/v1alpha2"
	Kind       = "ConformanceReport"
)

// Schema is the JSON Schema (draft 2020-12) of the report, for tools that
// validate a published one; the YAML is checked against it as JSON.
//
//go:embed certification.schema.json
var Schema []byte

// Report is the certification report. Field order is the YAML's.
type Report struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Date is when the earliest of the runs began, RFC 3339 in UTC.
	Date           string         `yaml:"date"`
	Implementation Implementation `yaml:"implementation"`
	// Capabilities are the features and variants the implementation
	// claims, as given; Profiles say what the runs showed.
	Capabilities []string `yaml:"capabilities,omitempty,flow"`
	// HarnessVersion is the xdsconform version that ran the suites (each
	// distinct one, comma-separated, when the reports differ).
	HarnessVersion string `yaml:"harnessVersion"`
	// CatalogueVersion names the requirements catalogue the verdicts were
	// judged against (requirements.CatalogueVersion).
	CatalogueVersion string `yaml:"catalogueVersion"`
	// Profiles has one entry per role that ran: server, then client.
	Profiles []Profile `yaml:"profiles"`
	Evidence Evidence  `yaml:"evidence"`
}

// Implementation names what was tested, as Gateway API's report does.
type Implementation struct {
	Organization string   `yaml:"organization,omitempty"`
	Project      string   `yaml:"project"`
	URL          string   `yaml:"url,omitempty"`
	Version      string   `yaml:"version,omitempty"`
	Contact      []string `yaml:"contact,omitempty"`
}

// Profile is one role's results: the server suite (the implementation is
// a management server) or the client suite (an xDS client).
type Profile struct {
	Role string `yaml:"role"`
	// Target is what the runs of this role ran against, as a reader can
	// use it: a built-in or container target, or a public address. A
	// private address (127.0.0.1:18000, where a vendor's test build
	// listened) is left out: the implementation block names what was
	// tested, and the JSON reports of the evidence keep the address
	// (verdict.PrivateTarget).
	Target string `yaml:"target,omitempty"`
	// FailOn is the weakest level whose failures failed the run.
	FailOn results.Level `yaml:"failOn"`
	// Result is ProfileResult's: "success", "partial" or "failure".
	Result string `yaml:"result"`
	// Interrupted is set when a run was cut short: its verdicts cover
	// only what finished.
	Interrupted bool `yaml:"interrupted,omitempty"`
	// Selection lists the options that narrowed a run to part of the
	// catalogue (--run, --skip, --level, --variant), as "flag=value":
	// a profile with a selection certifies only what it selected.
	Selection []string `yaml:"selection,omitempty,flow"`
	// Variants are those in which at least one pair ran; Skipped those
	// in which every pair was skipped (the target does not serve or
	// speak them, or they were not selected).
	Variants        []string   `yaml:"variants,flow"`
	SkippedVariants []string   `yaml:"skippedVariants,omitempty,flow"`
	Pairs           PairCounts `yaml:"pairs"`
	// Rules are the rules' verdicts over every variant: a rule passes
	// only if it passed in each variant it ran in.
	Rules Levels `yaml:"rules"`
	// ByVariant has the same per variant, in report order.
	ByVariant []VariantRules `yaml:"byVariant"`
	// KnownFailing lists the failures the run's known-failing file
	// excused, with the reason given there: what the vendor claims as
	// known, not hidden. Each also fails its rules above.
	KnownFailing []Claim `yaml:"knownFailing,omitempty"`
}

// PairCounts counts a role's (scenario × variant) pairs by class, as the
// console summary does.
type PairCounts struct {
	Total        int `yaml:"total"`
	Passed       int `yaml:"passed"`
	Failed       int `yaml:"failed"`
	Blocked      int `yaml:"blocked"`
	Warned       int `yaml:"warned"`
	KnownFailing int `yaml:"knownFailing"`
	Stale        int `yaml:"stale"`
	Unsupported  int `yaml:"unsupported"`
	Inconclusive int `yaml:"inconclusive"`
	Skipped      int `yaml:"skipped"`
	Errored      int `yaml:"errored"`
}

// Levels holds the rules by catalogue level.
type Levels struct {
	Must   LevelRules `yaml:"MUST"`
	Should LevelRules `yaml:"SHOULD"`
	May    LevelRules `yaml:"MAY"`
}

// LevelRules is the verdict of one level's rules.
type LevelRules struct {
	// Result is "success" when every rule that ran passed (a MAY rule
	// may be unsupported), "failure" when one failed (excused as known
	// failing or not: KnownFailing says which were), "partial" when none
	// failed but one was inconclusive (or unsupported, above MAY), and
	// "skipped" when none ran.
	Result     string     `yaml:"result"`
	Statistics Statistics `yaml:"statistics,flow"`
	// The rule IDs of each status, in catalogue order.
	Passed []string `yaml:"passed,omitempty,flow"`
	Failed []string `yaml:"failed,omitempty,flow"`
	// KnownFailing are the rules of Failed every failure of which the
	// known-failing file excused: failed all the same, and said so, so
	// that a level with an excused failure never reads as a success.
	KnownFailing []string `yaml:"knownFailing,omitempty,flow"`
	Unsupported  []string `yaml:"unsupported,omitempty,flow"`
	Inconclusive []string `yaml:"inconclusive,omitempty,flow"`
	Skipped      []string `yaml:"skipped,omitempty,flow"`
}

// Statistics counts a level's rules by status; KnownFailing counts those
// of Failed that were excused.
type Statistics struct {
	Passed       int `yaml:"passed"`
	Failed       int `yaml:"failed"`
	KnownFailing int `yaml:"knownFailing"`
	Unsupported  int `yaml:"unsupported"`
	Inconclusive int `yaml:"inconclusive"`
	Skipped      int `yaml:"skipped"`
}

// VariantRules is the rules' verdicts in one variant.
type VariantRules struct {
	Variant string `yaml:"variant"`
	Rules   Levels `yaml:"rules"`
}

// Claim is one known-failing failure (or blocked pair).
type Claim struct {
	// Pair is "ID[variant]", as --run and known-failing files write it.
	Pair  string        `yaml:"pair"`
	Level results.Level `yaml:"level"`
	Rules []string      `yaml:"rules,omitempty,flow"`
	// BlockedBy is set when the pair was blocked: a precondition resting
	// on that rule failed, and the pair counts as its failure.
	BlockedBy string `yaml:"blockedBy,omitempty"`
	Reason    string `yaml:"reason"`
}

// Evidence identifies the JSON reports the certification was built from.
type Evidence struct {
	// SHA256 is the hex SHA-256 of the reports' own SHA-256 digests (32
	// bytes each), sorted, concatenated: one value for the set, whatever
	// order the reports were given in.
	SHA256  string           `yaml:"sha256"`
	Reports []EvidenceReport `yaml:"reports"`
}

// EvidenceReport is one JSON report and its hex SHA-256.
type EvidenceReport struct {
	File   string `yaml:"file"`
	SHA256 string `yaml:"sha256"`
}

// Input is one JSON report: its name (a file name, as given), its bytes'
// SHA-256 and what it holds.
type Input struct {
	File   string
	SHA256 [sha256.Size]byte
	Run    results.Run
}

// Build makes the certification report of inputs. impl, when not nil,
// overrides the implementation the reports name, field by field (the
// report command's flags). Reports that name different implementations
// are refused whatever impl says: one certification report is one
// implementation's evidence, never another's renamed. One of the reports,
// or impl, must name it; the reports must agree on the catalogue version.
func Build(inputs []Input, impl *results.Implementation) (Report, error) {
	if len(inputs) == 0 {
		return Report{}, errors.New("no report to certify")
	}
	var named *results.Implementation
	var date time.Time
	var harness, catalogues []string
	for _, in := range inputs {
		run := in.Run
		name, version := verdict.Implementation(run)
		i := run.Implementation
		if i.Empty() && name != "" {
			// The e2e suite's reports name their peer in options.
			i = &results.Implementation{Name: name, Version: version}
		}
		switch {
		case i.Empty():
		case named == nil:
			named = i
		case named.Name != i.Name:
			return Report{}, fmt.Errorf("the reports name different implementations (%q in %s, %q before it): certify each from its own reports", i.Name, in.File, named.Name)
		}
		if date.IsZero() || run.Started.Before(date) {
			date = run.Started
		}
		harness = appendNew(harness, run.HarnessVersion)
		catalogues = appendNew(catalogues, run.CatalogueVersion)
	}
	merged := named.Merge(impl)
	if merged == nil || merged.Name == "" {
		return Report{}, errors.New("no implementation name: give --impl-name or --implementation FILE (or record it in the run with the same flags)")
	}
	catalogue := requirements.CatalogueVersion()
	switch {
	case len(catalogues) > 1:
		return Report{}, fmt.Errorf("the reports were judged against different requirements catalogues (%s): certify each apart", strings.Join(catalogues, ", "))
	case len(catalogues) == 1:
		catalogue = catalogues[0]
	}
	rep := Report{
		APIVersion: APIVersion, Kind: Kind,
		Date: date.UTC().Format(time.RFC3339),
		Implementation: Implementation{Organization: merged.Organization, Project: merged.Name, URL: merged.URL,
			Version: merged.Version, Contact: merged.Contact},
		Capabilities:     merged.Capabilities,
		HarnessVersion:   strings.Join(harness, ", "),
		CatalogueVersion: catalogue,
		Evidence:         evidence(inputs),
	}
	for _, role := range []string{verdict.Server, verdict.Client} {
		var parts []results.Run
		for _, in := range inputs {
			for _, part := range verdict.SplitRoles(in.Run) {
				if part.Role == role {
					parts = append(parts, part)
				}
			}
		}
		if len(parts) > 0 {
			rep.Profiles = append(rep.Profiles, profile(role, parts))
		}
	}
	if len(rep.Profiles) == 0 {
		return Report{}, errors.New("the reports hold no result of the server or client suite")
	}
	return rep, nil
}

// selectionOptions are the run options (as the suite commands record
// them) that select part of the catalogue.
var selectionOptions = []string{"run", "skip", "level", "variant"}

// The values of Profile.Result, as Gateway API's conformance report has
// them.
const (
	Success = "success"
	Partial = "partial"
	Failure = "failure"
)

// ProfileResult is a role's result over its runs, whose rules' verdicts
// (over every variant) are rules:
//
//   - failure: a run did not exit 0 — a failure or a blocked pair at or
//     above its fail-on level that the known-failing file did not excuse,
//     an error, a stale known-failing entry — or was interrupted, or no
//     pair of the role ran at all. A MUST rule failed and not excused is
//     always this: --fail-on is never weaker than MUST.
//   - partial: every run exited 0, but some rule did not pass: it failed
//     (every failure of it excused as known failing, or below the fail-on
//     level), it is inconclusive (a pair citing it was blocked by another
//     rule, failed on another rule, or was inconclusive for the harness's
//     own lag), or a MUST or SHOULD rule showed unsupported.
//   - success: every run exited 0 and every rule that ran passed (a MAY
//     rule may be unsupported).
//
// So a known failure of a MUST rule never leaves a profile at success:
// the run's exit status excuses it, the certification says so.
func ProfileResult(runs []results.Run, rules Levels) string {
	var rs []results.Result
	for _, run := range runs {
		if run.Interrupted || !results.SummarizeFor(run.Results, run.FailOn).OK() {
			return Failure
		}
		rs = append(rs, run.Results...)
	}
	if verdict.NoneRan(rs) {
		return Failure
	}
	for _, l := range []LevelRules{rules.Must, rules.Should, rules.May} {
		if l.Result == Failure || l.Result == Partial {
			return Partial
		}
	}
	return Success
}

// profile is one role's part of the report, from every run of that role.
func profile(role string, runs []results.Run) Profile {
	p := Profile{Role: role, FailOn: runs[0].FailOn}
	if p.FailOn == "" {
		p.FailOn = results.DefaultFailOn
	}
	var targets []string
	var rs []results.Result
	for _, run := range runs {
		// A certification always names its implementation (Build refuses
		// one that does not), so a private address is never what it
		// credits, whether the run or the report command named it.
		if !verdict.PrivateTarget(run.Target) {
			targets = appendNew(targets, run.Target)
		}
		rs = append(rs, run.Results...)
		p.Interrupted = p.Interrupted || run.Interrupted
		for _, opt := range selectionOptions {
			if v := run.Options[opt]; v != "" {
				p.Selection = appendNew(p.Selection, "--"+opt+"="+v)
			}
		}
		for _, r := range run.Results {
			if verdict.Classify(r, run.FailOn) == verdict.ClassKnownFailing {
				c := Claim{Pair: r.FullName(), Level: r.FailureLevel(), Rules: r.RulesBroken, Reason: r.KnownFailing}
				if r.Outcome == results.Blocked {
					c.BlockedBy = r.BlockedBy
				}
				p.KnownFailing = append(p.KnownFailing, c)
			}
		}
		s := results.SummarizeFor(run.Results, run.FailOn)
		p.Pairs.Total += len(run.Results)
		p.Pairs.Passed += s.Pass
		p.Pairs.Failed += s.Fail
		p.Pairs.Blocked += s.Blocked
		p.Pairs.Warned += s.Tolerated
		p.Pairs.KnownFailing += s.KnownFailing
		p.Pairs.Stale += s.StalePasses
		p.Pairs.Unsupported += s.Unsupported
		p.Pairs.Inconclusive += s.Inconclusive
		p.Pairs.Skipped += s.Skip
		p.Pairs.Errored += s.Error
	}
	p.Target = strings.Join(targets, "; ")
	slices.SortFunc(p.KnownFailing, func(a, b Claim) int { return strings.Compare(a.Pair, b.Pair) })
	p.Rules = levels(verdict.Rules(rs))
	p.Result = ProfileResult(runs, p.Rules)
	p.Variants = []string{}
	for _, v := range verdict.Variants(rs) {
		var in []results.Result
		ran := false
		for _, r := range rs {
			if r.Variant == v {
				in = append(in, r)
				ran = ran || r.Outcome != results.Skip
			}
		}
		if !ran {
			p.SkippedVariants = append(p.SkippedVariants, v)
			continue
		}
		p.Variants = append(p.Variants, v)
		p.ByVariant = append(p.ByVariant, VariantRules{Variant: v, Rules: levels(verdict.Rules(in))})
	}
	return p
}

// levels sorts rule verdicts into their levels. A rule at a level the
// catalogue lacks (a hand-made report's) counts as MAY, the weakest.
func levels(rules []verdict.Rule) Levels {
	var l Levels
	for _, r := range rules {
		lr := &l.May
		switch r.Level {
		case results.Must:
			lr = &l.Must
		case results.Should:
			lr = &l.Should
		}
		switch r.Status {
		case verdict.Passed:
			lr.Passed = append(lr.Passed, r.ID)
		case verdict.Failed:
			lr.Failed = append(lr.Failed, r.ID)
			if r.KnownFailing {
				lr.KnownFailing = append(lr.KnownFailing, r.ID)
			}
		case verdict.Unsupported:
			lr.Unsupported = append(lr.Unsupported, r.ID)
		case verdict.Inconclusive:
			lr.Inconclusive = append(lr.Inconclusive, r.ID)
		case verdict.Skipped:
			lr.Skipped = append(lr.Skipped, r.ID)
		}
	}
	for _, lr := range []*LevelRules{&l.Must, &l.Should, &l.May} {
		lr.Statistics = Statistics{Passed: len(lr.Passed), Failed: len(lr.Failed), KnownFailing: len(lr.KnownFailing),
			Unsupported: len(lr.Unsupported), Inconclusive: len(lr.Inconclusive), Skipped: len(lr.Skipped)}
		st := lr.Statistics
		switch {
		case st.Failed > 0:
			// Excused or not: the rule failed, and knownFailing says
			// which were excused.
			lr.Result = Failure
		case st.Inconclusive > 0 || st.Unsupported > 0 && lr != &l.May:
			lr.Result = Partial
		case st.Passed+st.Unsupported == 0:
			lr.Result = "skipped"
		default:
			lr.Result = Success
		}
	}
	return l
}

// evidence hashes the inputs.
func evidence(inputs []Input) Evidence {
	e := Evidence{Reports: make([]EvidenceReport, len(inputs))}
	sums := make([][]byte, len(inputs))
	for i, in := range inputs {
		e.Reports[i] = EvidenceReport{File: in.File, SHA256: hex.EncodeToString(in.SHA256[:])}
		sums[i] = in.SHA256[:]
	}
	slices.SortFunc(sums, func(a, b []byte) int { return strings.Compare(string(a), string(b)) })
	h := sha256.New()
	for _, s := range sums {
		h.Write(s)
	}
	e.SHA256 = hex.EncodeToString(h.Sum(nil))
	return e
}

// appendNew appends s to ss unless it is empty or there already.
func appendNew(ss []string, s string) []string {
	if s == "" || slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

// Write renders rep as YAML, after a comment naming the schema.
func Write(w io.Writer, rep Report) error {
	if _, err := io.WriteString(w, "# xdsconform certification report ("+APIVersion+" "+Kind+"); schema: reports/certify/certification.schema.json\n"); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(rep); err != nil {
		return fmt.Errorf("encoding the certification report: %w", err)
	}
	return enc.Close()
}

// schema is Schema compiled, once.
var schema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema))
	if err != nil {
		return nil, fmt.Errorf("certification schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("certification.schema.json", doc); err != nil {
		return nil, fmt.Errorf("certification schema: %w", err)
	}
	return c.Compile("certification.schema.json")
})

// Validate checks a certification report, as YAML, against Schema. The
// report command runs it on what it writes, so that a report that breaks
// its own published schema never leaves the binary.
func Validate(doc []byte) error {
	s, err := schema()
	if err != nil {
		return err
	}
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return fmt.Errorf("certification report: %w", err)
	}
	// The validator takes JSON's types; YAML's decoder gives ints and
	// maps of its own, which a JSON round trip turns into them.
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("certification report: %w", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("certification report: %w", err)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("certification report does not match its schema: %w", err)
	}
	return nil
}
