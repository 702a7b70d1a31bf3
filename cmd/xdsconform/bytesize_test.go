package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestByteSize(t *testing.T) {
	for in, want := range map[string]int{
		"67108864": 64 << 20, "64MiB": 64 << 20, "64M": 64 << 20, "512KiB": 512 << 10,
		"1GiB": 1 << 30, "100B": 100, " 8 MiB ": 8 << 20,
	} {
		var b byteSize
		require.NoError(t, b.Set(in), in)
		assert.Equal(t, want, int(b), in)
	}
	for _, bad := range []string{"", "0", "-1MiB", "1.5MiB", "64MB!", "2GiB", "9999999999999"} {
		var b byteSize
		assert.Error(t, b.Set(bad), bad)
	}
	for v, want := range map[byteSize]string{64 << 20: "64MiB", 1 << 30: "1GiB", 1536: "1536", 100: "100"} {
		assert.Equal(t, want, v.String())
	}
}

// TestMaxRecvSizeFlag checks the flag on both roles: its default is well
// above grpc-go's 4 MiB, and a bad size is a usage error.
func TestMaxRecvSizeFlag(t *testing.T) {
	for _, role := range []string{"server", "client"} {
		var cmd = newServerCmd(nil)
		if role == "client" {
			cmd = newClientCmd(nil)
		}
		f := cmd.Flags().Lookup("max-recv-size")
		require.NotNil(t, f, role)
		assert.Equal(t, "16MiB", f.DefValue, role)
		assert.Contains(t, f.Usage, "xDS sets no limit", role)
		assert.Error(t, cmd.Flags().Set("max-recv-size", "0"), role)
	}
}
