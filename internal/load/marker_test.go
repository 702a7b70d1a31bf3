package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

func TestMarkerRoundTripsThroughEveryType(t *testing.T) {
	p, err := newPlan(Options{Clients: 1, Variant: wire.SotWADS, StreamsPerConn: 1, Shards: 1, RunID: "mk",
		Profile: "LDS=l;RDS=r;CDS=c;EDS=e;RTDS=rt"})
	require.NoError(t, err)
	for i, res := range p.resources {
		want := marker{res: i, change: 7, origin: 1_700_000_000_000_000_000, set: 1_700_000_000_250_000_000, bad: i%2 == 1}
		a, err := p.build(i, want)
		require.NoError(t, err, res)
		got, ok := findMarker(a.GetValue(), "mk")
		require.True(t, ok, res)
		assert.Equal(t, want, got, res)

		_, ok = findMarker(a.GetValue(), "other")
		assert.False(t, ok, "%s: another run's marker", res)
	}
}

func TestMarkerRefusesMalformed(t *testing.T) {
	for _, s := range []string{
		"xdsconform-load/mk/0/1/2/g",                       // no SET: the marker of a harness before it
		"xdsconform-load/mk/0/1/2/3/x",                     // neither g nor b
		"xdsconform-load/mk/0/1/2/3/",                      // cut short
		"xdsconform-load/mk/0/1/2/-3/g",                    // not a number
		"xdsconform-load/mk/9999999999/1/2/3/g",            // resource index past any plan
		"xdsconform-load/mk/0/123456789012345678901/2/3/g", // 21 digits
	} {
		_, ok := findMarker([]byte(s), "mk")
		assert.False(t, ok, s)
	}
	m, ok := findMarker([]byte("junk"+marker{res: 1, change: 2, origin: 3, set: 4}.render("mk")+"junk"), "mk")
	require.True(t, ok)
	assert.Equal(t, marker{res: 1, change: 2, origin: 3, set: 4}, m)
}

// The push→ACK latency runs from when this copy of the change was set,
// the convergence from the change's origin: on a node-scoped target the
// fixture sets a change on every node in turn, and that fan-out is the
// harness's, not the server's.
func TestLatencyFromTheSetConvergenceFromTheOrigin(t *testing.T) {
	p, err := newPlan(Options{Clients: 1, Variant: wire.SotWADS, StreamsPerConn: 1, Churn: 1, Duration: time.Second, Shards: 1, RunID: "lat"})
	require.NoError(t, err)
	col := newCollector(p)
	now := time.Unix(1_700_000_000, 0)
	origin := now.Add(-10 * time.Second)
	col.changes[0].origin.Store(origin.UnixNano())

	col.answered(p, marker{change: 1, origin: origin.UnixNano(), set: now.Add(-time.Second).UnixNano()}, now)

	lat := col.phases[phaseIndex(phaseChurn)].latency
	assert.Equal(t, int64(1), lat.Count())
	assert.InDelta(t, float64(time.Second), float64(lat.Max()), float64(time.Millisecond), "push→ACK from the set")
	assert.Equal(t, int64(10*time.Second), col.changes[0].lastAck.Load(), "convergence from the origin")
	assert.Equal(t, int64(1), col.changes[0].acked.Load())
}
