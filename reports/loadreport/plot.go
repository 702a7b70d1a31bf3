package loadreport

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The plots of the HTML page are drawn here as numbers (paths, ticks) and
// put into SVG by the page's template, which escapes every label: the
// only text on a plot that a report carries is a phase name.

// Plot geometry, in SVG user units: the plot area is the box less the
// margins, which hold the axes' labels.
const (
	plotW, plotH                               = 720.0, 240.0
	marginL, marginR, marginT, marginB         = 64.0, 30.0, 30.0, 34.0
	areaL, areaR, areaT, areaB                 = marginL, plotW - marginR, marginT, plotH - marginB
	maxPlotPoints                              = 600 // a timeline longer than this is drawn in buckets of seconds
	percentileSteps                            = 200 // points of a percentile curve
	percentileDecades                          = 4.0 // the curve's x axis ends at 99.99 %
	phaseClasses                               = 4   // CSS classes ph0 … ph3 colour the phases
	noValue                            float64 = -1
)

// plot is one chart: axes with their ticks, and series drawn as lines or
// as dots.
type plot struct {
	Title, XLabel, YLabel string
	W, H                  float64
	// Area is the plot area's corners, for the frame.
	L, R, T, B float64
	XTicks     []tick
	YTicks     []tick
	Series     []series
	// Empty says why there is nothing to draw ("" when there is).
	Empty string
}

// tick is one labelled position on an axis (X for the x axis, Y for the
// y axis: the other coordinate is the axis's).
type tick struct {
	Pos   float64
	Label string
}

// series is one line (Dots false) or set of dots, with its legend.
type series struct {
	Label string
	// Class is the CSS class that colours it.
	Class string
	// D is the SVG path: "M x y L x y …" for a line, "M x yh0" per dot.
	D    string
	Dots bool
	// LX, LY place its legend entry.
	LX, LY float64
}

func newPlot(title, xLabel, yLabel string) plot {
	return plot{Title: title, XLabel: xLabel, YLabel: yLabel, W: plotW, H: plotH, L: areaL, R: areaR, T: areaT, B: areaB}
}

// scale maps [0, max] onto the plot area's [lo, hi] (pixels), or, when
// min > 0, [min, max] on a logarithmic scale (values below min at lo).
type scale struct{ min, max, lo, hi float64 }

func (s scale) at(v float64) float64 {
	switch {
	case s.min > 0 && v <= s.min:
		return s.lo
	case s.min > 0:
		return s.lo + (s.hi-s.lo)*math.Log10(v/s.min)/math.Log10(s.max/s.min)
	case s.max <= 0:
		return s.lo
	}
	return s.lo + (s.hi-s.lo)*v/s.max
}

// latencyAxis is a logarithmic y axis of nanoseconds from the decade of
// the least positive value to that of the largest: latencies span
// decades (a fast median, a slow tail), which a linear axis flattens
// into a line along the bottom. Its ticks are the decades, with 2× and
// 5× when there are few.
func latencyAxis(least, most float64) (scale, []tick) {
	if most <= 0 {
		most = float64(time.Millisecond)
	}
	if least <= 0 || least > most {
		least = most
	}
	lo := math.Floor(math.Log10(max(least, float64(time.Microsecond))))
	hi := math.Ceil(math.Log10(most))
	if hi <= lo {
		hi = lo + 1
	}
	s := scale{min: math.Pow(10, lo), max: math.Pow(10, hi), lo: areaB, hi: areaT}
	var ts []tick
	for e := lo; e <= hi; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v > s.max || m != 1 && hi-lo > 2 {
				continue
			}
			ts = append(ts, tick{Pos: round1(s.at(v)), Label: time.Duration(v).String()})
		}
	}
	return s, ts
}

// round1 rounds a coordinate the template writes to one decimal.
func round1(v float64) float64 { return math.Round(v*10) / 10 }

// num writes a coordinate to one decimal: enough on a 720-unit plot, and
// the same bytes on every run.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// path joins points into an SVG path, starting a new stroke where a point
// is missing (y = noValue).
type path struct {
	b    strings.Builder
	open bool
}

func (p *path) point(x, y float64) {
	if p.open {
		p.b.WriteString("L")
	} else {
		p.b.WriteString("M")
		p.open = true
	}
	p.b.WriteString(num(x) + " " + num(y))
}

func (p *path) gap() { p.open = false }

func (p *path) dot(x, y float64) { p.b.WriteString("M" + num(x) + " " + num(y) + "h0") }

func (p *path) String() string { return p.b.String() }

// niceMax rounds v up to 1, 2 or 5 times a power of ten, and returns it
// with the step of about n ticks up to it.
func niceMax(v float64, n int) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 1
	}
	raw := v / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if step = m * mag; step >= raw {
			break
		}
	}
	return math.Ceil(v/step-1e-9) * step, step
}

// yTicks are the labelled ticks of a y axis of [0, top] by step, placed
// with s and labelled by label.
func yTicks(top, step float64, s scale, label func(float64) string) []tick {
	var ts []tick
	for i := 0; float64(i)*step <= top*(1+1e-9) && i <= 20; i++ {
		v := float64(i) * step
		ts = append(ts, tick{Pos: round1(s.at(v)), Label: label(v)})
	}
	return ts
}

// countLabel labels a tick of a count.
func countLabel(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// legend places the legend entries of ss in a row above the plot area.
func legend(ss []series) []series {
	x := areaL + 8
	for i := range ss {
		ss[i].LX, ss[i].LY = x, areaT-12
		x += 24 + 7*float64(len([]rune(ss[i].Label)))
	}
	return ss
}

// bucket is a run of width seconds of the timeline drawn as one point.
type bucket struct {
	acks, nacks, latencies, sum, maxNS int64
}

// buckets folds the timeline into at most maxPlotPoints buckets of
// width seconds each, from its first second; seconds the timeline lacks
// (no activity) count as zeros.
func buckets(tl []Second) (bs []bucket, width int64) {
	first, last := tl[0].UnixS, tl[0].UnixS
	for _, s := range tl {
		first, last = min(first, s.UnixS), max(last, s.UnixS)
	}
	// In unsigned arithmetic, so that a hand-made report spanning all of
	// int64 cannot overflow it: n is the span less one second (the span
	// itself, 2^64, would not fit).
	n := uint64(last - first)
	w := n/maxPlotPoints + 1
	bs = make([]bucket, n/w+1)
	for _, s := range tl {
		b := &bs[uint64(s.UnixS-first)/w]
		b.acks += s.Acks
		b.nacks += s.Nacks
		b.latencies += s.LatencyCount
		b.sum += s.LatencySumNS
		b.maxNS = max(b.maxNS, s.LatencyMaxNS)
	}
	return bs, int64(w)
}

// timeAxis is the x axis of a plot over [0, span] seconds.
func timeAxis(span float64) (scale, []tick) {
	top, step := niceMax(span, 8)
	s := scale{max: top, lo: areaL, hi: areaR}
	var ts []tick
	for i := 0; float64(i)*step <= top*(1+1e-9) && i <= 20; i++ {
		v := float64(i) * step
		ts = append(ts, tick{Pos: round1(s.at(v)), Label: countLabel(v) + "s"})
	}
	return s, ts
}

// latencyOverTime plots each second's mean and worst push→ACK latency.
func latencyOverTime(tl []Second) plot {
	p := newPlot("push→ACK latency over time", "seconds since the run's first activity", "latency")
	if len(tl) == 0 {
		p.Empty = "the run has no timeline"
		return p
	}
	bs, width := buckets(tl)
	xs, xt := timeAxis(float64(len(bs)) * float64(width))
	var least, most float64
	for _, b := range bs {
		if b.latencies > 0 {
			most = max(most, float64(b.maxNS))
			if m := float64(b.sum) / float64(b.latencies); m > 0 && (least == 0 || m < least) {
				least = m
			}
		}
	}
	ys, yt := latencyAxis(least, most)
	var mean, worst path
	for i, b := range bs {
		if b.latencies == 0 {
			mean.gap()
			worst.gap()
			continue
		}
		x := xs.at((float64(i) + 0.5) * float64(width))
		mean.point(x, ys.at(float64(b.sum)/float64(b.latencies)))
		worst.point(x, ys.at(float64(b.maxNS)))
	}
	p.XTicks, p.YTicks = xt, yt
	p.Series = legend([]series{{Label: "mean", Class: "mean", D: mean.String()}, {Label: "max", Class: "worst", D: worst.String()}})
	if width > 1 {
		p.XLabel += " (a point per " + strconv.FormatInt(width, 10) + " s)"
	}
	return p
}

// acksOverTime plots ACKs and NACKs per second.
func acksOverTime(tl []Second) plot {
	p := newPlot("ACKs and NACKs per second", "seconds since the run's first activity", "per second")
	if len(tl) == 0 {
		p.Empty = "the run has no timeline"
		return p
	}
	bs, width := buckets(tl)
	xs, xt := timeAxis(float64(len(bs)) * float64(width))
	var top float64
	for _, b := range bs {
		top = max(top, float64(max(b.acks, b.nacks))/float64(width))
	}
	ymax, step := niceMax(top, 5)
	ys := scale{max: ymax, lo: areaB, hi: areaT}
	var acks, nacks path
	for i, b := range bs {
		x := xs.at((float64(i) + 0.5) * float64(width))
		acks.point(x, ys.at(float64(b.acks)/float64(width)))
		nacks.point(x, ys.at(float64(b.nacks)/float64(width)))
	}
	p.XTicks, p.YTicks = xt, yTicks(ymax, step, ys, countLabel)
	p.Series = legend([]series{{Label: "ACKs/s", Class: "acks", D: acks.String()}, {Label: "NACKs/s", Class: "nacks", D: nacks.String()}})
	if width > 1 {
		p.XLabel += " (a point per " + strconv.FormatInt(width, 10) + " s)"
	}
	return p
}

// phaseClass is the CSS class that colours a phase: the same in every
// plot.
func phaseClass(name string) string {
	return "ph" + strconv.Itoa(phaseRank(name)%phaseClasses)
}

// percentiles plots each phase's push→ACK latency by percentile, on the
// usual HDR axis: x is log10(1/(1-q)), so 90 %, 99 %, 99.9 % and 99.99 %
// are evenly spaced and the tail gets the room it deserves.
func percentiles(phases []Phase) plot {
	p := newPlot("push→ACK latency by percentile", "percentile", "latency")
	xs := scale{max: percentileDecades, lo: areaL, hi: areaR}
	for i, label := range []string{"0%", "90%", "99%", "99.9%", "99.99%"} {
		p.XTicks = append(p.XTicks, tick{Pos: round1(xs.at(float64(i))), Label: label})
	}
	type curve struct {
		name string
		vs   []float64
	}
	var curves []curve
	var least, most float64
	for _, ph := range phases {
		if ph.Latency == nil || ph.Latency.Count() == 0 {
			continue
		}
		c := curve{name: ph.Name}
		for k := 0; k <= percentileSteps; k++ {
			x := percentileDecades * float64(k) / percentileSteps
			q := 1 - math.Pow(10, -x)
			v := float64(ph.Latency.Quantile(q))
			c.vs = append(c.vs, v)
			most = max(most, v)
			if v > 0 && (least == 0 || v < least) {
				least = v
			}
		}
		curves = append(curves, c)
	}
	if len(curves) == 0 {
		p.Empty = "no phase recorded a latency"
		return p
	}
	ys, yt := latencyAxis(least, most)
	p.YTicks = yt
	for _, c := range curves {
		var d path
		for k, v := range c.vs {
			d.point(xs.at(percentileDecades*float64(k)/percentileSteps), ys.at(v))
		}
		p.Series = append(p.Series, series{Label: c.name, Class: phaseClass(c.name), D: d.String()})
	}
	p.Series = legend(p.Series)
	return p
}

// convergence plots each change's convergence (origin to the last ACK)
// at its origin, a dot per change coloured by phase; changes some client
// never ACKed are crosses along the top.
func convergence(changes []Change) plot {
	p := newPlot("convergence per change", "seconds since the first change", "convergence")
	var first int64 = math.MaxInt64
	var last int64
	var least, most float64
	for _, c := range changes {
		if c.OriginUnixNS == 0 {
			continue
		}
		first, last = min(first, c.OriginUnixNS), max(last, c.OriginUnixNS)
		if v := float64(c.LastAckNS); c.Expected > 0 && c.Acked >= c.Expected && v > 0 {
			most = max(most, v)
			if least == 0 || v < least {
				least = v
			}
		}
	}
	if first == math.MaxInt64 {
		p.Empty = "no change was made"
		return p
	}
	xs, xt := timeAxis((float64(last)-float64(first))/float64(time.Second) + 1)
	ys, yt := latencyAxis(least, most)
	dots := map[string]*path{}
	var order []string
	var missed path
	for _, c := range changes {
		if c.OriginUnixNS == 0 {
			continue
		}
		x := xs.at((float64(c.OriginUnixNS) - float64(first)) / float64(time.Second))
		if c.Expected > 0 && c.Acked >= c.Expected {
			d, ok := dots[c.Phase]
			if !ok {
				d = &path{}
				dots[c.Phase] = d
				order = append(order, c.Phase)
			}
			d.dot(x, ys.at(float64(c.LastAckNS)))
		} else if c.Expected > 0 {
			missed.b.WriteString("M" + num(x-3) + " " + num(areaT-3) + "l6 6m0 -6l-6 6")
		}
	}
	p.XTicks, p.YTicks = xt, yt
	slices.SortFunc(order, func(a, b string) int { return cmp.Compare(phaseRank(a), phaseRank(b)) })
	for _, ph := range order {
		p.Series = append(p.Series, series{Label: ph, Class: phaseClass(ph), D: dots[ph].String(), Dots: true})
	}
	if missed.b.Len() > 0 {
		p.Series = append(p.Series, series{Label: "not converged", Class: "missed", D: missed.String()})
	}
	p.Series = legend(p.Series)
	return p
}
