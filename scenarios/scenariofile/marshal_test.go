package scenariofile

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The embedded schema compiles (against the draft 2020-12 metaschema).
func TestSchemaCompiles(t *testing.T) {
	s, err := compiled()
	require.NoError(t, err)
	require.NotNil(t, s)
}

// Marshal writes documents that read back as the same documents: what
// scaffold writes is what Parse reads.
func TestMarshalRoundTrip(t *testing.T) {
	for _, path := range builtinFiles(t) {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		docs, err := Documents(data, path)
		require.NoError(t, err)
		out, err := Marshal(docs...)
		require.NoError(t, err)
		again, err := Documents(out, path+" (marshalled)")
		require.NoError(t, err, "%s", out)
		assert.Equal(t, docs, again, path)
	}
}
