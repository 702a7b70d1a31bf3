package loadreport

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/schema"
)

// jsonOf is r as WriteJSON writes it, which must validate against the
// published schema: every report these tests write is checked.
func jsonOf(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, WriteJSON(&b, r))
	require.NoError(t, schema.ValidateLoadReport(b.Bytes()))
	return b.String()
}

// Histograms merge exactly: the same values recorded in two histograms
// and merged summarise (and encode) as when recorded in one.
func TestHistogramMergeIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	all, a, b := NewHistogram(), NewHistogram(), &Histogram{} // the zero value works too
	for i := range 50_000 {
		d := time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond))
		if i%5000 == 0 {
			d = HistogramMax + time.Second + time.Duration(i) // past the range: counted in Over
		}
		all.Record(d)
		if rng.IntN(3) == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	merged := NewHistogram()
	merged.Merge(a)
	merged.Merge(b)
	merged.Merge(nil)
	want, err := all.Summary()
	require.NoError(t, err)
	got, err := merged.Summary()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, int64(10), got.Over)
	assert.Equal(t, int64(50_000), merged.Count())
	assert.Equal(t, all.Quantile(0.9999), merged.Quantile(0.9999))
	assert.Equal(t, HistogramMax, merged.Max().Truncate(time.Second))

	// Not by averaging: a's and b's p99 do not give the merged one.
	sa, _ := a.Summary()
	sb, _ := b.Summary()
	assert.NotEqual(t, (sa.P99NS+sb.P99NS)/2, got.P99NS)
}

// The reports of the shards of a run merge into the report of the same
// values built in one process: counts, histograms (to the byte of their
// encoding), changes, convergence, timeline, violations, harness, notes.
func TestMergeEqualsWhole(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards int
		parts  [][]int
	}{
		{"two shards", 2, [][]int{{0}, {1}}},
		{"three shards, named out of order", 3, [][]int{{2}, {0}, {1}}},
		{"a merge of merges", 3, [][]int{{1}, {0, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(60, tc.shards)
			var parts []*Report
			var all []int
			for _, p := range tc.parts {
				parts = append(parts, s.build(p...))
				all = append(all, p...)
			}
			whole := s.build(all...)
			merged, err := Merge(parts...)
			require.NoError(t, err)
			assert.Equal(t, jsonOf(t, whole), jsonOf(t, merged))

			// The figures the test is about, said once more outright (so
			// that a fixture that built nothing cannot pass).
			churn := merged.Phases[2]
			require.Equal(t, PhaseChurn, churn.Name)
			assert.Equal(t, int64(40), churn.Changes, "the fixture's changes, not their sum over shards")
			assert.Equal(t, int64(60*40), churn.Expected)
			assert.Equal(t, churn.Expected, churn.Acks+churn.Missed)
			assert.Positive(t, churn.Missed)
			assert.Equal(t, churn.Acks, churn.Latency.Count())
			assert.Equal(t, int64(60), merged.Changes[0].Expected)
			var acks int64
			for _, sec := range merged.Timeline {
				acks += sec.Acks
			}
			assert.Equal(t, churn.Acks, acks)
			require.Len(t, merged.Violations, 2)
			assert.Equal(t, int64(9), merged.Violations[0].Count, "NONCE-7: clients 0, 7, … 56")
			assert.Equal(t, "client-0", merged.Violations[0].Client)
			assert.Len(t, merged.Harness, tc.shards)
			assert.Nil(t, merged.SLO)
			// The parts are unchanged.
			assert.Equal(t, jsonOf(t, s.build(tc.parts[0]...)), jsonOf(t, parts[0]))
		})
	}
}

// A change's Expected and Acked add up over the shards, its LastAckNS is
// the latest, and convergence is recomputed from the merged changes: a
// change converged in one shard but not in the other has not converged.
func TestMergeChangesAndConvergence(t *testing.T) {
	s := newSim(2, 2)
	for j := range s.changes {
		s.ack[0][j] = time.Duration(j+1) * time.Millisecond
		s.ack[1][j] = time.Duration(j+1) * 2 * time.Millisecond
	}
	s.ack[1][5] = -1
	a, b := s.build(0), s.build(1)
	assert.Equal(t, int64(40), a.Phases[2].Convergence.Count(), "shard 0 saw every change converge")
	m, err := Merge(a, b)
	require.NoError(t, err)
	c := m.Changes[0]
	assert.Equal(t, Change{ID: 1, Phase: PhaseChurn, Resource: "cds/c0", OriginUnixNS: s.changes[0].origin.UnixNano(), Expected: 2, Acked: 2, LastAckNS: int64(2 * time.Millisecond)}, c)
	assert.Equal(t, int64(1), m.Changes[5].Acked)
	conv := m.Phases[2].Convergence
	assert.Equal(t, int64(39), conv.Count(), "change 6 did not reach shard 1's client")
	assert.InEpsilon(t, 80*time.Millisecond, conv.Max(), 1e-3, "to the histogram's 3 digits")
	assert.Equal(t, int64(1), m.Phases[2].Missed)
}

// A merge that lacks shards of the plan says so, and covers what it has.
func TestMergeMissingShard(t *testing.T) {
	s := newSim(30, 3)
	m, err := Merge(s.build(0), s.build(2))
	require.NoError(t, err)
	assert.Equal(t, []int{0, 2}, m.Shards)
	assert.Contains(t, m.Notes, "1 of the plan's 3 shards are not in this merge: its counts cover shards [0 2] only")
	assert.Equal(t, int64(20), m.Phases[0].Clients)
	whole := s.build(0, 2)
	whole.Notes = m.Notes
	assert.Equal(t, jsonOf(t, whole), jsonOf(t, m))

	full, err := Merge(s.build(0), s.build(1), s.build(2))
	require.NoError(t, err)
	for _, n := range full.Notes {
		assert.NotContains(t, n, "not in this merge")
	}
}

// Reports survive WriteJSON and ReadJSON unchanged, so files merge as the
// reports in memory do.
func TestMergeOfReadBackReports(t *testing.T) {
	s := newSim(40, 2)
	var read []*Report
	for _, sh := range []int{0, 1} {
		r, err := ReadJSON(strings.NewReader(jsonOf(t, s.build(sh))))
		require.NoError(t, err)
		read = append(read, r)
	}
	m, err := Merge(read...)
	require.NoError(t, err)
	assert.Equal(t, jsonOf(t, s.build(0, 1)), jsonOf(t, m))
}

func TestMergeRefuses(t *testing.T) {
	s := newSim(20, 2)
	other := func(f func(r *Report)) *Report {
		r := s.build(1)
		f(r)
		return r
	}
	for _, tc := range []struct {
		name    string
		reports []*Report
		want    string
	}{
		{"nothing", nil, "nothing to merge"},
		{"missing report", []*Report{s.build(0), nil}, "report 2 is missing"},
		{"another run", []*Report{s.build(0), other(func(r *Report) { r.RunID = "run-16" })}, `report 2 is of run "run-16", report 1 of run "run-15"`},
		{"another plan", []*Report{s.build(0), other(func(r *Report) { r.Plan.Clients++ })}, "report 2 ran another plan"},
		{"another resource list", []*Report{s.build(0), other(func(r *Report) { r.Plan.Resources = r.Plan.Resources[:1] })}, "report 2 ran another plan"},
		{"another target", []*Report{s.build(0), other(func(r *Report) { r.Target = "elsewhere:1" })}, `report 2 ran against "elsewhere:1"`},
		{"another address", []*Report{
			func() *Report { r := s.build(0); r.Address = "10.0.0.1:18000"; return r }(),
			other(func(r *Report) { r.Address = "10.0.0.2:18000" })}, `report 2 ran against "10.0.0.2:18000", report 1 against "10.0.0.1:18000"`},
		{"another format", []*Report{s.build(0), other(func(r *Report) { r.Format = "xdsconform.load/v2" })}, `report 2: format "xdsconform.load/v2"`},
		{"the same shard twice", []*Report{s.build(0), s.build(0)}, "reports 1 and 2 both cover shard 0"},
		{"overlapping shards", []*Report{s.build(0, 1), s.build(1)}, "reports 1 and 2 both cover shard 1"},
		{"a shard named twice", []*Report{other(func(r *Report) { r.Shards = []int{1, 1} })}, "report 1 names shard 1 twice"},
		{"shard out of range", []*Report{s.build(0), other(func(r *Report) { r.Shards = []int{2} })}, "report 2 covers shard 2, out of the plan's 2 (0 to 1)"},
		{"negative shard", []*Report{other(func(r *Report) { r.Shards = []int{-1} })}, "covers shard -1"},
		{"no shard", []*Report{s.build(0), other(func(r *Report) { r.Shards = nil })}, "report 2 names no shard"},
		{"changes that differ", []*Report{s.build(0), other(func(r *Report) { r.Changes[3].Resource = "cds/other" })}, "change 4 is not the same change in every shard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Merge(tc.reports...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// Past MaxChanges, the merged list is cut and the count says how many
// were left out; the note says convergence covers the listed ones.
func TestMergeBoundsChanges(t *testing.T) {
	a, b := newSim(2, 2).build(0), newSim(2, 2).build(1)
	a.Changes, b.Changes = nil, nil
	for i := range MaxChanges {
		a.Changes = append(a.Changes, Change{ID: int64(2*i + 1), Phase: PhaseChurn, Resource: "cds/a", Expected: 1, Acked: 1, LastAckNS: 1000})
		b.Changes = append(b.Changes, Change{ID: int64(2*i + 2), Phase: PhaseChurn, Resource: "cds/b", Expected: 1, Acked: 1, LastAckNS: 1000})
	}
	a.ChangesDropped, b.ChangesDropped = 5, 3
	m, err := Merge(a, b)
	require.NoError(t, err)
	assert.Len(t, m.Changes, MaxChanges)
	assert.Equal(t, int64(MaxChanges), m.Changes[MaxChanges-1].ID)
	assert.Equal(t, int64(5+MaxChanges), m.ChangesDropped, "the most a shard dropped, and what the merged list could not hold")
	assert.Contains(t, strings.Join(m.Notes, "\n"), "the merged convergence covers the listed changes only")
}

// Harness versions that differ are noted, and notes are not repeated.
func TestMergeNotes(t *testing.T) {
	s := newSim(10, 2)
	b := s.build(1)
	b.HarnessVersion = "v1.0.0"
	m, err := Merge(s.build(0), b)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"the fixture kept up with the planned churn",
		"shard 1 was saturated: its latencies say more about the harness than about the server",
		"the shards ran different harness versions (v0.9.0-test, v1.0.0): their figures may not compare",
	}, m.Notes)
}

// A shard that measured nothing fails the merged run too: its reasons are
// kept, each named with its shard, and read back from JSON; a single
// report keeps them as they are.
func TestMergeKeepsUnmeasured(t *testing.T) {
	s := newSim(10, 2)
	b := s.build(1)
	b.Unmeasured = []string{"no stream opened: none of the 5 clients had one"}
	m, err := Merge(s.build(0), b)
	require.NoError(t, err)
	assert.Equal(t, []string{"shard 1: no stream opened: none of the 5 clients had one"}, m.Unmeasured)
	back, err := ReadJSON(strings.NewReader(jsonOf(t, m)))
	require.NoError(t, err)
	assert.Equal(t, m.Unmeasured, back.Unmeasured)

	one, err := Merge(b)
	require.NoError(t, err)
	assert.Equal(t, b.Unmeasured, one.Unmeasured)
}

// Only the driving shard needs the fixture, and only it can describe the
// server: shards given the same --target merge whatever their Target says,
// and the merge keeps the description.
func TestMergeByAddress(t *testing.T) {
	s := newSim(20, 2)
	driving, other := s.build(0), s.build(1)
	driving.Target, driving.Address = "127.0.0.1:28000 (go-control-plane SnapshotCache (fixture-server))", "127.0.0.1:28000"
	other.Target, other.Address = "127.0.0.1:28000", "127.0.0.1:28000"
	for _, order := range [][]*Report{{driving, other}, {other, driving}} {
		m, err := Merge(order...)
		require.NoError(t, err)
		assert.Equal(t, driving.Target, m.Target)
		assert.Equal(t, "127.0.0.1:28000", m.Address)
	}
}
