package results

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestImplementationMerge checks that the fields o sets win, the others
// stay, neither side is changed, and nothing from nothing is nil.
func TestImplementationMerge(t *testing.T) {
	file := &Implementation{Name: "a", Version: "1", Contact: []string{"x"}, Capabilities: []string{"sotw-ads"}}
	flags := &Implementation{Version: "2", URL: "u"}
	got := file.Merge(flags)
	assert.Equal(t, &Implementation{Name: "a", Version: "2", URL: "u", Contact: []string{"x"}, Capabilities: []string{"sotw-ads"}}, got)
	got.Contact[0] = "changed"
	assert.Equal(t, "x", file.Contact[0], "the merge shares no slice")
	assert.Equal(t, "1", file.Version)
	assert.Nil(t, (*Implementation)(nil).Merge(&Implementation{}))
	assert.True(t, (*Implementation)(nil).Empty())
	assert.Equal(t, &Implementation{Name: "n"}, (*Implementation)(nil).Merge(&Implementation{Name: "n"}))
	assert.Equal(t, file, file.Merge(nil))
}
