package loadreport

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// WriteJSON writes the same bytes for the same content, whatever order
// the report's lists were built in and whatever zone Started is in, and
// ReadJSON reads back what it wrote.
func TestJSONRoundTrip(t *testing.T) {
	r := newSim(20, 2).build(0)
	want := jsonOf(t, r)

	shuffled := *r
	shuffled.Started = r.Started.In(time.FixedZone("X", 3600))
	shuffled.Timeline = reversed(r.Timeline)
	shuffled.Changes = reversed(r.Changes)
	shuffled.Violations = reversed(r.Violations)
	assert.Equal(t, want, jsonOf(t, &shuffled))
	assert.Equal(t, want, jsonOf(t, r), "WriteJSON does not change its input")

	back, err := ReadJSON(strings.NewReader(want))
	require.NoError(t, err)
	assert.Equal(t, want, jsonOf(t, back))
	assert.True(t, r.Started.Equal(back.Started))
	assert.Equal(t, r.Phases[2].Latency.Count(), back.Phases[2].Latency.Count())
}

func reversed[T any](s []T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

// An empty report, absent lists and histograms included, is written in
// the published layout: lists as [], histograms as empty ones.
func TestJSONEmptyReport(t *testing.T) {
	r := &Report{Plan: Plan{Shards: 1, Variant: "delta-ads"}, Shards: []int{0}, Phases: []Phase{{Name: PhaseConnect}}}
	out := jsonOf(t, r)
	assert.Contains(t, out, `"format": "xdsconform.load/v1"`)
	assert.Contains(t, out, `"changes": []`)
	assert.Contains(t, out, `"resources": []`)
	assert.Contains(t, out, `"hdr": "HISTF`)
	assert.Empty(t, r.Format, "the input is not changed")
	back, err := ReadJSON(strings.NewReader(out))
	require.NoError(t, err)
	assert.Zero(t, back.Phases[0].Latency.Count())

	require.Error(t, WriteJSON(io.Discard, nil))
}

func TestReadJSONRefuses(t *testing.T) {
	good := jsonOf(t, newSim(6, 2).build(0))
	sub := func(from, to string) string {
		t.Helper()
		if !strings.Contains(good, from) {
			t.Fatalf("the report has no %q", from)
		}
		return strings.Replace(good, from, to, 1)
	}
	var emptyHist bytes.Buffer
	require.NoError(t, json.NewEncoder(&emptyHist).Encode(NewHistogram()))
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "<html>", "not an xdsconform load report: invalid character"},
		{"a suite report", `{"schema_version": "2", "role": "server", "results": []}`, `it is a suite report (schema_version "2"), which 'xdsconform report' reads`},
		{"no format", `{"run_id": "x"}`, "no format field"},
		{"another version", sub(`"format": "xdsconform.load/v1"`, `"format": "xdsconform.load/v2", "future": 1`), `format "xdsconform.load/v2", this build reads "xdsconform.load/v1" only`},
		{"another format", sub(`"format": "xdsconform.load/v1"`, `"format": "something/v1"`), `format "something/v1"`},
		{"an unknown field", sub(`"run_id"`, `"extra": 1, "run_id"`), `unknown field "extra"`},
		{"an unknown histogram field", sub(`"count": 3,`, `"count": 3, "p42_ns": 1,`), `unknown field "p42_ns"`},
		{"trailing data", good + "{}", "after top-level value"},
		{"a negative count", sub(`"acks": 6,`, `"acks": -6,`), "phases[1].acks: -6 is negative"},
		{"an unknown phase", sub(`"name": "burst"`, `"name": "ramp"`), `phases[3].name: "ramp" is not a phase`},
		{"a phase twice", sub(`"name": "burst"`, `"name": "churn"`), `phases[3].name: phase "churn" twice`},
		{"a phase that ends first", sub(`"end_ns": 2000000000`, `"end_ns": 10`), "phases[1]: ends (10 ns) before it starts"},
		{"no shard", sub("\"shards\": [\n    0\n  ]", `"shards": []`), "shards: none named"},
		{"a shard past the plan", sub("\"shards\": [\n    0\n  ]", `"shards": [2]`), "shards: 2 is out of the plan's 2"},
		{"too many shards", sub(`"shards": 2,`, `"shards": 5000,`), "plan.shards: 5000, not 1 to 1024"},
		{"change 0", sub(`"id": 1,`, `"id": 0,`), "changes[0].id: 0, changes are numbered from 1"},
		{"a change twice", sub(`"id": 2,`, `"id": 1,`), "changes[1].id: change 1 twice"},
		{"a second twice", strings.Replace(good, `"unix_s": 1772600770`, `"unix_s": 1772600769`, 1), "second 1772600769 twice"},
		{"a harness of another shard", sub(`"shard": 0,`, `"shard": 1,`), "harness[0].shard: 1 is not one of the report's shards"},
		{"a histogram of another range", firstHDR.ReplaceAllLiteralString(good, `"hdr": "`+other(t)+`"`), "range [1, 1000] µs at 2 digits"},
		{"a histogram not base64", sub(`"hdr": "HISTF`, `"hdr": "*HISTF`), "histogram encoding: illegal base64"},
		{"over more than the values", sub(`"count": 3,`, `"over": 4, "count": 3,`), "histogram over 4: not within its 3 values"},
		{"over negative", sub(`"count": 3,`, `"over": -1, "count": 3,`), "histogram over -1"},
		{"an empty reason nothing was measured", sub(`"run_id"`, `"unmeasured": [" "], "run_id"`), "unmeasured[0]: an empty reason"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrNotALoadReport)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// firstHDR matches a histogram's encoding (ReplaceAll… replaces them all).
var firstHDR = regexp.MustCompile(`"hdr": "[^"]*"`)

// other is a valid HDR encoding of another range than the package's.
func other(t *testing.T) string {
	h := hdr.New(1, 1000, 2)
	require.NoError(t, h.RecordValue(5))
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	return string(enc)
}

// ReadJSON reads at most MaxJSONSize bytes.
func TestReadJSONBounded(t *testing.T) {
	big := io.MultiReader(strings.NewReader(`{"format": "xdsconform.load/v1", "notes": ["`), zeros{})
	_, err := ReadJSON(big)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "larger than 64 MiB")
}

// zeros is an endless reader of "0".
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}

func TestReadJSONFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "shard.json")
	require.NoError(t, os.WriteFile(path, []byte(jsonOf(t, newSim(4, 1).build(0))), 0o644))
	r, err := ReadJSONFile(context.Background(), path)
	require.NoError(t, err)
	assert.Equal(t, "run-15", r.RunID)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte("{}"), 0o644))
	_, err = ReadJSONFile(context.Background(), bad)
	assert.ErrorContains(t, err, bad+": not an xdsconform load report: no format field")
	_, err = ReadJSONFile(context.Background(), filepath.Join(dir, "none.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// encode builds an HDR V2 compressed encoding from its parts, to craft
// what no library would write.
func encode(cookie int32, header []byte, payload []byte, lengthDelta int32) string {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(header)
	_, _ = w.Write(payload)
	_ = w.Close()
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, cookie)
	_ = binary.Write(&b, binary.BigEndian, int32(z.Len())+lengthDelta)
	b.Write(z.Bytes())
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

// header is an HDR V2 header of the given range and payload length.
func header(payloadLen int32, digits int32, low, high int64) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, []int32{hdr.V2EncodingCookieBase | 0x10, payloadLen, 0, digits})
	_ = binary.Write(&b, binary.BigEndian, []int64{low, high})
	_ = binary.Write(&b, binary.BigEndian, 1.0)
	return b.Bytes()
}

// Crafted encodings give an error, never a panic, and a header claiming
// a huge range is refused before the library allocates its counts.
func TestDecodeCraftedEncodings(t *testing.T) {
	ours := func(payload []byte) string {
		return encode(hdr.V2CompressedEncodingCookieBase|0x10, header(int32(len(payload)), 3, 1, HistogramMax.Microseconds()), payload, 0)
	}
	zigzag := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(v<<1)^uint64(v>>63))
		}
		return b
	}
	// The library's own V2 LEB128 is ZigZag over up to 9 bytes; values
	// below 2^56 encode as the standard varint does.
	good := ours(zigzag(0, 0, 5))
	d, err := decode([]byte(good))
	require.NoError(t, err, "the crafting is right: a sane one decodes")
	assert.Equal(t, int64(5), d.TotalCount())

	for _, tc := range []struct{ name, enc, want string }{
		{"empty", "", "too short"},
		{"short", base64.StdEncoding.EncodeToString([]byte{1, 2, 3}), "too short"},
		{"wrong cookie", encode(0x1234, header(0, 3, 1, HistogramMax.Microseconds()), nil, 0), "not an HDR V2 compressed encoding"},
		{"length past the data", encode(hdr.V2CompressedEncodingCookieBase, header(0, 3, 1, HistogramMax.Microseconds()), nil, 100), "compressed length"},
		{"negative length", encode(hdr.V2CompressedEncodingCookieBase, header(0, 3, 1, HistogramMax.Microseconds()), nil, -1<<30), "compressed length"},
		{"not zlib", base64.StdEncoding.EncodeToString(append([]byte{0x1c, 0x84, 0x93, 0x14, 0, 0, 0, 4}, 1, 2, 3, 4)), "zlib"},
		{"truncated header", encode(hdr.V2CompressedEncodingCookieBase, header(0, 3, 1, HistogramMax.Microseconds())[:20], nil, 0), "header"},
		{"huge range", encode(hdr.V2CompressedEncodingCookieBase, header(0, 5, 1, math.MaxInt64), nil, 0), "range [1, 9223372036854775807] µs at 5 digits"},
		{"negative range", encode(hdr.V2CompressedEncodingCookieBase, header(0, 3, -5, -1), nil, 0), "range"},
		{"payload length past the payload", encode(hdr.V2CompressedEncodingCookieBase, header(50, 3, 1, HistogramMax.Microseconds()), zigzag(1), 0), "PayloadLength"},
		{"negative payload length", encode(hdr.V2CompressedEncodingCookieBase, header(-3, 3, 1, HistogramMax.Microseconds()), nil, 0), "negative PayloadLength"},
		{"zero run past the counts", ours(zigzag(-1 << 40)), "zero-run"},
		{"index past the counts", ours(append(zigzag(-(1 << 15)), zigzag(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)...)), "overflows counts"},
		{"counts past int64", ours(zigzag(math.MaxInt64>>1, math.MaxInt64>>1, math.MaxInt64>>1)), "past MaxInt64"},
		{"bad varint", ours([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = decode([]byte(tc.enc)) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	// The huge range costs nothing: the header is read, not the counts
	// the library would allocate (1 to 2^63 at 5 digits is 48 MB).
	huge := []byte(encode(hdr.V2CompressedEncodingCookieBase, header(0, 5, 1, math.MaxInt64), nil, 0))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _ = decode(huge)
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated by 10 decodes")
}

// A histogram whose counts add up past MaxHistogramCount is refused.
func TestHistogramCountBounded(t *testing.T) {
	h := hdr.New(1, HistogramMax.Microseconds(), 3)
	require.NoError(t, h.RecordValues(10, MaxHistogramCount+1))
	enc, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	require.NoError(t, err)
	var got Histogram
	err = json.Unmarshal([]byte(`{"count":0,"min_ns":0,"mean_ns":0,"p50_ns":0,"p90_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":0,"hdr":"`+string(enc)+`"}`), &got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at most 1099511627776")
}

// The figures of a histogram's JSON are recomputed from its encoding: a
// hand-edited p99 does not survive reading.
func TestHistogramFiguresRecomputed(t *testing.T) {
	h := NewHistogram()
	for i := range 100 {
		h.Record(time.Duration(i+1) * time.Millisecond)
	}
	b, err := json.Marshal(h)
	require.NoError(t, err)
	edited := strings.Replace(string(b), `"p99_ns":99`, `"p99_ns":1`, 1)
	require.NotEqual(t, string(b), edited)
	var back Histogram
	require.NoError(t, json.Unmarshal([]byte(edited), &back))
	again, err := json.Marshal(&back)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(again))
}

// FuzzReadJSON: whatever the input, ReadJSON returns a report or an
// error wrapping ErrNotALoadReport, never panics, and a report it
// accepts is written and read back to the same bytes, and merges.
func FuzzReadJSON(f *testing.F) {
	var seed bytes.Buffer
	if err := WriteJSON(&seed, newSim(3, 2).build(1)); err != nil {
		f.Fatal(err)
	}
	f.Add(seed.String())
	f.Add(`{"format":"xdsconform.load/v1","plan":{"shards":1},"shards":[0],"phases":[{"name":"churn","latency":null}]}`)
	f.Add(`{"format":"xdsconform.load/v1","plan":{"shards":1},"shards":[0],"phases":[{"name":"churn","latency":{"hdr":"HISTFAAAACN42pJpmSzMwMDAyAABzFAazFc+7MZg/wEqAggAAP//SqIDpw=="}}]}`)
	f.Add(`{"format":"xdsconform.load/v1","plan":{"shards":1},"shards":[0],"timeline":[{"unix_s":-9223372036854775808},{"unix_s":9223372036854775807}]}`)
	f.Add(`{"format":"xdsconform.load/v2"}`)
	f.Add(`{"schema_version":"2"}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, in string) {
		r, err := ReadJSON(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrNotALoadReport) {
				t.Fatalf("error %v does not wrap ErrNotALoadReport", err)
			}
			return
		}
		var a, b bytes.Buffer
		if err := WriteJSON(&a, r); err != nil {
			t.Fatal(err)
		}
		back, err := ReadJSON(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("a report ReadJSON accepted does not read back: %v", err)
		}
		if err := WriteJSON(&b, back); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Fatalf("written twice differently:\n%s\n%s", a.String(), b.String())
		}
		if _, err := Merge(r); err != nil {
			t.Fatalf("a report ReadJSON accepted does not merge: %v", err)
		}
		// Rendering never panics either.
		_ = WriteMarkdown(io.Discard, r)
		_ = WriteHTML(io.Discard, r)
	})
}

// FuzzDecodeHistogram: whatever the encoding, decode gives a histogram of
// the package's range or an error, never a panic.
func FuzzDecodeHistogram(f *testing.F) {
	h := NewHistogram()
	for i := range 1000 {
		h.Record(time.Duration(i*i) * time.Microsecond)
	}
	s, err := h.Summary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(s.HDR)
	f.Add(encode(hdr.V2CompressedEncodingCookieBase, header(3, 3, 1, HistogramMax.Microseconds()), []byte{0x7f, 0x02, 0x01}, 0))
	f.Add(encode(hdr.V2CompressedEncodingCookieBase, header(0, 5, 1, math.MaxInt64), nil, 0))
	f.Fuzz(func(t *testing.T, enc string) {
		d, err := decode([]byte(enc))
		if err != nil {
			return
		}
		if d.HighestTrackableValue() != HistogramMax.Microseconds() {
			t.Fatalf("decoded a histogram of another range: %d", d.HighestTrackableValue())
		}
		_ = d.ValueAtQuantile(99.99)
	})
}
