package htmlpage

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The page is checked in a real browser: Debian's Chromium, headless,
// driven over the DevTools protocol. The tests skip when it is not
// installed (.ci/run installs it); XDSCONFORM_CHROMIUM names another
// binary.

var screenshotFlag = flag.String("screenshot", "", "where TestScreenshot writes a PNG of the page of -reports")

// chromiumPath is the browser to drive, or "" when there is none.
func chromiumPath() string {
	if p := os.Getenv("XDSCONFORM_CHROMIUM"); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// browserTimeout bounds everything one test does in the browser, its
// start included.
const browserTimeout = 90 * time.Second

// violationRecorder is installed before the page's own script runs (the
// DevTools protocol's scripts are not subject to the page's CSP): it keeps
// every CSP violation the page causes, for the test to read back.
const violationRecorder = `window.__violations = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__violations.push(e.violatedDirective + ' ' + (e.blockedURI || 'inline'));
});`

// browser is a headless Chromium tab with what the page did recorded.
type browser struct {
	t       *testing.T
	ctx     context.Context
	console func() []chromedp.ConsoleMessage
	dialogs func() []string
}

// openPage writes page to a file and opens it in a fresh headless
// Chromium (its own profile directory, no network features), recording
// the console and any dialog from before the page loads.
func openPage(t *testing.T, page []byte, width, height int) *browser {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		t.Skip("no Chromium at /usr/bin/chromium (apt-get install chromium; or set XDSCONFORM_CHROMIUM)")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	t.Cleanup(cancel)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(filepath.Join(dir, "profile")),
		chromedp.WindowSize(width, height),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
	})

	// Start the browser, then subscribe before anything loads.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	if _, err := chromedp.Call(bctx, cdppage.AddScriptToEvaluateOnNewDocument, cdppage.AddScriptToEvaluateOnNewDocumentParams{Source: violationRecorder}); err != nil {
		t.Fatalf("installing the violation recorder: %v", err)
	}
	b := &browser{t: t, ctx: bctx}

	var mu sync.Mutex
	var dialogs []string
	dctx, dstop := context.WithCancel(bctx)
	t.Cleanup(dstop)
	dialogEvents := chromedp.Events(dctx, cdppage.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogEvents {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, fmt.Sprint(ev.Type)+": "+ev.Message)
			mu.Unlock()
			// A dialog blocks the page: dismiss it so the test goes on
			// and fails on the record instead of timing out.
			_, _ = chromedp.Call(bctx, cdppage.HandleJavaScriptDialog, cdppage.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	b.dialogs = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), dialogs...)
	}

	cctx, cstop := context.WithCancel(bctx)
	t.Cleanup(cstop)
	messages := chromedp.Console(cctx)
	// console reads the console up to a marker logged now: the messages
	// come in order, so everything the page logged before is then in.
	b.console = func() []chromedp.ConsoleMessage {
		const marker = "xdsconform-test: console read"
		b.eval(fmt.Sprintf("console.info(%q)", marker))
		var out []chromedp.ConsoleMessage
		for m, err := range messages {
			if err != nil {
				t.Fatalf("reading the console: %v", err)
			}
			if m.Text == marker {
				break
			}
			out = append(out, m)
		}
		return out
	}

	if err := chromedp.Do(bctx, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS("#pairs"))); err != nil {
		t.Fatalf("opening the page: %v", err)
	}
	return b
}

// eval evaluates a JavaScript expression and returns its result as T.
func evalAs[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

func (b *browser) eval(expr string) { evalAs[chromedp.Void](b, expr) }

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// selectOption chooses v in the <select> with the given id as a person
// would: the value changes and the select fires its change event.
func (b *browser) selectOption(id, v string) {
	b.t.Helper()
	b.do("choosing "+v+" in #"+id,
		chromedp.SetValue(chromedp.ID(id), v),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.getElementById(%q).dispatchEvent(new Event('change', {bubbles: true}))`, id)))
	if got := evalAs[string](b, fmt.Sprintf(`document.getElementById(%q).value`, id)); got != v {
		b.t.Fatalf("#%s is %q after choosing %q (no such option?)", id, got, v)
	}
}

// visible is the data attribute attr of every row the filters leave shown.
func (b *browser) visible(attr string) []string {
	return evalAs[[]string](b, fmt.Sprintf(`Array.from(document.querySelectorAll('details.pair')).filter(p => !p.hidden && p.offsetParent !== null).map(p => p.getAttribute(%q))`, attr))
}

// clean fails the test on anything the page should never cause: a console
// error or warning (CSP violations are reported there), a recorded CSP
// violation, a dialog, a resource fetched, a script planted by a peer.
func (b *browser) clean() {
	b.t.Helper()
	for _, m := range b.console() {
		switch m.Type {
		case chromedp.ConsoleError, chromedp.ConsoleWarning, chromedp.ConsoleException:
			b.t.Errorf("console %s", m)
		}
	}
	if v := evalAs[[]string](b, `window.__violations`); len(v) > 0 {
		b.t.Errorf("CSP violations: %q", v)
	}
	if d := b.dialogs(); len(d) > 0 {
		b.t.Errorf("the page opened dialogs: %q", d)
	}
	if n := evalAs[int](b, `performance.getEntriesByType('resource').length`); n != 0 {
		b.t.Errorf("the page fetched %d resources", n)
	}
	if evalAs[bool](b, `window.__pwned !== undefined`) {
		b.t.Error("a script planted in the report ran")
	}
}

func count(ss []string, want string) (n int, others []string) {
	for _, s := range ss {
		if s == want {
			n++
		} else {
			others = append(others, s)
		}
	}
	return n, others
}

// The page opens with no console error, no CSP violation and no fetch,
// on the pairs that did not pass,
// hostile strings and all; its filters show exactly the rows they name;
// a summary count filters the rows it counts; a failure opens on its
// transcript.
func TestBrowserFilters(t *testing.T) {
	runs := sampleRuns()
	p := buildPage(runs)
	total := len(p.Pairs)
	want := map[string]int{}
	for _, pv := range p.Pairs {
		want[pv.Outcome]++
	}
	b := openPage(t, render(t, runs), 1400, 1000)

	// A page with failures opens on the pairs that did not pass; Reset
	// shows them all.
	notPassing := total - want[oPass] - want[oSkipped]
	if got := b.visible("data-outcome"); len(got) != notPassing {
		t.Fatalf("%d of %d rows shown on opening, want the %d not passing", len(got), total, notPassing)
	}
	b.do("clicking Reset", chromedp.Click(chromedp.ID("b-reset")))
	if got := b.visible("data-outcome"); len(got) != total {
		t.Fatalf("%d of %d rows shown after Reset", len(got), total)
	}

	b.selectOption("f-outcome", oFail)
	got := b.visible("data-outcome")
	if n, others := count(got, oFail); n != want[oFail] || len(others) > 0 {
		t.Errorf("outcome=fail shows %d failing rows (want %d) and %q", n, want[oFail], others)
	}
	if s := evalAs[string](b, `document.getElementById('shown').textContent`); s != fmt.Sprintf("%d of %d pairs shown", want[oFail], total) {
		t.Errorf("the count of shown rows says %q", s)
	}

	b.selectOption("f-outcome", "!pass")
	for _, o := range b.visible("data-outcome") {
		if o == oPass || o == oSkipped {
			t.Errorf("not passing shows a %s row", o)
		}
	}

	b.selectOption("f-outcome", "")
	b.selectOption("f-level", "MAY")
	if n, others := count(b.visible("data-level"), "MAY"); n == 0 || len(others) > 0 {
		t.Errorf("level=MAY shows %d MAY rows and %q", n, others)
	}
	b.selectOption("f-level", "")
	b.selectOption("f-family", "NONCE")
	for _, f := range b.visible("data-families") {
		if !strings.Contains(" "+f+" ", " NONCE ") {
			t.Errorf("family=NONCE shows a row of families %q", f)
		}
	}
	b.selectOption("f-variant", "delta-ads")
	if n, others := count(b.visible("data-variant"), "delta-ads"); n != 1 || len(others) > 0 {
		t.Errorf("family=NONCE, variant=delta-ads shows %d rows of it and %q", n, others)
	}
	b.selectOption("f-variant", "sotw-pertype")
	if got := b.visible("data-variant"); len(got) != 0 {
		t.Errorf("a filter matching nothing shows %q", got)
	}
	if evalAs[bool](b, `document.getElementById('none').hidden`) {
		t.Error("a filter matching nothing does not say so")
	}

	// A real click on a count of the level summary: the rows it counts.
	b.do("clicking Reset", chromedp.Click(chromedp.ID("b-reset")))
	if got := b.visible("data-outcome"); len(got) != total {
		t.Errorf("Reset shows %d of %d rows", len(got), total)
	}
	b.do("clicking the failures of the MUST level",
		chromedp.Click(chromedp.CSS(`.levels tbody tr:first-child button.count.o-fail`)))
	for _, row := range evalAs[[]string](b, `Array.from(document.querySelectorAll('details.pair')).filter(p => !p.hidden).map(p => p.dataset.outcome + ' ' + p.dataset.level)`) {
		if row != "fail MUST" {
			t.Errorf("the MUST failures count shows a %q row", row)
		}
	}
	if v := evalAs[string](b, `document.getElementById('f-level').value + ' ' + document.getElementById('f-outcome').value`); v != "MUST fail" {
		t.Errorf("the count set the filters to %q", v)
	}

	// The search box, typed into.
	b.do("clicking Reset", chromedp.Click(chromedp.ID("b-reset")))
	b.do("typing a search", chromedp.SendKeys(chromedp.ID("f-text"), "dup-2"))
	if got := b.visible("id"); len(got) != 1 {
		t.Errorf("searching dup-2 shows %d rows", len(got))
	}

	// A failure opens on its transcript, drawn in two lanes.
	b.do("clicking Reset", chromedp.Click(chromedp.ID("b-reset")))
	b.do("opening a failure",
		chromedp.Click(chromedp.CSS(`details.pair.o-fail > summary`)),
		chromedp.WaitVisible(chromedp.CSS(`details.pair.o-fail[open] .transcript .ev.side-client .msg`)),
		chromedp.WaitVisible(chromedp.CSS(`details.pair.o-fail[open] .transcript .ev.side-server .msg`)),
		chromedp.WaitVisible(chromedp.CSS(`details.pair.o-fail[open] .rule.broken .rtext`)))
	b.do("expanding the shown rows", chromedp.Click(chromedp.ID("b-expand")))
	if n := evalAs[int](b, `document.querySelectorAll('details.pair[open]').length`); n != total {
		t.Errorf("Expand shown opened %d of %d rows", n, total)
	}
	// A folded resend loop reads as one marker across both lanes.
	b.do("looking at a folded loop", chromedp.WaitVisible(chromedp.CSS(`.transcript .ev.side-fold .msg`)))
	// A peer's markup is text on the page, never an element of it.
	if n := evalAs[int](b, `document.querySelectorAll('img, iframe, object, embed, a, form, body script:not(:last-of-type)').length`); n != 0 {
		t.Errorf("the page has %d elements a peer planted", n)
	}
	if title := evalAs[string](b, `document.title`); title != "xdsconform conformance report" {
		t.Errorf("the title is %q", title)
	}
	b.clean()
}

// The checks of TestBrowserFilters can fail: a page with a script the
// CSP does not allow shows a violation and a console error, and the
// script does not run.
func TestBrowserSeesViolations(t *testing.T) {
	page := render(t, sampleRuns()[:1])
	page = bytes.Replace(page, []byte("</body>"), []byte(`<script>window.__pwned = 1</script><img src="https://example.invalid/x.png"></body>`), 1)
	b := opened(t, page)
	if evalAs[bool](b, `window.__pwned !== undefined`) {
		t.Error("a script the CSP does not allow ran")
	}
	if v := evalAs[[]string](b, `window.__violations`); len(v) < 2 {
		t.Errorf("CSP violations recorded: %q, want the script's and the image's", v)
	}
	var errs int
	for _, m := range b.console() {
		if m.Type == chromedp.ConsoleError {
			errs++
		}
	}
	if errs == 0 {
		t.Error("no console error for a CSP violation")
	}
}

func opened(t *testing.T, page []byte) *browser { return openPage(t, page, 1280, 900) }

// TestScreenshot renders the page of -reports and writes a screenshot of
// it to -screenshot: the runs' headers, the summaries, the pairs that did
// not pass listed and the first one opened on its transcript. It makes
// docs/img/report.png:
//
//	go test ./reports/htmlpage -run TestScreenshot -args -reports=client.json,server.json -screenshot=docs/img/report.png
func TestScreenshot(t *testing.T) {
	if *reportsFlag == "" || *screenshotFlag == "" {
		t.Skip("a helper: give -reports and -screenshot to take a screenshot of a page")
	}
	runs := readReports(t, *reportsFlag)
	b := openPage(t, render(t, runs), 1360, 1700)
	b.selectOption("f-outcome", "!pass")
	b.do("opening the first pair that did not pass", chromedp.Click(chromedp.CSS(`details.pair:not(.o-pass):not(.o-skipped) > summary`)))
	b.do("scrolling to the top", chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("taking the screenshot: %v", err)
	}
	if err := os.WriteFile(*screenshotFlag, png, 0o644); err != nil {
		t.Fatal(err)
	}
	b.clean()
}
