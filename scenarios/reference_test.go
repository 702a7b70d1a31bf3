package scenarios

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

func TestServerCatalogueIsValid(t *testing.T) {
	require.NoError(t, engine.Validate(Server()))
}

// Every server scenario passes against the conformant reference server in
// every variant it applies to.
func TestServerSuitePassesAgainstReference(t *testing.T) {
	for _, r := range runServerSuite(t, targets.BuiltinReference, nil, engine.Selection{}) {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
	}
}
