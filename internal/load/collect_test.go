package load

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/wire"
)

func TestAnAnswerCountsInThePhaseOfItsResponse(t *testing.T) {
	p, err := newPlan(Options{Clients: 1, Variant: wire.SotWADS, StreamsPerConn: 1, Shards: 1, RunID: "r"})
	require.NoError(t, err)
	c := newCollector(p)
	c.enter(phaseConnect)
	ps := c.response(time.Unix(1, 0))
	// The phase ends while the client answers.
	c.leave(phaseConnect)
	c.enter(phaseSync)
	c.sent(ps, false, time.Unix(1, 0))
	connect, sync := c.phases[phaseIndex(phaseConnect)], c.phases[phaseIndex(phaseSync)]
	assert.EqualValues(t, 1, connect.responses.Load())
	assert.EqualValues(t, 1, connect.acks.Load())
	assert.Zero(t, sync.acks.Load())
}
