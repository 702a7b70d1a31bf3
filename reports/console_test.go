package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Skips are counted, not printed, unless -v; then each has its line.
func TestConsoleSkipsOnlyWhenVerbose(t *testing.T) {
	skip := res("server/rest/poll", "rest", results.Skip, "target has no REST endpoint\ndetail", "")
	var quiet, verbose bytes.Buffer
	NewConsole(&quiet, ConsoleOptions{}).Finished(skip)
	NewConsole(&verbose, ConsoleOptions{Verbose: true}).Finished(skip)
	assert.Empty(t, quiet.String())
	assert.Equal(t, "SKIP  server/rest/poll[rest] (12ms): target has no REST endpoint\n    target has no REST endpoint\n    detail\n", verbose.String())

	var sum bytes.Buffer
	NewConsole(&sum, ConsoleOptions{Verbose: true}).Summary(sampleRun())
	assert.Contains(t, sum.String(), "=== Skipped (3)\n     2  target has no REST endpoint\n")
}

// Every failure, error, warning and stale entry has the command that runs
// it again under it, as it arrives and in the summary; passes and known
// failures do not; what the command line holds goes through the secret
// memory and the terminal escaping like any other text.
func TestConsoleRerunLine(t *testing.T) {
	const secret = "MARKER-rerun-c41b"
	transcript.RememberSecret(secret)
	rerun := func(r results.Result) string {
		return "xdsconform server --target t --metadata 'x-token=" + secret + "' --run '" + r.FullName() + "'\x1b[2J"
	}
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleOptions{Rerun: rerun})
	for _, r := range sampleRun().Results {
		c.Finished(r)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var under []string
	for i, l := range lines {
		if strings.HasPrefix(l, "      re-run: ") {
			under = append(under, strings.Fields(lines[i-1])[0]+" "+strings.Fields(lines[i-1])[1])
		}
	}
	assert.Equal(t, []string{
		"FAIL server/nonce/stale-request-ignored[sotw-ads]",
		"XPASS server/nonce/other[sotw-ads]",
		"ERROR server/stream/open[sotw]",
	}, under, out)
	assert.Contains(t, out, "      re-run: xdsconform server --target t --metadata 'x-token="+transcript.RedactedSecret+"' --run 'server/nonce/stale-request-ignored[sotw-ads]'\\x1b[2J\n")
	assert.NotContains(t, out, secret)

	b.Reset()
	c.Summary(sampleRun())
	assert.Contains(t, b.String(), "--- FAIL server/nonce/stale-request-ignored[sotw-ads]\n    re-run: xdsconform server --target t --metadata 'x-token="+transcript.RedactedSecret+"' --run 'server/nonce/stale-request-ignored[sotw-ads]'")
	assert.Contains(t, b.String(), "  server/nonce/other[sotw-ads]: was broken in v1\n    re-run: ")
	assert.NotContains(t, b.String(), secret)
}

// Colour codes are the console's own: a target's text that carries one is
// escaped even when colour is on.
func TestConsoleColorDoesNotLetTextThrough(t *testing.T) {
	r := res("server/a/b", "sotw-ads", results.Fail, "bad \x1b[32mPASS\x1b[0m \u009b2J \xff", "")
	var b bytes.Buffer
	NewConsole(Terminal(&b), ConsoleOptions{Color: true}).Finished(r)
	assert.Equal(t, "\x1b[31mFAIL \x1b[0m server/a/b[sotw-ads] (12ms): bad \\x1b[32mPASS\\x1b[0m \\u009b2J \uFFFD\n", b.String(), "invalid UTF-8 becomes U+FFFD")
}

// The status line: pairs done of the total, failures, elapsed, and an
// estimate once etaAfter pairs have run; erased before result lines and
// redrawn after them, and gone after Stop.
func TestConsoleLiveStatus(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleOptions{Live: true})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	c.Start(20)
	defer c.Stop()
	assert.Equal(t, "[0/20] 0s elapsed", b.String())

	b.Reset()
	now = now.Add(2 * time.Second)
	c.Finished(res("server/rest/poll", "rest", results.Skip, "no REST", ""))
	assert.Equal(t, "\r\x1b[K[1/20] 2s elapsed", b.String(), "a skip only moves the counter")

	b.Reset()
	c.Finished(res("server/a/b", "sotw-ads", results.Fail, "broke", ""))
	assert.Equal(t, "\r\x1b[KFAIL  server/a/b[sotw-ads] (12ms): broke\n[2/20] 2s elapsed, 1 failure", b.String())

	for i := 0; i < etaAfter; i++ {
		c.Finished(res("server/a/c", "sotw-ads", results.Pass, "", ""))
	}
	b.Reset()
	now = now.Add(5 * time.Second) // 7 pairs in 7s: 13 left take 13s
	c.Finished(res("server/rest/poll", "rest", results.Skip, "no REST", ""))
	assert.Equal(t, "\r\x1b[K[8/20] 7s elapsed, 1 failure, about 11s left", b.String())

	b.Reset()
	c.Stop()
	assert.Equal(t, "\r\x1b[K", b.String())
	b.Reset()
	c.Finished(res("server/a/d", "sotw-ads", results.Pass, "", ""))
	assert.Equal(t, "PASS  server/a/d[sotw-ads] (12ms)\n", b.String(), "no status line after Stop")
}

// The status line is cut to the terminal's width: a wrapped line cannot
// be redrawn in place.
func TestConsoleLiveStatusWidth(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleOptions{Live: true, Width: 10})
	c.Start(1000)
	defer c.Stop()
	require.Equal(t, "[0/1000] ", b.String())
}

// Without Live nothing but result lines is written, Start or not.
func TestConsoleNotLive(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleOptions{})
	c.Start(3)
	c.Finished(res("server/a/b", "sotw-ads", results.Pass, "", ""))
	c.Stop()
	assert.Equal(t, "PASS  server/a/b[sotw-ads] (12ms)\n", b.String())
}
