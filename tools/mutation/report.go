package main

import (
	"bufio"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Triage is a maintainer's reading of a mutant that survived: equivalent
// (no observable behaviour changed; the reason says why), fault-only
// (code only a fault switch reaches, which the static scope rules did not
// see) or gap (a scenario or catalogue gap, with what closes it).
type Triage struct {
	Kind, Reason string
}

// readTriage reads triage.txt: "KEY<TAB>KIND<TAB>REASON" lines, # comments.
func readTriage(path string) (map[string]Triage, error) {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]Triage{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	out := map[string]Triage{}
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("%s:%d: want KEY<TAB>KIND<TAB>REASON", path, n)
		}
		switch parts[1] {
		case "equivalent", "fault-only", "gap":
		default:
			return nil, fmt.Errorf("%s:%d: kind %q: want equivalent, fault-only or gap", path, n, parts[1])
		}
		out[parts[0]] = Triage{Kind: parts[1], Reason: parts[2]}
	}
	return out, sc.Err()
}

func cmdReport(args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	f.register(fs)
	triagePath := fs.String("triage", "tools/mutation/triage.txt", "the maintainers' triage of survivors")
	outPath := fs.String("out", "docs/mutation.md", "the page to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	all, err := AllMutants(f.root)
	if err != nil {
		return err
	}
	results, runs, err := readResults(inRoot(f.root, f.results))
	if err != nil {
		return err
	}
	triage, err := readTriage(inRoot(f.root, *triagePath))
	if err != nil {
		return err
	}
	fh, err := os.Create(inRoot(f.root, *outPath))
	if err != nil {
		return err
	}
	if err := writeReport(fh, all, results, runs, triage); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

// inRoot is path, relative to root unless absolute.
func inRoot(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(root, path)
}

// fileTally is one file's counts.
type fileTally struct {
	file                                          string
	scope, killed, survived, unreached, timedOut  int
	errored, equivalent, faultOnly, notViable, na int
	outOfScope, fixture                           int
}

// classify is the class a mutant counts in: its result, unless triage
// calls a survivor equivalent or fault-only. A result made from other
// file contents is stale, and the mutant counts as not run.
func classify(m Mutant, results map[string]Result, triage map[string]Triage) (string, *Result) {
	if m.OutOfScope != "" {
		return "out-of-scope", nil
	}
	r, ok := results[m.Key]
	if !ok || r.FileHash != m.FileHash {
		return "not-run", nil
	}
	if r.Status != Killed && r.Status != NotViable && r.Status != FixtureRefused {
		if t, ok := triage[m.Key]; ok && (t.Kind == "equivalent" || t.Kind == "fault-only") {
			return t.Kind, &r
		}
	}
	return string(r.Status), &r
}

func writeReport(w io.Writer, all []Mutant, results map[string]Result, runs []RunRecord, triage map[string]Triage) error {
	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	tallies := map[string]*fileTally{}
	var files []string
	byRule, hows := map[string]int{}, map[string]int{}
	type row struct {
		m     Mutant
		r     *Result
		class string
	}
	rows := map[string][]row{}
	for _, m := range all {
		t := tallies[m.File]
		if t == nil {
			t = &fileTally{file: m.File}
			tallies[m.File] = t
			files = append(files, m.File)
		}
		class, r := classify(m, results, triage)
		rows[m.File] = append(rows[m.File], row{m, r, class})
		switch class {
		case "out-of-scope":
			t.outOfScope++
			continue
		case "not-viable":
			t.notViable++
			continue
		case string(FixtureRefused):
			t.fixture++
			continue
		}
		t.scope++
		switch class {
		case string(Killed):
			t.killed++
			for rule := range r.Rules {
				byRule[rule]++
			}
			if len(r.Kills) > 0 {
				hows[cmp.Or(r.Kills[0].How, "fail")]++
			}
		case string(Survived):
			t.survived++
			if !r.Reached {
				t.unreached++
			}
		case string(TimedOut):
			t.timedOut++
		case string(Errored):
			t.errored++
		case "equivalent":
			t.equivalent++
		case "fault-only":
			t.faultOnly++
		case "not-run":
			t.na++
		}
	}
	var total fileTally
	for _, f := range files {
		t := tallies[f]
		total.scope += t.scope
		total.killed += t.killed
		total.survived += t.survived
		total.unreached += t.unreached
		total.timedOut += t.timedOut
		total.errored += t.errored
		total.equivalent += t.equivalent
		total.faultOnly += t.faultOnly
		total.notViable += t.notViable
		total.na += t.na
		total.outOfScope += t.outOfScope
		total.fixture += t.fixture
	}
	nonEquivalent := total.scope - total.equivalent - total.faultOnly - total.na

	p("# Mutation testing of the reference peers\n\n")
	p("<!-- Generated by `make mutation` (go run ./tools/mutation report); do not edit. -->\n\n")
	p("The fault switches prove that each check can fail against a mistake written for it. This page\n")
	p("measures whether the suites catch mistakes nobody wrote for them: `tools/mutation` plants one\n")
	p("small change at a time in the protocol code of `peers/refserver` and `peers/refclient` (every\n")
	p("file but the fault switches' own), builds `xdsconform` with the change (`go build -overlay`), and\n")
	p("runs the suite whose oracle the peer is: the server suite against the mutated server; the\n")
	p("client suite, in the gRPC and the Envoy profile, against the mutated client (`--dne-timer 3s`; results from before it used 2 s).\n")
	p("A run is limited to the scenarios that execute the mutated code (coverage measured scenario by\n")
	p("scenario, each alone, on the unmutated peers: a scenario that never executes it sees the\n")
	p("unmutated peer), and stops at its first failing pair, whose verdict is enough.\n\n")
	p("A mutant is **killed** when the suite's verdict names a rule it broke: a pair ends in `fail` with\n")
	p("the rule among its `rules_broken`, or `blocked` by the rule its failed precondition rests on\n")
	p("(`blocked_by`), or, for a MAY behaviour the reference implements, `unsupported` naming it; the\n")
	p("counts below say how many of each. Pairs ending in `error` (a hang; a panic, which kills the\n")
	p("in-process peer as it would a process of its own, while hundreds of pairs run, so no pair is\n")
	p("blamed), `inconclusive`, or a suite that ran past its time, are not a kill.\n")
	p("A mutant in code the unmutated suites never run survives without a run (*never reached*).\n")
	p("Mutants of a fault switch's own condition, or of code only a fault switch reaches, are out of\n")
	p("scope and listed apart; so are mutants that do not compile, and those whose only effect is the\n")
	p("fixture API refusing the suite's calls (*fixture refused*: every pair in `error` says the fixture\n")
	p("refused; a mistake in the reference's fixture adapter, the harness's setup channel, not in its\n")
	p("protocol code, which the harness rightly reports as an error, not as a verdict; the peer's unit\n")
	p("tests are the adapter's oracle). A crash is no such thing: it counts as an error. Survivors are triaged in\n")
	p("`tools/mutation/triage.txt`: equivalent (no behaviour any peer could observe changes, or, said\n")
	p("so in the reason, only one every rule allows, or one off the wire, such as a fixture's own\n")
	p("check), fault-only (a branch the static scope rules miss, or a test mode of the reference),\n")
	p("or a gap and what closes it.\n\n")
	p("Operators: %s.\n\n", strings.Join([]string{
		string(CondBoundary), string(CondNegation), string(InvertLogical), string(RemoveNot), string(InvertNegatives),
		string(ArithmeticBase), string(IncDec), string(InvertBool), string(RemoveStatement), string(InvertLoopCtrl)}, ", "))
	pct := 0.0
	if nonEquivalent > 0 {
		pct = 100 * float64(total.killed) / float64(nonEquivalent)
	}
	p("Total: %d killed of %d non-equivalent (%.1f%%)\n\n", total.killed, nonEquivalent, pct)
	p("Killed by a failing check: %d; by a broken precondition only: %d; as a MAY behaviour gone only: %d.\n\n", hows["fail"], hows["blocked"], hows["unsupported"])
	if total.na > 0 {
		p("**%d in-scope mutants have no current result** (not run yet, or run on other contents of their file): the total leaves them out.\n\n", total.na)
	}
	p("%s\n\n", wallTime(runs))
	p("| File | In scope | Killed | Survived (never reached) | Timed out | Error | Equivalent | Fault-only | Not viable | Fixture refused | Out of scope |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range append(files, "") {
		t := tallies[f]
		name := "`" + f + "`"
		if f == "" {
			t, name = &total, "**all**"
		}
		p("| %s | %d | %d | %d (%d) | %d | %d | %d | %d | %d | %d | %d |\n", name, t.scope-t.na, t.killed, t.survived, t.unreached,
			t.timedOut, t.errored, t.equivalent, t.faultOnly, t.notViable, t.fixture, t.outOfScope)
	}
	keys := map[string]bool{}
	for _, m := range all {
		keys[m.Key] = true
	}
	var stale []string
	for _, k := range sortedKeys(triage) {
		if !keys[k] {
			stale = append(stale, "- `"+mdCode(k)+"`")
		}
	}
	if len(stale) > 0 {
		p("**%d triage entries name no mutant of the current code** (the code around them changed: read them again):\n\n%s\n\n", len(stale), strings.Join(stale, "\n"))
	}
	p("\n## Kills by rule\n\nHow many killed mutants a failing pair's rules named (a mutant may name several).\n\n")
	rules := sortedKeys(byRule)
	sort.SliceStable(rules, func(i, j int) bool { return byRule[rules[i]] > byRule[rules[j]] })
	var parts []string
	for _, r := range rules {
		parts = append(parts, fmt.Sprintf("%s %d", r, byRule[r]))
	}
	p("%s\n", strings.Join(parts, " · "))

	p("\n## Survivors, time-outs and errors\n")
	any := false
	for _, f := range files {
		var lines []string
		for _, x := range rows[f] {
			switch x.class {
			case string(Survived), string(TimedOut), string(Errored):
			default:
				continue
			}
			note := x.r.Note
			if t, ok := triage[x.m.Key]; ok {
				note = t.Kind + ": " + t.Reason
			}
			lines = append(lines, fmt.Sprintf("| %d | `%s` | %s | `%s` → `%s` | %s | %s |", x.m.Line, x.m.Func, x.m.Operator, mdCode(x.m.Original), mdCode(x.m.Mutated), x.class, mdCell(note)))
		}
		if len(lines) == 0 {
			continue
		}
		any = true
		p("\n### `%s`\n\n| Line | Func | Operator | Change | Status | Note or triage |\n|---:|---|---|---|---|---|\n%s\n", f, strings.Join(lines, "\n"))
	}
	if !any {
		p("\nNone.\n")
	}

	p("\n## Equivalent and fault-only mutants\n")
	any = false
	for _, f := range files {
		var lines []string
		for _, x := range rows[f] {
			if x.class != "equivalent" && x.class != "fault-only" {
				continue
			}
			lines = append(lines, fmt.Sprintf("| %d | %s | `%s` → `%s` | %s | %s |", x.m.Line, x.m.Operator, mdCode(x.m.Original), mdCode(x.m.Mutated), x.class, mdCell(triage[x.m.Key].Reason)))
		}
		if len(lines) == 0 {
			continue
		}
		any = true
		p("\n### `%s`\n\n| Line | Operator | Change | Kind | Why |\n|---:|---|---|---|---|\n%s\n", f, strings.Join(lines, "\n"))
	}
	if !any {
		p("\nNone.\n")
	}

	p("\n## Killed\n\nEach killed mutant, with the first failing pair and the rules it named.\n")
	for _, f := range files {
		var lines []string
		for _, x := range rows[f] {
			if x.class != string(Killed) || len(x.r.Kills) == 0 {
				continue
			}
			k := x.r.Kills[0]
			how := ""
			if k.How != "" && k.How != "fail" {
				how = " " + k.How
			}
			lines = append(lines, fmt.Sprintf("| %d | %s | `%s` → `%s` | `%s` (%s)%s | %s |", x.m.Line, x.m.Operator, mdCode(x.m.Original), mdCode(x.m.Mutated), k.Scenario, k.Variant, how, strings.Join(sortedKeys(x.r.Rules), ", ")))
		}
		if len(lines) == 0 {
			continue
		}
		p("\n<details><summary><code>%s</code>: %d killed</summary>\n\n| Line | Operator | Change | First failing pair | Rules named |\n|---:|---|---|---|---|\n%s\n\n</details>\n", f, len(lines), strings.Join(lines, "\n"))
	}

	p("\n## Out of scope and not viable\n")
	for _, f := range files {
		var lines []string
		for _, x := range rows[f] {
			switch x.class {
			case "out-of-scope":
				lines = append(lines, fmt.Sprintf("| %d | %s | `%s` → `%s` | %s |", x.m.Line, x.m.Operator, mdCode(x.m.Original), mdCode(x.m.Mutated), x.m.OutOfScope))
			case string(NotViable):
				lines = append(lines, fmt.Sprintf("| %d | %s | `%s` → `%s` | does not compile: %s |", x.m.Line, x.m.Operator, mdCode(x.m.Original), mdCode(x.m.Mutated), mdCell(x.r.Note)))
			}
		}
		if len(lines) == 0 {
			continue
		}
		p("\n<details><summary><code>%s</code>: %d</summary>\n\n| Line | Operator | Change | Why |\n|---:|---|---|---|\n%s\n\n</details>\n", f, len(lines), strings.Join(lines, "\n"))
	}
	return b.Flush()
}

// wallTime is the wall time of the latest run: from the first shard's
// start to the last shard's end, among the shards started together.
func wallTime(runs []RunRecord) string {
	if len(runs) == 0 {
		return "Wall time: no run recorded."
	}
	latest := runs[len(runs)-1].Started
	for _, r := range runs {
		if r.Started.After(latest) {
			latest = r.Started
		}
	}
	// Shards of one run start within a minute of each other.
	var first, last time.Time
	shards, mutants, commit := map[string]bool{}, 0, ""
	for _, r := range runs {
		if r.Started.Before(latest.Add(-time.Minute)) {
			continue
		}
		if first.IsZero() || r.Started.Before(first) {
			first = r.Started
		}
		if r.Finished.After(last) {
			last = r.Finished
		}
		if !r.Finished.IsZero() {
			shards[r.Shard] = true
			mutants += r.Mutants
		}
		if r.Commit != "" {
			commit = r.Commit
		}
	}
	if last.IsZero() {
		return fmt.Sprintf("Wall time: the latest run, started %s, has not finished.", first.Format(time.RFC3339))
	}
	at := ""
	if commit != "" {
		at = ", at commit " + commit
	}
	return fmt.Sprintf("Wall time of the latest run: %s for %d mutants on %d shards (started %s%s).",
		last.Sub(first).Round(time.Second), mutants, len(shards), first.Format("2006-01-02 15:04 UTC"), at)
}

func mdCode(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "`", "'"), "|", "\\|") }
func mdCell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
