package scenarios

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// Servers such as Consul and Envoy Gateway serve names of their own. Every
// server scenario that does not declare NeedChosenNames must pass against a
// reference server that renames everything set through the fixture; the
// others must be skipped, with the reason.
func TestServerSuiteWithGeneratedNames(t *testing.T) {
	rs := runTarget(t, targets.ServerOptions{Target: targets.BuiltinReference, GenerateNames: true}, testTimeouts, engine.Selection{})
	ran := 0
	for _, r := range rs {
		if r.Outcome == results.Skip {
			assert.Contains(t, r.Message, "generates its own resource names", r.FullName())
			continue
		}
		ran++
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
	assert.Positive(t, ran)
}
