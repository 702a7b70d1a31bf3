package reports

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// benchReport is a JSON report of n failing results with entries
// transcript entries each, as a run with --transcripts all writes them.
func benchReport(b *testing.B, n, entries int) []byte {
	b.Helper()
	run := results.Run{SchemaVersion: JSONSchemaVersion, Role: results.RoleServer, Target: "bench"}
	for i := range n {
		r := results.Result{ID: fmt.Sprintf("server/bench/r%05d", i), Variant: "sotw-ads", Title: "t", Requirements: []string{"ACK-1"},
			Level: results.Must, Outcome: results.Fail, RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must, Message: "m", Duration: time.Millisecond}
		for j := range entries {
			r.Transcript = append(r.Transcript, transcript.Entry{At: time.Duration(j), Stream: "ads#1", Direction: transcript.Received,
				Kind: "DiscoveryResponse", Message: []byte(`{"type_url":"type.googleapis.com/envoy.config.cluster.v3.Cluster","nonce":"1","version_info":"v1"}`)})
		}
		run.Results = append(run.Results, r)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, run); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkReadJSON reads a report of 2,000 results with 200 entries
// each (about 40 MB) whole, lazily (as report --html does) and without
// transcripts (--markdown, --certification): the time and the bytes
// allocated per read.
func BenchmarkReadJSON(b *testing.B) {
	doc := benchReport(b, 2000, 200)
	for _, c := range []struct {
		name string
		opts []ReadOption
	}{{"whole", nil}, {"lazy", []ReadOption{LazyTranscripts()}}, {"without", []ReadOption{WithoutTranscripts()}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadJSONContext(context.Background(), io.Reader(bytes.NewReader(doc)), c.opts...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
