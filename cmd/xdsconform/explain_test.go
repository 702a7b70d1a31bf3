package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/requirements"
)

func TestExplain(t *testing.T) {
	code, out, stderr := run(t, "explain", "nonce-7")
	require.Equal(t, exitOK, code, stderr)
	r, _ := requirements.Lookup("NONCE-7")
	assert.True(t, strings.HasPrefix(out, "NONCE-7: Server ignores stale-nonce requests\n"), out)
	// Long fields are wrapped; compare with whitespace folded.
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		`("should not send a DiscoveryResponse for any DiscoveryRequest that has a stale nonce")`,
		"Source: " + r.Source,
		"Requirement: " + r.Text,
		"Test: " + r.Test,
		"Note: " + r.Note,
		"Binds: server", "Strength: SHOULD", "Variants: SotW, ADS, per-type", "Black-box: Yes (FX)",
		"Provenance: SRC (001, 002, 004)",
		"In the server role",
	} {
		assert.Contains(t, flat, want)
	}
	assert.Regexp(t, `(?m)^  server/nonce/stale-request-ignored  SHOULD  `, out)
	assert.Regexp(t, `(?m)^      variants: sotw-ads`, out)
	assert.NotContains(t, out, "In the client role", "NONCE-7 binds servers only")
}

func TestExplainTestabilityAndInvariants(t *testing.T) {
	// VER-6 binds both; the server side is untestable.
	code, out, stderr := run(t, "explain", "VER-6")
	require.Equal(t, exitOK, code, stderr)
	flat := strings.Join(strings.Fields(out), " ")
	assert.Contains(t, flat, "In the server role (the harness plays an xDS client against a management server): not testable: the catalogue's test is client-side only")
	assert.Contains(t, flat, "In the client role")

	// NONCE-5 is checked on every request of every client scenario.
	code, out, stderr = run(t, "explain", "NONCE-5")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, strings.Join(strings.Fields(out), " "), "invariant: checked on every message of every client scenario: no request echoes a nonce")
}

func TestCloseIDs(t *testing.T) {
	assert.Equal(t, []string{"NONCE-7", "NONCE-1", "NONCE-2"}, closeIDs("NONCE-77"))
	assert.Equal(t, []string{"DUP-1", "DUP-2", "DUP-3"}, closeIDs("DUP-9"))
	assert.Equal(t, []string{"DUP-1", "DUP-2", "DUP-3"}, closeIDs("DUP"), "a bare family name")
	assert.Empty(t, closeIDs("FOO-1"))
	assert.Equal(t, 0, editDistance("ab", "ab"))
	assert.Equal(t, 3, editDistance("", "abc"))
	assert.Equal(t, 1, editDistance("NONCE-7", "NONCE-77"))
}

func TestWrapText(t *testing.T) {
	assert.Equal(t, "ab: one two\n    §§§\n    four", wrapText("ab: ", "one  two\n§§§ four", 11))
	assert.Equal(t, "x: longerthanwidth", wrapText("x: ", "longerthanwidth", 5))
	assert.Equal(t, "p: ", wrapText("p: ", "", 10))
}
