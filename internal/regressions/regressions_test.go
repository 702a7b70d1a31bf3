package regressions

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const doc = `apiVersion: xdsconform.io/v1alpha1
kind: Scenario
id: %s
title: t
variants: [delta-ads]
steps:
  - subscribe: {type: EDS, names: [x]}
  - expect: {type: EDS, removed: [x], rule: DNE-5}
`

// write writes files (name → content) into a fresh directory.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

func TestPeerOfTakesTheLongestPeer(t *testing.T) {
	peers := []string{"envoy", "envoy-gateway", "grpc-go"}
	assert.Equal(t, "envoy-gateway", PeerOf("envoy-gateway-bug", peers))
	assert.Equal(t, "envoy", PeerOf("envoy-bug", peers))
	assert.Equal(t, "grpc-go", PeerOf("grpc-go-x", peers))
	assert.Empty(t, PeerOf("grpc-gobug", peers), "the peer's name is followed by a dash")
	assert.Empty(t, PeerOf("istio-bug", peers))
}

func TestLoad(t *testing.T) {
	dir := write(t, map[string]string{
		"grpc-go-b.yaml":                   fmt.Sprintf(doc, "server/regression/grpc-go-b"),
		"go-control-plane-snapshot-a.yaml": fmt.Sprintf(doc, "server/regression/go-control-plane-snapshot-a"),
		"README.md":                        "not a scenario",
	})
	files, err := Load(dir)
	require.NoError(t, err)
	require.Len(t, files, 2)
	assert.Equal(t, "go-control-plane-snapshot", files[0].Peer, "in name order")
	assert.Equal(t, "server/regression/go-control-plane-snapshot-a", files[0].Scenario.ID)
	assert.Equal(t, "grpc-go", files[1].Peer)
	assert.Len(t, For(files, "grpc-go"), 1)
	assert.Empty(t, For(files, "consul"))
	assert.Len(t, Scenarios(files), 2)
}

// Each rule a regression file must keep is shown to be enforced.
func TestLoadRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		files map[string]string
		want  string
	}{
		"no peer": {map[string]string{"kuma-bug.yaml": fmt.Sprintf(doc, "server/regression/kuma-bug")},
			"does not begin with the peer"},
		"id not after the file": {map[string]string{"grpc-go-bug.yaml": fmt.Sprintf(doc, "server/regression/other")},
			`a regression's is "server/regression/grpc-go-bug"`},
		"id in a catalogue area": {map[string]string{"grpc-go-bug.yaml": fmt.Sprintf(doc, "server/nonce/grpc-go-bug")},
			`a regression's is "server/regression/grpc-go-bug"`},
		"two scenarios": {map[string]string{"grpc-go-bug.yaml": fmt.Sprintf(doc, "server/regression/grpc-go-bug") + "---\n" + fmt.Sprintf(doc, "server/regression/grpc-go-bug-2")},
			"2 scenarios; a regression file holds one"},
		"does not load": {map[string]string{"grpc-go-bug.yaml": "apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\n"},
			"grpc-go-bug.yaml:"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(write(t, tc.files))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestKnownFailing(t *testing.T) {
	dir := write(t, map[string]string{
		"known-failing/grpc-go.txt": "# c\nclient/regression/grpc-go-x[sotw-ads] DUP-2: because\n",
	})
	k, err := KnownFailing(dir, "grpc-go")
	require.NoError(t, err)
	assert.Contains(t, k.ReasonFor("client/regression/grpc-go-x", "sotw-ads"), "DUP-2")
	k, err = KnownFailing(dir, "consul")
	require.NoError(t, err, "a peer with no list has an empty one")
	assert.Empty(t, k.ReasonFor("client/regression/grpc-go-x", "sotw-ads"))

	bad := write(t, map[string]string{"known-failing/grpc-go.txt": "just-a-pattern\n"})
	_, err = KnownFailing(bad, "grpc-go")
	require.Error(t, err)
}
