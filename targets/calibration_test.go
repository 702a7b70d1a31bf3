package targets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// statusScenario is a client scenario citing rules and needing the view
// to show states; first marks a calibration.
func statusScenario(id string, first bool, rules []string, states ...observer.State) *engine.Scenario {
	s := &engine.Scenario{ID: id, Requirements: rules, Level: results.Must, First: first,
		Variants: []wire.Variant{wire.SotWADS, wire.DeltaADS}, Needs: []engine.Need{targets.NeedObserver}}
	for _, st := range states {
		s.Needs = append(s.Needs, targets.NeedStatus(st))
	}
	return s
}

func reference(t *testing.T) *targets.Clients {
	c, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference})
	require.NoError(t, err)
	return c
}

func TestWhatRestsOnACalibration(t *testing.T) {
	c := reference(t)
	dne := statusScenario("client/status/dne", true, []string{"OBS-1"}, observer.DoesNotExist)
	errs := statusScenario("client/status/err", true, []string{"OBS-1", "ERR-12"}, observer.ReceivedError)
	for _, tc := range []struct {
		s    *engine.Scenario
		cal  *engine.Scenario
		want bool
	}{
		{statusScenario("client/ttl/a", false, []string{"TTL-2"}, observer.DoesNotExist), dne, true},
		{statusScenario("client/ttl/b", false, []string{"TTL-2"}, observer.Nacked), dne, false},
		{statusScenario("client/ttl/c", false, []string{"TTL-2"}), dne, false},
		// The rules about the view itself are judged by their scenarios.
		{statusScenario("client/nack/d", false, []string{"OBS-1"}, observer.DoesNotExist), dne, false},
		{statusScenario("client/errors/e", false, []string{"ERR-5", "ERR-12"}, observer.ReceivedError), errs, false},
		{statusScenario("client/errors/f", false, []string{"ERR-8"}, observer.ReceivedError, observer.DoesNotExist), errs, true},
		// Calibrations rest on nothing, and only First scenarios calibrate.
		{dne, dne, false},
		{statusScenario("client/ttl/g", false, []string{"TTL-2"}, observer.DoesNotExist), statusScenario("client/x/y", false, []string{"OBS-1"}, observer.DoesNotExist), false},
	} {
		assert.Equal(t, tc.want, c.RestsOn(tc.s, tc.cal), "%s on %s", tc.s.ID, tc.cal.ID)
	}
}

func TestWhatACalibrationMakesOfThePairsRestingOnIt(t *testing.T) {
	cal := statusScenario("client/status/dne", true, []string{"OBS-1"}, observer.DoesNotExist)
	resting := statusScenario("client/ttl/a", false, []string{"TTL-2"}, observer.DoesNotExist)
	result := func(o results.Outcome, msg string, rules ...string) results.Result {
		r := results.Result{ID: cal.ID, Variant: wire.SotWADS.String(), Outcome: o, Message: msg, RulesBroken: rules}
		if o == results.Blocked {
			r.BlockedBy = rules[0]
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		r        results.Result
		want     *engine.Failure // nil: the pair runs; Message is a fragment
		contains []string
	}{
		{name: "a view that shows the state lets the pair run", r: result(results.Pass, "")},
		{name: "a skipped calibration decides nothing", r: result(results.Skip, "the client does not speak delta-ads")},
		{name: "a calibration in doubt decides nothing", r: result(results.Inconclusive, "the harness's own lag")},
		{name: "a view that does not show the state blocks by its rule, naming the declaration",
			r:        result(results.Fail, "OBS-1 (SHOULD): the view no longer lists it", "OBS-1"),
			want:     &engine.Failure{Rule: "OBS-1"},
			contains: []string{"showing DOES_NOT_EXIST", "client/status/dne[sotw-ads] found that it does not", "the view no longer lists it", "--status-lacks DOES_NOT_EXIST", "skipped"}},
		{name: "a client that never got to the state blocks by the rule of the path",
			r:        result(results.Fail, "DEL-4 (MUST): the client NACKs the deletion", "DEL-4"),
			want:     &engine.Failure{Rule: "DEL-4"},
			contains: []string{"could not bring the client to DOES_NOT_EXIST", "the client NACKs the deletion"}},
		{name: "a blocked calibration blocks by what blocked it",
			r:        result(results.Blocked, "blocked by RES-1 (MUST): a precondition failed: no listener asked for", "RES-1"),
			want:     &engine.Failure{Rule: "RES-1"},
			contains: []string{"could not bring the client to DOES_NOT_EXIST", "no listener asked for"}},
		{name: "a calibration that errored makes an error",
			r:        result(results.Error, "the client never connected"),
			want:     &engine.Failure{},
			contains: []string{"could not run", "the client never connected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := reference(t)
			c.Learn(engine.Pair{Scenario: cal, Variant: wire.SotWADS}, tc.r)
			got := c.Unmet(resting, wire.SotWADS)
			assert.Nil(t, c.Unmet(resting, wire.DeltaADS), "a calibration holds back only the pairs of its variant")
			if tc.want == nil {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want.Rule, got.Rule)
			for _, w := range tc.contains {
				assert.Contains(t, got.Message, w)
			}
			if tc.want.Rule != "OBS-1" {
				assert.NotContains(t, got.Message, "--status-lacks", "only a view found wanting is declared")
			}
		})
	}
}
