package loadreport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/reports/markdown"
)

// maxListed bounds the violations and notes the Markdown summary lists:
// past it, a line says how many more the JSON report holds.
const maxListed = 50

// WriteMarkdown writes r as a short GitHub-flavoured Markdown summary for
// a CI step summary: the plan, a table of counts and one of latencies
// (row per phase), the harness per shard (a saturated one in bold), the
// violations with their rule and level, the notes and the SLO verdict,
// and, at the top, why the run measured nothing (Unmeasured). Every string a report carries that a peer or a user chose (the target,
// messages, client names, the plan's names) is written inside a code span
// (markdown.Code), where GitHub renders no link, HTML or emphasis. The
// output depends on r only.
func WriteMarkdown(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("loadreport: no report to render")
	}
	var b bytes.Buffer
	renderMarkdown(&b, r)
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("loadreport: writing the Markdown summary: %w", err)
	}
	return nil
}

func renderMarkdown(b *bytes.Buffer, r *Report) {
	fmt.Fprintf(b, "## xdsconform load run %s against %s\n\n", markdown.Code(r.RunID), markdown.Code(r.Target))
	if r.SLO != nil {
		if r.SLO.OK {
			b.WriteString("**✅ SLO met**\n\n")
		} else {
			b.WriteString("**❌ SLO broken**\n\n")
		}
	}
	if len(r.Unmeasured) > 0 {
		// Said at the top: it fails the run whatever the figures below.
		b.WriteString("**❌ Nothing measured**, so the run fails:\n\n")
		for _, u := range r.Unmeasured {
			b.WriteString("- " + markdown.Code(u) + "\n")
		}
		b.WriteString("\n")
	}
	p := r.Plan
	fmt.Fprintf(b, "- plan: %s (%s), profile %s, %s, %s per connection",
		plural(int64(p.Clients), "client", "clients"), plural(int64(p.Nodes), "node", "nodes"), markdown.Code(p.Profile), markdown.Code(p.Variant), plural(int64(p.StreamsPerConn), "stream", "streams"))
	if p.Churn > 0 {
		fmt.Fprintf(b, ", churn %s/s", strconv.FormatFloat(p.Churn, 'f', -1, 64))
		if len(p.ChurnTypes) > 0 {
			fmt.Fprintf(b, " of %s", markdown.Code(strings.Join(p.ChurnTypes, ", ")))
		}
		fmt.Fprintf(b, " for %s", duration(p.DurationNS))
	}
	if p.NackBurst > 0 {
		fmt.Fprintf(b, ", NACK burst of %d", p.NackBurst)
	}
	fmt.Fprintf(b, ", %s\n", plural(int64(max(p.Shards, 1)), "shard", "shards"))
	shards := make([]string, len(r.Shards))
	for i, s := range r.Shards {
		shards[i] = strconv.Itoa(s)
	}
	fmt.Fprintf(b, "- shards in this report: %s of %d\n", strings.Join(shards, ", "), max(p.Shards, 1))
	fmt.Fprintf(b, "- started %s, ran %s", r.Started.UTC().Format(time.RFC3339), duration(r.DurationNS))
	if r.Interrupted {
		b.WriteString(", **interrupted**: the figures cover what ran")
	}
	fmt.Fprintf(b, "\n- harness %s\n", markdown.Code(r.HarnessVersion))

	b.WriteString("\n### Phases\n\n")
	if len(r.Phases) == 0 {
		b.WriteString("No phase ran.\n")
	} else {
		b.WriteString("| phase | clients | changes | responses | ACKs | NACKs | resends | missed | violations | errors | amplification |\n")
		b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, ph := range r.Phases {
			amp := "—"
			if ph.Expected > 0 {
				amp = strconv.FormatFloat(ph.Amplification, 'f', 3, 64)
			}
			fmt.Fprintf(b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", phaseName(ph.Name),
				ph.Clients, ph.Changes, ph.Responses, ph.Acks, ph.Nacks, ph.Resends, ph.Missed, ph.Violations, ph.Errors, amp)
		}
		b.WriteString("\n| phase | latency timed | p50 | p90 | p99 | p99.9 | max | convergence p50 | p99 | max |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, ph := range r.Phases {
			lat, conv := summary(ph.Latency), summary(ph.Convergence)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", phaseName(ph.Name), LatencyTimed(ph.Name),
				quantile(lat, lat.P50NS), quantile(lat, lat.P90NS), quantile(lat, lat.P99NS), quantile(lat, lat.P999NS), quantile(lat, lat.MaxNS),
				quantile(conv, conv.P50NS), quantile(conv, conv.P99NS), quantile(conv, conv.MaxNS))
		}
	}

	if len(r.Harness) > 0 {
		b.WriteString("\n### Harness\n\n")
		for _, h := range r.Harness {
			b.WriteString("- " + harnessLine(h) + "\n")
		}
	}

	if len(r.Violations) > 0 {
		b.WriteString("\n### Violations\n\n")
		for i, v := range r.Violations {
			if i == maxListed {
				fmt.Fprintf(b, "- … and %d more rules broken (the JSON report lists them)\n", len(r.Violations)-maxListed)
				break
			}
			fmt.Fprintf(b, "- %s (%s) × %d, first seen by client %s: %s\n", markdown.Code(v.Rule), markdown.Code(v.Level), v.Count, markdown.Code(v.Client), markdown.Code(v.Message))
		}
	}

	if len(r.Notes) > 0 {
		b.WriteString("\n### Notes\n\n")
		for i, n := range r.Notes {
			if i == maxListed {
				fmt.Fprintf(b, "- … and %d more notes (the JSON report lists them)\n", len(r.Notes)-maxListed)
				break
			}
			b.WriteString("- " + markdown.Code(n) + "\n")
		}
	}

	if r.SLO != nil {
		fmt.Fprintf(b, "\n### SLO %s\n\n", markdown.Code(r.SLO.Spec))
		b.WriteString("| objective | phase | measured | verdict |\n|---|---|--:|---|\n")
		for _, o := range r.SLO.Objectives {
			verdict := "✅ met"
			if !o.OK {
				verdict = "❌ **broken**"
			}
			ph := "all"
			if o.Phase != "" {
				ph = phaseName(o.Phase)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s |\n", markdown.Cell(o.Text), ph, markdown.Cell(o.Value), verdict)
		}
	}
}

// harnessLine is one shard's harness figures as a Markdown line, with
// "SATURATED" in bold after them when it was.
func harnessLine(h Harness) string {
	if h.Saturated {
		return harnessFigures(h) + " — **SATURATED**: its latencies say more about the harness than about the server"
	}
	return harnessFigures(h)
}

// harnessFigures is one shard's harness figures on one line.
func harnessFigures(h Harness) string {
	var b strings.Builder
	fmt.Fprintf(&b, "shard %d: %.1f%% CPU of %s, peak RSS %s", h.Shard, h.CPUPercent, plural(int64(h.Cores), "core", "cores"), bytesize(h.PeakRSSBytes))
	if h.BaselineRSSBytes > 0 {
		fmt.Fprintf(&b, " (%s before connecting)", bytesize(h.BaselineRSSBytes))
	}
	if h.BytesPerStream > 0 {
		fmt.Fprintf(&b, ", %s per stream", bytesize(h.BytesPerStream))
	}
	fmt.Fprintf(&b, " over %s, heap %s, timer lag up to %s", plural(h.Streams, "stream", "streams"), bytesize(h.HeapBytes), duration(h.LagMaxNS))
	if h.InProcessTarget {
		b.WriteString("; the target ran in this process: these figures include it")
	}
	return b.String()
}

// phaseName is a phase's name as it is, or in a code span when it is not
// one of PhaseNames (a report built by hand).
func phaseName(name string) string {
	if slices.Contains(PhaseNames, name) {
		return name
	}
	return markdown.Cell(name)
}

// summary is h's summary, empty when h is absent or cannot be encoded.
func summary(h *Histogram) Summary {
	if h == nil {
		return Summary{}
	}
	s, _ := h.Summary()
	return s
}

// quantile writes a figure of s, or a dash when s holds no value; a
// figure at the histogram's ceiling is a lower bound.
func quantile(s Summary, ns int64) string {
	switch {
	case s.Count == 0:
		return "—"
	case ns >= int64(HistogramMax):
		return "≥" + duration(int64(HistogramMax))
	}
	return duration(ns)
}

// duration writes ns to about three significant digits, in the unit that
// reads best ("850µs", "12.3ms", "1.25s", "2m5s").
func duration(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < 10*time.Millisecond:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/1e6, 'f', 1, 64) + "ms"
	case d < time.Minute:
		return strconv.FormatFloat(float64(d)/1e9, 'f', 2, 64) + "s"
	}
	return d.Round(time.Second).String()
}

// bytesize writes n bytes in binary units ("512.0 MiB").
func bytesize(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, i := float64(n), -1
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + string("KMGTP"[i]) + "iB"
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}
