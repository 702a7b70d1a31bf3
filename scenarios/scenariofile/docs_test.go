package scenariofile

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docsPage is the format's reference.
const docsPage = "../../docs/scenario-files.md"

// fenced returns the fenced blocks of page opened with lang.
func fenced(t *testing.T, page, lang string) []string {
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

// The reference's example is a scenario that loads, and its modeline
// names the schema where it is.
func TestDocsExampleLoads(t *testing.T) {
	blocks := fenced(t, docsPage, "yaml")
	require.NotEmpty(t, blocks)
	for _, b := range blocks {
		ss, err := Parse([]byte(b), "docs example")
		require.NoError(t, err)
		require.Len(t, ss, 1)
		assert.Equal(t, []string{"NONCE-7"}, ss[0].Requirements)
	}
	_, err := os.Stat("scenario.schema.json")
	require.NoError(t, err)
	assert.Contains(t, blocks[0], "$schema=../scenarios/scenariofile/scenario.schema.json")
}

// The reference's list of errors says what the errors say: each line,
// with its file and line taken off, is what the mistake it shows gives.
func TestDocsErrorsAreReal(t *testing.T) {
	var lines []string
	for _, b := range fenced(t, docsPage, "") {
		if strings.Contains(b, ".yaml:") {
			lines = append(lines, strings.Split(strings.TrimSpace(b), "\n")...)
		}
	}
	require.Len(t, lines, 5)
	mistakes := []string{
		head + "steps:\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS, rule: NONCE-77}\n",
		head + "steps:\n  - set: {type: EDS, name: a, revision: 1}\n  - subscribe: {type: EDS, names: [a]}\n  - expect: {type: EDS}\n  - expects: {type: EDS}\n",
		head + "steps:\n  - ack: {of: old}\n",
		head + "variants: [sotw-ads, sotw-rest]\nsteps:\n  - expect: {type: EDS}\n",
		clientHead + "steps:\n  - chain: {upTo: LDS}\n  - serve: {type: LDS, version: 2}\n",
	}
	for i, line := range lines {
		_, err := Parse([]byte(mistakes[i]), "f.yaml")
		require.Error(t, err)
		_, want, _ := strings.Cut(line, ": ")
		_, got, _ := strings.Cut(err.Error(), ": ")
		assert.Equal(t, want, got, "docs line %d", i+1)
	}
}
