package observer

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigDumpEndlessBody: an admin endpoint that never stops sending
// costs StatusViewBytes and a clear error, and holds nothing afterwards.
func TestConfigDumpEndlessBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		_, _ = w.Write([]byte(`{"configs": [`))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
	t.Cleanup(func() { _ = o.Close() })
	_, err := o.Observe(t.Context())
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "over 8388608 bytes")
	assert.Zero(t, reading.Load(), "a read gives back what it held")
}

// TestConfigDumpLargeButBounded: a dump under the bound is read whole.
func TestConfigDumpLargeButBounded(t *testing.T) {
	body := `{"configs": [{"@type": "` + clustersDumpURL + `", "dynamic_active_clusters": [{"version_info": "1", "cluster": {"name": "c"}}]}]` +
		strings.Repeat(" ", StatusViewBytes-200) + `}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	t.Cleanup(srv.Close)
	o := NewConfigDump(strings.TrimPrefix(srv.URL, "http://"))
	t.Cleanup(func() { _ = o.Close() })
	rs, err := o.Observe(t.Context())
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "c", rs[0].Name)
	assert.Zero(t, reading.Load())
}

// TestReadsShareOneBound: reads in flight together hold at most
// readingBytes; one that would pass it fails rather than waits.
func TestReadsShareOneBound(t *testing.T) {
	reading.Add(readingBytes - 100)
	defer reading.Add(-(readingBytes - 100))
	_, err := readBounded(strings.NewReader(strings.Repeat("x", 1000)))
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Equal(t, int64(readingBytes-100), reading.Load(), "the failed read holds nothing")
	b, err := readBounded(strings.NewReader(strings.Repeat("x", 50)))
	require.NoError(t, err)
	assert.Len(t, b, 50)
}
