package loadreport

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// merged is the report the rendering tests show: a merge of two shards,
// one saturated, judged against an SLO that it breaks.
func merged(t *testing.T) *Report {
	t.Helper()
	s := newSim(60, 2)
	m, err := Merge(s.build(0), s.build(1))
	require.NoError(t, err)
	slo, err := ParseSLO("p99<500ms,amplification<1.5,missed=0,churn.convergence.p50<100ms")
	require.NoError(t, err)
	m.SLO = slo.Evaluate(m)
	return m
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to write it")
	assert.Equal(t, string(want), got)
}

func TestWriteMarkdownGolden(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, merged(t)))
	golden(t, "merged.md", b.String())

	// Deterministic, and what the golden file shows is there.
	var again bytes.Buffer
	require.NoError(t, WriteMarkdown(&again, merged(t)))
	assert.Equal(t, b.String(), again.String())
	for _, want := range []string{
		"**❌ SLO broken**",
		"| churn | 60 | 40 | 2436 | 2384 | 0 | 52 | 16 | 15 | 0 | 1.015 |",
		"**SATURATED**",
		"- `NONCE-7` (`SHOULD`) × 9, first seen by client `client-0`",
		"| `missed=0` | all | `16` | ❌ **broken** |",
	} {
		assert.Contains(t, b.String(), want)
	}
	require.Error(t, WriteMarkdown(&b, nil))
}

// Strings a peer or a user chose are written in code spans, so that they
// cannot make a link, HTML, a new block or a broken table.
func TestWriteMarkdownHostile(t *testing.T) {
	r := merged(t)
	r.Target = "evil`\n# heading <img src=x onerror=alert(1)> [x](http://e.example)"
	r.Violations[0].Message = "a|b\n\n<script>alert(1)</script>"
	r.Notes = append(r.Notes, "note with **bold** and a\nnew line")
	r.SLO.Objectives[0].Value = "1|2"
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, r))
	out := b.String()
	assert.Contains(t, out, "against ``evil` # heading <img src=x onerror=alert(1)> [x](http://e.example)``\n")
	assert.NotContains(t, out, "\n# heading")
	assert.Contains(t, out, "`a|b <script>alert(1)</script>`")
	assert.Contains(t, out, "- `note with **bold** and a new line`")
	assert.Contains(t, out, "| `1\\|2` |")
}

// Why a run measured nothing is said at the top of both renderings, in a
// code span in Markdown (it may quote what the fixture said).
func TestRenderUnmeasured(t *testing.T) {
	r := merged(t)
	r.Unmeasured = []string{"shard 0: the fixture set nothing: <b>read-only</b>"}
	var md, page bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, r))
	assert.Contains(t, md.String(), "**❌ Nothing measured**, so the run fails:\n\n- `shard 0: the fixture set nothing: <b>read-only</b>`\n")
	assert.Less(t, strings.Index(md.String(), "Nothing measured"), strings.Index(md.String(), "### Phases"))
	require.NoError(t, WriteHTML(&page, r))
	assert.Contains(t, page.String(), "<dt>nothing measured</dt><dd>shard 0: the fixture set nothing: &lt;b&gt;read-only&lt;/b&gt;</dd>")
}

// An empty report renders too, saying that nothing ran.
func TestWriteMarkdownEmpty(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteMarkdown(&b, &Report{Plan: Plan{Shards: 1}, Shards: []int{0}}))
	assert.Contains(t, b.String(), "No phase ran.")
	assert.NotContains(t, b.String(), "### Harness")
}

func TestWriteHTML(t *testing.T) {
	r := merged(t)
	const hostile = `cp"><script>alert(1)</script><svg onload=alert(2)>`
	r.Target = hostile
	r.Violations[0].Message = "</td></tr></table><img src=x onerror=alert(3)>"
	r.Violations[0].Client = "<b>client</b>"
	r.Notes = append(r.Notes, "<style>body{display:none}</style>")
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, r))
	page := b.String()

	var again bytes.Buffer
	require.NoError(t, WriteHTML(&again, r))
	assert.Equal(t, page, again.String(), "deterministic")

	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	var svgs, paths, styles int
	var texts []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "link":
				if n.Data != "link" || attr(n, "rel") != "icon" {
					t.Errorf("the page has a <%s>", n.Data)
				}
			case "svg":
				svgs++
			case "path":
				if strings.Contains(attr(n, "class"), "line") || strings.Contains(attr(n, "class"), "dots") {
					assert.NotEmpty(t, attr(n, "d"))
					paths++
				}
			case "style":
				styles++
			}
			for _, a := range n.Attr {
				assert.False(t, strings.HasPrefix(strings.ToLower(a.Key), "on"), "<%s %s>", n.Data, a.Key)
				assert.NotContains(t, strings.ToLower(a.Val), "javascript:")
			}
		}
		if n.Type == html.TextNode {
			texts = append(texts, n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	assert.Equal(t, 4, svgs, "latency and ACKs over time, percentiles, convergence")
	assert.Equal(t, 1, styles, "the page's own style only")
	// latency: mean and max; ACKs: ACKs and NACKs; percentiles: four
	// phases; convergence: churn and burst dots and the changes that did
	// not converge.
	assert.Equal(t, 2+2+4+3, paths)
	all := strings.Join(texts, "\n")
	assert.Contains(t, all, hostile, "the hostile target is shown as text")
	assert.Contains(t, all, "</td></tr></table><img src=x onerror=alert(3)>")
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;")
	assert.Contains(t, page, `<meta http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;; style-src &#39;sha256-`)
	for _, want := range []string{"push→ACK latency over time", "ACKs and NACKs per second", "push→ACK latency by percentile", "convergence per change",
		"99.99%", "SATURATED", "SLO broken", "not converged"} {
		assert.Contains(t, all, want)
	}
	require.Error(t, WriteHTML(&b, nil))
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// The page of a report with nothing to plot says so in each plot.
func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, &Report{Plan: Plan{Shards: 1}, Shards: []int{0}}))
	for _, want := range []string{"the run has no timeline", "no phase recorded a latency", "no change was made", "No phase ran."} {
		assert.Contains(t, b.String(), want)
	}
}

// The page's CSP allows the page's own style by its hash: the hash must be
// of the style as written into the page.
func TestWriteHTMLStyleHash(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHTML(&b, merged(t)))
	page := b.String()
	start := strings.Index(page, "<style>") + len("<style>")
	end := strings.Index(page, "</style>")
	require.Positive(t, end)
	assert.Equal(t, pageCSS, page[start:end])
	assert.Contains(t, pageCSP, "style-src 'sha256-")
	assert.NotContains(t, pageCSP, "unsafe-inline")
	assert.NotContains(t, pageCSP, "script-src")
}

// A long timeline is drawn in buckets: the page stays small.
func TestPlotBuckets(t *testing.T) {
	var tl []Second
	for i := range 10_000 {
		tl = append(tl, Second{UnixS: int64(1_000_000 + i), Acks: 10, LatencyCount: 10, LatencySumNS: 10_000_000, LatencyMaxNS: 2_000_000})
	}
	bs, width := buckets(tl)
	assert.Equal(t, int64(17), width)
	assert.Len(t, bs, 589)
	assert.Equal(t, int64(170), bs[0].acks)
	p := latencyOverTime(tl)
	assert.Less(t, len(p.Series[0].D), 20_000)
	assert.Contains(t, p.XLabel, "a point per 17 s")

	// A hand-made timeline spanning all of int64 neither overflows nor
	// allocates past the bound.
	bs, _ = buckets([]Second{{UnixS: -1 << 63}, {UnixS: 1<<63 - 1}})
	assert.LessOrEqual(t, len(bs), maxPlotPoints)
}
