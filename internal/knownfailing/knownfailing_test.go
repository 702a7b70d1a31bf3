package knownfailing

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Peers names every shipped list, each of which Named reads.
func TestPeers(t *testing.T) {
	peers := Peers()
	assert.Contains(t, peers, "go-control-plane-snapshot")
	assert.Contains(t, peers, "envoy-gateway")
	assert.IsIncreasing(t, peers)
	for _, p := range peers {
		_, err := Named(p + ".txt")
		require.NoError(t, err, p)
	}
}
