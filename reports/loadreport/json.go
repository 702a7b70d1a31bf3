package loadreport

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/infile"
)

// MaxJSONSize bounds a load report ReadJSON accepts, in bytes. The
// largest a run writes is MaxChanges changes of about 200 bytes and a
// timeline of a few hours, a few MiB; the bound keeps a wrong file (a
// disk image, a device) from being read into memory whole.
const MaxJSONSize = 64 << 20

// MaxShards bounds Plan.Shards in a report ReadJSON accepts.
const MaxShards = 1024

// MaxTimeline bounds the seconds of Report.Timeline ReadJSON accepts: a
// week of run.
const MaxTimeline = 7 * 24 * 3600

// ErrNotALoadReport is wrapped by ReadJSON's error for input that is not
// a load report of the layout this build reads.
var ErrNotALoadReport = errors.New("not an xdsconform load report")

// WriteJSON writes r as indented JSON in the layout of Format, the one
// reports/schema/load.schema.json describes. The output depends on r's
// content only: fields in a fixed order, Started in UTC, the shards, the
// changes (by ID), the timeline (by second), the violations (by rule) and
// the harness (by shard) sorted, absent lists as empty arrays and absent
// histograms as empty ones. r itself is not changed.
func WriteJSON(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("loadreport: no report to write")
	}
	b, err := json.MarshalIndent(normalised(r), "", "  ")
	if err != nil {
		return fmt.Errorf("loadreport: encoding the report: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("loadreport: writing the report: %w", err)
	}
	return nil
}

// normalised is a copy of r as WriteJSON writes it; it shares the
// histograms and transcripts of r, which it does not change.
func normalised(r *Report) *Report {
	cp := *r
	cp.Format = Format
	cp.Started = r.Started.UTC()
	cp.Plan = clonePlan(r.Plan)
	cp.Plan.Resources = orEmpty(cp.Plan.Resources)
	cp.Shards = slices.Sorted(slices.Values(r.Shards))
	cp.Shards = orEmpty(cp.Shards)
	cp.Phases = orEmpty(slices.Clone(r.Phases))
	for i := range cp.Phases {
		if cp.Phases[i].Latency == nil {
			cp.Phases[i].Latency = NewHistogram()
		}
		if cp.Phases[i].Convergence == nil {
			cp.Phases[i].Convergence = NewHistogram()
		}
	}
	cp.Changes = orEmpty(slices.Clone(r.Changes))
	slices.SortStableFunc(cp.Changes, func(a, b Change) int { return cmp.Compare(a.ID, b.ID) })
	cp.Timeline = orEmpty(slices.Clone(r.Timeline))
	slices.SortStableFunc(cp.Timeline, func(a, b Second) int { return cmp.Compare(a.UnixS, b.UnixS) })
	cp.Violations = orEmpty(slices.Clone(r.Violations))
	slices.SortStableFunc(cp.Violations, func(a, b Violation) int { return strings.Compare(a.Rule, b.Rule) })
	cp.Harness = orEmpty(slices.Clone(r.Harness))
	slices.SortStableFunc(cp.Harness, func(a, b Harness) int { return cmp.Compare(a.Shard, b.Shard) })
	if r.SLO != nil {
		slo := *r.SLO
		slo.Objectives = orEmpty(slices.Clone(slo.Objectives))
		cp.SLO = &slo
	}
	return &cp
}

// orEmpty makes a nil list an empty one, which JSON writes as [] (the
// schema's "always an array").
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ReadJSON reads a load report as WriteJSON writes it, at most
// MaxJSONSize bytes. It is strict: a field this build does not know is
// refused, not dropped, since a merge that silently lost what a newer
// harness recorded would say less than its shards without saying so;
// the shards of one run come from one harness build. A report of another
// format version is refused with a one-line error naming both versions.
// The content is checked too: counts are not negative, phases and
// changes are of known phases, the shards are within the plan, lists
// are within their bounds (MaxChanges, MaxTimeline, MaxShards), and
// each histogram is of this package's range. Every error wraps
// ErrNotALoadReport. Hostile input gives an error, never a panic.
func ReadJSON(r io.Reader) (*Report, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxJSONSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if len(b) > MaxJSONSize {
		return nil, fmt.Errorf("%w: larger than %d MiB", ErrNotALoadReport, MaxJSONSize>>20)
	}
	// The format is read first, on its own: a report of another version
	// is told so, rather than about the first field it does not know.
	var head struct {
		Format        *string `json:"format"`
		SchemaVersion *string `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotALoadReport, err)
	}
	switch {
	case head.Format == nil && head.SchemaVersion != nil:
		return nil, fmt.Errorf("%w: it is a suite report (schema_version %q), which 'xdsconform report' reads", ErrNotALoadReport, *head.SchemaVersion)
	case head.Format == nil:
		return nil, fmt.Errorf("%w: no format field", ErrNotALoadReport)
	case *head.Format != Format && strings.HasPrefix(*head.Format, formatName):
		return nil, fmt.Errorf("%w: format %q, this build reads %q only", ErrNotALoadReport, *head.Format, Format)
	case *head.Format != Format:
		return nil, fmt.Errorf("%w: format %q", ErrNotALoadReport, *head.Format)
	}
	// Unmarshal above refused data after the report; this pass refuses
	// fields the layout does not have.
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var rep Report
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotALoadReport, err)
	}
	if err := check(&rep); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotALoadReport, err)
	}
	return &rep, nil
}

// formatName is Format without its version.
var formatName = Format[:strings.LastIndexByte(Format, '/')+1]

// ReadJSONFile reads the load report at path under ctx; the error names
// the path. The file's size is checked before it is read, a directory or
// a device is refused, and a pipe is read under a deadline
// (internal/infile).
func ReadJSONFile(ctx context.Context, path string) (*Report, error) {
	b, err := infile.ReadAll(ctx, path, MaxJSONSize)
	var tooLarge *infile.TooLargeError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%s: %w: larger than %d MiB", path, ErrNotALoadReport, MaxJSONSize>>20)
	case err != nil:
		return nil, err // errors name the path
	}
	r, err := ReadJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// check refuses a report whose content no harness writes: what would
// make a figure wrong without an error (a negative count), a merge
// misattribute (a shard outside the plan) or a reader use unbounded
// memory. It fills absent histograms with empty ones, so readers need
// not check for them.
func check(r *Report) error {
	p := r.Plan
	if err := nonNegative("plan", map[string]int64{"clients": int64(p.Clients), "nodes": int64(p.Nodes),
		"streams_per_conn": int64(p.StreamsPerConn), "duration_ns": p.DurationNS, "nack_burst": int64(p.NackBurst)}); err != nil {
		return err
	}
	if p.Churn < 0 || math.IsInf(p.Churn, 0) || math.IsNaN(p.Churn) {
		return fmt.Errorf("plan.churn: %v is not a rate", p.Churn)
	}
	if p.Shards < 1 || p.Shards > MaxShards {
		return fmt.Errorf("plan.shards: %d, not 1 to %d", p.Shards, MaxShards)
	}
	if len(r.Shards) == 0 {
		return errors.New("shards: none named")
	}
	shards := map[int]bool{}
	for _, s := range r.Shards {
		if s < 0 || s >= p.Shards {
			return fmt.Errorf("shards: %d is out of the plan's %d", s, p.Shards)
		}
		if shards[s] {
			return fmt.Errorf("shards: %d named twice", s)
		}
		shards[s] = true
	}
	if err := nonNegative("report", map[string]int64{"duration_ns": r.DurationNS, "changes_dropped": r.ChangesDropped}); err != nil {
		return err
	}
	if len(r.Phases) > len(PhaseNames) {
		return fmt.Errorf("phases: %d, a run has at most %d", len(r.Phases), len(PhaseNames))
	}
	seen := map[string]bool{}
	for i := range r.Phases {
		ph := &r.Phases[i]
		at := fmt.Sprintf("phases[%d]", i)
		if !slices.Contains(PhaseNames, ph.Name) {
			return fmt.Errorf("%s.name: %q is not a phase (%s)", at, ph.Name, strings.Join(PhaseNames, ", "))
		}
		if seen[ph.Name] {
			return fmt.Errorf("%s.name: phase %q twice", at, ph.Name)
		}
		seen[ph.Name] = true
		if err := nonNegative(at, map[string]int64{"start_ns": ph.StartNS, "clients": ph.Clients, "changes": ph.Changes,
			"expected": ph.Expected, "responses": ph.Responses, "acks": ph.Acks, "nacks": ph.Nacks, "resends": ph.Resends,
			"missed": ph.Missed, "violations": ph.Violations, "errors": ph.Errors}); err != nil {
			return err
		}
		if ph.EndNS < ph.StartNS {
			return fmt.Errorf("%s: ends (%d ns) before it starts (%d ns)", at, ph.EndNS, ph.StartNS)
		}
		if ph.Amplification < 0 {
			return fmt.Errorf("%s.amplification: %v is negative", at, ph.Amplification)
		}
		if ph.Latency == nil {
			ph.Latency = NewHistogram()
		}
		if ph.Convergence == nil {
			ph.Convergence = NewHistogram()
		}
	}
	if len(r.Changes) > MaxChanges {
		return fmt.Errorf("changes: %d, a report lists at most %d", len(r.Changes), MaxChanges)
	}
	ids := make(map[int64]bool, len(r.Changes))
	for i, c := range r.Changes {
		at := fmt.Sprintf("changes[%d]", i)
		if c.ID < 1 {
			return fmt.Errorf("%s.id: %d, changes are numbered from 1", at, c.ID)
		}
		if ids[c.ID] {
			return fmt.Errorf("%s.id: change %d twice", at, c.ID)
		}
		ids[c.ID] = true
		if !slices.Contains(PhaseNames, c.Phase) {
			return fmt.Errorf("%s.phase: %q is not a phase", at, c.Phase)
		}
		if err := nonNegative(at, map[string]int64{"expected": c.Expected, "acked": c.Acked, "last_ack_ns": c.LastAckNS}); err != nil {
			return err
		}
	}
	if len(r.Timeline) > MaxTimeline {
		return fmt.Errorf("timeline: %d seconds, at most %d", len(r.Timeline), MaxTimeline)
	}
	secs := make(map[int64]bool, len(r.Timeline))
	for i, s := range r.Timeline {
		at := fmt.Sprintf("timeline[%d]", i)
		if secs[s.UnixS] {
			return fmt.Errorf("%s.unix_s: second %d twice", at, s.UnixS)
		}
		secs[s.UnixS] = true
		if err := nonNegative(at, map[string]int64{"responses": s.Responses, "acks": s.Acks, "nacks": s.Nacks,
			"latency_count": s.LatencyCount, "latency_sum_ns": s.LatencySumNS, "latency_max_ns": s.LatencyMaxNS}); err != nil {
			return err
		}
	}
	for i, u := range r.Unmeasured {
		if strings.TrimSpace(u) == "" {
			return fmt.Errorf("unmeasured[%d]: an empty reason", i)
		}
	}
	rules := map[string]bool{}
	for i, v := range r.Violations {
		at := fmt.Sprintf("violations[%d]", i)
		if v.Rule == "" || rules[v.Rule] {
			return fmt.Errorf("%s.rule: %q empty or twice", at, v.Rule)
		}
		rules[v.Rule] = true
		if err := nonNegative(at, map[string]int64{"count": v.Count}); err != nil {
			return err
		}
	}
	harness := map[int]bool{}
	for i, h := range r.Harness {
		at := fmt.Sprintf("harness[%d]", i)
		if !shards[h.Shard] || harness[h.Shard] {
			return fmt.Errorf("%s.shard: %d is not one of the report's shards, or is there twice", at, h.Shard)
		}
		harness[h.Shard] = true
		if err := nonNegative(at, map[string]int64{"streams": h.Streams, "cores": int64(h.Cores), "peak_rss_bytes": h.PeakRSSBytes,
			"baseline_rss_bytes": h.BaselineRSSBytes, "bytes_per_stream": h.BytesPerStream, "heap_bytes": h.HeapBytes, "lag_max_ns": h.LagMaxNS}); err != nil {
			return err
		}
		if h.CPUSeconds < 0 || h.CPUPercent < 0 {
			return fmt.Errorf("%s: negative CPU", at)
		}
	}
	return nil
}

// nonNegative refuses the first (by name) of fields that is negative.
func nonNegative(at string, fields map[string]int64) error {
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		if v := fields[name]; v < 0 {
			return fmt.Errorf("%s.%s: %d is negative", at, name, v)
		}
	}
	return nil
}
