package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const peerSrc = `package peer

type Fault string

const FaultX Fault = "x"

type S struct{ faults map[Fault]bool; n int; mu interface{ Lock(); Unlock() }; hooks struct{ seen func() } }

func (s *S) has(f Fault) bool { return s.faults[f] }

// xOnly does nothing but report a fault switch.
func (s *S) xOnly() bool { return s.has(FaultX) }

func (s *S) step(nack bool, names []string) bool {
	if nack && s.has(FaultX) {
		s.n = 7
	}
	if s.xOnly() {
		s.n++
	}
	s.mu.Lock()
	s.mu.Unlock()
	stalled := nack && s.has(FaultX)
	onlyX := len(names) > 2
	if onlyX && s.has(FaultX) {
		s.n = 42
	}
	if !s.has(FaultX) {
		s.n = 1
	} else {
		s.n = 2
	}
	if len(names) > 0 && !nack {
		s.n = 3
		return true
	}
	if h := s.hooks.seen; h != nil {
		h()
	}
	if s.has(FaultX) {
		s.onlyForX()
	}
	s.live(s.n)
	return stalled
}

// onlyForX is called only under a fault switch, and alsoOnlyForX only by it.
func (s *S) onlyForX() {
	s.n = 9
	s.alsoOnlyForX()
}

func (s *S) alsoOnlyForX() {
	s.n = 10
}

// live is also passed as a value where no fault is on.
func (s *S) live(n int) {
	s.n = n + 1
}

func (s *S) value() func(int) { return s.live }
`

func writePeer(t *testing.T, src string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "peers", "refx")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "peer.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "faults.go"), []byte("package peer\n\nfunc f(a, b int) bool { return a < b }\n"), 0o644))
	return root
}

func mutantsOf(t *testing.T, root string) []Mutant {
	t.Helper()
	pkg, err := loadPackage(root, "peers/refx", "refx")
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"xOnly": true}, pkg.predicates)
	assert.Equal(t, map[string]bool{"onlyForX": true, "alsoOnlyForX": true, "xOnly": true}, pkg.deadFuncs, "xOnly is called only in the conditions it makes fault-only")
	files, err := protocolFiles(root, "peers/refx")
	require.NoError(t, err)
	require.Equal(t, []string{"peers/refx/peer.go"}, files, "the fault switches' own file makes no mutants")
	ms, err := fileMutants(pkg, files[0])
	require.NoError(t, err)
	return ms
}

func find(ms []Mutant, line int, op Operator) []Mutant {
	var out []Mutant
	for _, m := range ms {
		if m.Line == line && m.Operator == op {
			out = append(out, m)
		}
	}
	return out
}

// The scope rules: what only a fault switch reaches is out; what runs
// without one is in, even beside a fault switch's report.
func TestScopeLeavesOutFaultOnlyCode(t *testing.T) {
	ms := mutantsOf(t, writePeer(t, peerSrc))
	lines := strings.Split(peerSrc, "\n")
	line := func(sub string) int {
		for i, l := range lines {
			if strings.Contains(l, sub) {
				return i + 1
			}
		}
		t.Fatalf("no line has %q", sub)
		return 0
	}
	out := func(l int, op Operator) string {
		got := find(ms, l, op)
		require.Len(t, got, 1, "line %d %s", l, op)
		return got[0].OutOfScope
	}
	assert.NotEmpty(t, out(line("if nack && s.has"), InvertLogical), "the && joining a fault switch")
	assert.NotEmpty(t, out(line("s.n = 7"), RemoveStatement), "the body of a branch taken only with a fault on")
	assert.NotEmpty(t, out(line("s.n++"), IncDec), "the body under a fault predicate")
	assert.NotEmpty(t, out(line("s.mu.Lock()"), RemoveStatement), "synchronisation")
	assert.NotEmpty(t, out(line("stalled := nack"), InvertLogical), "a condition true only with a fault on")
	assert.NotEmpty(t, out(line("if !s.has(FaultX)"), RemoveNot), "a fault switch's own negation")
	assert.Empty(t, out(line("s.n = 1"), RemoveStatement), "the branch taken without a fault")
	assert.NotEmpty(t, out(line("s.n = 2"), RemoveStatement), "the else of 'no fault'")
	assert.Empty(t, out(line("len(names) > 0"), CondBoundary))
	assert.Empty(t, out(line("len(names) > 0"), InvertLogical))
	assert.Empty(t, out(line("len(names) > 0 && !nack"), RemoveNot))
	assert.Empty(t, out(line("return true"), InvertBool))
	assert.NotEmpty(t, out(line("if h := s.hooks.seen"), CondNegation), "a test hook")
	assert.NotEmpty(t, out(line("s.n = 9"), RemoveStatement), "a function only fault code calls")
	assert.NotEmpty(t, out(line("s.n = 10"), RemoveStatement), "a function only such a function calls")
	assert.Empty(t, out(line("s.n = n + 1"), ArithmeticBase), "a function also used as a value")
	assert.NotEmpty(t, out(line("onlyX := len(names) > 2"), CondBoundary), "a value only fault code reads")
}

// A key survives edits elsewhere in the file, so triage decisions keep
// their mutant; the offsets and the hash do not.
func TestKeysAreStableAndApplyMakesTheChange(t *testing.T) {
	before := mutantsOf(t, writePeer(t, peerSrc))
	after := mutantsOf(t, writePeer(t, strings.Replace(peerSrc, "type Fault string", "type Fault string\n\nfunc unrelated() {}\n", 1)))
	require.Len(t, after, len(before))
	for i := range before {
		assert.Equal(t, before[i].Key, after[i].Key)
		assert.Equal(t, before[i].Line+3, after[i].Line)
	}
	assert.NotEqual(t, before[0].FileHash, after[0].FileHash)

	b := find(before, strings.Count(peerSrc[:strings.Index(peerSrc, "len(names) > 0")], "\n")+1, CondBoundary)
	require.Len(t, b, 1)
	got := b[0].Apply([]byte(peerSrc))
	assert.Contains(t, string(got), "len(names) >= 0 && !nack")
	assert.Equal(t, 1, bytes.Count(got, []byte(">= 0")))
	assert.Equal(t, "len(names) >= 0", b[0].Mutated)
}

func TestReportCountsKillsAndLeavesEquivalentsOut(t *testing.T) {
	all := []Mutant{
		{Key: "a#1", File: "peers/refx/peer.go", Line: 1, Operator: CondBoundary, FileHash: "h"},
		{Key: "b#1", File: "peers/refx/peer.go", Line: 2, Operator: CondNegation, FileHash: "h"},
		{Key: "c#1", File: "peers/refx/peer.go", Line: 3, Operator: RemoveNot, FileHash: "h"},
		{Key: "d#1", File: "peers/refx/peer.go", Line: 4, Operator: RemoveNot, FileHash: "h"},
		{Key: "e#1", File: "peers/refx/peer.go", Line: 5, Operator: RemoveNot, FileHash: "h", OutOfScope: "a fault switch's own condition"},
		{Key: "f#1", File: "peers/refx/peer.go", Line: 6, Operator: RemoveNot, FileHash: "h"},
	}
	results := map[string]Result{
		"a#1": {Mutant: all[0], Status: Killed, Reached: true, Kills: []Kill{{Scenario: "server/x", Variant: "sotw-ads", Rules: []string{"ACK-5"}}}, Rules: map[string]int{"ACK-5": 1}},
		"b#1": {Mutant: all[1], Status: Survived, Reached: true},
		"c#1": {Mutant: all[2], Status: Survived, Reached: true},
		"d#1": {Mutant: all[3], Status: Errored, Reached: true, Note: "server suite wrote no report: panic: x"},
		"f#1": {Mutant: Mutant{Key: "f#1", FileHash: "old"}, Status: Killed},
	}
	triage := map[string]Triage{"c#1": {Kind: "equivalent", Reason: "the order is re-sorted anyway"}, "gone#1": {Kind: "equivalent", Reason: "x"}}
	var b strings.Builder
	require.NoError(t, writeReport(&b, all, results, nil, triage))
	out := b.String()
	// a killed; b survived, d errored: 1 of 3 (c equivalent, e out of
	// scope, f's result is for other contents).
	assert.Contains(t, out, "Total: 1 killed of 3 non-equivalent (33.3%)")
	assert.Contains(t, out, "1 in-scope mutants have no current result")
	assert.Contains(t, out, "the order is re-sorted anyway")
	assert.Contains(t, out, "`server/x` (sotw-ads) | ACK-5")
	assert.Contains(t, out, "ACK-5 1")
	assert.Contains(t, out, "1 triage entries name no mutant of the current code")
	assert.Contains(t, out, "- `gone#1`")
}

func TestJudgeKillsOnAVerdictNamingARule(t *testing.T) {
	var rep report
	rep.Role = "server"
	rep.Results = []pair{{ID: "server/a", Outcome: "error"}, {ID: "server/b", Outcome: "blocked"}}
	r := &Result{Rules: map[string]int{}}
	st, note := judge(rep, r)
	assert.Equal(t, Errored, st, "a pair in error is no verdict")
	assert.Equal(t, "server: 1 blocked, 1 error", note)
	rep.Results[1].Outcome, rep.Results[1].RulesBroken = "fail", []string{"NONCE-7"}
	st, _ = judge(rep, r)
	assert.Equal(t, Killed, st)
	assert.Equal(t, map[string]int{"NONCE-7": 1}, r.Rules)
	rep.Results = []pair{{ID: "server/c", Outcome: "blocked", BlockedBy: "RES-1"}, {ID: "server/d", Outcome: "inconclusive", RulesBroken: []string{"UPD-2"}}}
	r = &Result{Rules: map[string]int{}}
	st, _ = judge(rep, r)
	assert.Equal(t, Killed, st, "a blocked pair's verdict fails the rule its precondition rests on")
	assert.Equal(t, []Kill{{Scenario: "server/c", Rules: []string{"RES-1"}, How: "blocked"}}, r.Kills)
	rep.Results = rep.Results[1:]
	st, _ = judge(rep, &Result{Rules: map[string]int{}})
	assert.Equal(t, Survived, st, "an inconclusive pair is no kill")
}
