package markdown

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer/html"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
)

// hostile are strings a target or a hand-made report could plant, each
// trying to make the page do something: a link, an autolink, HTML, a
// table, a heading, a mention, a closed code span, reversed text.
var hostile = []string{
	"<script>alert(1)</script>",
	"<img src=x onerror=alert(1)>",
	"[click](https://evil.example/x)",
	"https://evil.example/auto",
	"www.evil.example",
	"mail me: someone@evil.example",
	"| a | b |\n|---|---|\n| c | d |",
	"x\n# injected heading\n",
	"```\n<b>fenced</b>",
	"`` ` ``<i>x</i>",
	"`",
	`\| pipe after backslash \\| <u>u</u>`,
	"@octocat #1 :smile:",
	"abc\u202edef\u2066",
	"</details><details open><summary>x</summary>",
	"**bold** _em_ ~~strike~~",
}

// hostileRun is a failing run whose every free string is hostile.
func hostileRun() results.Run {
	h := strings.Join(hostile, " ")
	run := results.Run{
		SchemaVersion: "2", HarnessVersion: h, Role: "server", Target: h, Duration: 3 * time.Second,
		Implementation: &results.Implementation{Name: h, Version: h},
	}
	for i, s := range hostile {
		id := fmt.Sprintf("server/x/%d%s", i, s)
		run.Results = append(run.Results,
			results.Result{ID: id, Variant: s, Level: results.Must, Outcome: results.Fail, Message: s, RulesBroken: []string{s}, BrokenLevel: results.Level(s)},
			results.Result{ID: id, Variant: "k", Level: results.Level(s), Outcome: results.Fail, KnownFailing: s, RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must},
			results.Result{ID: id, Variant: "s", Level: results.Must, Outcome: results.Skip, Message: s},
			results.Result{ID: id, Variant: "e", Level: results.Must, Outcome: results.Error, Message: s},
		)
	}
	return run
}

// toHTML renders md as GitHub does, near enough: GFM with autolinks and
// tables, raw HTML let through so that any that got in shows.
func toHTML(t *testing.T, md string) string {
	t.Helper()
	var b bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(html.WithUnsafe()))
	require.NoError(t, gm.Convert([]byte(md), &b))
	return b.String()
}

// TestHostileStrings checks that nothing a report carries becomes markup:
// no link, no HTML of its own, no extra table cell, heading or <details>.
func TestHostileStrings(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []results.Run{hostileRun()}, Options{}))
	md := buf.String()
	page := toHTML(t, md)
	for _, tag := range []string{"<a ", "<script", "<img", "<b>", "<i>", "<u>", "<strong>bold", "<em>", "<del>", "<h3>injected", "<details open"} {
		assert.NotContains(t, page, tag, "markup from a report string")
	}
	assert.Equal(t, 1, strings.Count(page, "<h1>"), "one title")
	assert.Equal(t, 1, strings.Count(page, "<h2>"), "one run")
	assert.Equal(t, 1, strings.Count(page, "<table>"), "one table")
	assert.Equal(t, 1, strings.Count(page, "<details>"), "one collapsed list")
	assert.Equal(t, 1, strings.Count(page, "</details>"))
	// Every row of the table has as many cells as the header.
	table := page[strings.Index(page, "<table>"):strings.Index(page, "</table>")]
	header := len(regexp.MustCompile(`<th[ >]`).FindAllString(table, -1))
	for _, row := range regexp.MustCompile(`(?s)<tr>.*?</tr>`).FindAllString(table[strings.Index(table, "<tbody>"):], -1) {
		assert.Equal(t, header, strings.Count(row, "<td"), "cells of %s", row)
	}
	// Every list entry is one <li>, each with its strings in code.
	// A hostile broken level ranks below any fail-on level: each string
	// gives a warning, an error, a known failure and a skip reason; and
	// each root cause of them is an entry of its own.
	run := hostileRun()
	assert.Equal(t, 4*len(hostile)+len(verdict.Causes(run.Results, run.FailOn)), strings.Count(page, "<li>"), "one entry per result listed, and per cause")
	assert.Contains(t, page, "<code>&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.NotContains(t, md, "\u202e")
	// No line of the page is a table delimiter except the table's own.
	assert.Equal(t, 1, len(regexp.MustCompile(`(?m)^\|[-:| ]+\|$`).FindAllString(md, -1)))
}

// TestCode checks the code spans that carry report strings.
func TestCode(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                  "`plain`",
		"a`b":                    "``a`b``",
		"`x":                     "`` `x ``",
		"x``":                    "``` x`` ```",
		"":                       "(empty)",
		"a\n\n b\tc":             "`a b c`",
		"\u202eabc":              "`abc`",
		strings.Repeat("x", 400): "`" + strings.Repeat("x", maxField) + "…`",
	} {
		assert.Equal(t, want, Code(in), "%q", in)
	}
	assert.Equal(t, "`a\\|b∖\\|`", Cell(`a|b\|`))
}

// manyFailures is a failing run with n failures, each message long.
func manyFailures(n int) results.Run {
	run := results.Run{SchemaVersion: "2", Role: "client", Target: "t"}
	for i := range n {
		run.Results = append(run.Results, results.Result{ID: fmt.Sprintf("client/x/%05d", i), Variant: "sotw-ads", Level: results.Must,
			Outcome: results.Fail, Message: strings.Repeat("m", 500), RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must})
	}
	return run
}

// TestLimit checks that the page stays within the limit asked for, with a
// note saying what was left out, and that the summary survives the cut.
func TestLimit(t *testing.T) {
	for _, limit := range []int{MinLimit, CommentLimit, StepSummaryLimit} {
		var buf bytes.Buffer
		runs := []results.Run{manyFailures(5000), manyFailures(3)}
		require.NoError(t, Write(&buf, runs, Options{Limit: limit}))
		assert.LessOrEqual(t, buf.Len(), limit)
		assert.Contains(t, buf.String(), "Cut to fit")
		assert.Contains(t, buf.String(), "**❌ FAIL**: 2 of 2 suite runs failed")
		if limit >= CommentLimit {
			assert.Equal(t, 2, strings.Count(buf.String(), "| **total** |"), "both summaries at %d", limit)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []results.Run{manyFailures(3)}, Options{Limit: MinLimit}))
	assert.NotContains(t, buf.String(), "Cut to fit")
	assert.Error(t, Write(&buf, []results.Run{manyFailures(3)}, Options{Limit: MinLimit - 1}))
	assert.Error(t, Write(&buf, nil, Options{}))
}

// TestVerdict checks the page's verdict, counts and sections on a run
// with every class of result.
func TestVerdict(t *testing.T) {
	run := results.Run{SchemaVersion: "2", HarnessVersion: "v1.0.0", Role: "server", Target: "127.0.0.1:18000", FailOn: results.Must,
		Implementation: &results.Implementation{Name: "cp", Version: "v2"},
		Results: []results.Result{
			{ID: "server/a", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass},
			{ID: "server/b", Variant: "sotw-ads", Level: results.Should, Outcome: results.Fail, RulesBroken: []string{"ACK-5"}, BrokenLevel: results.Should, Message: "ACK-5 (SHOULD): late\nmore"},
			{ID: "server/c", Variant: "sotw-ads", Level: results.Must, Outcome: results.Fail, KnownFailing: "NONCE-7: known", RulesBroken: []string{"NONCE-7"}, BrokenLevel: results.Must},
			{ID: "server/d", Variant: "delta-ads", Level: results.Must, Outcome: results.Skip, Message: "target does not serve delta-ads"},
			{ID: "server/e", Variant: "delta-ads", Level: results.Must, Outcome: results.Skip, Message: "target does not serve delta-ads"},
			{ID: "server/f", Variant: "sotw-ads", Level: results.May, Outcome: results.Unsupported, RulesBroken: []string{"DYN-1"}, BrokenLevel: results.May},
		}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	md := buf.String()
	assert.Contains(t, md, "**✅ PASS**: the suite run passed\n")
	assert.Contains(t, md, "## server suite of `cp` `v2`")
	// The implementation is named: its test build's loopback address is
	// not what a published page credits.
	assert.Contains(t, md, "**✅ PASS**: 6 scenario runs, 1 failure below the fail-on level, 1 known failing; fail-on MUST")
	assert.NotContains(t, md, "127.0.0.1")
	assert.Contains(t, md, "| level | pass | fail | below fail-on | known failing | MAY unsupported | skipped |")
	assert.Contains(t, md, "| MUST | 1 | 0 | 0 | 1 | 0 | 2 |")
	assert.Contains(t, md, "### Below the fail-on level (1)\n\n- `server/b[sotw-ads]` `SHOULD` broke `ACK-5`: `ACK-5 (SHOULD): late`\n")
	assert.Contains(t, md, "### Known failing (1)")
	assert.Contains(t, md, "- `server/c[sotw-ads]` `MUST` broke `NONCE-7`: `NONCE-7: known`")
	assert.Contains(t, md, "### Skipped (2), by reason\n\n- 2 × `target does not serve delta-ads`\n")
	assert.NotContains(t, md, "### Failures")

	run.FailOn = results.Should
	buf.Reset()
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	assert.Contains(t, buf.String(), "**❌ FAIL**: 1 of 1 suite run failed")
	assert.Contains(t, buf.String(), "### Failures (1)")

	// A run that names no implementation has only its address to go by.
	run.Implementation = nil
	buf.Reset()
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	assert.Contains(t, buf.String(), "**❌ FAIL** against `127.0.0.1:18000`: 6 scenario runs")
}

// TestBlockedAndInconclusive checks how the page shows the outcomes the
// engine added: a blocked pair among the failures with the rule that
// blocked it, counted in a blocked column; an inconclusive pair in a list
// of its own with its figures, not failing the run; what did not pass
// grouped by root cause, the known failures apart.
func TestBlockedAndInconclusive(t *testing.T) {
	blocked := func(variant, known string) results.Result {
		return results.Result{ID: "client/ack/every-response", Variant: variant, Level: results.Must, Outcome: results.Blocked,
			RulesBroken: []string{"RES-1"}, BrokenLevel: results.Must, BlockedBy: "RES-1", KnownFailing: known,
			Message: "blocked by RES-1 (MUST): a precondition failed: no CDS response\nmore"}
	}
	incon := results.Result{ID: "client/ack/prompt", Variant: "sotw-ads", Level: results.Should, Outcome: results.Inconclusive, Message: "lag",
		Timing: &results.Timing{Reruns: 2, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the ACK", Kind: results.TimingWithin,
			Measured: 1200 * time.Millisecond, Limit: time.Second, Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt}}}}
	run := results.Run{Role: "client", Target: "builtin:grpc-go", Results: []results.Result{
		blocked("sotw-ads", ""), blocked("delta-ads", ""), blocked("sotw-pertype", "RES-1: the peer's bug"), incon,
		{ID: "client/ack/nack", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass},
	}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	md := buf.String()
	assert.Contains(t, md, "**❌ FAIL** against `builtin:grpc-go`: 5 scenario runs, 2 blocked, 1 known failing, 1 inconclusive; fail-on SHOULD")
	assert.Contains(t, md, "| level | pass | fail | blocked | known failing | MAY unsupported | inconclusive | skipped |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|\n"+
		"| MUST | 1 | 0 | 2 | 1 | 0 | 0 | 0 |\n"+
		"| SHOULD | 0 | 0 | 0 | 0 | 0 | 1 | 0 |\n")
	assert.Contains(t, md, "\n3 pairs did not pass: 2 causes, `RES-1 (MUST)` in 2 pairs (2 blocked), first seen in `client/ack/every-response[delta-ads]`; 1 other cause listed above.\n")
	assert.Contains(t, md, "### By root cause (2)\n\n"+
		"- `RES-1` `MUST` in 2 pairs (2 blocked), first seen in `client/ack/every-response[delta-ads]`: `blocked by RES-1 (MUST): a precondition failed: no CDS response`\n"+
		"- `RES-1` `MUST` in 1 pair (1 blocked; excused as known failing), first seen in `client/ack/every-response[sotw-pertype]`: `blocked by RES-1 (MUST): a precondition failed: no CDS response`\n")
	assert.Contains(t, md, "### Failures (2)\n\n"+
		"- `client/ack/every-response[delta-ads]` `MUST` blocked by `RES-1`: `blocked by RES-1 (MUST): a precondition failed: no CDS response`\n"+
		"- `client/ack/every-response[sotw-ads]` `MUST` blocked by `RES-1`: `blocked by RES-1 (MUST): a precondition failed: no CDS response`\n")
	assert.Contains(t, md, "### Inconclusive (1)\n\nTiming verdicts the harness's own lag could explain either way, even run again alone: not counted against the run.\n\n"+
		"- `client/ack/prompt[sotw-ads]` `SHOULD`: `UPD-2: the ACK took 1.2s, limit 1s, harness stalled 400ms (longest 300ms); still in doubt after running again alone 2 times`\n")

	// Inconclusive alone does not fail the run.
	run.Results = []results.Result{incon}
	buf.Reset()
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	assert.Contains(t, buf.String(), "**✅ PASS**: the suite run passed")
}

// TestInline checks the prose escaping the compatibility matrix uses:
// hostile strings stay in their table cell and make no link or HTML, and
// ordinary text, angle brackets that make no tag included, is unchanged.
func TestInline(t *testing.T) {
	for _, s := range []string{
		"grpc-go v1.85.0", "Envoy Gateway v1.9.1 (standalone, file provider)",
		"channels are keyed by (std::map<const XdsBootstrap::XdsServer*, ChannelState*>, a < b > c)",
		"resources [\"a\"] (2 such)", "`code` and *stars*", "@grpc/grpc-js-xds 1.14.1", "xdstp:// names",
	} {
		assert.Equal(t, s, Inline(s))
	}
	for _, s := range hostile {
		md := "| a | b |\n|---|---|\n| " + Inline(s) + " | z |\n"
		page := toHTML(t, md)
		for _, tag := range []string{"<a ", "<script", "<img", "<b>", "<i>", "<u>", "<details"} {
			assert.NotContains(t, page, tag, "%q", s)
		}
		assert.Equal(t, 2, strings.Count(page, "<td"), "%q: %s", s, page)
		assert.NotContains(t, Inline(s), "\n")
	}
	assert.Equal(t, `&lt;a href="x">y&lt;/a> &lt;https\://e.example> &lt;!-- c --> [x]\(y) !\[i]\(z) \\\| \| https\://e.example www\.e.example a\@e.example @grpc/x`,
		Inline(`<a href="x">y</a> <https://e.example> <!-- c --> [x](y) ![i](z) \| | https://e.example www.e.example a@e.example @grpc/x`))
}

// TestBothSuites checks that a report of both suites (xdsconform run)
// reads as two sections, each with its own verdict.
func TestBothSuites(t *testing.T) {
	run := results.Run{SchemaVersion: "2", Role: "both", Target: "server: a; client: b", Results: []results.Result{
		{ID: "server/a", Variant: "sotw-ads", Level: results.Must, Outcome: results.Pass},
		{ID: "client/a", Variant: "sotw-ads", Level: results.Must, Outcome: results.Fail, RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must},
	}}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, []results.Run{run}, Options{}))
	md := buf.String()
	assert.Contains(t, md, "**❌ FAIL**: 1 of 2 suite runs failed")
	assert.Contains(t, md, "## server suite\n\n**✅ PASS**")
	assert.Contains(t, md, "## client suite\n\n**❌ FAIL**")
}

// A character Inline drops (a bidirectional control) between "]" and "("
// does not hide the link they make once it is gone.
func TestInlineEscapesAcrossDroppedCharacters(t *testing.T) {
	got := Inline("[x]\u202a(javascript:alert(1))")
	if strings.Contains(got, "](") {
		t.Errorf("Inline left a link: %q", got)
	}
}
