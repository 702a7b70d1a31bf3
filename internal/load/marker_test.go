package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

// Every type a run builds carries its marker where a client finds it in
// the resource's bytes.
func TestMarkerSurvivesEveryType(t *testing.T) {
	o := okOptions()
	o.Profile = "LDS=l;RDS=r;CDS=c;EDS=c;RTDS=rt"
	p, err := newPlan(o)
	require.NoError(t, err)
	for i, r := range p.resources {
		want := marker{res: i, change: 42, origin: 1700000000123456789, set: 1700000000250000000, bad: i%2 == 1}
		a, err := p.build(i, want)
		require.NoError(t, err, r.String())
		assert.Equal(t, r.t.URL, a.GetTypeUrl())
		got, ok := findMarker(a.GetValue(), p.RunID)
		require.True(t, ok, r.String())
		assert.Equal(t, want, got, r.String())
		m, err := wire.Unpack(a)
		require.NoError(t, err)
		assert.Equal(t, r.name, wire.NameOf(m))
		_, ok = findMarker(a.GetValue(), "other")
		assert.False(t, ok, "%s: another run's marker is not this run's", r)
	}
}

func TestFindMarkerRefusesMalformed(t *testing.T) {
	for _, b := range []string{
		"", "xdsconform-load/", "xdsconform-load/t", "xdsconform-load/t/", "xdsconform-load/t/1/2/3/4",
		"xdsconform-load/t/1/2/3/4/x", "xdsconform-load/t/a/2/3/4/g", "xdsconform-load/tt/1/2/3/4/g",
		"xdsconform-load/t/99999999999999999999/2/3/4/g", "xdsconform-load/t/1/2/3//g",
		"xdsconform-load/t/1/2/3/g", // no SET: a marker of a harness before it
	} {
		_, ok := findMarker([]byte(b), "t")
		assert.False(t, ok, "%q", b)
	}
	m, ok := findMarker([]byte("junk xdsconform-load/t/1/2/3/4/g junk"), "t")
	assert.True(t, ok)
	assert.Equal(t, marker{res: 1, change: 2, origin: 3, set: 4}, m)
}

func FuzzFindMarker(f *testing.F) {
	f.Add([]byte("xdsconform-load/t/1/2/3/4/g"))
	f.Add([]byte("xdsconform-load/t/1/2/3/4/b"))
	o := okOptions()
	p, _ := newPlan(o)
	a, _ := p.build(0, marker{change: 1, origin: 2, set: 3})
	f.Add(a.GetValue())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, ok := findMarker(b, "t")
		if ok && (m.res < 0 || m.change < 0 || m.origin < 0 || m.set < 0) {
			t.Fatalf("negative field from %q: %+v", b, m)
		}
	})
}

// The push→ACK latency runs from when this copy of the change was set,
// the convergence from the change's origin: on a node-scoped target the
// fixture sets a change on every node in turn, and that fan-out is the
// harness's, not the server's.
func TestLatencyFromTheSetConvergenceFromTheOrigin(t *testing.T) {
	o := okOptions()
	o.Churn, o.Duration = 1, time.Second
	p, err := newPlan(o)
	require.NoError(t, err)
	col := newCollector(p)
	now := time.Unix(1_700_000_000, 0)
	origin := now.Add(-10 * time.Second)
	col.changes[0].origin.Store(origin.UnixNano())

	col.answered(p, marker{change: 1, origin: origin.UnixNano(), set: now.Add(-time.Second).UnixNano()}, origin.Add(-time.Minute), now)

	lat := col.phase(phaseChurn).latency
	assert.Equal(t, int64(1), lat.Count())
	assert.InDelta(t, float64(time.Second), float64(lat.Max()), float64(time.Millisecond), "push→ACK from the set")
	assert.Equal(t, int64(10*time.Second), col.changes[0].lastAck.Load(), "convergence from the origin")
	assert.Equal(t, int64(1), col.changes[0].acked.Load())

	// A marker without SET (content mode: the fixture builds what it
	// serves, no marker reaches the client) measures from the origin.
	col.answered(p, marker{change: 1}, origin.Add(-time.Minute), now)
	assert.InDelta(t, float64(10*time.Second), float64(lat.Max()), float64(10*time.Millisecond))

	// A change made before the client first asked is its initial state,
	// not a push: it counts for convergence, not for latency.
	col.answered(p, marker{change: 1}, origin.Add(time.Second), now)
	assert.Equal(t, int64(2), lat.Count())
	assert.Equal(t, int64(3), col.changes[0].acked.Load())
}
