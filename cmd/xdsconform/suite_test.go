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

// xdsconform faults lists every fault of the role asked, with what it
// breaks; --help and the unknown-fault error point there.
func TestFaultsCommand(t *testing.T) {
	code, out, _ := run(t, "faults", "server")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "answer-stale-nonce")
	assert.Contains(t, out, "NONCE-7")
	assert.NotContains(t, out, "client faults")
	code, out, _ = run(t, "faults")
	assert.Equal(t, exitOK, code)
	assert.Contains(t, out, "client faults")
	assert.Contains(t, out, "envoy profile only")
	code, _, errs := run(t, "faults", "proxy")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "want server or client")
	code, _, errs = run(t, "server", "--target", "builtin:reference", "--fault", "nope")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "xdsconform faults lists them")
	_, help, _ := run(t, "server", "--help")
	assert.NotContains(t, help, "answer-stale-nonce, ", "the names are not inline any more")
}
