package transcript

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeBounded(t *testing.T) {
	var all []Entry
	for i := range 10 {
		all = append(all, Entry{At: time.Duration(i), Stream: "ads#1", Note: string(rune('a' + i))})
	}
	raw, err := json.Marshal(all)
	require.NoError(t, err)
	got, total, err := DecodeBounded(raw, 3, 2)
	require.NoError(t, err)
	assert.Equal(t, 10, total)
	var notes string
	for _, e := range got {
		notes += e.Note
	}
	assert.Equal(t, "abcij", notes, "the first three and the last two, in order")

	got, total, err = DecodeBounded(raw, 20, 20)
	require.NoError(t, err)
	assert.Equal(t, all, got, "a transcript within the bounds comes whole")
	assert.Equal(t, 10, total)

	for _, empty := range []string{"", "null", "[]", " [ ] "} {
		got, total, err = DecodeBounded([]byte(empty), 3, 2)
		require.NoError(t, err, empty)
		assert.Empty(t, got)
		assert.Zero(t, total)
	}
	_, _, err = DecodeBounded([]byte(`{"a":1}`), 3, 2)
	assert.Error(t, err)
}
