package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// The built-in go-control-plane targets fail exactly what their shipped
// known-failing lists say: every listed pair fails, every other pair
// passes. A change in go-control-plane or in a scenario shows up here.
func TestServerSuiteAgainstGoControlPlane(t *testing.T) {
	for _, target := range []string{targets.BuiltinGoControlPlane, targets.BuiltinGoControlPlaneLin} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			known, err := knownfailing.For(target)
			require.NoError(t, err)
			require.NotNil(t, known, "shipped known-failing list for %s", target)
			// A long quiet window: go-control-plane's violations of
			// must-not-happen rules must be seen even on a loaded machine,
			// or its known-failing entries would turn up as stale.
			to := testTimeouts
			to.Quiet = time.Second
			rs := runTarget(t, targets.ServerOptions{Target: target}, engine.Config{Timeouts: to, KnownFailing: known}, engine.Selection{})
			pairs, err := engine.Expand(Server(), engine.Selection{})
			require.NoError(t, err)
			assert.Empty(t, known.Unmatched(pairs), "known-failing entries that match no scenario")
			for _, r := range rs {
				if reason := known.ReasonFor(r.ID, r.Variant); reason != "" {
					// A failure that depends on timing or on Go map order
					// in the peer may pass in a run; nothing else may.
					if strings.Contains(reason, engine.TimingDependent) && r.Outcome == results.Pass {
						continue
					}
					// A pair blocked by the listed rule is its failure too.
					assert.True(t, r.Failed(), "%s is listed as known-failing (%s) but %s", r.FullName(), reason, r.Outcome)
					// The engine excuses only a failure of a rule the entry names.
					assert.NotEmpty(t, r.KnownFailing, "%s: %s", r.FullName(), r.Message)
					continue
				}
				// A pair skipped for a claim the fixture does not make
				// (per variant) is no verdict either way, and a MAY
				// behaviour not implemented is no failure.
				if r.Outcome == results.Skip || r.Outcome == results.Unsupported {
					continue
				}
				assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			}
		})
	}
}
