package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
)

// coreFamilies are the catalogue areas of the xDS transport protocol proper
// (xds_protocol.rst), as opposed to REST and filesystem transports, xdstp
// naming, collections, redirects, dynamic parameters, per-resource errors,
// caching proxies and validation annotations. Coverage is reported for
// them apart.
var coreFamilies = []string{
	"STREAM", "VER", "ACK", "NONCE", "UPD", "RES", "WILD", "GRP", "DUP", "DEL", "DNE", "UNSUB",
	"MULTI", "HINT", "WARM", "CONS", "TTL", "ADS", "DELTA", "RECONN", "OBS",
}

// nextFamilies are the areas of the newer half of the specification
// (xds-transport-next-steps.md and the xRFCs after it, with the REST and
// filesystem transports): xdstp naming, collections, redirects, dynamic
// parameters, per-resource errors, and the repository's own rule on
// ending a locator subscription (LOC). Coverage is reported for them
// apart, since most implementations have none of them yet.
var nextFamilies = []string{"XDSTP", "COLL", "REDIR", "DYN", "ERR", "REST", "FS", "LOC"}

// roles are the harness's roles, in report order.
var roles = []string{requirements.RoleServer, requirements.RoleClient}

// noScenarioYet is the reason of a testable rule that nothing checks.
const noScenarioYet = "no scenario yet"

// coverageReport is the output of `coverage --json`. The layout is stable:
// fields may be added, never renamed or removed.
type coverageReport struct {
	// Roles holds the counts of each role, keyed "server" and "client".
	Roles map[string]roleCoverage `json:"roles"`
	// Rules has one entry per rule and role the rule is assessed in
	// (requirements.Roles), in catalogue order, server before client.
	Rules []ruleCoverage `json:"rules"`
}

// roleCoverage is one role's counts, over the core families, the newer
// families and all families.
type roleCoverage struct {
	// Core counts the rules of the core families (coreFamilies).
	Core levelCoverage `json:"core"`
	// Next counts the rules of the newer families (nextFamilies).
	Next levelCoverage `json:"next"`
	// All counts the rules of every family.
	All levelCoverage `json:"all"`
}

// levelCoverage maps a level ("MUST", "SHOULD", "MAY") to its counts.
type levelCoverage map[string]coverageCount

// coverageCount is the counts of one role, family set and level.
type coverageCount struct {
	// Rules is how many rules of that level are assessed in the role.
	Rules int `json:"rules"`
	// Testable is how many of those the harness can check in the role.
	Testable int `json:"testable"`
	// Covered is how many of the testable ones a scenario of the role
	// cites or an invariant of the role checks.
	Covered int `json:"covered"`
	// Percent is 100 * Covered / Testable, to one decimal; 0 when
	// nothing is testable.
	Percent float64 `json:"percent"`
}

// ruleCoverage is one rule in one role.
type ruleCoverage struct {
	// ID is the catalogue ID, e.g. "NONCE-7".
	ID string `json:"id"`
	// Role is "server" or "client".
	Role string `json:"role"`
	// Level is the rule's strength: "MUST", "SHOULD" or "MAY".
	Level string `json:"level"`
	// Family is the ID's area prefix, e.g. "NONCE".
	Family string `json:"family"`
	// Core says whether the family is a core one.
	Core bool `json:"core"`
	// Next says whether the family is one of the newer ones.
	Next bool `json:"next"`
	// Testable says whether the harness can check the rule in this role.
	Testable bool `json:"testable"`
	// Reason says why the rule is not covered: the testability reason
	// when it is not testable, else "no scenario yet". Empty when it is
	// covered and testable.
	Reason string `json:"reason"`
	// Covered says whether a scenario or an invariant checks the rule.
	Covered bool `json:"covered"`
	// Scenarios are the IDs of the scenarios of the role citing the rule,
	// in catalogue order; never null.
	Scenarios []string `json:"scenarios"`
	// Invariants are the checks the role's fake peer applies to every
	// message of every scenario for this rule (scenarios.Invariants);
	// never null.
	Invariants []string `json:"invariants"`
}

// citations indexes, per role, the scenarios citing each rule and the
// invariants checking it.
type citations struct {
	scenarios  map[string]map[string][]*engine.Scenario
	invariants map[string]map[string][]scenarios.Invariant
}

func loadCitations() citations {
	c := citations{scenarios: map[string]map[string][]*engine.Scenario{}, invariants: map[string]map[string][]scenarios.Invariant{}}
	for role, list := range map[string][]*engine.Scenario{requirements.RoleServer: scenarios.Server(), requirements.RoleClient: scenarios.Client()} {
		c.scenarios[role] = map[string][]*engine.Scenario{}
		for _, s := range list {
			for _, id := range s.Requirements {
				if !slices.Contains(c.scenarios[role][id], s) {
					c.scenarios[role][id] = append(c.scenarios[role][id], s)
				}
			}
		}
	}
	for _, inv := range scenarios.Invariants() {
		if c.invariants[inv.Role] == nil {
			c.invariants[inv.Role] = map[string][]scenarios.Invariant{}
		}
		c.invariants[inv.Role][inv.Rule] = append(c.invariants[inv.Role][inv.Rule], inv)
	}
	return c
}

// computeCoverage builds the report from the catalogue, testability.tsv,
// the scenario catalogue and the invariants.
func computeCoverage() coverageReport {
	cites := loadCitations()
	rep := coverageReport{Roles: map[string]roleCoverage{}, Rules: []ruleCoverage{}}
	for _, role := range roles {
		rc := roleCoverage{Core: levelCoverage{}, Next: levelCoverage{}, All: levelCoverage{}}
		for _, l := range results.Levels {
			rc.Core[string(l)], rc.Next[string(l)], rc.All[string(l)] = coverageCount{}, coverageCount{}, coverageCount{}
		}
		rep.Roles[role] = rc
	}
	for _, r := range requirements.All() {
		for _, role := range requirements.Roles(r.ID) {
			testable, reason, _ := requirements.Testability(r.ID, role)
			rc := ruleCoverage{ID: r.ID, Role: role, Level: r.Strength, Family: r.Family,
				Core: slices.Contains(coreFamilies, r.Family), Next: slices.Contains(nextFamilies, r.Family), Testable: testable, Scenarios: []string{}, Invariants: []string{}}
			for _, s := range cites.scenarios[role][r.ID] {
				rc.Scenarios = append(rc.Scenarios, s.ID)
			}
			for _, inv := range cites.invariants[role][r.ID] {
				rc.Invariants = append(rc.Invariants, inv.Check)
			}
			rc.Covered = len(rc.Scenarios)+len(rc.Invariants) > 0
			switch {
			case !testable:
				rc.Reason = reason
			case !rc.Covered:
				rc.Reason = noScenarioYet
			}
			rep.Rules = append(rep.Rules, rc)

			counts := []levelCoverage{rep.Roles[role].All}
			if rc.Core {
				counts = append(counts, rep.Roles[role].Core)
			}
			if rc.Next {
				counts = append(counts, rep.Roles[role].Next)
			}
			for _, lc := range counts {
				n := lc[r.Strength]
				n.Rules++
				if testable {
					n.Testable++
					if rc.Covered {
						n.Covered++
					}
				}
				lc[r.Strength] = n
			}
		}
	}
	for _, rc := range rep.Roles {
		for _, lc := range []levelCoverage{rc.Core, rc.Next, rc.All} {
			for l, n := range lc {
				if n.Testable > 0 {
					n.Percent = math.Round(1000*float64(n.Covered)/float64(n.Testable)) / 10
				}
				lc[l] = n
			}
		}
	}
	return rep
}

func newCoverageCmd(out io.Writer) *cobra.Command {
	var asJSON, verbose bool
	c := &cobra.Command{
		Use:   "coverage [--json] [-v]",
		Short: "Show which catalogue rules the scenarios check",
		Long: wrapText("", `Show, per role (server, client) and level (MUST, SHOULD, MAY), how many rules
of the requirements catalogue the harness can check in that role (testable),
and how many of those are covered: cited by a scenario of the role, or checked
by an invariant the role's fake peer applies to every message of every
scenario. Counts are given for the core families (the transport protocol
proper: `+strings.Join(coreFamilies, ", ")+`), for the newer families
(`+strings.Join(nextFamilies, ", ")+`) and for all families.`, 78) + `

Then the uncovered testable core and newer rules are listed; with -v, every rule in
every role, with the scenarios and invariants covering it, or why nothing
does. --json prints everything as one JSON document.`,
		Example: "  xdsconform coverage\n  xdsconform coverage -v\n" +
			"  xdsconform coverage --json | jq '.rules[] | select(.core and .testable and (.covered | not)) | .id'",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			rep := computeCoverage()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printCoverage(out, rep, verbose)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every rule in every role")
	return c
}

func printCoverage(out io.Writer, rep coverageReport, verbose bool) {
	fmt.Fprintln(out, "Rules covered / testable, by role and level:")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tLEVEL\tCORE\tNEWER\tALL")
	for _, role := range roles {
		for _, l := range results.Levels {
			rc := rep.Roles[role]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", role, l, fmtCount(rc.Core[string(l)]), fmtCount(rc.Next[string(l)]), fmtCount(rc.All[string(l)]))
		}
	}
	tw.Flush()

	for _, set := range []struct {
		words string
		in    func(ruleCoverage) bool
	}{
		{"core", func(rc ruleCoverage) bool { return rc.Core }},
		{"newer", func(rc ruleCoverage) bool { return rc.Next }},
	} {
		var uncovered []ruleCoverage
		for _, rc := range rep.Rules {
			if set.in(rc) && rc.Testable && !rc.Covered {
				uncovered = append(uncovered, rc)
			}
		}
		fmt.Fprintln(out)
		if len(uncovered) == 0 {
			fmt.Fprintf(out, "Every testable %s rule is covered.\n", set.words)
			continue
		}
		fmt.Fprintf(out, "Uncovered testable %s rules (%d):\n\n", set.words, len(uncovered))
		tw = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
		for _, rc := range uncovered {
			r, _ := requirements.Lookup(rc.ID)
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", rc.Role, rc.Level, rc.ID, r.Title)
		}
		tw.Flush()
	}
	if !verbose {
		fmt.Fprintln(out, "\nEvery rule in every role: xdsconform coverage -v; one rule: xdsconform explain ID")
		return
	}

	fmt.Fprintln(out, "\nEvery rule in every role:")
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tID\tLEVEL\tFAMILY\tSTATUS\tBY / REASON")
	for _, rc := range rep.Rules {
		status := "covered"
		switch {
		case !rc.Testable:
			status = "untestable"
		case !rc.Covered:
			status = "uncovered"
		}
		family := rc.Family
		if !rc.Core {
			family += " (non-core)"
		}
		var by []string
		by = append(by, rc.Scenarios...)
		for _, inv := range rc.Invariants {
			by = append(by, "invariant: "+inv)
		}
		if rc.Reason != "" {
			by = append(by, rc.Reason)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", rc.Role, rc.ID, rc.Level, family, status, strings.Join(by, "; "))
	}
	tw.Flush()
}

func fmtCount(n coverageCount) string {
	if n.Testable == 0 {
		return fmt.Sprintf("%d/%d", n.Covered, n.Testable)
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", n.Covered, n.Testable, n.Percent)
}
