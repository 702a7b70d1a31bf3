package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/schema"
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

// blockedRun is a run in which one failed precondition blocks three pairs
// (one of them excused as known failing), one pair fails on its own, one
// is inconclusive for the harness's lag, and one errors: the outcomes the
// summary groups by root cause.
func blockedRun() results.Run {
	blocked := func(id, variant, known string) results.Result {
		r := res(id, variant, results.Blocked, "blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\nwaited 5s", known)
		r.Level, r.RulesBroken, r.BrokenLevel, r.BlockedBy, r.Transcript = results.May, []string{"RES-1"}, results.Must, "RES-1", nil
		return r
	}
	incon := res("client/ack/prompt", "sotw-ads", results.Inconclusive, "the harness's own lag could explain a timing verdict either way:\nUPD-2: …", "")
	incon.Requirements, incon.Transcript = []string{"UPD-2"}, nil
	incon.Timing = &results.Timing{Reruns: 2, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the ACK of version 2", Kind: results.TimingWithin,
		Measured: 1200 * time.Millisecond, Limit: time.Second, Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt}}}
	fail := res("client/ack/nack", "sotw-ads", results.Fail, "ACK-5 (SHOULD): the NACK came late", "")
	fail.RulesBroken, fail.BrokenLevel, fail.Transcript = []string{"ACK-5"}, results.Should, nil
	errored := res("client/stream/open", "sotw-ads", results.Error, "the fixture did not answer for node xdsconform-1a2b3c4d", "")
	errored.Transcript = nil
	return results.Run{Role: "client", Target: "builtin:grpc-go", Duration: 2 * time.Second, Results: []results.Result{
		blocked("client/ack/every-response", "sotw-ads", ""),
		blocked("client/ack/every-response", "delta-ads", ""),
		blocked("client/ack/version", "sotw-ads", "RES-1: the peer's bug"),
		fail, incon, errored,
	}}
}

// The progress lines of the outcomes the engine added: a blocked pair
// says what blocked it, red; an inconclusive one gives the figures, in
// yellow, not red; a blocked pair the known-failing file lists is XFAIL,
// and one below --fail-on a WARN that still says what blocked it.
func TestConsoleBlockedAndInconclusiveLines(t *testing.T) {
	run := blockedRun()
	var b bytes.Buffer
	c := NewConsole(Terminal(&b), ConsoleOptions{Color: true, Rerun: func(r results.Result) string { return "again " + r.FullName() }})
	for _, r := range run.Results {
		c.Finished(r)
	}
	assert.Equal(t, "\x1b[31mBLOCK\x1b[0m client/ack/every-response[sotw-ads] (12ms): blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\n"+
		"      re-run: again client/ack/every-response[sotw-ads]\n"+
		"\x1b[31mBLOCK\x1b[0m client/ack/every-response[delta-ads] (12ms): blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\n"+
		"      re-run: again client/ack/every-response[delta-ads]\n"+
		"\x1b[33mXFAIL\x1b[0m client/ack/version[sotw-ads] (12ms): known failing: RES-1: the peer's bug\n"+
		"\x1b[31mFAIL \x1b[0m client/ack/nack[sotw-ads] (12ms): ACK-5 (SHOULD): the NACK came late\n"+
		"      re-run: again client/ack/nack[sotw-ads]\n"+
		"\x1b[33mINCON\x1b[0m client/ack/prompt[sotw-ads] (12ms): inconclusive: UPD-2: the ACK of version 2 took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times\n"+
		"      re-run: again client/ack/prompt[sotw-ads]\n"+
		"\x1b[31mERROR\x1b[0m client/stream/open[sotw-ads] (12ms): the fixture did not answer for node xdsconform-1a2b3c4d\n"+
		"      re-run: again client/stream/open[sotw-ads]\n", b.String())

	b.Reset()
	c = NewConsole(&b, ConsoleOptions{FailOn: results.Must})
	warn := run.Results[0]
	warn.BlockedBy, warn.RulesBroken, warn.BrokenLevel, warn.Message = "UPD-1", []string{"UPD-1"}, results.Should, "no update came"
	c.Finished(warn)
	assert.Equal(t, "WARN  client/ack/every-response[sotw-ads] (12ms): blocked by UPD-1 (SHOULD): no update came\n", b.String())
}

// The summary of a run with blocked, inconclusive and erroring pairs, in
// full: the counts (the known failure apart from the failures at its
// level), one blocked pair in detail and the other of its rule by name,
// the inconclusive pair with its figures, the causes, the line that sums
// them up, and the verdict.
func TestConsoleSummaryBlockedAndInconclusive(t *testing.T) {
	var b bytes.Buffer
	NewConsole(&b, ConsoleOptions{TranscriptTail: -1}).Summary(blockedRun())
	assert.Equal(t, `
=== Summary: client suite against builtin:grpc-go (6 results in 2000ms)
  pass           0
  fail           1
  blocked        2
  warn           0
  unsupported    0
  inconclusive   1
  known-failing  1
  stale          0
  skipped        0
  error          1
  by level:
    MUST    0 pass, 0 fail, 0 skipped, 0 error
    SHOULD  0 pass, 1 fail, 1 inconclusive, 0 skipped, 1 error
    MAY     0 supported, 0 not supported, 0 fail, 2 blocked, 1 known failing, 0 skipped, 0 error

=== Failures (1)

--- FAIL client/ack/nack[sotw-ads]
    level:        SHOULD
    requirements: NONCE-7
    rules broken: ACK-5 (SHOULD)
    message:
        ACK-5 (SHOULD): the NACK came late

=== Blocked: a precondition failed, so the scenario never reached what it checks; each counts against the rule its precondition rests on (2)

--- BLOCK client/ack/every-response[delta-ads]
    level:        MAY
    requirements: NONCE-7
    blocked by:   RES-1 (MUST): the rule its failed precondition rests on, which it counts against
    message:
        blocked by RES-1 (MUST): a precondition failed: no CDS response for "x1a2b3c4d-c1"
        waited 5s

--- BLOCK client/ack/every-response[sotw-ads]: blocked by RES-1, as above

=== Errors (1)

--- ERROR client/stream/open[sotw-ads]
    level:        SHOULD
    requirements: NONCE-7
    message:
        the fixture did not answer for node xdsconform-1a2b3c4d

=== Inconclusive: timing verdicts the harness's own lag could explain, or windows the run's budget cut shorter than the timer they are about; not counted against the run (1)
  client/ack/prompt[sotw-ads]: UPD-2: the ACK of version 2 took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times

=== Known failing, not counted against the run (1)
  client/ack/version[sotw-ads]: RES-1: the peer's bug

=== Causes: what did not pass, by root cause (4)
  failing the run:
    RES-1 (MUST) in 2 pairs (2 blocked), first seen in client/ack/every-response[delta-ads]
        e.g. blocked by RES-1 (MUST): a precondition failed: no CDS response for "x1a2b3c4d-c1"
    ACK-5 (SHOULD) in 1 pair (1 failed), first seen in client/ack/nack[sotw-ads]
        e.g. ACK-5 (SHOULD): the NACK came late
    error "the fixture did not answer for node xdsconform-…" in 1 pair (1 errored), first seen in client/stream/open[sotw-ads]
        e.g. the fixture did not answer for node xdsconform-1a2b3c4d
  excused by the known-failing file:
    RES-1 (MUST) in 1 pair (1 blocked; excused as known failing), first seen in client/ack/version[sotw-ads]
        e.g. blocked by RES-1 (MUST): a precondition failed: no CDS response for "x1a2b3c4d-c1"

5 pairs did not pass: 4 causes, RES-1 (MUST) in 2 pairs (2 blocked), first seen in client/ack/every-response[delta-ads]; 3 other causes listed above
FAIL: 1 failure, 2 blocked pairs, 1 error
`, b.String())

	// Only what the known-failing file excused, and an inconclusive pair:
	// the run passes, and says so with both counted.
	run := blockedRun()
	run.Results = []results.Result{run.Results[2], run.Results[4]}
	b.Reset()
	NewConsole(&b, ConsoleOptions{}).Summary(run)
	assert.True(t, strings.HasSuffix(b.String(), "\n1 pair did not pass: 1 cause, RES-1 (MUST) in 1 pair (1 blocked; excused as known failing), first seen in client/ack/version[sotw-ads]\n"+
		"PASS: 0 passed, 1 known failing, 0 skipped, 1 inconclusive\n"), b.String())
}

// With -v an inconclusive pair's detail lists its timing verdicts, each
// with the harness's lag in its window.
func TestConsoleTimingDetails(t *testing.T) {
	var b bytes.Buffer
	NewConsole(&b, ConsoleOptions{Verbose: true}).Finished(blockedRun().Results[4])
	assert.Contains(t, b.String(), "    timing (of its last run; it ran again alone 2 times):\n"+
		"      UPD-2 within: the ACK of version 2: 1.2s against 1s, harness stalled 400ms (longest 300ms): doubt\n    message:\n")
}

// In JUnit a blocked pair is a failure typed as blocked, naming the rule
// that blocked it; an inconclusive pair a skip that gives the figures, so
// that a CI gate does not go red on the harness's own lag; a known-failing
// blocked pair a skip. Each suite ends with what did not pass, by root
// cause; and the document stays valid against the common JUnit schema.
func TestWriteJUnitBlockedAndInconclusive(t *testing.T) {
	var x bytes.Buffer
	require.NoError(t, WriteJUnit(&x, blockedRun()))
	var doc xSuites
	require.NoError(t, xml.Unmarshal(x.Bytes(), &doc))
	assert.Equal(t, [3]int{2 + 1, 1, 0}, [3]int{doc.Failures, doc.Errors, doc.Skipped}, "failures: 2 blocked, 1 fail")
	cases := map[string]xCase{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases[c.Name] = c
		}
	}
	b := cases["client/ack/every-response[sotw-ads]"]
	require.NotNil(t, b.Failure)
	assert.Equal(t, xProb{Message: `blocked by RES-1 (MUST): a precondition failed: no CDS response for "x1a2b3c4d-c1"`, Type: "blocked MUST RES-1",
		Body: "blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\nwaited 5s\n"}, *b.Failure)
	i := cases["client/ack/prompt[sotw-ads]"]
	require.NotNil(t, i.Skipped)
	assert.Nil(t, i.Failure)
	assert.Equal(t, "inconclusive, not counted (the harness's own lag could explain a timing verdict): UPD-2: the ACK of version 2 took 1.2s, limit 1s, "+
		"harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times\n\n"+
		"the harness's own lag could explain a timing verdict either way:\nUPD-2: …\n", i.Skipped.Body)
	k := cases["client/ack/version[sotw-ads]"]
	require.NotNil(t, k.Skipped)
	assert.Nil(t, k.Failure)
	assert.True(t, strings.HasPrefix(k.Skipped.Body, "known failing: RES-1: the peer's bug\n\nblocked by RES-1"), k.Skipped.Body)

	var suites struct {
		Suites []struct {
			Name      string `xml:"name,attr"`
			Failures  int    `xml:"failures,attr"`
			Skipped   int    `xml:"skipped,attr"`
			SystemOut string `xml:"system-out"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(x.Bytes(), &suites))
	require.Len(t, suites.Suites, 2)
	should, may := suites.Suites[0], suites.Suites[1]
	assert.Equal(t, "xdsconform client suite: builtin:grpc-go [MAY]", may.Name)
	assert.Equal(t, [2]int{2, 1}, [2]int{may.Failures, may.Skipped})
	assert.Equal(t, "3 pairs did not pass: 2 causes, RES-1 (MUST) in 2 pairs (2 blocked), first seen in client/ack/every-response[delta-ads]; 1 other cause listed above\n\n"+
		"By root cause:\n"+
		"  failing the run:\n"+
		"    RES-1 (MUST) in 2 pairs (2 blocked), first seen in client/ack/every-response[delta-ads]\n"+
		"        e.g. blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\n"+
		"  excused by the known-failing file:\n"+
		"    RES-1 (MUST) in 1 pair (1 blocked; excused as known failing), first seen in client/ack/version[sotw-ads]\n"+
		"        e.g. blocked by RES-1 (MUST): a precondition failed: no CDS response for \"x1a2b3c4d-c1\"\n", may.SystemOut)
	assert.Contains(t, should.SystemOut, "2 pairs did not pass: 2 causes")

	err := schema.ValidateJUnit(context.Background(), x.Bytes())
	if errors.Is(err, schema.ErrNoXmllint) {
		t.Skip(err)
	}
	assert.NoError(t, err)
}
