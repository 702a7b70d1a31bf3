package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The report's headline counts every non-equivalent mutant, then gives each
// peer's total and the share killed of the mutants that did not end in an
// error (a crash, a hang, a client that never started).
func TestReportTotalsByPeerAndWithoutErrors(t *testing.T) {
	mutant := func(key, file string) Mutant {
		return Mutant{Key: key, File: file, Line: 1, Func: "f", Operator: RemoveStatement, FileHash: "h"}
	}
	all := []Mutant{
		mutant("s1", "peers/refserver/a.go"), mutant("s2", "peers/refserver/a.go"),
		mutant("c1", "peers/refclient/b.go"), mutant("c2", "peers/refclient/b.go"),
		mutant("c3", "peers/refclient/b.go"), mutant("c4", "peers/refclient/b.go"),
	}
	status := map[string]Status{"s1": Killed, "s2": Survived, "c1": Killed, "c2": Errored, "c3": Survived, "c4": Killed}
	results := map[string]Result{}
	for _, m := range all {
		results[m.Key] = Result{Mutant: m, Status: status[m.Key], Reached: true}
	}
	triage := map[string]Triage{"c3": {Kind: "equivalent", Reason: "r"}, "s2": {Kind: "gap", Reason: "open: r"}}
	var b strings.Builder
	require.NoError(t, writeReport(&b, all, results, nil, triage))
	out := b.String()
	assert.Contains(t, out, "Total: 3 killed of 5 non-equivalent (60.0%)")
	assert.Contains(t, out, "- `peers/refclient`: 2 killed of 3 non-equivalent (66.7%)")
	assert.Contains(t, out, "- `peers/refserver`: 1 killed of 2 non-equivalent (50.0%)")
	assert.Contains(t, out, "Of the non-equivalent, 1 end in an error or a time-out")
	assert.Contains(t, out, "of the other 4, 3 are killed (75.0%)")
}
