package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"", "", true},
		{"", "a", false},
		{"*", "", true},
		{"*", "anything/with/slashes[sotw-ads]", true},
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"abcd", "abc", false},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"a?c", "a/c", true},
		{"?", "", false},
		{"??", "ab", true},
		{"a*", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b*c", "a-x-b-y-c", true},
		{"a*b*c", "a-x-c-y-b", false},
		{"**", "x", true},
		{"[sotw-ads]", "[sotw-ads]", true},
		{"[ab]", "a", false}, // brackets are literal, not a class
		{"x[*]", "x[delta-ads]", true},
		{"\\*", "\\x", true}, // no escaping: backslash is literal
		{"\\*", "*", false},
	}
	for _, tc := range tests {
		t.Run(tc.pattern+"~"+tc.s, func(t *testing.T) {
			assert.Equal(t, tc.want, engine.Glob(tc.pattern, tc.s))
		})
	}
}

func TestGlobPathologicalTerminates(t *testing.T) {
	long := strings.Repeat("a", 100_000)
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"*a*a*a*a*b", long, false},
		{"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", long, false},
		{"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*", long, true},
		{strings.Repeat("*?", 50) + "b", long, false},
		{"*a*a*a*a*b", long + "b", true},
	}
	for _, tc := range tests {
		t.Run(tc.pattern[:min(len(tc.pattern), 40)], func(t *testing.T) {
			done := make(chan bool, 1)
			go func() { done <- engine.Glob(tc.pattern, tc.s) }()
			select {
			case got := <-done:
				assert.Equal(t, tc.want, got)
			case <-time.After(10 * time.Second):
				t.Fatalf("Glob(%q, <%d bytes>) did not finish: backtracking blew up", tc.pattern, len(tc.s))
			}
		})
	}
}

func TestMatchPair(t *testing.T) {
	variants := []string{"sotw-ads", "sotw-pertype", "delta-ads", "delta-pertype"}
	tests := []struct {
		name    string
		pattern string
		id      string
		want    []string // variants selected
	}{
		{"area glob selects every variant", "server/nonce/*", "server/nonce/distinct", variants},
		{"area glob does not leak to other areas", "server/nonce/*", "server/ack/no-resend-after-ack", nil},
		{"area glob does not match a prefix area", "server/nonce/*", "server/nonces/x", nil},
		{"delta only", "*[delta-*]", "server/nonce/distinct", []string{"delta-ads", "delta-pertype"}},
		{"ADS only", "*[*-ads]", "server/nonce/distinct", []string{"sotw-ads", "delta-ads"}},
		{"exact pair", "server/nonce/distinct[sotw-ads]", "server/nonce/distinct", []string{"sotw-ads"}},
		{"exact pair, other ID", "server/nonce/distinct[sotw-ads]", "server/nonce/non-empty", nil},
		{"bare ID selects every variant", "server/nonce/distinct", "server/nonce/distinct", variants},
		{"bare ID is not a prefix match", "server/nonce/dist", "server/nonce/distinct", nil},
		{"question mark in the ID", "server/nonce/distinc?", "server/nonce/distinct", variants},
		{"question mark in the variant", "server/nonce/distinct[?otw-ads]", "server/nonce/distinct", []string{"sotw-ads"}},
		{"brackets are literal", "server/nonce/distinct[sd]", "server/nonce/distinct", nil},
		{"everything", "*", "server/x/y", variants},
		{"unknown variant", "server/x/y[grpc-ads]", "server/x/y", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range variants {
				if engine.MatchPair(tc.pattern, tc.id, v) {
					got = append(got, v)
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// catalogue builds a small catalogue for selection tests.
func catalogue() []*engine.Scenario {
	body := func(*engine.T) {}
	return []*engine.Scenario{
		{ID: "server/nonce/distinct", Title: "t", Requirements: []string{"NONCE-2"}, Level: results.Must, Variants: wire.AllVariants, Run: body},
		{ID: "server/ack/no-resend", Title: "t", Requirements: []string{"UPD-1"}, Level: results.Should, Variants: wire.AllVariants, Run: body},
		{ID: "server/delta/only", Title: "t", Requirements: []string{"DELTA-2"}, Level: results.May, Variants: wire.DeltaOnly, Run: body},
	}
}

func names(ps []engine.Pair) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.FullName())
	}
	return out
}

func TestExpand(t *testing.T) {
	tests := []struct {
		name string
		sel  engine.Selection
		want []string
	}{
		{"everything in catalogue and variant order", engine.Selection{}, []string{
			"server/nonce/distinct[sotw-ads]", "server/nonce/distinct[sotw-pertype]", "server/nonce/distinct[delta-ads]", "server/nonce/distinct[delta-pertype]",
			"server/ack/no-resend[sotw-ads]", "server/ack/no-resend[sotw-pertype]", "server/ack/no-resend[delta-ads]", "server/ack/no-resend[delta-pertype]",
			"server/delta/only[delta-ads]", "server/delta/only[delta-pertype]",
		}},
		{"run one area", engine.Selection{Run: []string{"server/nonce/*"}}, []string{
			"server/nonce/distinct[sotw-ads]", "server/nonce/distinct[sotw-pertype]", "server/nonce/distinct[delta-ads]", "server/nonce/distinct[delta-pertype]",
		}},
		{"run several patterns is a union", engine.Selection{Run: []string{"server/ack/no-resend[sotw-ads]", "server/delta/*[*-pertype]"}}, []string{
			"server/ack/no-resend[sotw-ads]", "server/delta/only[delta-pertype]",
		}},
		{"skip delta", engine.Selection{Skip: []string{"*[delta-*]"}}, []string{
			"server/nonce/distinct[sotw-ads]", "server/nonce/distinct[sotw-pertype]",
			"server/ack/no-resend[sotw-ads]", "server/ack/no-resend[sotw-pertype]",
		}},
		{"skip wins over run", engine.Selection{Run: []string{"server/nonce/*"}, Skip: []string{"*[*-pertype]"}}, []string{
			"server/nonce/distinct[sotw-ads]", "server/nonce/distinct[delta-ads]",
		}},
		{"levels", engine.Selection{Levels: []results.Level{results.Should, results.May}}, []string{
			"server/ack/no-resend[sotw-ads]", "server/ack/no-resend[sotw-pertype]", "server/ack/no-resend[delta-ads]", "server/ack/no-resend[delta-pertype]",
			"server/delta/only[delta-ads]", "server/delta/only[delta-pertype]",
		}},
		{"variants", engine.Selection{Variants: []wire.Variant{wire.DeltaPerType}}, []string{
			"server/nonce/distinct[delta-pertype]", "server/ack/no-resend[delta-pertype]", "server/delta/only[delta-pertype]",
		}},
		{"all filters together", engine.Selection{
			Run: []string{"server/*"}, Skip: []string{"server/ack/*"},
			Levels: []results.Level{results.Must, results.May}, Variants: []wire.Variant{wire.SotWADS, wire.DeltaADS},
		}, []string{"server/nonce/distinct[sotw-ads]", "server/nonce/distinct[delta-ads]", "server/delta/only[delta-ads]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := engine.Expand(catalogue(), tc.sel)
			require.NoError(t, err)
			assert.Equal(t, tc.want, names(ps))
		})
	}
}

func TestExpandNothingSelected(t *testing.T) {
	tests := []struct {
		name string
		cat  []*engine.Scenario
		sel  engine.Selection
	}{
		{"no match", catalogue(), engine.Selection{Run: []string{"server/nope/*"}}},
		{"everything skipped", catalogue(), engine.Selection{Skip: []string{"*"}}},
		{"variant the scenario lacks", catalogue(), engine.Selection{Run: []string{"server/delta/*"}, Variants: []wire.Variant{wire.SotWADS}}},
		{"level nobody has", catalogue()[:1], engine.Selection{Levels: []results.Level{results.May}}},
		{"empty catalogue", nil, engine.Selection{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := engine.Expand(tc.cat, tc.sel)
			require.Error(t, err)
			assert.True(t, errors.Is(err, engine.ErrNothingSelected), "err = %v", err)
			assert.Empty(t, ps)
		})
	}
}

func TestParseLevels(t *testing.T) {
	tests := []struct {
		in      string
		want    []results.Level
		wantErr bool
	}{
		{"", nil, false},
		{"  ", nil, false},
		{"MUST", []results.Level{results.Must}, false},
		{"must, Should ,may", []results.Level{results.Must, results.Should, results.May}, false},
		{"MUST,OPTIONAL", nil, true},
		{"MUST,", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := engine.ParseLevels(tc.in)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestUnmatchedPatterns(t *testing.T) {
	other := []*engine.Scenario{{ID: "client/ack/one", Variants: []wire.Variant{wire.SotWADS}}}
	got := engine.UnmatchedPatterns([]string{"server/nonce/*", "server/nonec/*", "client/ack/*", "*[delta-ads]", "client/ack/one[delta-ads]"}, catalogue(), other)
	assert.Equal(t, []string{"server/nonec/*", "client/ack/one[delta-ads]"}, got,
		"a pattern is unmatched only when no scenario of any catalogue, in any of its variants, matches it")
	assert.Empty(t, engine.UnmatchedPatterns(nil, catalogue()))
}
