package main

import (
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/targets"
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

// TestMaxStatusSizeFlag checks --max-status-size on the client role: its
// default is the observer's default cap, a bad size is a usage error, and
// the size given is the cap the client suite reads its status views with.
func TestMaxStatusSizeFlag(t *testing.T) {
	cmd := newClientCmd(nil)
	f := cmd.Flags().Lookup("max-status-size")
	require.NotNil(t, f)
	assert.Equal(t, "8MiB", f.DefValue)
	assert.Contains(t, f.Usage, "not a failure")
	assert.Error(t, cmd.Flags().Set("max-status-size", "0"))

	// The client command's flags, as newClientCmd registers them.
	c := &cobra.Command{}
	cf := &clientFlags{}
	cf.suite.register(c)
	cf.files.register(c)
	cf.register(c)
	require.NoError(t, c.ParseFlags([]string{"--target", targets.BuiltinReference, "--max-status-size", "32MiB"}))
	_, err := cf.clientSuite(t.Context())
	require.NoError(t, err)
	assert.Equal(t, 32<<20, cf.opts.MaxStatusSize)
	assert.Equal(t, observer.StatusViewBytes, targets.DefaultMaxStatusSize)
}
