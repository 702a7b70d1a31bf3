package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/scenarios"
)

// TestCoverageJSON recomputes the counts straight from the catalogue,
// testability.tsv, the scenario catalogue and the invariants, and compares
// them with what `coverage --json` prints.
func TestCoverageJSON(t *testing.T) {
	code, out, stderr := run(t, "coverage", "--json")
	require.Equal(t, exitOK, code, stderr)
	var rep coverageReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))

	cited := map[string]map[string]bool{"server": {}, "client": {}}
	for _, s := range scenarios.Server() {
		for _, r := range s.Requirements {
			cited["server"][r] = true
		}
	}
	for _, s := range scenarios.Client() {
		for _, r := range s.Requirements {
			cited["client"][r] = true
		}
	}
	for _, inv := range scenarios.Invariants() {
		cited[inv.Role][inv.Rule] = true
	}

	type key struct{ role, set, level string }
	want := map[key]coverageCount{}
	var wantRules []string
	for _, r := range requirements.All() {
		for _, role := range []string{"server", "client"} {
			testable, _, ok := requirements.Testability(r.ID, role)
			if !ok {
				continue
			}
			wantRules = append(wantRules, role+" "+r.ID)
			sets := []string{"all"}
			if slices.Contains(coreFamilies, strings.SplitN(r.ID, "-", 2)[0]) {
				sets = append(sets, "core")
			}
			if slices.Contains(nextFamilies, strings.SplitN(r.ID, "-", 2)[0]) {
				sets = append(sets, "next")
			}
			for _, set := range sets {
				k := key{role, set, r.Strength}
				n := want[k]
				n.Rules++
				if testable {
					n.Testable++
					if cited[role][r.ID] {
						n.Covered++
					}
				}
				want[k] = n
			}
		}
	}

	require.Len(t, rep.Roles, 2)
	for _, role := range []string{"server", "client"} {
		for set, lc := range map[string]levelCoverage{"core": rep.Roles[role].Core, "next": rep.Roles[role].Next, "all": rep.Roles[role].All} {
			assert.Len(t, lc, 3, "%s %s levels", role, set)
			for _, level := range []string{"MUST", "SHOULD", "MAY"} {
				got, w := lc[level], want[key{role, set, level}]
				assert.Equal(t, w.Rules, got.Rules, "%s %s %s rules", role, set, level)
				assert.Equal(t, w.Testable, got.Testable, "%s %s %s testable", role, set, level)
				assert.Equal(t, w.Covered, got.Covered, "%s %s %s covered", role, set, level)
				if w.Testable > 0 {
					assert.InDelta(t, 100*float64(w.Covered)/float64(w.Testable), got.Percent, 0.05, "%s %s %s percent", role, set, level)
				}
			}
		}
	}
	// The core server MUST rules are a known, stable set of 41 (VER-6 is
	// untestable there).
	assert.Equal(t, 41, rep.Roles["server"].Core["MUST"].Rules)
	assert.Equal(t, 40, rep.Roles["server"].Core["MUST"].Testable)
	// So are the newer families' MUST rules: 31 testable in the server
	// role (DYN-12 is not), 26 in the client role, LOC-1 and LOC-2 among
	// them.
	assert.Equal(t, 31, rep.Roles["server"].Next["MUST"].Testable)
	assert.Equal(t, 26, rep.Roles["client"].Next["MUST"].Testable)

	// One entry per rule and role, catalogue order, server before client.
	var gotRules []string
	for _, rc := range rep.Rules {
		gotRules = append(gotRules, rc.Role+" "+rc.ID)
		r, _ := requirements.Lookup(rc.ID)
		assert.Equal(t, r.Strength, rc.Level, rc.ID)
		assert.Equal(t, r.Family, rc.Family, rc.ID)
		assert.NotNil(t, rc.Scenarios, rc.ID)
		assert.NotNil(t, rc.Invariants, rc.ID)
		assert.Equal(t, cited[rc.Role][rc.ID], rc.Covered, "%s/%s covered", rc.Role, rc.ID)
		switch {
		case !rc.Testable:
			assert.NotEmpty(t, rc.Reason, rc.ID)
		case !rc.Covered:
			assert.Equal(t, "no scenario yet", rc.Reason, rc.ID)
		default:
			assert.Empty(t, rc.Reason, rc.ID)
		}
	}
	assert.Equal(t, wantRules, gotRules)

	// Spot checks: a scenario-covered rule and an invariant-covered one.
	for _, rc := range rep.Rules {
		switch rc.Role + " " + rc.ID {
		case "server NONCE-7":
			assert.Contains(t, rc.Scenarios, "server/nonce/stale-request-ignored")
		case "server NONCE-1", "client NONCE-5":
			assert.True(t, rc.Covered)
			assert.NotEmpty(t, rc.Invariants)
		case "server VER-6":
			assert.False(t, rc.Testable)
		}
	}

	// The output is deterministic.
	_, again, _ := run(t, "coverage", "--json")
	assert.Equal(t, out, again)
}

func TestCoverageConsole(t *testing.T) {
	code, out, stderr := run(t, "coverage")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "ROLE    LEVEL   CORE")
	for _, role := range []string{"server", "client"} {
		for _, level := range []string{"MUST", "SHOULD", "MAY"} {
			assert.Regexp(t, `(?m)^`+role+` +`+level+` +\d+/\d+`, out)
		}
	}
	assert.NotContains(t, out, "BY / REASON", "the full list needs -v")

	code, out, stderr = run(t, "coverage", "-v")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "BY / REASON")
	assert.Regexp(t, `(?m)^server +NONCE-7 +SHOULD +NONCE +covered +.*server/nonce/stale-request-ignored`, out)
	assert.Regexp(t, `(?m)^server +VER-6 +MUST +VER +untestable +the catalogue's test is client-side only`, out)
}

func TestCoverageExplainUsageErrors(t *testing.T) {
	checkExitCodes(t, []exitCase{
		{"coverage unknown flag", []string{"coverage", "--bogus"}, exitUsage, "unknown flag: --bogus"},
		{"coverage argument", []string{"coverage", "NONCE-7"}, exitUsage, "unknown command"},
		{"explain no rule", []string{"explain"}, exitUsage, "accepts 1 arg(s)"},
		{"explain two rules", []string{"explain", "NONCE-7", "NONCE-8"}, exitUsage, "accepts 1 arg(s)"},
		{"explain unknown flag", []string{"explain", "--json", "NONCE-7"}, exitUsage, "unknown flag: --json"},
		{"explain unknown rule", []string{"explain", "NONCE-77"}, exitUsage, `unknown rule "NONCE-77"; did you mean NONCE-7, `},
		{"explain unknown family", []string{"explain", "FOO-1"}, exitUsage, `unknown rule "FOO-1"`},
	})
}
