package scenarios

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// calibrationCatches are the self-proof entries of the calibrations of
// the status view (client_calibration.go): each fails, under OBS-1,
// against a view that does not show its state; init adds them to
// mustCatchClient.
var calibrationCatches = map[string][]clientCatch{
	"client/status/shows-does-not-exist": {{fault: refclient.FaultStatusOmitsMissing, rule: "OBS-1", want: "no longer lists"}},
	"client/status/shows-nacked":         {{fault: refclient.FaultNoErrorState, rule: "OBS-1", want: "where it should show it NACKED"}},
	"client/status/shows-received-error": {{fault: refclient.FaultErrorsNotShown, rule: "OBS-1", want: "where it should show it RECEIVED_ERROR"}},
}

func init() {
	for id, cs := range calibrationCatches {
		mustCatchClient[id] = cs
	}
}

// The calibrations fail against their faults: the part of
// TestClientScenariosFailAgainstTheirFaults that can be run on its own.
func TestStatusCalibrationsFailAgainstTheirFaults(t *testing.T) {
	proveCatches(t, calibrationCatches, func(id string, c clientCatch) ([]results.Result, error) {
		return runClientWithFault(profileOf(id), c.fault, engine.Selection{Run: []string{id}, Variants: c.variants})
	})
}

// calibrationOf is the catalogue's calibration of state.
func calibrationOf(t *testing.T, state observer.State) *engine.Scenario {
	t.Helper()
	for _, s := range ClientCalibrations() {
		if slices.Contains(s.Needs, targets.NeedStatus(state)) {
			return s
		}
	}
	t.Fatalf("no calibration of %s in the catalogue", state)
	return nil
}

// runCalibrated runs the selection of the client catalogue against the
// client opts describes, with the calibrations the selected pairs rest
// on, as the CLI does; it returns the results and the client target.
func runCalibrated(t *testing.T, opts targets.ClientOptions, sel engine.Selection) ([]results.Result, *targets.Clients) {
	t.Helper()
	clients, err := targets.NewClients(opts)
	require.NoError(t, err)
	pairs, err := engine.Expand(Client(), sel)
	require.NoError(t, err)
	pairs = engine.WithCalibrations(pairs, ClientCalibrations(), sel, clients)
	rs, interrupted := engine.Run(context.Background(), pairs, engine.Config{Env: clients, Timeouts: clientTimeouts})
	require.False(t, interrupted)
	return rs, clients
}

// byID is the catalogue's scenario of each ID.
func byID() map[string]*engine.Scenario {
	out := map[string]*engine.Scenario{}
	for _, s := range Client() {
		out[s.ID] = s
	}
	return out
}

// Against a client whose status view never shows DOES_NOT_EXIST, the
// calibration fails OBS-1, once per variant, and every pair resting on
// that state is blocked by OBS-1, saying how to declare the view; nothing
// else fails. Declared with --status-lacks, the calibration and the pairs
// resting on the state are skipped, and nothing fails.
func TestAStatusViewWithoutDoesNotExist(t *testing.T) {
	dne := calibrationOf(t, observer.DoesNotExist)
	scenario := byID()
	opts := referenceIn(targets.ProfileGRPC, refclient.FaultStatusOmitsMissing)

	t.Run("calibrated", func(t *testing.T) {
		rs, clients := runCalibrated(t, opts, engine.Selection{})
		failedOBS1 := map[string]int{}
		blocked := 0
		for _, r := range rs {
			s := scenario[r.ID]
			if slices.Contains(r.RulesBroken, "OBS-1") && r.Outcome == results.Fail {
				failedOBS1[r.Variant]++
			}
			switch {
			case r.Outcome == results.Skip:
				assert.Regexp(t, profileSkips, r.Message, r.FullName())
			case s.ID == dne.ID:
				assert.Equal(t, results.Fail, r.Outcome, "%s: %s", r.FullName(), r.Message)
				assert.Equal(t, []string{"OBS-1"}, r.RulesBroken, r.FullName())
			case clients.RestsOn(s, dne):
				blocked++
				assert.Equal(t, results.Blocked, r.Outcome, "%s: %s", r.FullName(), r.Message)
				assert.Equal(t, "OBS-1", r.BlockedBy, r.FullName())
				assert.Contains(t, r.Message, "DOES_NOT_EXIST", r.FullName())
				assert.Contains(t, r.Message, "--status-lacks DOES_NOT_EXIST", r.FullName())
			default:
				assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			}
		}
		assert.NotZero(t, blocked, "some pairs rest on DOES_NOT_EXIST")
		want := map[string]int{}
		for _, v := range dne.Variants {
			want[v.String()] = 1
		}
		assert.Equal(t, want, failedOBS1, "OBS-1 fails once per variant: the calibration")
	})

	t.Run("declared", func(t *testing.T) {
		declared := opts
		declared.StatusLacks = []observer.State{observer.DoesNotExist}
		rs, clients := runCalibrated(t, declared, engine.Selection{})
		for _, r := range rs {
			s := scenario[r.ID]
			switch {
			case s.ID == dne.ID || clients.RestsOn(s, dne):
				assert.Equal(t, results.Skip, r.Outcome, "%s: %s", r.FullName(), r.Message)
				assert.Contains(t, r.Message, "does not report DOES_NOT_EXIST", r.FullName())
			case r.Outcome == results.Skip:
				assert.Regexp(t, profileSkips, r.Message, r.FullName())
			default:
				assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			}
		}
	})
}

// A pair run by itself is judged as in the whole suite: its calibration
// comes along and runs first.
func TestASelectedPairBringsItsCalibration(t *testing.T) {
	dne := calibrationOf(t, observer.DoesNotExist)
	sel := engine.Selection{Run: []string{"client/ttl/expires[sotw-ads]"}}
	rs, _ := runCalibrated(t, referenceIn(targets.ProfileGRPC, refclient.FaultStatusOmitsMissing), sel)
	require.Len(t, rs, 2)
	assert.Equal(t, dne.ID+"[sotw-ads]", rs[0].FullName())
	assert.Equal(t, results.Fail, rs[0].Outcome, rs[0].Message)
	assert.Equal(t, "client/ttl/expires[sotw-ads]", rs[1].FullName())
	assert.Equal(t, results.Blocked, rs[1].Outcome, rs[1].Message)
	assert.Equal(t, "OBS-1", rs[1].BlockedBy)
}

// A calibration that cannot bring the client to its state (the client
// keeps a listener it was told was deleted) blames the view for nothing:
// it and the pairs resting on it are blocked by the rule of the path.
func TestACalibrationThatCannotReachItsState(t *testing.T) {
	for _, c := range []struct {
		fault    refclient.Fault
		variants []wire.Variant
		rule     string
	}{
		{refclient.FaultIgnoreLdsCdsOmission, sotwOnly, "DEL-4"},
		{refclient.FaultIgnoreRemoved, deltaOnly, "DEL-2"},
	} {
		t.Run(string(c.fault), func(t *testing.T) {
			sel := engine.Selection{Run: []string{"client/dne/timer"}, Variants: c.variants}
			rs, _ := runCalibrated(t, referenceIn(targets.ProfileGRPC, c.fault), sel)
			require.Len(t, rs, 2*len(c.variants))
			for _, r := range rs {
				assert.Equal(t, results.Blocked, r.Outcome, "%s: %s", r.FullName(), r.Message)
				assert.Equal(t, c.rule, r.BlockedBy, r.FullName())
				assert.NotContains(t, r.RulesBroken, "OBS-1", r.FullName())
				assert.NotContains(t, r.Message, "--status-lacks", r.FullName())
			}
		})
	}
}
