package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestFinishedTranscriptsDoNotStarveQueues runs, one at a time, a pair
// whose transcript spends the whole report budget and then a pair whose
// fake peers borrow queue room: the second still gets all of the queue
// budget, so what a pair can queue does not depend on which pairs
// finished before it.
func TestFinishedTranscriptsDoNotStarveQueues(t *testing.T) {
	report, queues := transcript.NewBudget(256<<10), transcript.NewBudget(1<<20)
	keeps := scenario("a-keeps", func(t *engine.T) {
		for range 1000 {
			t.Logf("%s", strings.Repeat("k", 1000))
		}
	})
	borrowed := false
	queue := scenario("b-queues", func(t *engine.T) {
		b := t.Transcript.QueueBudget()
		if borrowed = b.Take(b.Limit()); borrowed {
			b.Give(b.Limit())
		}
	})
	rs, _ := run(t, context.Background(), pairsOf(t, keeps, queue),
		engine.Config{Env: fakeEnv{}, Timeouts: quick, Parallel: 1, ReportBudget: report, QueueBudget: queues})
	require.Len(t, rs, 2)
	require.Equal(t, "a-keeps", rs[0].ID)
	require.Equal(t, results.Pass, rs[0].Outcome, rs[0].Message)
	assert.Greater(t, report.Used(), report.Limit()-2000, "the first pair spent the report's budget")
	assert.True(t, borrowed, "the second pair's queues can borrow the whole queue budget")
	assert.Zero(t, queues.Used())
}

// TestDefaultBudgetsApart: a run given no budgets has one of each, of
// their default sizes, shared by its pairs.
func TestDefaultBudgetsApart(t *testing.T) {
	var reports, queues []*transcript.Budget
	s := scenario("budgets", func(t *engine.T) {
		reports = append(reports, t.Transcript.ReportBudget())
		queues = append(queues, t.Transcript.QueueBudget())
	})
	s2 := scenario("budgets2", s.Run)
	rs, _ := run(t, context.Background(), pairsOf(t, s, s2), engine.Config{Env: fakeEnv{}, Timeouts: quick, Parallel: 1})
	require.Len(t, rs, 2)
	require.Len(t, reports, 2)
	assert.Equal(t, int64(transcript.DefaultBudget), reports[0].Limit())
	assert.Equal(t, int64(transcript.DefaultQueueBudget), queues[0].Limit())
	assert.NotSame(t, reports[0], queues[0])
	assert.Same(t, reports[0], reports[1], "the pairs of a run share its report budget")
	assert.Same(t, queues[0], queues[1], "and its queue budget")
}
