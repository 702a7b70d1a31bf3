package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Status is what became of a mutant.
type Status string

// The statuses. Only Killed counts for the suite; Survived, TimedOut and
// Errored count against it (a hang or a crash is not a verdict naming a
// rule); NotViable (does not compile) and out-of-scope mutants count for
// nothing.
const (
	Killed    Status = "killed"
	Survived  Status = "survived"
	TimedOut  Status = "timed-out"
	Errored   Status = "error"
	NotViable Status = "not-viable"
	// FixtureRefused is a mutant whose only effect the suite saw is the
	// fixture API refusing the sets and deletions it asks for: a mistake
	// in the reference's fixture adapter, the harness's own channel for
	// setting what the server serves, not in its protocol code. The
	// harness rightly reports such a pair as an error (it could not set
	// up), never as a protocol verdict; the adapter's oracle is the
	// peer's unit tests. It is listed apart, like a mutant that does not
	// compile.
	FixtureRefused Status = "fixture-refused"
)

// Kill is one pair that caught a mutant.
type Kill struct {
	Scenario string   `json:"scenario"`
	Variant  string   `json:"variant"`
	Rules    []string `json:"rules"`
	// How is the pair's outcome: fail, blocked (a precondition broke the
	// rule), or unsupported (a MAY rule).
	How string `json:"how"`
}

// Result is one mutant's record in the results file.
type Result struct {
	Mutant
	Status Status `json:"status"`
	// Reached is false for a mutant in code no pair of the suite runs:
	// it survives without being run.
	Reached bool `json:"reached"`
	// Kills are the first failing pairs (at most five), Rules every rule
	// the failing pairs named, with how many pairs named it.
	Kills []Kill         `json:"kills,omitempty"`
	Rules map[string]int `json:"rules,omitempty"`
	// Note says what else the suite saw: pairs in error, blocked,
	// inconclusive or unsupported, a crash's first line, a build error.
	Note string `json:"note,omitempty"`
	// Scenarios is how many scenario runs the mutant faced: those of
	// each suite run that reach it.
	Scenarios int           `json:"scenarios,omitempty"`
	Duration  time.Duration `json:"duration_ns"`
}

// RunRecord is a shard's start and end, for the wall time the report gives.
type RunRecord struct {
	Shard string `json:"shard"`
	// Commit is the checkout the shard ran in (+dirty with local changes):
	// the results are that code's, peers and suites alike.
	Commit   string    `json:"commit,omitempty"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitempty"`
	Mutants  int       `json:"mutants"`
}

type runFlags struct {
	root, work, results string
	shard, shards       int
	resume              bool
	dneTimer            string
	suiteTimeout        time.Duration
	only                string
	jobs                int // scenarios measured at a time (reach)
	status              string
}

func (f *runFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.root, "root", ".", "the repository root")
	fs.StringVar(&f.work, "work", filepath.Join(os.TempDir(), "xdsconform-mutation"), "scratch directory: mutated files, binaries, coverage")
	fs.StringVar(&f.results, "results", "tools/mutation/results.jsonl", "results file, appended to (one JSON line a mutant)")
	fs.IntVar(&f.jobs, "jobs", runtime.NumCPU(), "scenarios run at a time while measuring what each reaches (once per peer sources, by the first shard to need it)")
}

func cmdList(args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	f.register(fs)
	all := fs.Bool("all", false, "list out-of-scope mutants too")
	asJSON := fs.Bool("json", false, "a JSON object a line, with each mutant's key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ms, err := AllMutants(f.root)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	for _, m := range ms {
		if m.OutOfScope != "" && !*all {
			continue
		}
		if *asJSON {
			if err := enc.Encode(m); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "%s:%d:%d\t%s\t%s\t%s -> %s", m.File, m.Line, m.Col, m.Func, m.Operator, m.Original, m.Mutated)
		if m.OutOfScope != "" {
			fmt.Fprintf(w, "\t(out of scope: %s)", m.OutOfScope)
		}
		fmt.Fprintln(w)
	}
	return nil
}

func cmdRun(args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f.register(fs)
	shard := fs.String("shard", "1/1", "K/N: run every Nth in-scope mutant, starting at the Kth")
	fs.BoolVar(&f.resume, "resume", false, "skip mutants the results file already has for the same file contents")
	fs.StringVar(&f.dneTimer, "dne-timer", "3s", "the reference client's does-not-exist timer in the client suite (shorter than the default 15 s; long enough to hold the quiet window and then the prompt one, as client/warming/cluster-waits-for-endpoints needs to see a warming end before it)")
	fs.DurationVar(&f.suiteTimeout, "suite-timeout", 4*time.Minute, "how long one suite run against one mutant may take before it counts as timed out")
	fs.StringVar(&f.only, "only", "", "run only mutants whose key contains this")
	fs.StringVar(&f.status, "status", "", "run again only mutants whose latest result has this status (error, say), whatever -resume says")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if f.shard, f.shards, err = parseShard(*shard); err != nil {
		return err
	}
	if f.root, err = filepath.Abs(f.root); err != nil {
		return err
	}
	if !filepath.IsAbs(f.results) {
		f.results = filepath.Join(f.root, f.results)
	}
	ctx, stop := signalContext()
	defer stop()
	return run(ctx, f)
}

func parseShard(s string) (k, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		k, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || n < 1 || k < 1 || k > n {
		return 0, 0, fmt.Errorf("-shard %q: want K/N with 1 <= K <= N", s)
	}
	return k, n, nil
}

func run(ctx context.Context, f runFlags) error {
	all, err := AllMutants(f.root)
	if err != nil {
		return err
	}
	done := map[string]bool{}
	var latest map[string]Result
	if f.status != "" {
		if latest, _, err = readResults(f.results); err != nil {
			return err
		}
	}
	if f.resume {
		old, _, err := readResults(f.results)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		for _, r := range old {
			done[r.Key+"@"+r.FileHash] = true
		}
	}
	var mine []Mutant
	i := 0
	for _, m := range all {
		if m.OutOfScope != "" {
			continue
		}
		i++
		if (i-1)%f.shards != f.shard-1 || done[m.Key+"@"+m.FileHash] || (f.only != "" && !strings.Contains(m.Key, f.only)) {
			continue
		}
		if f.status != "" && (latest[m.Key].Status != Status(f.status) || latest[m.Key].FileHash != m.FileHash) {
			continue
		}
		mine = append(mine, m)
	}
	dir := filepath.Join(f.work, fmt.Sprintf("shard-%d-of-%d", f.shard, f.shards))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	reach, err := loadReach(ctx, f)
	if err != nil {
		return err
	}
	out, err := os.OpenFile(f.results, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	rec := RunRecord{Shard: fmt.Sprintf("%d/%d", f.shard, f.shards), Commit: commitOf(ctx, f.root), Started: time.Now().UTC(), Mutants: len(mine)}
	if err := appendLine(out, map[string]any{"run": rec}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "shard %s: %d mutants\n", rec.Shard, len(mine))
	for n, m := range mine {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r := runMutant(ctx, f, dir, m, reach)
		if ctx.Err() != nil {
			return ctx.Err() // an interrupted mutant has no verdict
		}
		if err := appendLine(out, r); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "[%s %d/%d] %-9s %s:%d %s %s\n", rec.Shard, n+1, len(mine), r.Status, m.File, m.Line, m.Operator, firstRule(r))
	}
	rec.Finished = time.Now().UTC()
	return appendLine(out, map[string]any{"run": rec})
}

// commitOf names the checkout at root, "" outside git.
func commitOf(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}

func firstRule(r Result) string {
	if len(r.Kills) == 0 {
		return r.Note
	}
	return r.Kills[0].Scenario + " " + strings.Join(r.Kills[0].Rules, ",")
}

func appendLine(w *os.File, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	// One write a line: shards append to the same file, and a write of
	// a line to a file opened O_APPEND is not interleaved with another's.
	_, err = w.Write(append(b, '\n'))
	return err
}

// suites are the runs each peer's mutants face: the server suite for the
// server; the client suite in both profiles for the client (the Envoy
// profile alone reaches warming, VHDS, REST and the file sources).
func suites(f runFlags, pkg string) [][]string {
	if pkg == "refserver" {
		return [][]string{{"server", "--target", "builtin:reference"}}
	}
	c := []string{"client", "--target", "builtin:reference", "--dne-timer", f.dneTimer}
	return [][]string{c, append(append([]string{}, c...), "--client-profile", "envoy")}
}

func runMutant(ctx context.Context, f runFlags, dir string, m Mutant, reach reaches) (r Result) {
	start := time.Now()
	r = Result{Mutant: m, Reached: reach.covers(m.File, m.Line, m.Col)}
	defer func() { r.Duration = time.Since(start) }()
	if !r.Reached {
		r.Status = Survived
		r.Note = "never reached by the suite"
		return r
	}
	src, err := os.ReadFile(filepath.Join(f.root, m.File))
	if err != nil {
		r.Status, r.Note = Errored, err.Error()
		return r
	}
	if sum := sha256.Sum256(src); hex.EncodeToString(sum[:8]) != m.FileHash {
		// The file changed under the run: the mutant's offsets are
		// another text's. Run from a checkout nobody edits.
		r.Status, r.Note = Errored, m.File+" changed since the mutants were made"
		return r
	}
	mutated := filepath.Join(dir, filepath.Base(m.File))
	if err := os.WriteFile(mutated, m.Apply(src), 0o644); err != nil {
		r.Status, r.Note = Errored, err.Error()
		return r
	}
	overlay := filepath.Join(dir, "overlay.json")
	ov, _ := json.Marshal(map[string]any{"Replace": map[string]string{filepath.Join(f.root, m.File): mutated}})
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		r.Status, r.Note = Errored, err.Error()
		return r
	}
	bin := filepath.Join(dir, "xdsconform")
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(bctx, "go", "build", "-ldflags=-s -w", "-overlay", overlay, "-o", bin, "./cmd/xdsconform")
	build.Dir = f.root
	if out, err := build.CombinedOutput(); err != nil {
		r.Status, r.Note = NotViable, firstLines(string(out), 1)
		return r
	}
	var notes []string
	r.Rules = map[string]int{}
	for _, args := range suites(f, m.Package) {
		var ids []string
		if x, ok := reach[suiteName(args)]; ok {
			if ids = x.scenarios(m.File, m.Line, m.Col); len(ids) == 0 {
				continue // this run never executes the mutated code
			}
			r.Scenarios += len(ids)
			args = append(append([]string{}, args...), "--run", strings.Join(ids, ","))
		}
		report := filepath.Join(dir, "report.json")
		_ = os.Remove(report)
		status, note := runSuite(ctx, f, bin, append(args, "--json", report), report, &r)
		if note != "" {
			notes = append(notes, note)
		}
		if status == Killed || status == TimedOut {
			r.Status = status
			break
		}
		if status == Errored || (status == FixtureRefused && r.Status == "") {
			r.Status = status
		}
	}
	if r.Status == "" {
		r.Status = Survived
	}
	if len(r.Rules) == 0 {
		r.Rules = nil
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

// runSuite runs one suite against the mutant's binary and reads its
// report. A failing pair naming a rule kills the mutant.
func runSuite(ctx context.Context, f runFlags, bin string, args []string, report string, r *Result) (Status, string) {
	sctx, cancel := context.WithTimeout(ctx, f.suiteTimeout)
	defer cancel()
	cmd := exec.CommandContext(sctx, bin, args...)
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The whole process group goes: a suite starts child processes.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &limited{b: &stderr, n: 64 << 10}
	// The console says each pair's outcome as it ends. One failing pair
	// is enough to kill the mutant: at the first, the suite is
	// interrupted, and writes the report of what ran (as at Ctrl-C),
	// which the verdict is read from. Most mutants are killed, many by
	// pairs that fail fast while others wait out their timeouts.
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Errored, err.Error()
	}
	if err := cmd.Start(); err != nil {
		return Errored, err.Error()
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	interrupted := false
	for sc.Scan() {
		if !interrupted && strings.HasPrefix(sc.Text(), "FAIL  ") {
			interrupted = true
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}
	_, _ = io.Copy(io.Discard, stdout) // a line past the buffer: drain the rest
	err = cmd.Wait()
	if sctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		return TimedOut, fmt.Sprintf("%s suite ran past %s", args[0], f.suiteTimeout)
	}
	rep, rerr := readReport(report)
	if rerr != nil {
		// No report: the process died (a panic in the peer, which runs in
		// the harness's process) or refused to start.
		msg := crashLine(stderr.String())
		if msg == "" && err != nil {
			msg = err.Error()
		}
		return Errored, fmt.Sprintf("%s suite wrote no report: %s", args[0], msg)
	}
	return judge(rep, r)
}

// judge reads a suite's report into r.
func judge(rep report, r *Result) (Status, string) {
	others := map[string]int{}
	killed := false
	refused := 0
	for _, p := range rep.Results {
		rules, how := brokenRules(p)
		if fixtureRefusal(p) {
			refused++
		}
		switch {
		case len(rules) > 0:
			killed = true
			for _, rule := range rules {
				r.Rules[rule]++
			}
			r.Kills = append(r.Kills, Kill{Scenario: p.ID, Variant: p.Variant, Rules: rules, How: how})
		case p.Outcome != "pass" && p.Outcome != "skipped":
			others[p.Outcome]++
		}
	}
	// The kills shown are the first five, a fail before a blocked pair
	// before an unsupported one: the check that broke before those
	// that could not run.
	rank := map[string]int{"fail": 0, "blocked": 1, "unsupported": 2}
	sort.SliceStable(r.Kills, func(i, j int) bool { return rank[r.Kills[i].How] < rank[r.Kills[j].How] })
	if len(r.Kills) > 5 {
		r.Kills = r.Kills[:5]
	}
	var parts []string
	for _, o := range sortedKeys(others) {
		parts = append(parts, fmt.Sprintf("%d %s", others[o], o))
	}
	note := ""
	if len(parts) > 0 {
		note = rep.Role + ": " + strings.Join(parts, ", ")
	}
	if killed {
		return Killed, note
	}
	if others["error"] > 0 && refused == others["error"] {
		return FixtureRefused, note
	}
	if others["error"] > 0 {
		// A pair that could not run (a dead peer, a hang) is no verdict:
		// the mutant is listed with the errors, not as a survivor.
		return Errored, note
	}
	return Survived, note
}

// report is what the mutation driver reads of a suite's JSON report.
type report struct {
	Role    string `json:"role"`
	Results []pair `json:"results"`
}

type pair struct {
	ID          string   `json:"id"`
	Variant     string   `json:"variant"`
	Outcome     string   `json:"outcome"`
	RulesBroken []string `json:"rules_broken"`
	BlockedBy   string   `json:"blocked_by"`
	Message     string   `json:"message"`
}

// fixtureRefusal reports whether an error pair's message is the fixture
// API's refusal of a call (package fixture prefixes its errors so).
func fixtureRefusal(p pair) bool {
	return p.Outcome == "error" && strings.HasPrefix(p.Message, "fixture ")
}

// brokenRules are the rules a pair's outcome makes fail in the report's
// verdict (docs/outcomes.md): a fail's rules broken, a blocked pair's
// blocking rule (its precondition broke it), and an unsupported pair's
// MAY rules, which the suite reports as not supported rather than
// failed. A mutant that makes the suite say so of a rule the reference
// implements was seen, under that rule's name.
func brokenRules(p pair) (rules []string, how string) {
	switch p.Outcome {
	case "fail":
		return p.RulesBroken, "fail"
	case "blocked":
		if p.BlockedBy != "" {
			return []string{p.BlockedBy}, "blocked"
		}
	case "unsupported":
		return p.RulesBroken, "unsupported"
	}
	return nil, ""
}

func readReport(path string) (report, error) {
	var rep report
	b, err := os.ReadFile(path)
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal(b, &rep)
}

// crashLine is the first line of a Go panic in stderr, and where it was.
func crashLine(s string) string {
	i := strings.Index(s, "panic:")
	if i < 0 {
		i = strings.Index(s, "fatal error:")
	}
	if i < 0 {
		return firstLines(strings.TrimSpace(s), 1)
	}
	s = s[i:]
	line := firstLines(s, 1)
	// The first frame in a reference peer names the mutant's doing.
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, "/peers/ref") && strings.Contains(l, ".go:") {
			return line + " at " + filepath.Base(strings.Fields(strings.TrimSpace(l))[0])
		}
	}
	return line
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return short(strings.Join(lines, " "))
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// limited keeps the first n bytes written to it and drops the rest: a
// crashing suite's stderr is bounded.
type limited struct {
	b *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		if len(p) > room {
			l.b.Write(p[:room])
		} else {
			l.b.Write(p)
		}
	}
	return len(p), nil
}

// readResults reads the results file: the last result recorded for each
// mutant key, and the run records.
func readResults(path string) (map[string]Result, []RunRecord, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	out := map[string]Result{}
	var runs []RunRecord
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"run":`)) {
			var rr struct{ Run RunRecord }
			if err := json.Unmarshal(line, &rr); err != nil {
				return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
			}
			runs = append(runs, rr.Run)
			continue
		}
		var r Result
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		out[r.Key] = r
	}
	return out, runs, sc.Err()
}
