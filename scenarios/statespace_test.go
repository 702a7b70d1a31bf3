package scenarios

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRegressionTableMatchesSelfProof keeps docs/state-space.md's
// regression table and the self-proof tables' regression marks in step:
// a fault marked there is listed in the doc with the rule it breaks, and
// the doc lists no fault the self-proof tables do not mark.
func TestRegressionTableMatchesSelfProof(t *testing.T) {
	doc, err := os.ReadFile("../docs/state-space.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "## Regression table")
	require.True(t, ok, "docs/state-space.md has no regression table")

	// The doc's rows: fault name → rule cell.
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		rows[strings.Trim(strings.TrimSpace(cells[1]), "`")] = cells[2]
	}

	marked := map[string][]string{} // fault → rules
	for _, catches := range mustCatch {
		for _, c := range catches {
			if c.regression {
				marked[string(c.fault)] = append(marked[string(c.fault)], c.rule)
			}
		}
	}
	for _, catches := range mustCatchClient {
		for _, c := range catches {
			if c.regression {
				marked[string(c.fault)] = append(marked[string(c.fault)], c.rule)
			}
		}
	}
	for fault, rules := range marked {
		if assert.Contains(t, rows, fault, "fault %s is marked regression but not in docs/state-space.md", fault) {
			for _, r := range rules {
				assert.Contains(t, rows[fault], r, "docs/state-space.md row for %s does not name %s", fault, r)
			}
		}
	}
	for fault := range rows {
		assert.Contains(t, marked, fault, "docs/state-space.md lists %s, which no self-proof entry marks regression", fault)
	}
}
