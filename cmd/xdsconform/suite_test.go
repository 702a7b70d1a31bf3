package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A shipped list covers the whole catalogue: a run of a few scenarios
// leaves most of it unused, which is one line, not one per entry, unless
// --verbose asks.
func TestNoteUnmatched(t *testing.T) {
	patterns := []string{"a/b[sotw-*]", "c/d", "e/f"}
	var one, all bytes.Buffer
	noteUnmatched(&one, patterns, false)
	assert.Equal(t, `note: 3 known-failing entries match no selected scenario ("a/b[sotw-*]", "c/d", …; --verbose lists them)`+"\n", one.String())
	noteUnmatched(&all, patterns, true)
	assert.Equal(t, 3, strings.Count(all.String(), "\n"))
	var none bytes.Buffer
	noteUnmatched(&none, nil, false)
	assert.Empty(t, none.String())
}
