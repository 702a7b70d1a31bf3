// Package htmlpage renders one or several runs (a server and a client
// report, say) as a single self-contained HTML page: a header per run, a
// summary by level and by rule family, filters that work in the browser,
// and a row per pair whose failures show the message, the text of the
// rules cited and the wire transcript drawn as a sequence of client and
// server messages.
//
// The page is one file that needs no network: its CSS and script are
// inlined, and a strict Content-Security-Policy allows exactly those two
// (by hash) and nothing else, so that even a page a hostile peer managed
// to inject markup into could run nothing and load nothing. Nothing a peer
// controls is ever marked as trusted HTML: every string goes through
// html/template's contextual escaping, and none is placed in a script.
package htmlpage

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"

	"github.com/xdsconform/xdsconform/results"
)

var (
	//go:embed page.html.tmpl
	pageTemplate string
	//go:embed page.css
	pageCSS string
	//go:embed page.js
	pageJS string
)

// tmpl is parsed once: the template is embedded, so a parse error is a
// build defect that the package's tests catch.
var tmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"outcomeLabel": outcomeLabel,
	"levelClass":   levelClass,
	"table":        newSummaryTable,
	"short":        short,
}).Parse(pageTemplate))

// csp is the page's Content-Security-Policy: nothing may load or run but
// the inline style and script, which are allowed by their hashes (never
// 'unsafe-inline'), and data: images (the empty favicon, which keeps the
// browser from asking the network for one).
var csp = "default-src 'none'; " +
	"script-src " + hashSource(pageJS) + "; " +
	"style-src " + hashSource(pageCSS) + "; " +
	"img-src data:; base-uri 'none'; form-action 'none'"

// hashSource is the CSP source expression that allows an inline element
// whose content is exactly s.
func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// Write renders runs as one HTML page on w, as it goes: a page can be
// hundreds of megabytes, so it is not held in memory. A template error
// can therefore leave part of a page on w; reports.WriteFile and
// reports.WriteSpooled render into a temporary file first, so that their
// destination gets the whole page or nothing. Runs are shown in the
// order given; their results are sorted by ID, then variant, within each
// run.
func Write(w io.Writer, runs []results.Run) error {
	return WriteContext(context.Background(), w, runs)
}

// WriteContext is Write under ctx: it stops, with ctx's error, once ctx
// ends (w is then left with part of a page, or none).
func WriteContext(ctx context.Context, w io.Writer, runs []results.Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("htmlpage: no run to render")
	}
	p, err := buildPageContext(ctx, runs)
	if err != nil {
		return err
	}
	if err := tmpl.Execute(w, p); err != nil {
		return fmt.Errorf("htmlpage: rendering the page: %w", err)
	}
	return nil
}
