package loadreport

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// SLO is a parsed --slo spec: objectives a load run must meet. The
// grammar is
//
//	SPEC      = OBJECTIVE { "," OBJECTIVE }
//	OBJECTIVE = [ PHASE "." ] METRIC OP VALUE
//	PHASE     = "connect" | "initial-sync" | "churn" | "burst"
//	METRIC    = LATENCY | "convergence." LATENCY | "amplification"
//	          | "violations" | "missed" | "nacks" | "resends" | "errors"
//	LATENCY   = "p50" | "p90" | "p99" | "p999" | "max"
//	OP        = "<" | "<=" | "=" | ">=" | ">"
//
// with spaces allowed around each part. A latency (LATENCY is push→ACK
// latency, convergence.LATENCY the time for a change to reach every
// client) takes a Go duration with its unit ("500ms", "2s"); amplification
// a number ("1.5"); the counts a whole number ("0").
//
// Without a PHASE, latency, convergence and amplification judge the churn
// phase when the run had one (the steady state the figures are about),
// and otherwise every phase merged; the counts are summed over every
// phase. With a PHASE, the objective judges that phase only, and fails
// when the run did not have it. An objective with nothing to measure (no
// ACK recorded, no push expected) fails: a check that cannot fail would
// say nothing.
type SLO struct {
	spec       string
	objectives []objective
}

// objective is one parsed OBJECTIVE.
type objective struct {
	text   string
	phase  string // "" when none was named
	metric string // as written, without the phase
	op     string
	// want is the bound: nanoseconds for a latency, the number otherwise.
	want float64
}

// MaxSLOSpec bounds an --slo spec, in bytes.
const MaxSLOSpec = 4096

// latencies maps a LATENCY to how it is read from a histogram's summary.
var latencies = map[string]func(Summary) int64{
	"p50":  func(s Summary) int64 { return s.P50NS },
	"p90":  func(s Summary) int64 { return s.P90NS },
	"p99":  func(s Summary) int64 { return s.P99NS },
	"p999": func(s Summary) int64 { return s.P999NS },
	"max":  func(s Summary) int64 { return s.MaxNS },
}

// counts maps each count METRIC to its phase field.
var counts = map[string]func(Phase) int64{
	"violations": func(p Phase) int64 { return p.Violations },
	"missed":     func(p Phase) int64 { return p.Missed },
	"nacks":      func(p Phase) int64 { return p.Nacks },
	"resends":    func(p Phase) int64 { return p.Resends },
	"errors":     func(p Phase) int64 { return p.Errors },
}

// ops are the comparison operators, the two-character ones first so that
// "<=" is not read as "<" and "=...".
var ops = []string{"<=", ">=", "<", ">", "="}

// ParseSLO parses an --slo spec (see SLO for the grammar). The error is
// one line naming the objective at fault and what is wrong with it.
func ParseSLO(spec string) (SLO, error) {
	if len(spec) > MaxSLOSpec {
		return SLO{}, fmt.Errorf("slo: %d bytes, at most %d", len(spec), MaxSLOSpec)
	}
	if strings.TrimSpace(spec) == "" {
		return SLO{}, fmt.Errorf("slo: empty; give objectives such as %q", "p99<500ms,missed=0")
	}
	slo := SLO{spec: spec}
	for _, part := range strings.Split(spec, ",") {
		o, err := parseObjective(strings.TrimSpace(part))
		if err != nil {
			return SLO{}, fmt.Errorf("slo: %q: %v", strings.TrimSpace(part), err)
		}
		slo.objectives = append(slo.objectives, o)
	}
	return slo, nil
}

func parseObjective(text string) (objective, error) {
	if text == "" {
		return objective{}, fmt.Errorf("empty objective (a stray comma?)")
	}
	i := strings.IndexAny(text, "<>=")
	if i < 0 {
		return objective{}, fmt.Errorf("no comparison: write METRIC OP VALUE with OP one of %s", strings.Join(ops, " "))
	}
	o := objective{text: text}
	for _, op := range ops {
		if strings.HasPrefix(text[i:], op) {
			o.op = op
			break
		}
	}
	name := strings.TrimSpace(text[:i])
	value := strings.TrimSpace(text[i+len(o.op):])
	if strings.ContainsAny(value, "<>=") {
		return objective{}, fmt.Errorf("one comparison per objective, with OP one of %s", strings.Join(ops, " "))
	}
	for _, ph := range PhaseNames {
		if rest, ok := strings.CutPrefix(name, ph+"."); ok {
			o.phase, name = ph, rest
			break
		}
	}
	o.metric = name
	switch kind := metricKind(name); kind {
	case "":
		return objective{}, fmt.Errorf("unknown metric %q: one of p50 p90 p99 p999 max, convergence.p50 … convergence.max, amplification, violations, missed, nacks, resends, errors, optionally after a phase (%s.)", name, strings.Join(PhaseNames, ". "))
	case "latency":
		d, err := time.ParseDuration(value)
		if err != nil {
			if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
				return objective{}, fmt.Errorf("%s is a duration: give its unit (%sms, %ss)", name, value, value)
			}
			return objective{}, fmt.Errorf("%q is not a duration (500ms, 2s)", value)
		}
		if d < 0 {
			return objective{}, fmt.Errorf("%s: a negative duration", value)
		}
		o.want = float64(d)
	case "ratio":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return objective{}, fmt.Errorf("%q is not a ratio (a number such as 1.5)", value)
		}
		o.want = f
	case "count":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n < 0 {
			return objective{}, fmt.Errorf("%q is not a count (a whole number such as 0)", value)
		}
		o.want = float64(n)
	}
	return o, nil
}

// metricKind is "latency", "ratio" or "count", or "" for an unknown
// metric.
func metricKind(m string) string {
	switch {
	case latencies[strings.TrimPrefix(m, "convergence.")] != nil:
		return "latency"
	case m == "amplification":
		return "ratio"
	case counts[m] != nil:
		return "count"
	}
	return ""
}

// String is the spec as given.
func (s SLO) String() string { return s.spec }

// Evaluate judges r against every objective. r is not changed (the
// caller sets r.SLO to the result if it wants it in the report).
func (s SLO) Evaluate(r *Report) *SLOResult {
	res := &SLOResult{Spec: s.spec, OK: true, Objectives: []Objective{}}
	for _, o := range s.objectives {
		got := o.evaluate(r)
		res.OK = res.OK && got.OK
		res.Objectives = append(res.Objectives, got)
	}
	// Counts of some shards only would meet "violations=0" or "missed=0"
	// for the shards that are not there: a run judged must be whole.
	if want := max(r.Plan.Shards, 1); len(r.Shards) < want {
		res.OK = false
		res.Objectives = append(res.Objectives, Objective{Text: "every shard", Value: fmt.Sprintf("%d of %d", len(r.Shards), want)})
	}
	// Nor may it have been cut short, or have measured nothing: zero
	// violations and zero missed of a run that opened no stream, or of
	// one stopped before its phases ran, would read as a pass.
	if r.Interrupted {
		res.OK = false
		res.Objectives = append(res.Objectives, Objective{Text: "not interrupted", Value: "interrupted"})
	}
	if len(r.Unmeasured) > 0 {
		res.OK = false
		res.Objectives = append(res.Objectives, Objective{Text: "something measured", Value: "nothing: " + strings.Join(r.Unmeasured, "; ")})
	}
	return res
}

func (o objective) evaluate(r *Report) Objective {
	out := Objective{Text: o.text, Phase: o.phase}
	phases := r.Phases
	if o.phase != "" {
		p, ok := r.Phase(o.phase)
		if !ok {
			out.Value = "phase did not run"
			return out
		}
		phases = []Phase{p}
	} else if metricKind(o.metric) != "count" {
		if p, ok := r.Phase(PhaseChurn); ok {
			out.Phase = PhaseChurn
			phases = []Phase{p}
		}
	}
	if len(phases) == 0 {
		out.Value = "no phase ran"
		return out
	}
	switch metricKind(o.metric) {
	case "latency":
		h := NewHistogram()
		name := o.metric
		for _, p := range phases {
			if n, ok := strings.CutPrefix(o.metric, "convergence."); ok {
				h.Merge(p.Convergence)
				name = n
			} else {
				h.Merge(p.Latency)
			}
		}
		sum, err := h.Summary()
		if err != nil || sum.Count == 0 {
			out.Value = "no values"
			return out
		}
		got := latencies[name](sum)
		out.Value = time.Duration(got).String()
		out.OK = compare(float64(got), o.op, o.want)
	case "ratio":
		var responses, expected int64
		for _, p := range phases {
			responses += p.Responses
			expected += p.Expected
		}
		if expected == 0 {
			out.Value = "no push expected"
			return out
		}
		got := Amplification(responses, expected)
		out.Value = strconv.FormatFloat(got, 'f', 3, 64)
		out.OK = compare(got, o.op, o.want)
	case "count":
		var n int64
		for _, p := range phases {
			n += counts[o.metric](p)
		}
		out.Value = strconv.FormatInt(n, 10)
		out.OK = compare(float64(n), o.op, o.want)
	}
	return out
}

func compare(got float64, op string, want float64) bool {
	switch op {
	case "<":
		return got < want
	case "<=":
		return got <= want
	case "=":
		return got == want
	case ">=":
		return got >= want
	case ">":
		return got > want
	}
	return false
}
