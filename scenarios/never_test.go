package scenarios

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// scriptedView is a status view whose reads fail or succeed as fails
// says, read by read (the last answer repeats), showing shown when they
// succeed. Each read's result is announced on reads.
type scriptedView struct {
	fails []bool
	shown []observer.Resource
	reads chan error

	mu sync.Mutex
	n  int
}

func (v *scriptedView) Observe(context.Context) ([]observer.Resource, error) {
	v.mu.Lock()
	fail := v.fails[min(v.n, len(v.fails)-1)]
	v.n++
	v.mu.Unlock()
	var err error
	if fail {
		err = errors.New("connection refused")
	}
	select {
	case v.reads <- err:
	default:
	}
	if err != nil {
		return nil, err
	}
	return v.shown, nil
}

func (v *scriptedView) Close() error { return nil }

// viewOnly is a launched client that is only a status view.
type viewOnly struct{ obs observer.Observer }

func (r viewOnly) Observer() observer.Observer { return r.obs }
func (viewOnly) Exited() <-chan struct{}       { return nil }
func (viewOnly) Err() error                    { return nil }
func (viewOnly) Stop() error                   { return nil }

type anyEnv struct{}

func (anyEnv) Lacks(*engine.Scenario, wire.Variant) string { return "" }

// runNever runs one pair whose body watches, with Never, that the view
// never shows cluster "c" NACKED, then runs body.
func runNever(t *testing.T, v *scriptedView, body func(c *C)) results.Result {
	t.Helper()
	s := &engine.Scenario{ID: "client/test/never", Title: "never", Requirements: []string{"NONCE-1"},
		Level: results.Must, Variants: []wire.Variant{wire.SotWADS}, Run: func(et *engine.T) {
			c := &C{T: et, Client: viewOnly{v}}
			c.Never(wire.Cluster, "c", "NACKED", func(r observer.Resource) bool { return r.State == observer.Nacked })
			body(c)
		}}
	ps, err := engine.Expand([]*engine.Scenario{s}, engine.Selection{})
	require.NoError(t, err)
	rs, _ := engine.Run(t.Context(), ps, engine.Config{Env: anyEnv{}, Timeouts: testTimeouts})
	require.Len(t, rs, 1)
	return rs[0]
}

// waitRead waits for a read with the given outcome.
func waitRead(c *C, v *scriptedView, failed bool) {
	for {
		select {
		case err := <-v.reads:
			if (err != nil) == failed {
				return
			}
		case <-c.Context().Done():
			return
		case <-time.After(10 * time.Second): // bounds a broken Never, not a synchronisation
			return
		}
	}
}

// TestNeverAbortsWhenNoReadSucceeds: a must-not-happen check whose every
// read of the status view failed saw nothing; the pair errors, saying
// so, instead of passing.
func TestNeverAbortsWhenNoReadSucceeds(t *testing.T) {
	v := &scriptedView{fails: []bool{true}, reads: make(chan error, 1)}
	r := runNever(t, v, func(c *C) { waitRead(c, v, true) })
	require.Equal(t, results.Error, r.Outcome, r.Message)
	assert.Contains(t, r.Message, "the client's status view could not be read while watching that it never shows CDS c NACKED")
	assert.Contains(t, r.Message, "connection refused")
}

// TestNeverNotesFailedReads: when some reads failed and the others saw
// nothing wrong, the pair passes on those, and the transcript counts the
// failed ones.
func TestNeverNotesFailedReads(t *testing.T) {
	v := &scriptedView{fails: []bool{true, false}, shown: []observer.Resource{{TypeURL: wire.Cluster.URL, Name: "c", State: observer.Acked}},
		reads: make(chan error, 1)}
	r := runNever(t, v, func(c *C) { waitRead(c, v, false) })
	require.Equal(t, results.Pass, r.Outcome, r.Message)
	assert.Contains(t, transcript.Format(r.Transcript), "1 of ")
	assert.Contains(t, transcript.Format(r.Transcript), "reads of the client's status view failed while watching")
}

// TestNeverLeavesAFailureAFailure: a pair that failed on its own is not
// turned into an error by a watch that could not read the view.
func TestNeverLeavesAFailureAFailure(t *testing.T) {
	v := &scriptedView{fails: []bool{true}, reads: make(chan error, 1)}
	r := runNever(t, v, func(c *C) {
		waitRead(c, v, true)
		c.Fatalf("the step failed")
	})
	require.Equal(t, results.Fail, r.Outcome, r.Message)
	assert.True(t, strings.Contains(r.Message, "the step failed"), r.Message)
}

// TestNeverCatchesWhatItReads: a read that shows the resource as it must
// never be fails the pair.
func TestNeverCatchesWhatItReads(t *testing.T) {
	v := &scriptedView{fails: []bool{false}, shown: []observer.Resource{{TypeURL: wire.Cluster.URL, Name: "c", State: observer.Nacked}},
		reads: make(chan error, 1)}
	r := runNever(t, v, func(c *C) { waitRead(c, v, false) })
	require.Equal(t, results.Fail, r.Outcome, r.Message)
	assert.Contains(t, r.Message, "the client's status view shows CDS c NACKED")
}
