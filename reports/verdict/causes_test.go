package verdict

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xdsconform/xdsconform/results"
)

// TestCauses checks the grouping every report shares: a blocked pair's
// cause is the rule it was blocked by, a failure's the first rule it
// broke, an error's its first line with the pair's own names taken out;
// excused pairs are a cause of their own; passes, skips, unsupported and
// inconclusive pairs are none; the order is what fails the run first,
// most pairs first, then first seen.
func TestCauses(t *testing.T) {
	blocked := func(id, variant string) results.Result {
		r := res(id, variant, results.Must, results.Blocked, []string{"ACK-1"}, "RES-1")
		r.BlockedBy, r.BrokenLevel = "RES-1", results.Must
		r.Message = "blocked by RES-1 (MUST): a precondition failed: the base resources were not served\nmore"
		return r
	}
	fail := func(id, variant, msg string, broke ...string) results.Result {
		r := res(id, variant, results.Must, results.Fail, []string{"NONCE-7"}, broke...)
		r.BrokenLevel, r.Message = results.Must, msg
		return r
	}
	errored := func(id, variant, msg string) results.Result {
		r := res(id, variant, results.Must, results.Error, []string{"NONCE-7"})
		r.Message = msg
		return r
	}
	known := fail("server/k", "sotw-ads", "RES-1 (MUST): known", "RES-1")
	known.KnownFailing = "RES-1: the peer's bug"
	warn := fail("server/w", "sotw-ads", "UPD-1 (SHOULD): resent", "UPD-1")
	warn.BrokenLevel = results.Should
	rs := []results.Result{
		// Out of order on purpose: First is in ID, then variant order.
		blocked("client/z", "sotw-ads"),
		blocked("client/a", "delta-ads"),
		blocked("client/a", "sotw-ads"),
		fail("client/b", "sotw-ads", "RES-1 (MUST): the first failure\nthen NONCE-7", "RES-1", "NONCE-7"),
		errored("server/e", "sotw-ads", `the fixture refused to set "x1a2b3c4d-c1" for node xdsconform-1a2b3c4d on ads-sotw#3`),
		errored("server/e", "delta-ads", `the fixture refused to set "x99aabbcc-c1" for node xdsconform-99aabbcc on ads-sotw#12`),
		errored("server/f", "sotw-ads", "dial tcp: connection refused"),
		known,
		warn,
		res("server/p", "sotw-ads", results.Must, results.Pass, []string{"ACK-1"}),
		res("server/s", "sotw-ads", results.Must, results.Skip, []string{"ACK-1"}),
		res("server/u", "sotw-ads", results.May, results.Unsupported, []string{"GRP-2"}, "GRP-2"),
		res("server/i", "sotw-ads", results.Should, results.Inconclusive, []string{"UPD-2"}),
	}
	got := Causes(rs, results.Must)
	assert.Equal(t, []Cause{
		{Rule: "RES-1", Level: results.Must, Pairs: 4, Failed: 1, Blocked: 3, First: "client/a[delta-ads]",
			Example: "blocked by RES-1 (MUST): a precondition failed: the base resources were not served", first: 0},
		{Error: `the fixture refused to set "x…-c1" for node xdsconform-… on ads-sotw#…`, Pairs: 2, Errored: 2, First: "server/e[delta-ads]",
			Example: `the fixture refused to set "x99aabbcc-c1" for node xdsconform-99aabbcc on ads-sotw#12`, first: 4},
		{Error: "dial tcp: connection refused", Pairs: 1, Errored: 1, First: "server/f[sotw-ads]", Example: "dial tcp: connection refused", first: 6},
		{Rule: "UPD-1", Level: results.Should, Pairs: 1, Failed: 1, Tolerated: 1, First: "server/w[sotw-ads]", Example: "UPD-1 (SHOULD): resent", first: 12},
		{Rule: "RES-1", Level: results.Must, Pairs: 1, Failed: 1, KnownFailing: true, First: "server/k[sotw-ads]", Example: "RES-1 (MUST): known", first: 8},
	}, got)
	assert.Equal(t, []bool{true, true, true, false, false}, []bool{got[0].FailsRun(), got[1].FailsRun(), got[2].FailsRun(), got[3].FailsRun(), got[4].FailsRun()})
	assert.Equal(t, []string{"4 pairs (3 blocked, 1 failed)", "2 pairs (2 errored)", "1 pair (1 errored)",
		"1 pair (1 failed; below the fail-on level)", "1 pair (1 failed; excused as known failing)"},
		[]string{got[0].Breakdown(), got[1].Breakdown(), got[2].Breakdown(), got[3].Breakdown(), got[4].Breakdown()})
	assert.Equal(t, "RES-1 (MUST)", got[0].Name())
	assert.Equal(t, "dial tcp: connection refused", got[2].Name())

	// At the default fail-on level the SHOULD failure fails the run too.
	should := Causes(rs, "")
	assert.Equal(t, "UPD-1", should[3].Rule)
	assert.True(t, should[3].FailsRun())
	assert.Zero(t, should[3].Tolerated)

	// The same order whatever order the results come in.
	rev := make([]results.Result, len(rs))
	for i, r := range rs {
		rev[len(rs)-1-i] = r
	}
	assert.Equal(t, got, Causes(rev, results.Must))
	assert.Empty(t, Causes(rs[9:12], results.Must), "passes, skips and unsupported pairs are no cause")
}

// TestCausesLine checks the one line a summary ends with.
func TestCausesLine(t *testing.T) {
	var rs []results.Result
	for _, v := range []string{"sotw-ads", "delta-ads", "sotw-pertype"} {
		r := res("client/ack/every-response", v, results.Must, results.Blocked, []string{"ACK-1"}, "RES-1")
		r.BlockedBy, r.BrokenLevel = "RES-1", results.Must
		rs = append(rs, r)
	}
	one := Causes(rs, "")
	assert.Equal(t, "3 pairs did not pass: 1 cause, RES-1 (MUST) in 3 pairs (3 blocked), first seen in client/ack/every-response[delta-ads]",
		CausesLine(one, func(s string) string { return s }))
	e := res("server/x", "sotw-ads", results.Must, results.Error, nil)
	e.Message = "boom"
	two := Causes(append(rs, e), "")
	assert.Equal(t, "4 pairs did not pass: 2 causes, RES-1 (MUST) in 3 pairs (3 blocked), first seen in CLIENT/ACK/EVERY-RESPONSE[DELTA-ADS]; 1 other cause listed above",
		CausesLine(two, strings.ToUpper), "the text from a report goes through esc")
	assert.Empty(t, CausesLine(nil, strings.ToUpper))
}

// TestNormalizeError checks what is taken out of an error's line: only
// what names one pair.
func TestNormalizeError(t *testing.T) {
	for in, want := range map[string]string{
		"node xdsconform-0123abcd got no answer":                      "node xdsconform-… got no answer",
		`resource "x0123abcd-listener" missing`:                       `resource "x…-listener" missing`,
		"xdstp://auth/envoy.config.listener.v3.Listener/x0123abcd-l1": "xdstp://auth/envoy.config.listener.v3.Listener/x…-l1",
		"stream ads#12 closed, then delta-ads#3":                      "stream ads#… closed, then delta-ads#…",
		"response #3 was NACKed":                                      "response #3 was NACKed",
		"dial tcp 127.0.0.1:18000: connection refused":                "dial tcp 127.0.0.1:18000: connection refused",
		"xdsconform-refclient exited":                                 "xdsconform-refclient exited",
	} {
		assert.Equal(t, want, NormalizeError(in), in)
	}
}

// TestBlockedHeadline checks what the reports say of a blocked pair.
func TestBlockedHeadline(t *testing.T) {
	r := results.Result{Outcome: results.Blocked, BlockedBy: "RES-1", BrokenLevel: results.Must,
		Message: "blocked by RES-1 (MUST): a precondition failed: no CDS response\ndetail"}
	assert.Equal(t, "blocked by RES-1 (MUST): a precondition failed: no CDS response", BlockedHeadline(r))
	r.Message = "no CDS response"
	assert.Equal(t, "blocked by RES-1 (MUST): no CDS response", BlockedHeadline(r), "a message that does not say so")
	r.Message, r.BlockedBy = "", ""
	assert.Equal(t, "blocked by - (MUST)", BlockedHeadline(r))
}

// TestTimingDoubts checks the figures an inconclusive pair is shown with.
func TestTimingDoubts(t *testing.T) {
	r := results.Result{Outcome: results.Inconclusive, Message: "the harness's own lag could explain a timing verdict either way:\n…",
		Timing: &results.Timing{Reruns: 2, Checks: []results.TimingCheck{
			{Rule: "UPD-2", What: "the ACK of version 2", Kind: results.TimingWithin, Measured: 1200 * time.Millisecond, Limit: time.Second,
				Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt},
			{Rule: "UPD-2", What: "the ACK of version 3", Kind: results.TimingWithin, Measured: 10 * time.Millisecond, Limit: time.Second, Verdict: results.TimingPass},
			{Rule: "NONCE-7", What: "the quiet window", Kind: results.TimingCovers, Measured: 1500 * time.Millisecond, Limit: 1500 * time.Millisecond,
				Lag: 250 * time.Millisecond, LagMax: 250 * time.Millisecond, Verdict: results.TimingDoubt},
			{Rule: "NONCE-7", What: "another", Kind: results.TimingWithin, Verdict: results.TimingDoubt},
		}}}
	assert.Equal(t, "UPD-2: the ACK of version 2 took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); "+
		"NONCE-7: the quiet window: a window of 1.5s had to cover 1.5s, harness stalled 250ms (longest 250ms); "+
		"and 1 more; still in doubt after running again alone 2 times", TimingDoubts(r))
	r.Timing = nil
	assert.Equal(t, "the harness's own lag could explain a timing verdict either way:", TimingDoubts(r), "no figures: the message")
}
