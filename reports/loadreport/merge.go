package loadreport

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"time"
)

// Merge combines the reports of shards of one run into the report one
// process running the whole plan would have written. The reports must
// share the format, run id, target and plan, and cover disjoint shards.
// Counts add up; latency histograms merge bucket by bucket; a change's
// Expected and Acked add up and its LastAckNS is the latest over the
// shards, and each phase's convergence is recomputed from the merged
// changes; timelines add up second by second (wall clock). Shards missing
// from the merge are named in a note. Merge does not change its inputs.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("nothing to merge")
	}
	first := reports[0]
	out := &Report{
		Format: first.Format, HarnessVersion: first.HarnessVersion, Target: first.Target,
		RunID: first.RunID, Plan: first.Plan, Started: first.Started,
	}
	seen := map[int]int{}
	var end time.Time
	for i, r := range reports {
		if r.Format != Format {
			return nil, fmt.Errorf("report %d: format %q, this harness merges %q", i+1, r.Format, Format)
		}
		if r.RunID != first.RunID {
			return nil, fmt.Errorf("report %d is of run %q, report 1 of run %q: only the shards of one run merge", i+1, r.RunID, first.RunID)
		}
		if r.Target != first.Target || !reflect.DeepEqual(r.Plan, first.Plan) {
			return nil, fmt.Errorf("report %d ran another plan or target than report 1: the shards of one run share both", i+1)
		}
		for _, s := range r.Shards {
			if j, dup := seen[s]; dup {
				return nil, fmt.Errorf("reports %d and %d both cover shard %d", j+1, i+1, s)
			}
			if s < 0 || s >= max(first.Plan.Shards, 1) {
				return nil, fmt.Errorf("report %d covers shard %d, out of the plan's %d", i+1, s, first.Plan.Shards)
			}
			seen[s] = i
			out.Shards = append(out.Shards, s)
		}
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if e := r.Started.Add(time.Duration(r.DurationNS)); e.After(end) {
			end = e
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		out.ChangesDropped += r.ChangesDropped
		out.Harness = append(out.Harness, r.Harness...)
		out.Notes = append(out.Notes, r.Notes...)
	}
	slices.Sort(out.Shards)
	out.DurationNS = int64(end.Sub(out.Started))
	if missing := max(first.Plan.Shards, 1) - len(out.Shards); missing > 0 {
		out.Notes = append(out.Notes, fmt.Sprintf("%d of the plan's %d shards are not in this merge: its counts cover shards %v only", missing, first.Plan.Shards, out.Shards))
	}
	out.Changes = mergeChanges(reports)
	out.Phases = mergePhases(reports, out.Started, out.Changes)
	out.Timeline = mergeTimeline(reports)
	out.Violations = mergeViolations(reports)
	slices.SortStableFunc(out.Harness, func(a, b Harness) int { return cmp.Compare(a.Shard, b.Shard) })
	out.Notes = slices.Compact(out.Notes)
	return out, nil
}

func mergeChanges(reports []*Report) []Change {
	byID := map[int64]*Change{}
	for _, r := range reports {
		for _, c := range r.Changes {
			m, ok := byID[c.ID]
			if !ok {
				cp := c
				byID[c.ID] = &cp
				continue
			}
			m.Expected += c.Expected
			m.Acked += c.Acked
			m.LastAckNS = max(m.LastAckNS, c.LastAckNS)
			if m.OriginUnixNS == 0 {
				m.OriginUnixNS = c.OriginUnixNS
			}
		}
	}
	out := make([]Change, 0, len(byID))
	for _, c := range byID {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Change) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// mergePhases adds up the phases of the same name, in the order they
// first appear.
func mergePhases(reports []*Report, started time.Time, changes []Change) []Phase {
	var order []string
	byName := map[string]*Phase{}
	for _, r := range reports {
		shift := int64(r.Started.Sub(started))
		for _, p := range r.Phases {
			m, ok := byName[p.Name]
			if !ok {
				order = append(order, p.Name)
				m = &Phase{Name: p.Name, StartNS: p.StartNS + shift, EndNS: p.EndNS + shift, Latency: NewHistogram()}
				byName[p.Name] = m
			}
			m.StartNS = min(m.StartNS, p.StartNS+shift)
			m.EndNS = max(m.EndNS, p.EndNS+shift)
			m.Clients += p.Clients
			m.Changes += p.Changes
			m.Expected += p.Expected
			m.Responses += p.Responses
			m.Acks += p.Acks
			m.Nacks += p.Nacks
			m.Resends += p.Resends
			m.Missed += p.Missed
			m.Violations += p.Violations
			m.Errors += p.Errors
			m.Latency.Merge(p.Latency)
		}
	}
	out := make([]Phase, 0, len(order))
	for _, name := range order {
		p := byName[name]
		p.Convergence = Convergence(changes, name)
		p.Amplification = Amplification(p.Responses, p.Expected)
		out = append(out, *p)
	}
	return out
}

// Convergence is the convergence histogram of a phase's changes: for
// each change every expected client ACKed, the time to the last ACK.
func Convergence(changes []Change, phase string) *Histogram {
	h := NewHistogram()
	for _, c := range changes {
		if c.Phase == phase && c.Expected > 0 && c.Acked >= c.Expected {
			h.Record(time.Duration(c.LastAckNS))
		}
	}
	return h
}

// Amplification is responses per expected push; 0 when none were
// expected.
func Amplification(responses, expected int64) float64 {
	if expected == 0 {
		return 0
	}
	return float64(responses) / float64(expected)
}

func mergeTimeline(reports []*Report) []Second {
	by := map[int64]*Second{}
	for _, r := range reports {
		for _, s := range r.Timeline {
			m, ok := by[s.UnixS]
			if !ok {
				m = &Second{UnixS: s.UnixS}
				by[s.UnixS] = m
			}
			m.Responses += s.Responses
			m.Acks += s.Acks
			m.Nacks += s.Nacks
			m.LatencySumNS += s.LatencySumNS
			m.LatencyMaxNS = max(m.LatencyMaxNS, s.LatencyMaxNS)
		}
	}
	out := make([]Second, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Second) int { return cmp.Compare(a.UnixS, b.UnixS) })
	return out
}

func mergeViolations(reports []*Report) []Violation {
	var order []string
	by := map[string]*Violation{}
	for _, r := range reports {
		for _, v := range r.Violations {
			m, ok := by[v.Rule]
			if !ok {
				cp := v
				by[v.Rule] = &cp
				order = append(order, v.Rule)
				continue
			}
			m.Count += v.Count
		}
	}
	slices.Sort(order)
	out := make([]Violation, 0, len(order))
	for _, rule := range order {
		out = append(out, *by[rule])
	}
	return out
}
