package htmlpage

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

func render(t *testing.T, runs []results.Run) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(&buf, runs); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

func parse(t *testing.T, page []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatalf("parsing the page: %v", err)
	}
	return doc
}

// walk calls f on every element of the tree under n.
func walk(n *html.Node, f func(*html.Node)) {
	if n.Type == html.ElementNode {
		f(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, f)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) string {
	var b strings.Builder
	var rec func(*html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return b.String()
}

func TestWriteNeedsARun(t *testing.T) {
	if err := Write(&bytes.Buffer{}, nil); err == nil {
		t.Fatal("Write with no run: no error")
	}
}

// The page's only script and style are the embedded ones, and the CSP
// allows exactly them, by hash: no 'unsafe-inline', nothing from anywhere.
func TestContentSecurityPolicy(t *testing.T) {
	doc := parse(t, render(t, sampleRuns()))
	var policy string
	var scripts, styles []string
	walk(doc, func(n *html.Node) {
		switch n.Data {
		case "meta":
			if v, _ := attr(n, "http-equiv"); strings.EqualFold(v, "Content-Security-Policy") {
				policy, _ = attr(n, "content")
			}
		case "script":
			scripts = append(scripts, text(n))
		case "style":
			styles = append(styles, text(n))
		}
	})
	if len(scripts) != 1 || scripts[0] != pageJS {
		t.Fatalf("the page has %d scripts; want exactly the embedded one", len(scripts))
	}
	if len(styles) != 1 || styles[0] != pageCSS {
		t.Fatalf("the page has %d style elements; want exactly the embedded one", len(styles))
	}
	hash := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	}
	want := fmt.Sprintf("default-src 'none'; script-src %s; style-src %s; img-src data:; base-uri 'none'; form-action 'none'", hash(pageJS), hash(pageCSS))
	if policy != want {
		t.Fatalf("CSP is\n  %s\nwant\n  %s", policy, want)
	}
	if strings.Contains(policy, "unsafe") {
		t.Fatalf("CSP allows something unsafe: %s", policy)
	}
}

// Everything a peer chose comes out as text: no element, attribute, script
// or URL of its making, and the strings read back as they went in.
func TestHostileStringsAreInert(t *testing.T) {
	page := render(t, sampleRuns())
	doc := parse(t, page)
	allowed := map[string]bool{}
	for _, e := range strings.Fields("html head meta title link style body header div span h1 h2 main section article dl dt dd details summary table thead tbody tfoot tr th td button label select option input p pre code b footer script") {
		allowed[e] = true
	}
	walk(doc, func(n *html.Node) {
		if !allowed[n.Data] {
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") {
				t.Errorf("<%s> has an event handler attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if a.Key == "href" && a.Val != "data:," {
				t.Errorf("<%s> links to %q", n.Data, a.Val)
			}
			// No attribute that takes a URL or CSS (href is checked above),
			// so a javascript: string is only ever data.
			if a.Key == "src" || a.Key == "style" || a.Key == "action" || a.Key == "formaction" || a.Key == "srcset" || a.Key == "background" || a.Key == "poster" {
				t.Errorf("<%s> has a %s attribute", n.Data, a.Key)
			}
		}
	})
	// The strings read back as text, so they were escaped and not parsed
	// (NUL is the one character HTML cannot carry; it becomes U+FFFD).
	all := text(doc)
	for _, h := range hostile[:len(hostile)-1] {
		if !strings.Contains(all, strings.ReplaceAll(h, "\x00", "\uFFFD")) {
			t.Errorf("the page's text does not show %q as it is", h)
		}
	}
	if bytes.Contains(page, []byte("\x00")) {
		t.Error("the page has a NUL byte")
	}
	// No string of a peer's is ever in the script, where U+2028 would
	// matter: the script is the embedded one (checked above by the CSP
	// test), so the separators can only be in text.
	if n := bytes.Count(page, []byte("<script")); n != 1 {
		t.Errorf("the page has %d <script tags", n)
	}
	// The very long string was clipped, wherever it was.
	if bytes.Contains(page, []byte(strings.Repeat("A", 20<<10))) {
		t.Error("a 300 KiB string reached the page unclipped")
	}
	// The hostile outcome and level are shown as an error in a plain
	// badge, their text kept in a data attribute only.
	if !bytes.Contains(page, []byte(`class="lvl l-other"`)) {
		t.Error("an unknown level did not get the plain badge")
	}
}

// The page counts outcomes as the console summary and the exit status do.
func TestCountsAgreeWithSummary(t *testing.T) {
	for _, run := range sampleRuns() {
		p := buildPage([]results.Run{run})
		s := results.SummarizeFor(run.Results, run.FailOn)
		got := map[string]int{}
		for _, c := range p.Total.Cells {
			got[c.Outcome] = c.N
		}
		want := map[string]int{oPass: s.Pass, oFail: s.Fail, oBlocked: s.Blocked, oWarn: s.Tolerated, oKnown: s.KnownFailing,
			oStale: s.StalePasses, oUnsupported: s.Unsupported, oInconclusive: s.Inconclusive, oSkipped: s.Skip, oError: s.Error}
		// The hostile outcome is not one results knows: the page counts it
		// as an error, Summarize not at all.
		for _, r := range run.Results {
			if !slices.Contains(results.Outcomes, r.Outcome) {
				want[oError]++
			}
		}
		for o, n := range want {
			if got[o] != n {
				t.Errorf("%s run: %s counted %d, want %d", run.Role, o, got[o], n)
			}
		}
		if p.Total.Total != len(run.Results) {
			t.Errorf("%s run: total %d, want %d", run.Role, p.Total.Total, len(run.Results))
		}
	}
	// A SHOULD failure in a run that fails on MUST is a warning.
	p := buildPage(sampleRuns()[1:])
	for _, pv := range p.Pairs {
		if pv.Name == "client/nack/duplicate-names[sotw-ads]" && pv.Outcome != oWarn {
			t.Errorf("SHOULD failure under --fail-on must is %s, want warn", pv.Outcome)
		}
	}
}

// Each message is drawn in the lane of whoever sent it: the harness is
// the xDS client in the server suite and the management server in the
// client suite.
func TestTranscriptLanes(t *testing.T) {
	p := buildPage(sampleRuns())
	sides := map[string][]string{}
	for _, pv := range p.Pairs {
		if pv.Transcript == nil {
			continue
		}
		var ss []string
		for _, e := range pv.Transcript.Entries {
			ss = append(ss, e.Side)
		}
		sides[pv.Name] = ss
	}
	want := map[string]string{
		"server/nonce/stale-request-ignored[sotw-ads]": "event client server client other event",
		"client/nack/duplicate-names[sotw-ads]":        "event client server client",
		// The loop's first cycle, one fold marker, its last cycle.
		"server/nack/resend-loop[sotw-ads]": "event server client fold server client",
	}
	for name, w := range want {
		if got := strings.Join(sides[name], " "); got != w {
			t.Errorf("%s: sides %q, want %q", name, got, w)
		}
	}
	for _, pv := range p.Pairs {
		if pv.Outcome == oPass && pv.Transcript != nil {
			t.Errorf("%s passed, yet the page draws its transcript", pv.Name)
		}
	}
}

// A newer transcript's fields (a count of folded repeats, say) are shown
// as they are rather than dropped.
func TestUnknownEntryFieldsShown(t *testing.T) {
	e := transcript.Entry{Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse",
		Message: json.RawMessage(`{"version_info":"3","nonce":"7","type_url":"type.googleapis.com/envoy.config.cluster.v3.Cluster","resources":[{"name":"a"},{"name":"b"}]}`)}
	ev := entryOf(e, true)
	got := fmt.Sprint(ev.Chips)
	for _, w := range []string{`{type Cluster}`, `{version_info "3"}`, `{nonce "7"}`, `{resources 2: a, b}`} {
		if !strings.Contains(got, w) {
			t.Errorf("chips %s lack %s", got, w)
		}
	}
	if ev.Side != sideServer {
		t.Errorf("a received response in the server suite is on the %s side", ev.Side)
	}
}

// However big the report, the page stays a size a browser opens: rows,
// transcripts and strings are all bounded.
func TestPageSizeBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("renders a large page")
	}
	big := strings.Repeat("x", 2<<10)
	entries := make([]transcript.Entry, 3001)
	for i := range entries {
		entries[i] = transcript.Entry{At: time.Duration(i) * time.Millisecond, Stream: "ads#1", Direction: transcript.Received,
			Kind: "DiscoveryResponse", Message: msg(map[string]any{"version_info": big, "nonce": fmt.Sprint(i)})}
	}
	huge := strings.Repeat("y", 8<<20)
	// Every pair fails with a huge message; the first hundred carry a
	// transcript of a resend loop too, more than the page's budget for
	// transcripts takes.
	rs := make([]results.Result, maxPairs+500)
	for i := range rs {
		rs[i] = results.Result{ID: fmt.Sprintf("server/loop/s%05d", i), Variant: "sotw-ads", Requirements: []string{"ACK-1"},
			Level: results.Must, Outcome: results.Fail, Message: huge}
		if i < 100 {
			rs[i].Transcript = entries
		}
	}
	page := render(t, []results.Run{{Role: "server", Target: "t", Results: rs}})
	t.Logf("page of %d failing pairs with %d-entry transcripts: %d bytes", len(rs), len(entries), len(page))
	if limit := 40 << 20; len(page) > limit {
		t.Fatalf("page is %d bytes, over %d", len(page), limit)
	}
	if !bytes.Contains(page, []byte("500 more pairs are counted above but not listed")) {
		t.Error("the page does not say it left pairs out")
	}
	if !bytes.Contains(page, []byte("is in the JSON report: this page")) {
		t.Error("the page does not say it left transcripts to the JSON report")
	}
	if re := regexp.MustCompile(`2701 entries left out here`); !re.Match(page) {
		t.Error("a long transcript does not say how many entries it left out")
	}
}

// A secret the redaction learnt is cut out of the page wherever it turns
// up: the target, an option, a failure message, a transcript's messages
// and notes.
func TestRememberedSecretsScrubbed(t *testing.T) {
	const secret = "MARKER-htmlpage-51c2"
	transcript.RememberSecret(secret)
	fail := results.Result{
		ID: "server/ack/ack-accepted", Variant: "sotw-ads", Requirements: []string{"ACK-1"}, Level: results.Must,
		Outcome: results.Fail, RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must,
		Message: "resource differs: key " + secret, KnownFailing: "",
		Transcript: []transcript.Entry{
			{Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse", Message: json.RawMessage(`{"version_info":"` + secret + `"}`)},
			{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "closed: Unauthenticated: bad token " + secret},
		},
	}
	run := results.Run{Role: "server", Target: "host?token=" + secret, Options: map[string]string{"metadata": secret}, Results: []results.Result{fail}}
	page := render(t, []results.Run{run})
	if bytes.Contains(page, []byte(secret)) {
		t.Error("a remembered secret reached the page")
	}
	if !bytes.Contains(page, []byte(transcript.RedactedSecret)) {
		t.Error("the page does not show where a secret was cut out")
	}
}

// A run's implementation metadata and catalogue version head its card.
func TestRunHeader(t *testing.T) {
	p := buildPage(sampleRuns())
	got := map[string]string{}
	for _, kv := range p.Runs[0].Implementation {
		got[kv.Key] = kv.Value
	}
	if r := p.Runs[0]; r.ImplVersion != "v1.4.2" || !strings.HasPrefix(r.ImplName, "my-control-plane ") ||
		!strings.HasPrefix(got["contact"], "team@example.com, ") || !strings.HasPrefix(got["capabilities"], "delta-ads, ") ||
		got["url"] != "javascript:window.__pwned=1" {
		t.Errorf("implementation shown as %q %q, %q", r.ImplName, r.ImplVersion, got)
	}
	if p.Runs[0].Catalogue != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("catalogue shown as %q", p.Runs[0].Catalogue)
	}
	if len(p.Runs[1].Implementation) != 0 || p.Runs[1].Catalogue != "" {
		t.Errorf("a run without metadata shows %q, catalogue %q", p.Runs[1].Implementation, p.Runs[1].Catalogue)
	}
	// The implementation is named: the card is not headed by the
	// loopback address its test build listened on, which is kept among
	// the facts.
	if r := p.Runs[0]; r.Target != "" || !strings.HasPrefix(got["target"], "127.0.0.1:18000 ") {
		t.Errorf("a named implementation's private target shown as %q, among the facts %q", r.Target, got["target"])
	}
	if r := p.Runs[1]; r.Target != "builtin:reference (faults: ack-duplicates)" {
		t.Errorf("an unnamed run's target shown as %q", r.Target)
	}
	if p.Title != "xdsconform conformance report" {
		t.Errorf("a page of two implementations is titled %q", p.Title)
	}
	one := sampleRuns()[0]
	one.Implementation.Name = "my-control-plane"
	if got := buildPage([]results.Run{one}).Title; got != "my-control-plane v1.4.2 · xdsconform conformance report" {
		t.Errorf("a page of one implementation is titled %q", got)
	}
}

// A blocked pair says which rule blocked it and marks that rule; an
// inconclusive one lists its timing verdicts; each run's card groups what
// did not pass by root cause.
func TestBlockedAndInconclusive(t *testing.T) {
	p := buildPage(sampleRuns())
	byName := map[string]pairView{}
	for _, pv := range p.Pairs {
		byName[pv.Name] = pv
	}
	b := byName["server/resources/subscribe-more[sotw-ads]"]
	if b.Outcome != oBlocked || b.BlockedBy != "RES-1 (MUST)" {
		t.Errorf("blocked pair shown as %s, blocked by %q", b.Outcome, b.BlockedBy)
	}
	var marked []string
	for _, r := range b.Rules {
		if r.BlockedBy {
			marked = append(marked, r.ID)
		}
		if r.Broken {
			t.Errorf("%s is marked broken on a blocked pair", r.ID)
		}
	}
	if fmt.Sprint(marked) != "[RES-1]" {
		t.Errorf("rules marked as blocking: %v", marked)
	}
	i := byName["server/update/prompt[delta-ads]"]
	if i.Outcome != oInconclusive || len(i.Timing) != 2 ||
		i.Timing[0] != "UPD-2 within: the update "+hostileJoined()+": 1.2s against 1s, harness stalled 400ms (longest 300ms): doubt" ||
		i.Timing[1] != "These are its last run's: it ran again alone 2 times." {
		t.Errorf("inconclusive pair shown as %s, timing %q", i.Outcome, i.Timing)
	}
	// The causes are verdict's, in its order; the blocked pair's is the
	// rule that blocked it, and the excused failure's comes last.
	run := sampleRuns()[0]
	want := verdict.Causes(run.Results, run.FailOn)
	got := p.Runs[0].Causes
	if len(got) != len(want) {
		t.Fatalf("the server run shows %d causes, want %d", len(got), len(want))
	}
	for k, c := range want {
		if got[k].Breakdown != c.Breakdown() || got[k].First != c.First {
			t.Errorf("cause %d shown as %+v, want %s in %s, first %s", k, got[k], c.Name(), c.Breakdown(), c.First)
		}
		if c.Rule == "RES-1" && (got[k].Name != "RES-1 (MUST)" || got[k].Breakdown != "1 pair (1 blocked)" || got[k].Group != "fails the run") {
			t.Errorf("the blocking rule's cause shown as %+v", got[k])
		}
	}
	if last := got[len(got)-1]; last.Group != "known failing" {
		t.Errorf("the last cause is %+v, want the excused one", last)
	}
	if line := verdict.CausesLine(want, func(s string) string { return s }); p.Runs[0].CausesLine != clip(line, maxMessageSpent) {
		t.Errorf("the server run's causes line is %q, want %q", p.Runs[0].CausesLine, line)
	}
}

// A run of both suites (xdsconform run) is shown as its two suites.
func TestBothSuitesSplit(t *testing.T) {
	runs := sampleRuns()
	both := runs[0]
	both.Role = "both"
	both.Results = append(append([]results.Result(nil), runs[0].Results...), runs[1].Results...)
	p := buildPage([]results.Run{both})
	if len(p.Runs) != 2 || p.Runs[0].Role != "server" || p.Runs[1].Role != "client" {
		t.Fatalf("a run of both suites shows as %d runs", len(p.Runs))
	}
	if p.Runs[0].Pairs+p.Runs[1].Pairs != len(both.Results) || len(p.Pairs) != len(both.Results) {
		t.Errorf("the split runs have %d and %d pairs, the page %d rows; want %d in all",
			p.Runs[0].Pairs, p.Runs[1].Pairs, len(p.Pairs), len(both.Results))
	}
}
