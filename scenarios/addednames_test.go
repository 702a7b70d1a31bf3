package scenarios

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestAddedNamesControlBlocks: against a server that ignores the names an
// ACK adds, the scenarios that rest on AddedNamesServed end blocked at the
// control, under the rule an added name answers to (RES-4 in SotW, DELTA-3
// in delta), not failed under the rule of their own unusual request.
func TestAddedNamesControlBlocks(t *testing.T) {
	rs := runServerSuiteWith(t, testTimeouts, refserver.FaultAckDropsSubscriptionChange, engine.Selection{Run: []string{
		"server/stream/node-only-on-first-request",
		"server/stream/type-implicit-on-per-type",
		"server/nonce/converges-after-stale",
		"server/resources/resubscribe-resends",
		"server/robustness/duplicate-names",
	}})
	ran, spared := 0, 0
	sharedBlocked := map[string]bool{} // variants in which a pair run with the rest was blocked
	for _, r := range rs {
		if r.Outcome == results.Blocked && !strings.HasPrefix(r.ID, "server/robustness/") {
			sharedBlocked[r.Variant] = true
		}
	}
	for _, r := range rs {
		if r.Outcome == results.Skip {
			continue
		}
		ran++
		want := "RES-4"
		if r.Variant == "delta-ads" || r.Variant == "delta-pertype" {
			want = "DELTA-3"
		}
		msg := r.FullName() + ": " + r.Message + "\n" + transcript.Format(r.Transcript)
		assert.Equal(t, results.Blocked, r.Outcome, msg)
		assert.Equal(t, want, r.BlockedBy, msg)
		if strings.HasPrefix(r.ID, "server/robustness/") && sharedBlocked[r.Variant] {
			// Run alone, after the rest: the control an earlier pair of
			// its variant failed is not waited out again.
			assert.Contains(t, r.Message, "failed earlier in this run, in server/", msg)
			spared++
			continue
		}
		assert.Contains(t, r.Message, "added-control-b", msg)
	}
	// Every variant of every scenario the reference serves: none skipped.
	assert.NotEmpty(t, rs)
	assert.Equal(t, len(rs), ran)
	assert.NotZero(t, spared, "no pair run alone was spared the control")
}
