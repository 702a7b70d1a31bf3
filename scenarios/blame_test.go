package scenarios

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// TestCrashChargedToTheLastSender runs, alone against a target that stops
// answering (its xDS listener closed; its in-process fixture still
// answers), a pair that got no further than the fixture Reset every
// server scenario starts with, and a pair that sent the target a request
// first. The fake client tells the engine which pair sent the target a
// message (fakeclient.Options.OnSend → engine.T.SentToTarget): the first
// pair is not blamed and errors with the death as its cause; the second
// fails its headline rule.
func TestCrashChargedToTheLastSender(t *testing.T) {
	cases := []struct {
		name string
		body func(s *S, kill func())
		want results.Outcome
	}{
		{"only the fixture Reset", func(s *S, kill func()) {
			kill()
			// The request never leaves: the target is gone.
			s.Subscribe(EDS, s.Name("a"))
		}, results.Error},
		{"a request sent first", func(s *S, kill func()) {
			s.Subscribe(EDS, s.Name("a"))
			kill()
			s.Subscribe(EDS, s.Name("b"))
		}, results.Fail},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, err := targets.ServeInProcess(context.Background(), "reference, to be stopped", refserver.New())
			require.NoError(t, err)
			t.Cleanup(srv.Close)
			sc := &engine.Scenario{ID: "server/robustness/crash-blame", Title: "crash blame", Requirements: []string{"ROB-2"},
				Level: results.Must, Variants: []wire.Variant{wire.SotWADS}, Alone: true,
				Run: ServerScript(func(s *S) { c.body(s, srv.Close) })}
			rs, interrupted := engine.Run(t.Context(), []engine.Pair{{Scenario: sc, Variant: wire.SotWADS}}, engine.Config{Env: srv, Timeouts: testTimeouts})
			require.False(t, interrupted)
			require.Len(t, rs, 1)
			r := rs[0]
			dump := r.Message + "\n" + transcript.Format(r.Transcript)
			require.Equal(t, c.want, r.Outcome, dump)
			if c.want == results.Fail {
				assert.Equal(t, []string{"ROB-2"}, r.RulesBroken, dump)
				assert.Contains(t, r.Message, "the target died while this scenario ran alone against it", dump)
				return
			}
			assert.Empty(t, r.RulesBroken, dump)
			assert.Contains(t, r.Message, "the target died during the run: ", dump)
			assert.Contains(t, r.Message, "sent the target no scenario message", dump)
		})
	}
}
