package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/wire"
)

const knownFile = `# go-control-plane known failures

server/nonce/distinct[sotw-ads]   NONCE-2: reuses nonces on ADS (cache.go:123)
  # indented comment
server/ack/*[delta-*] UPD-1: delta resends after ACK
server/gone/never-matches stale entry, misspelled
`

func TestParseKnownFailing(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader(knownFile), "kf.txt")
	require.NoError(t, err)

	tests := []struct {
		id, variant, want string
	}{
		{"server/nonce/distinct", "sotw-ads", "NONCE-2: reuses nonces on ADS (cache.go:123)"},
		{"server/nonce/distinct", "delta-ads", ""},
		{"server/ack/no-resend", "delta-pertype", "UPD-1: delta resends after ACK"},
		{"server/ack/no-resend", "sotw-pertype", ""},
		{"server/other/x", "sotw-ads", ""},
	}
	for _, tc := range tests {
		t.Run(tc.id+"["+tc.variant+"]", func(t *testing.T) {
			assert.Equal(t, tc.want, kf.ReasonFor(tc.id, tc.variant))
			v, err := wire.ParseVariant(tc.variant)
			require.NoError(t, err)
			p := engine.Pair{Scenario: &engine.Scenario{ID: tc.id}, Variant: v}
			assert.Equal(t, tc.want, kf.Reason(p))
		})
	}

	pairs, err := engine.Expand(catalogue(), engine.Selection{})
	require.NoError(t, err)
	assert.Equal(t, []string{"server/gone/never-matches"}, kf.Unmatched(pairs))
}

func TestKnownFailingFirstEntryWins(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader("server/a/*  broad\nserver/a/b[sotw-ads] narrow\n"), "kf")
	require.NoError(t, err)
	assert.Equal(t, "broad", kf.ReasonFor("server/a/b", "sotw-ads"))
}

func TestKnownFailingNil(t *testing.T) {
	var kf *engine.KnownFailing
	assert.Equal(t, "", kf.ReasonFor("server/a/b", "sotw-ads"))
	assert.Equal(t, "", kf.Reason(engine.Pair{Scenario: &engine.Scenario{ID: "server/a/b"}, Variant: wire.SotWADS}))
	assert.Nil(t, kf.Unmatched(nil))
}

func TestKnownFailingEmpty(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader("# nothing\n\n   \n"), "kf")
	require.NoError(t, err)
	assert.Equal(t, "", kf.ReasonFor("server/a/b", "sotw-ads"))
	assert.Empty(t, kf.Unmatched(nil))
}

func TestParseKnownFailingErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"missing reason", "# header\n\nserver/a/b[sotw-ads]\n", []string{"kf.txt:3:", "server/a/b[sotw-ads]", "no reason"}},
		{"reason only blanks", "server/a/b    \n", []string{"kf.txt:1:", "no reason"}},
		{"not a scenario pattern", "server/a/b ok\n*[delta-*] every delta pair\n", []string{"kf.txt:2:", `"*[delta-*]"`, "not a scenario pattern"}},
		{"bare word", "NONCE-2 reuses nonces\n", []string{"kf.txt:1:", "NONCE-2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kf, err := engine.ParseKnownFailing(strings.NewReader(tc.in), "kf.txt")
			require.Error(t, err)
			assert.Nil(t, kf)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestLoadKnownFailing(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	require.NoError(t, os.WriteFile(good, []byte(knownFile), 0o600))
	kf, err := engine.LoadKnownFailing(good)
	require.NoError(t, err)
	assert.NotEmpty(t, kf.ReasonFor("server/nonce/distinct", "sotw-ads"))

	bad := filepath.Join(dir, "bad.txt")
	require.NoError(t, os.WriteFile(bad, []byte("\nserver/a/b\n"), 0o600))
	_, err = engine.LoadKnownFailing(bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), bad+":2:")

	_, err = engine.LoadKnownFailing(filepath.Join(dir, "missing.txt"))
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// A known failure marked timing-dependent may pass in a run without
// making its entry stale; any other entry that passes is stale.
func TestTimingDependentPassIsNotStale(t *testing.T) {
	kf, err := engine.ParseKnownFailing(strings.NewReader("server/a/flaky[*] CONS-1 (timing-dependent): order varies\nserver/a/firm[*] UPD-1: always\n"), "list")
	require.NoError(t, err)
	pass := func(*engine.T) {}
	rs, _ := engine.Run(t.Context(), []engine.Pair{
		{Scenario: &engine.Scenario{ID: "server/a/flaky", Requirements: []string{"CONS-1"}, Level: "SHOULD", Run: pass}, Variant: wire.SotWADS},
		{Scenario: &engine.Scenario{ID: "server/a/firm", Requirements: []string{"UPD-1"}, Level: "SHOULD", Run: pass}, Variant: wire.SotWADS},
	}, engine.Config{Env: fakeEnv{}, KnownFailing: kf})
	require.Len(t, rs, 2)
	assert.Empty(t, rs[0].KnownFailing, "a timing-dependent pass is not stale")
	assert.NotEmpty(t, rs[1].KnownFailing, "any other listed pass is stale")
}
