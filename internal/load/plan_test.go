package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

// The churn's changes are spread at the planned rate; the burst's bad
// ones are due at once and the ones setting them right at the end of the
// window, so that waiting out the window does not read as the fixture
// falling behind (it did: every burst noted a fixture "behind the burst
// schedule" by the window's length).
func TestChangesAreDueOnSchedule(t *testing.T) {
	p, err := newPlan(Options{Clients: 1, Variant: wire.SotWADS, StreamsPerConn: 1, Churn: 4, Duration: time.Second, NackBurst: 2, Shards: 1, RunID: "due"})
	require.NoError(t, err)

	churn := p.phaseChanges(phaseChurn)
	require.Len(t, churn, 4)
	for k, ch := range churn {
		offset, afterWindow := p.due(phaseChurn, k, ch)
		assert.Equal(t, time.Duration(k)*250*time.Millisecond, offset, "churn change %d", k)
		assert.False(t, afterWindow)
	}

	burst := p.phaseChanges(phaseBurst)
	require.Len(t, burst, 4, "2 set bad, then the 2 set right")
	for k, ch := range burst {
		offset, afterWindow := p.due(phaseBurst, k, ch)
		assert.Zero(t, offset, "burst change %d", k)
		assert.Equal(t, !ch.bad, afterWindow, "burst change %d (bad %v) after the window", k, ch.bad)
	}
}
