package transcript

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.json")
	in := &File{Recorded: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), Side: SideClient, Variant: "sotw-ads",
		Entries: []Entry{{At: time.Millisecond, Stream: "ads#1", Direction: Sent, Kind: "DiscoveryRequest", Message: json.RawMessage(`{"typeUrl":"x"}`)}}}
	require.NoError(t, WriteFile(path, in))
	out, err := ReadFile(context.Background(), path)
	require.NoError(t, err)
	require.Equal(t, in, out)
}

func TestFileRefusesWhatItCannotReplay(t *testing.T) {
	for name, body := range map[string]string{
		"other format":  `{"format":"x/v9","side":"client","entries":[{"stream":"a","direction":"sent","kind":"k"}]}`,
		"bad side":      `{"format":"` + FileFormat + `","side":"proxy","entries":[{"stream":"a","direction":"sent","kind":"k"}]}`,
		"no entries":    `{"format":"` + FileFormat + `","side":"client","entries":[]}`,
		"unknown field": `{"format":"` + FileFormat + `","side":"client","extra":1,"entries":[{"stream":"a","direction":"sent","kind":"k"}]}`,
		"trailing data": `{"format":"` + FileFormat + `","side":"client","entries":[{"stream":"a","direction":"sent","kind":"k"}]} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.json")
			require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
			_, err := ReadFile(context.Background(), path)
			require.Error(t, err)
		})
	}
}
