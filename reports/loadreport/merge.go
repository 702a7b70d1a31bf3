package loadreport

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Merge combines the reports of shards of one run into the report one
// process running the whole plan would have written. The reports must
// share the format, run id, target and plan, and cover disjoint shards
// of the plan, each at least one. Counts add up, but a phase's Changes
// (the fixture's, made once for the run) is the most any shard says;
// latency histograms merge bucket by bucket; a change's Expected and
// Acked add up and its LastAckNS is the latest over the shards, and each
// phase's convergence is recomputed from the merged changes; timelines add
// up second by second (wall clock). Shards missing from the merge are
// named in a note; each shard's Unmeasured reasons are kept, named with
// their shard, so that a shard that measured nothing fails the merged
// run too. The result does not depend on the order of the
// reports (they are taken in the order of their shards), and Merge does
// not change its inputs. The merged report has no SLO verdict: the
// shards' verdicts were of a part of the run.
//
// Shards compare their targets by Address, as given, since only the
// driving shard needs the fixture, whose description of the server the
// others' Target then lacks; the merged Target is the described one.
func Merge(reports ...*Report) (*Report, error) {
	if len(reports) == 0 {
		return nil, fmt.Errorf("nothing to merge")
	}
	first := reports[0]
	shards := max(first.Plan.Shards, 1)
	seen := map[int]int{}
	for i, r := range reports {
		if r == nil {
			return nil, fmt.Errorf("report %d is missing", i+1)
		}
		if r.Format != Format {
			return nil, fmt.Errorf("report %d: format %q, this harness merges %q", i+1, r.Format, Format)
		}
		if r.RunID != first.RunID {
			return nil, fmt.Errorf("report %d is of run %q, report 1 of run %q: only the shards of one run merge", i+1, r.RunID, first.RunID)
		}
		if a, b := r.targetKey(), first.targetKey(); a != b {
			return nil, fmt.Errorf("report %d ran against %q, report 1 against %q: the shards of one run share the target", i+1, a, b)
		}
		if !samePlan(r.Plan, first.Plan) {
			return nil, fmt.Errorf("report %d ran another plan than report 1: the shards of one run share it", i+1)
		}
		if len(r.Shards) == 0 {
			return nil, fmt.Errorf("report %d names no shard", i+1)
		}
		for _, s := range r.Shards {
			if s < 0 || s >= shards {
				return nil, fmt.Errorf("report %d covers shard %d, out of the plan's %d (0 to %d)", i+1, s, shards, shards-1)
			}
			if j, dup := seen[s]; dup {
				if j == i {
					return nil, fmt.Errorf("report %d names shard %d twice", i+1, s)
				}
				return nil, fmt.Errorf("reports %d and %d both cover shard %d", j+1, i+1, s)
			}
			seen[s] = i
		}
	}
	// Taken in the order of their shards, so that the first instance of
	// a violation, the notes' order and so on do not depend on the order
	// the files were named in.
	reports = slices.Clone(reports)
	slices.SortStableFunc(reports, func(a, b *Report) int { return cmp.Compare(slices.Min(a.Shards), slices.Min(b.Shards)) })
	first = reports[0]
	out := &Report{
		Format: first.Format, HarnessVersion: first.HarnessVersion, Target: describedTarget(reports), Address: first.Address,
		RunID: first.RunID, Plan: clonePlan(first.Plan), Started: first.Started,
	}
	var end time.Time
	var notes []string
	versions := []string{}
	for _, r := range reports {
		out.Shards = append(out.Shards, r.Shards...)
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if e := r.Started.Add(time.Duration(r.DurationNS)); e.After(end) {
			end = e
		}
		out.Interrupted = out.Interrupted || r.Interrupted
		out.Unmeasured = append(out.Unmeasured, shardReasons(r, len(reports) > 1)...)
		out.ChangesDropped = max(out.ChangesDropped, r.ChangesDropped)
		out.Harness = append(out.Harness, r.Harness...)
		notes = append(notes, r.Notes...)
		if !slices.Contains(versions, r.HarnessVersion) {
			versions = append(versions, r.HarnessVersion)
		}
	}
	slices.Sort(out.Shards)
	out.DurationNS = int64(end.Sub(out.Started))
	if missing := shards - len(out.Shards); missing > 0 {
		notes = append(notes, fmt.Sprintf("%d of the plan's %d shards are not in this merge: its counts cover shards %v only", missing, shards, out.Shards))
	}
	if len(versions) > 1 {
		notes = append(notes, fmt.Sprintf("the shards ran different harness versions (%s): their figures may not compare", strings.Join(versions, ", ")))
	}
	changes, err := mergeChanges(reports)
	if err != nil {
		return nil, err
	}
	if len(changes) > MaxChanges {
		out.ChangesDropped += int64(len(changes) - MaxChanges)
		changes = changes[:MaxChanges]
	}
	if out.ChangesDropped > 0 {
		notes = append(notes, fmt.Sprintf("%d changes are not listed (past the %d a report lists): the merged convergence covers the listed changes only", out.ChangesDropped, MaxChanges))
	}
	out.Changes = changes
	out.Phases = mergePhases(reports, out.Started, out.Changes)
	out.Timeline = mergeTimeline(reports)
	out.Violations = mergeViolations(reports)
	slices.SortStableFunc(out.Harness, func(a, b Harness) int { return cmp.Compare(a.Shard, b.Shard) })
	out.Notes = uniq(notes)
	return out, nil
}

// shardReasons are r's Unmeasured as a merge of several reports lists
// them: each named with its shard, since a shard that measured nothing
// leaves the merged run without its part (its clients' counts are
// zeros, not passes). A report already of several shards names them
// itself.
func shardReasons(r *Report, several bool) []string {
	if !several || len(r.Shards) != 1 {
		return slices.Clone(r.Unmeasured)
	}
	out := make([]string, len(r.Unmeasured))
	for i, u := range r.Unmeasured {
		out[i] = fmt.Sprintf("shard %d: %s", r.Shards[0], u)
	}
	return out
}

// samePlan reports whether two plans are the same, an absent list being
// the same as an empty one (a report read back from JSON has either).
func samePlan(a, b Plan) bool {
	la, lb := a.Resources, b.Resources
	ca, cb := a.ChurnTypes, b.ChurnTypes
	a.Resources, b.Resources, a.ChurnTypes, b.ChurnTypes = nil, nil, nil, nil
	return reflect.DeepEqual(a, b) && slices.Equal(la, lb) && slices.Equal(ca, cb)
}

// clonePlan copies p's lists, so that the merged report shares no memory
// with its inputs.
func clonePlan(p Plan) Plan {
	p.Resources = slices.Clone(p.Resources)
	p.ChurnTypes = slices.Clone(p.ChurnTypes)
	return p
}

// uniq drops repeats from ss, keeping the first of each in place: every
// shard of a saturated run may say so in the same words.
func uniq(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeChanges adds up the changes of the same ID. The shards must agree
// on what each change was: if they do not, they are not of one run.
func mergeChanges(reports []*Report) ([]Change, error) {
	byID := map[int64]*Change{}
	for _, r := range reports {
		for _, c := range r.Changes {
			m, ok := byID[c.ID]
			if !ok {
				cp := c
				byID[c.ID] = &cp
				continue
			}
			if m.Phase != c.Phase || m.Resource != c.Resource || m.Bad != c.Bad ||
				m.OriginUnixNS != 0 && c.OriginUnixNS != 0 && m.OriginUnixNS != c.OriginUnixNS {
				return nil, fmt.Errorf("change %d is not the same change in every shard (%s %q at %d, and %s %q at %d): the reports are not of one run",
					c.ID, m.Phase, m.Resource, m.OriginUnixNS, c.Phase, c.Resource, c.OriginUnixNS)
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
	return out, nil
}

// mergePhases adds up the phases of the same name, in the order a run
// goes through them (PhaseNames; others after, as they first appear): a
// shard cut short may lack a phase the others ran.
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
			m.Changes = max(m.Changes, p.Changes)
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
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(phaseRank(a), phaseRank(b)) })
	out := make([]Phase, 0, len(order))
	for _, name := range order {
		p := byName[name]
		p.Convergence = Convergence(changes, name)
		p.Amplification = Amplification(p.Responses, p.Expected)
		out = append(out, *p)
	}
	return out
}

// phaseRank is a phase's place in PhaseNames, past them when it is not
// one.
func phaseRank(name string) int {
	if i := slices.Index(PhaseNames, name); i >= 0 {
		return i
	}
	return len(PhaseNames)
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
			m.LatencyCount += s.LatencyCount
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

// targetKey is what the shards of one run must share: the address given,
// or for reports without one the target as written.
func (r *Report) targetKey() string {
	if r.Address != "" {
		return r.Address
	}
	return r.Target
}

// describedTarget is the longest Target of the reports, the one written
// by a shard that had the fixture and its description of the server (the
// others write the address alone); reports are in shard order, so ties go
// to the lowest shard.
func describedTarget(reports []*Report) string {
	best := reports[0].Target
	for _, r := range reports[1:] {
		if len(r.Target) > len(best) {
			best = r.Target
		}
	}
	return best
}
