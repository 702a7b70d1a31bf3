package loadreport

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // the page's template and style ship in the binary
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"time"
)

var (
	//go:embed page.html.tmpl
	pageTemplate string
	//go:embed page.css
	pageCSS string
)

// page is parsed once: the template is embedded, so a parse error is a
// build defect the package's tests catch.
var page = template.Must(template.New("page").Parse(pageTemplate))

// pageCSP is the page's Content-Security-Policy: nothing may load or run;
// the one inline style is allowed by its hash (never 'unsafe-inline').
// The page has no script at all, and its plots are inline SVG.
var pageCSP = "default-src 'none'; style-src 'sha256-" + func() string {
	sum := sha256.Sum256([]byte(pageCSS))
	return base64.StdEncoding.EncodeToString(sum[:])
}() + "'; img-src data:; base-uri 'none'; form-action 'none'"

// maxMessage bounds, in characters, a violation's message on the page.
const maxMessage = 2000

// WriteHTML writes r as one self-contained HTML page: the plan, the
// phases' tables, and three plots drawn as inline SVG (latency and ACKs
// per second over the run from the timeline; each phase's latency by
// percentile on the usual HDR axis; each change's convergence over the
// run), then the harness, the violations, the notes and the SLO verdict.
// The page needs no network and runs no script (a Content-Security-Policy
// says so to the browser). The target, messages and every other string
// of the report may come from a hostile peer: they reach the page only
// through html/template's contextual escaping, never as trusted HTML.
// The output depends on r only; it is rendered in memory first, so an
// error never leaves half a page on w.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("loadreport: no report to render")
	}
	var b bytes.Buffer
	if err := page.Execute(&b, buildPage(r)); err != nil {
		return fmt.Errorf("loadreport: rendering the HTML page: %w", err)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("loadreport: writing the HTML page: %w", err)
	}
	return nil
}

// pageData is what the template shows.
type pageData struct {
	CSP     string
	CSS     template.CSS
	R       *Report
	Facts   []fact
	Phases  []phaseRow
	Plots   []plot
	Harness []harnessRow
}

type fact struct{ Key, Value string }

// phaseRow is a phase's figures as the tables show them.
type phaseRow struct {
	Name                                                                          string
	Clients, Changes, Responses, Acks, Nacks, Resends, Missed, Violations, Errors int64
	Amplification                                                                 string
	// Timed says what Latency times (LatencyTimed). Latency is its p50,
	// p90, p99, p99.9, max, then convergence p50, p99, max.
	Timed   string
	Latency []string
}

type harnessRow struct {
	Saturated bool
	Text      string
}

func buildPage(r *Report) pageData {
	d := pageData{CSP: pageCSP, CSS: template.CSS(pageCSS), R: clippedForPage(r)}
	p := r.Plan
	shards := make([]string, len(r.Shards))
	for i, s := range r.Shards {
		shards[i] = strconv.Itoa(s)
	}
	churn := "none"
	if p.Churn > 0 {
		churn = strconv.FormatFloat(p.Churn, 'f', -1, 64) + "/s for " + duration(p.DurationNS)
		if len(p.ChurnTypes) > 0 {
			churn += " of " + strings.Join(p.ChurnTypes, ", ")
		}
	}
	d.Facts = []fact{
		{"clients", fmt.Sprintf("%d on %d nodes", p.Clients, p.Nodes)},
		{"profile", p.Profile},
		{"variant", p.Variant},
		{"streams per connection", strconv.Itoa(p.StreamsPerConn)},
		{"churn", churn},
		{"NACK burst", strconv.Itoa(p.NackBurst)},
		{"shards", strings.Join(shards, ", ") + " of " + strconv.Itoa(max(p.Shards, 1))},
		{"started", r.Started.UTC().Format(time.RFC3339)},
		{"duration", duration(r.DurationNS)},
		{"transcripts", p.Transcripts},
		{"harness", r.HarnessVersion},
	}
	if r.Interrupted {
		d.Facts = append(d.Facts, fact{"interrupted", "yes: the figures cover what ran"})
	}
	for _, u := range r.Unmeasured {
		// A fact of the run, next to the verdict: it fails the run.
		d.Facts = append(d.Facts, fact{"nothing measured", u})
	}
	for _, ph := range r.Phases {
		amp := "—"
		if ph.Expected > 0 {
			amp = strconv.FormatFloat(ph.Amplification, 'f', 3, 64)
		}
		lat, conv := summary(ph.Latency), summary(ph.Convergence)
		d.Phases = append(d.Phases, phaseRow{
			Name: ph.Name, Clients: ph.Clients, Changes: ph.Changes, Responses: ph.Responses, Acks: ph.Acks, Nacks: ph.Nacks,
			Resends: ph.Resends, Missed: ph.Missed, Violations: ph.Violations, Errors: ph.Errors, Amplification: amp, Timed: LatencyTimed(ph.Name),
			Latency: []string{quantile(lat, lat.P50NS), quantile(lat, lat.P90NS), quantile(lat, lat.P99NS), quantile(lat, lat.P999NS), quantile(lat, lat.MaxNS),
				quantile(conv, conv.P50NS), quantile(conv, conv.P99NS), quantile(conv, conv.MaxNS)},
		})
	}
	d.Plots = []plot{latencyOverTime(r.Timeline), acksOverTime(r.Timeline), percentiles(r.Phases), convergence(r.Changes)}
	for _, h := range r.Harness {
		d.Harness = append(d.Harness, harnessRow{Saturated: h.Saturated, Text: harnessFigures(h)})
	}
	return d
}

// clippedForPage is r with its violations' messages cut to maxMessage
// characters; r itself is not changed.
func clippedForPage(r *Report) *Report {
	cp := *r
	cp.Violations = make([]Violation, len(r.Violations))
	for i, v := range r.Violations {
		if rs := []rune(v.Message); len(rs) > maxMessage {
			v.Message = string(rs[:maxMessage]) + "…"
		}
		cp.Violations[i] = v
	}
	return &cp
}

// Width, Height, MidX, MidY and TickX place a plot's frame and labels.
func (p plot) Width() float64  { return p.R - p.L }
func (p plot) Height() float64 { return p.B - p.T }
func (p plot) MidX() float64   { return (p.L + p.R) / 2 }
func (p plot) MidY() float64   { return (p.T + p.B) / 2 }
func (p plot) TickX() float64  { return p.L - 6 }

// SwatchEnd is where a legend entry's colour swatch ends.
func (s series) SwatchEnd() float64 { return s.LX + 10 }
