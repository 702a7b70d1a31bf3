package targets_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/targets"
)

func TestClients_NameHoldsNoArguments(t *testing.T) {
	for _, tc := range []struct{ command, want string }{
		{"my-client --token s3cr3t {{.Target}}", "client-cmd: my-client …"},
		{"TOKEN=s3cr3t OTHER=x /opt/bin/my-client {{.Target}}", "client-cmd: my-client …"},
		{"'/usr/bin/node' driver.js", "client-cmd: node …"},
		{"my-client", "client-cmd: my-client"},
	} {
		t.Run(tc.command, func(t *testing.T) {
			c, err := targets.NewClients(targets.ClientOptions{Command: tc.command})
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Name())
		})
	}
}
