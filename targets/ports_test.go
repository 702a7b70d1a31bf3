package targets

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Ports for client commands never come from the kernel's ephemeral range
// (where ":0" binds land) and are not handed out twice in a row.
func TestFreeAddrAvoidsEphemeralPortsAndRepeats(t *testing.T) {
	low, high := pickRange()
	seen := map[string]bool{}
	for range 200 {
		addr, err := freeAddr()
		require.NoError(t, err)
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, port, low)
		assert.Less(t, port, high)
		assert.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
	}
}
