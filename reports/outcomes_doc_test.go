package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
)

// docs/outcomes.md is the one page on outcomes: every outcome results
// knows has its section there, every label the console prints is named
// there, and so is every count of the JSON summary. An outcome, a label
// or a count added without it fails here.
func TestOutcomesDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "outcomes.md"))
	require.NoError(t, err)
	doc := string(b)
	for _, o := range results.Outcomes {
		assert.Contains(t, doc, "\n### `"+string(o)+"`\n", "docs/outcomes.md has no section on the outcome %q", o)
		assert.Contains(t, doc, "| `"+string(o)+"` |", "docs/outcomes.md's table has no row for the outcome %q", o)
	}

	var labels []string
	for _, o := range results.Outcomes {
		for _, known := range []string{"", "listed"} {
			for _, broken := range results.Levels {
				for _, failOn := range []results.Level{results.Must, results.Should} {
					r := results.Result{Outcome: o, KnownFailing: known, BrokenLevel: broken}
					if l := label(r, failOn); !slices.Contains(labels, l) {
						labels = append(labels, l)
					}
				}
			}
		}
	}
	for _, l := range labels {
		assert.Contains(t, doc, "`"+l+"`", "docs/outcomes.md does not name the console label %s", l)
	}

	var summary map[string]any
	j, err := json.Marshal(jsonSummary{})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(j, &summary))
	for key := range summary {
		if key == "ok" || key == "by_level" {
			continue
		}
		assert.True(t, strings.Contains(doc, "| `"+key+"` |"), "docs/outcomes.md does not name the JSON summary's count %q", key)
	}
}
