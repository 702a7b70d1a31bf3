package conformance

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/embedding.md tells importers the minimum versions importing this
// module holds them to; each row must be what go.mod requires.
func TestMinimumVersionsDocumented(t *testing.T) {
	required := map[string]string{}
	mod, err := os.Open("../go.mod")
	require.NoError(t, err)
	defer mod.Close()
	req := regexp.MustCompile(`^\s*(?:require\s+)?(\S+)\s+(v\S+)`)
	sc := bufio.NewScanner(mod)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "go ") {
			required["Go (the `go` line)"] = strings.TrimSpace(strings.TrimPrefix(line, "go "))
			continue
		}
		if m := req.FindStringSubmatch(line); m != nil {
			required["`"+m[1]+"`"] = m[2]
		}
	}
	require.NoError(t, sc.Err())

	doc, err := os.ReadFile("../docs/embedding.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(doc), "## Minimum versions")
	require.True(t, ok, "docs/embedding.md has no Minimum versions section")
	rows := 0
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || strings.HasPrefix(strings.TrimSpace(cells[1]), "---") || strings.TrimSpace(cells[1]) == "module" {
			continue
		}
		module, version := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])
		want, ok := required[module]
		if assert.True(t, ok, "docs/embedding.md lists %s, which go.mod does not require", module) {
			assert.Equal(t, want, version, "docs/embedding.md: the minimum of %s", module)
		}
		rows++
	}
	assert.GreaterOrEqual(t, rows, 5)
}
