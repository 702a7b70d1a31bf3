package certify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/reports"
	"github.com/xdsconform/xdsconform/results"
)

// sample is a run of both suites with one of every outcome.
func sample() results.Run {
	return results.Run{
		SchemaVersion: reports.JSONSchemaVersion, HarnessVersion: "v1.2.3", Role: results.RoleBoth, Target: "server: a; client: b",
		Started:          time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC),
		CatalogueVersion: requirements.CatalogueVersion(),
		Implementation:   &results.Implementation{Name: "cp", Version: "v9", Contact: []string{"@team"}, Capabilities: []string{"delta-ads"}},
		Results: []results.Result{
			{ID: "server/a", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass, Requirements: []string{"ACK-1"}},
			{ID: "server/a", Variant: "delta-ads", Level: results.Must, Outcome: results.Pass, Requirements: []string{"ACK-1"}},
			{ID: "server/b", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass, Requirements: []string{"NONCE-1"}},
			{ID: "server/b", Variant: "delta-ads", Level: results.Must, Outcome: results.Fail, Requirements: []string{"NONCE-1"},
				RulesBroken: []string{"NONCE-1"}, BrokenLevel: results.Must, KnownFailing: "NONCE-1: the peer's bug"},
			{ID: "server/c", Variant: "rest", Level: results.Must, Outcome: results.Skip, Requirements: []string{"ACK-2"}, Message: "no REST"},
			{ID: "client/d", Variant: "sotw-ads", Level: results.May, Outcome: results.Unsupported, Requirements: []string{"ACK-8"}, RulesBroken: []string{"ACK-8"}, BrokenLevel: results.May},
		},
	}
}

func input(t *testing.T, run results.Run, name string) Input {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reports.WriteJSON(&b, run))
	back, err := reports.ReadJSON(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	return Input{File: name, SHA256: sha256.Sum256(b.Bytes()), Run: back}
}

func render(t *testing.T, rep Report) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, Write(&b, rep))
	require.NoError(t, Validate(b.Bytes()), b.String())
	return b.Bytes()
}

// TestBuild checks the report of a run of both suites: the verdicts by
// level and variant, the claims and the evidence.
func TestBuild(t *testing.T) {
	rep, err := Build([]Input{input(t, sample(), "run.json")}, nil)
	require.NoError(t, err)
	render(t, rep)
	assert.Equal(t, Implementation{Project: "cp", Version: "v9", Contact: []string{"@team"}}, rep.Implementation)
	assert.Equal(t, []string{"delta-ads"}, rep.Capabilities)
	assert.Equal(t, "2026-11-26T10:00:00Z", rep.Date)
	assert.Equal(t, requirements.CatalogueVersion(), rep.CatalogueVersion)
	require.Len(t, rep.Profiles, 2)
	srv, cli := rep.Profiles[0], rep.Profiles[1]
	assert.Equal(t, "server", srv.Role)
	assert.Equal(t, Partial, srv.Result, "the only failure is known: the run exits 0, but a MUST rule failed")
	assert.Equal(t, "server: a; client: b", srv.Target, "not a private address: named as it is")
	assert.Equal(t, []string{"sotw-ads", "delta-ads"}, srv.Variants)
	assert.Equal(t, []string{"rest"}, srv.SkippedVariants)
	assert.Equal(t, LevelRules{Result: Failure, Statistics: Statistics{Passed: 1, Failed: 1, KnownFailing: 1, Skipped: 1},
		Passed: []string{"ACK-1"}, Failed: []string{"NONCE-1"}, KnownFailing: []string{"NONCE-1"}, Skipped: []string{"ACK-2"}}, srv.Rules.Must,
		"an excused failure fails its rule, and is said to be excused")
	require.Len(t, srv.ByVariant, 2)
	assert.Equal(t, []string{"ACK-1", "NONCE-1"}, srv.ByVariant[0].Rules.Must.Passed, "sotw-ads")
	assert.Equal(t, []string{"NONCE-1"}, srv.ByVariant[1].Rules.Must.Failed, "delta-ads")
	assert.Equal(t, []Claim{{Pair: "server/b[delta-ads]", Level: results.Must, Rules: []string{"NONCE-1"}, Reason: "NONCE-1: the peer's bug"}}, srv.KnownFailing)
	assert.Equal(t, PairCounts{Total: 5, Passed: 3, KnownFailing: 1, Skipped: 1}, srv.Pairs)
	assert.Equal(t, "client", cli.Role)
	assert.Equal(t, Success, cli.Result, "a MAY rule may be unsupported")
	assert.Equal(t, "success", cli.Rules.May.Result, "a MAY rule may be unsupported")
	assert.Equal(t, []string{"ACK-8"}, cli.Rules.May.Unsupported)
	assert.Equal(t, "skipped", cli.Rules.Must.Result)
}

// TestEvidence checks that the evidence hash is the documented one and
// does not depend on the order the reports come in.
func TestEvidence(t *testing.T) {
	a, b := input(t, sample(), "a.json"), input(t, sample(), "b.json")
	b.Run.Results = b.Run.Results[:1]
	b.SHA256 = sha256.Sum256([]byte("other"))
	r1, err := Build([]Input{a, b}, nil)
	require.NoError(t, err)
	r2, err := Build([]Input{b, a}, nil)
	require.NoError(t, err)
	assert.Equal(t, r1.Evidence.SHA256, r2.Evidence.SHA256)
	lo, hi := a.SHA256, b.SHA256
	if bytes.Compare(lo[:], hi[:]) > 0 {
		lo, hi = hi, lo
	}
	want := sha256.Sum256(append(lo[:], hi[:]...))
	assert.Equal(t, want[:], mustHex(t, r1.Evidence.SHA256))
	assert.Equal(t, []EvidenceReport{{"a.json", hexOf(a.SHA256)}, {"b.json", hexOf(b.SHA256)}}, r1.Evidence.Reports)
}

// TestImplementationSources checks where the implementation comes from:
// the reports, overridden field by field by the flags, and an error when
// nothing names it or the reports disagree.
func TestImplementationSources(t *testing.T) {
	in := input(t, sample(), "r.json")
	rep, err := Build([]Input{in}, &results.Implementation{Version: "v10", Organization: "Org"})
	require.NoError(t, err)
	assert.Equal(t, Implementation{Organization: "Org", Project: "cp", Version: "v10", Contact: []string{"@team"}}, rep.Implementation)

	anon := sample()
	anon.Implementation = nil
	_, err = Build([]Input{input(t, anon, "r.json")}, nil)
	assert.ErrorContains(t, err, "--impl-name")
	rep, err = Build([]Input{input(t, anon, "r.json")}, &results.Implementation{Name: "given"})
	require.NoError(t, err)
	assert.Equal(t, "given", rep.Implementation.Project)

	other := sample()
	other.Implementation = &results.Implementation{Name: "other"}
	_, err = Build([]Input{in, input(t, other, "o.json")}, nil)
	assert.ErrorContains(t, err, "different implementations")
	// Naming one of them does not make the other's results its own.
	_, err = Build([]Input{in, input(t, other, "o.json")}, &results.Implementation{Name: "cp"})
	assert.ErrorContains(t, err, "different implementations")

	old := sample()
	old.CatalogueVersion = "sha256:" + strings.Repeat("0", 64)
	_, err = Build([]Input{in, input(t, old, "o.json")}, nil)
	assert.ErrorContains(t, err, "different requirements catalogues")
	old.CatalogueVersion = ""
	rep, err = Build([]Input{input(t, old, "o.json")}, nil)
	require.NoError(t, err)
	assert.Equal(t, requirements.CatalogueVersion(), rep.CatalogueVersion, "a report that predates the field: this build's")
}

// TestHostileStrings checks that strings from a report survive the YAML
// as data: the document parses back to the same values and validates.
func TestHostileStrings(t *testing.T) {
	h := "x\n---\nkind: Evil\n# comment\n\"quoted\" 'single' : {a: [b]} &anchor *alias !!tag \u202e\x00\x1b[31m"
	run := sample()
	run.Target, run.HarnessVersion = h, h
	// A URL must be an http(s) URL for a report to be read at all
	// (reports.ReadJSON refuses any other): this one is YAML-hostile
	// within what a URL may hold.
	run.Implementation = &results.Implementation{Name: h, Version: h, URL: "https://example.com/x?a='b':{c}&d=\"e\"#---", Contact: []string{h}, Capabilities: []string{h}}
	run.Results[3].KnownFailing = h
	rep, err := Build([]Input{input(t, run, h)}, nil)
	require.NoError(t, err)
	doc := render(t, rep)
	var back map[string]any
	require.NoError(t, yaml.Unmarshal(doc, &back))
	assert.Equal(t, Kind, back["kind"])
	assert.Equal(t, h, back["implementation"].(map[string]any)["project"])
	assert.Equal(t, h, back["evidence"].(map[string]any)["reports"].([]any)[0].(map[string]any)["file"])
	assert.NotContains(t, string(doc), "\x1b", "control characters are escaped")
}

// TestValidateRejects checks that the schema is not vacuous.
func TestValidateRejects(t *testing.T) {
	rep, err := Build([]Input{input(t, sample(), "run.json")}, nil)
	require.NoError(t, err)
	good := render(t, rep)
	for name, bad := range map[string]string{
		"kind":      strings.Replace(string(good), "kind: ConformanceReport", "kind: Other", 1),
		"no date":   strings.Replace(string(good), "date: ", "dated: ", 1),
		"bad level": strings.Replace(string(good), "result: failure", "result: great", 1),
		"not yaml":  ":\n  - [",
	} {
		assert.Error(t, Validate([]byte(bad)), name)
	}
}

// TestCommittedReports builds the certification of committed e2e results
// (real peers' runs) and validates it, one per peer.
func TestCommittedReports(t *testing.T) {
	dir := filepath.Join("..", "..", "e2e", "heavy-results")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	for _, e := range entries {
		peer := e.Name()
		files, err := filepath.Glob(filepath.Join(dir, peer, "*.json"))
		require.NoError(t, err)
		require.NotEmpty(t, files)
		var ins []Input
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			run, err := reports.ReadJSON(bytes.NewReader(b))
			require.NoError(t, err)
			ins = append(ins, Input{File: filepath.Base(f), SHA256: sha256.Sum256(b), Run: run})
		}
		rep, err := Build(ins, nil)
		require.NoError(t, err, peer)
		render(t, rep)
		assert.Equal(t, peer, rep.Implementation.Project)
		require.Len(t, rep.Profiles, 1)
		assert.NotEmpty(t, rep.Profiles[0].Rules.Must.Passed, peer)
	}
}

func hexOf(b [sha256.Size]byte) string { return hex.EncodeToString(b[:]) }

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	require.NoError(t, err)
	return b
}

// TestDocsExample checks that the example in docs/reports.md is valid
// against the schema, so that the two cannot drift apart.
func TestDocsExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "reports.md"))
	require.NoError(t, err)
	var found bool
	for _, block := range strings.Split(string(b), "```yaml\n")[1:] {
		block = block[:strings.Index(block, "```")]
		if strings.Contains(block, "kind: ConformanceReport") {
			found = true
			assert.NoError(t, Validate([]byte(block)))
		}
	}
	assert.True(t, found, "docs/reports.md has an example certification report")
}

// TestProfileResult checks Gateway API's three results, and that no
// failure of a rule, excused or not, leaves a profile at success.
func TestProfileResult(t *testing.T) {
	pass := results.Result{ID: "server/p", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass, Requirements: []string{"ACK-1"}}
	fail := func(rule string, level results.Level, known string) results.Result {
		return results.Result{ID: "server/f", Variant: "sotw-ads", Level: level, Outcome: results.Fail, Requirements: []string{rule},
			RulesBroken: []string{rule}, BrokenLevel: level, KnownFailing: known}
	}
	blocked := func(known string) results.Result {
		return results.Result{ID: "server/b", Variant: "sotw-ads", Level: results.May, Outcome: results.Blocked, Requirements: []string{"GRP-2"},
			RulesBroken: []string{"RES-1"}, BrokenLevel: results.Must, BlockedBy: "RES-1", KnownFailing: known}
	}
	incon := results.Result{ID: "server/i", Variant: "sotw-ads", Level: results.Should, Outcome: results.Inconclusive, Requirements: []string{"UPD-2"}}
	errored := results.Result{ID: "server/e", Variant: "sotw-ads", Level: results.Must, Outcome: results.Error, Requirements: []string{"ACK-2"}}
	unsup := results.Result{ID: "server/u", Variant: "sotw-ads", Level: results.May, Outcome: results.Unsupported, Requirements: []string{"GRP-2"},
		RulesBroken: []string{"GRP-2"}, BrokenLevel: results.May}
	skip := results.Result{ID: "server/s", Variant: "sotw-ads", Level: results.Must, Outcome: results.Skip, Requirements: []string{"ACK-3"}}
	for _, tc := range []struct {
		name        string
		failOn      results.Level
		interrupted bool
		rs          []results.Result
		want        string
	}{
		{name: "every rule passed", rs: []results.Result{pass, unsup, skip}, want: Success},
		{name: "a MUST failure", rs: []results.Result{pass, fail("NONCE-1", results.Must, "")}, want: Failure},
		{name: "a MUST failure, known", rs: []results.Result{pass, fail("NONCE-1", results.Must, "NONCE-1: listed")}, want: Partial},
		{name: "blocked", rs: []results.Result{pass, blocked("")}, want: Failure},
		{name: "blocked, known", rs: []results.Result{pass, blocked("RES-1: listed")}, want: Partial},
		{name: "a SHOULD failure below fail-on", failOn: results.Must, rs: []results.Result{pass, fail("UPD-1", results.Should, "")}, want: Partial},
		{name: "a SHOULD failure at fail-on", rs: []results.Result{pass, fail("UPD-1", results.Should, "")}, want: Failure},
		{name: "inconclusive", rs: []results.Result{pass, incon}, want: Partial},
		{name: "an error", rs: []results.Result{pass, errored}, want: Failure},
		{name: "a stale entry", rs: []results.Result{func() results.Result { r := pass; r.KnownFailing = "ACK-1: once"; return r }()}, want: Failure},
		{name: "interrupted", interrupted: true, rs: []results.Result{pass}, want: Failure},
		{name: "nothing ran", rs: []results.Result{skip}, want: Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := sample()
			run.Role, run.Target, run.FailOn, run.Interrupted, run.Results = "server", "builtin:go-control-plane", tc.failOn, tc.interrupted, tc.rs
			rep, err := Build([]Input{input(t, run, "r.json")}, nil)
			require.NoError(t, err)
			render(t, rep)
			assert.Equal(t, tc.want, rep.Profiles[0].Result)
		})
	}
}

// TestTargetNamedByImplementation checks that a published report credits
// the implementation, not the private address its test build listened on;
// the evidence's JSON report keeps it.
func TestTargetNamedByImplementation(t *testing.T) {
	run := sample()
	run.Role, run.Target = "server", "127.0.0.1:18000"
	run.Results = run.Results[:5]
	run.Results[3].Outcome, run.Results[3].BlockedBy = results.Blocked, "NONCE-1"
	rep, err := Build([]Input{input(t, run, "r.json")}, nil)
	require.NoError(t, err)
	doc := string(render(t, rep))
	assert.Empty(t, rep.Profiles[0].Target)
	assert.NotContains(t, doc, "127.0.0.1")
	assert.Contains(t, doc, "  project: cp\n  version: v9\n")
	assert.Equal(t, []Claim{{Pair: "server/b[delta-ads]", Level: results.Must, Rules: []string{"NONCE-1"}, BlockedBy: "NONCE-1", Reason: "NONCE-1: the peer's bug"}},
		rep.Profiles[0].KnownFailing, "an excused blocked pair is claimed as such")
	assert.Equal(t, PairCounts{Total: 5, Passed: 3, KnownFailing: 1, Skipped: 1}, rep.Profiles[0].Pairs)

	run.Implementation = nil
	rep, err = Build([]Input{input(t, run, "r.json")}, &results.Implementation{Name: "cp"})
	require.NoError(t, err)
	assert.Empty(t, rep.Profiles[0].Target, "named by the report command's flags: the same")
}
