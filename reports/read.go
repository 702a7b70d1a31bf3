package reports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/internal/infile"
	"github.com/xdsconform/xdsconform/results"
)

// MaxJSONReportSize bounds a JSON report ReadJSON accepts. The largest a
// run writes is a few megabytes; a bound keeps a wrong file (a disk image,
// a device) from being read into memory whole.
const MaxJSONReportSize = 256 << 20

// readableSchemaVersions are the JSON report layouts ReadJSON understands:
// version 1 lacks fields that version 2 added, and version 2 those that
// version 3 added (blocked_by, timing; no result of it is blocked or
// inconclusive); Go's decoder leaves them empty, which reads as "not
// recorded". The summary and causes, which version 3 writes, are not read:
// they are recomputed from the results.
var readableSchemaVersions = []string{"1", "2", JSONSchemaVersion}

// ErrNotAReport is wrapped by ReadJSON's error for input that is not an
// xdsconform JSON report of a layout this build reads.
var ErrNotAReport = errors.New("not an xdsconform JSON report")

// MaxResults bounds the results one JSON report may hold. The whole of
// both suites is under a thousand pairs; a reader keeps every result in
// memory, several hundred bytes each however small its JSON, so the bound
// keeps a report of millions of tiny results from costing gigabytes to
// read and render. It is checked as the results are read, before any
// work on them.
const MaxResults = 50_000

// ReadJSON reads a JSON report as WriteJSON writes it. Input that is not
// JSON, is not a report (no schema_version, role or results), is of a
// schema version this build does not know, or exceeds MaxJSONReportSize
// or MaxResults is an error wrapping ErrNotAReport; the summary object
// and the causes are not read, as they are recomputed from the results
// wherever they are needed.
func ReadJSON(r io.Reader) (results.Run, error) {
	return ReadJSONContext(context.Background(), r)
}

// ReadJSONContext is ReadJSON under ctx: it stops, with ctx's error, as
// soon as ctx ends. The results are decoded one at a time, as they
// stream in, so reading costs what the results take in memory, not that
// plus the file's bytes.
func ReadJSONContext(ctx context.Context, r io.Reader, opts ...ReadOption) (results.Run, error) {
	var cfg readConfig
	for _, o := range opts {
		o(&cfg)
	}
	run, err := decodeRun(ctx, infile.LimitReader(r, "the report", MaxJSONReportSize), cfg)
	var tooLarge *infile.TooLargeError
	switch {
	case ctx.Err() != nil:
		return results.Run{}, ctx.Err()
	case errors.As(err, &tooLarge):
		return results.Run{}, fmt.Errorf("%w: larger than %s", ErrNotAReport, infile.Bytes(tooLarge.Limit))
	case err != nil:
		return results.Run{}, fmt.Errorf("%w: %v", ErrNotAReport, err)
	}
	switch {
	case run.SchemaVersion == "":
		return results.Run{}, fmt.Errorf("%w: no schema_version", ErrNotAReport)
	case !slices.Contains(readableSchemaVersions, run.SchemaVersion):
		return results.Run{}, fmt.Errorf("%w: schema_version %q is not one this build reads (%s)", ErrNotAReport, run.SchemaVersion,
			strings.Join(slices.Compact(slices.Sorted(slices.Values(readableSchemaVersions))), ", "))
	case run.Role == "":
		return results.Run{}, fmt.Errorf("%w: no role", ErrNotAReport)
	case run.Results == nil:
		return results.Run{}, fmt.Errorf("%w: no results", ErrNotAReport)
	}
	if err := checkRun(run); err != nil {
		return results.Run{}, fmt.Errorf("%w: %v", ErrNotAReport, err)
	}
	return run, nil
}

// checkRun refuses a run header no harness writes: an unknown role or
// fail-on level, or an implementation URL that a page or a certification
// report could not link to safely.
func checkRun(run results.Run) error {
	switch {
	case !slices.Contains([]string{results.RoleServer, results.RoleClient, results.RoleBoth}, run.Role):
		return fmt.Errorf("role %q is not server, client or both", run.Role)
	case run.FailOn != "" && !slices.Contains(results.Levels, run.FailOn):
		return fmt.Errorf("fail_on %q is not a level (%s)", run.FailOn, joined(results.Levels))
	case run.Implementation != nil && run.Implementation.URL != "":
		if err := results.CheckURL(run.Implementation.URL); err != nil {
			return fmt.Errorf("implementation.url: %w", err)
		}
	}
	return nil
}

// checkResult refuses a result no harness writes: an outcome or a level
// that is not one of results' (a level may be absent: the page shows it
// as none). Every reader counts results by them; one
// they do not know would be counted nowhere, or as something it is not.
func checkResult(r results.Result) error {
	switch {
	case !slices.Contains(results.Outcomes, r.Outcome):
		return fmt.Errorf("outcome %q is not one of %s", r.Outcome, joined(results.Outcomes))
	case r.Level != "" && !slices.Contains(results.Levels, r.Level):
		return fmt.Errorf("level %q is not a level (%s)", r.Level, joined(results.Levels))
	case r.BrokenLevel != "" && !slices.Contains(results.Levels, r.BrokenLevel):
		return fmt.Errorf("broken_level %q is not a level (%s)", r.BrokenLevel, joined(results.Levels))
	}
	return nil
}

// joined lists values, comma-separated.
func joined[T ~string](values []T) string {
	ss := make([]string, len(values))
	for i, v := range values {
		ss[i] = string(v)
	}
	return strings.Join(ss, ", ")
}

// ReadOption changes what a reader keeps of a report.
type ReadOption func(*readConfig)

// readConfig is how a reader keeps transcripts: decoded (the default),
// undecoded (lazy), or not at all (none).
type readConfig struct{ lazy, none bool }

// LazyTranscripts reads each transcript into Result.RawTranscript as the
// report holds it, without decoding it: a decoded entry takes several
// times the bytes of its JSON (and a hostile report can hold millions of
// empty ones), whereas a page shows at most the first and the last
// entries of each transcript it shows (transcript.DecodeBounded).
func LazyTranscripts() ReadOption { return func(c *readConfig) { c.lazy = true } }

// WithoutTranscripts reads a report without its transcripts, which are
// most of a large report's bytes: for the outputs that show none (the
// Markdown summary, the certification report). Each result's Transcript
// is then nil.
func WithoutTranscripts() ReadOption { return func(c *readConfig) { c.none = true } }

// rawInto keeps a JSON value's bytes in *into, or, into nil, reads past
// it.
type rawInto struct{ into *[]byte }

func (r *rawInto) UnmarshalJSON(b []byte) error {
	if r.into != nil && !bytes.Equal(b, []byte("null")) {
		*r.into = bytes.Clone(b)
	}
	return nil
}

// decodeRun decodes a report object: "results" one result at a time,
// every other member whole (they are small: the run's header, options,
// summary), then all of those together, as json.Unmarshal would.
func decodeRun(ctx context.Context, r io.Reader, cfg readConfig) (results.Run, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return results.Run{}, err
	}
	members := map[string]json.RawMessage{}
	var rs []results.Result
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return results.Run{}, err
		}
		key, _ := tok.(string)
		if !strings.EqualFold(key, "results") {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return results.Run{}, err
			}
			members[key] = raw
			continue
		}
		if rs, err = decodeResults(ctx, dec, cfg); err != nil {
			return results.Run{}, err
		}
	}
	if err := expectDelim(dec, '}'); err != nil {
		return results.Run{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return results.Run{}, errors.New("data after the report")
	}
	head, err := json.Marshal(members)
	if err != nil {
		return results.Run{}, err
	}
	var run results.Run
	if err := json.Unmarshal(head, &run); err != nil {
		return results.Run{}, err
	}
	run.Results = rs
	return run, nil
}

// decodeResults decodes the results array (null reads as none), one
// result at a time, checking ctx and MaxResults as it goes.
func decodeResults(ctx context.Context, dec *json.Decoder, cfg readConfig) ([]results.Result, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, fmt.Errorf("results: not an array")
	}
	rs := []results.Result{}
	for dec.More() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(rs) == MaxResults {
			return nil, fmt.Errorf("more than %d results, the most a report may hold", MaxResults)
		}
		var r results.Result
		var into any = &r
		if cfg.lazy || cfg.none {
			// The outer field shadows the result's own: the transcript is
			// kept undecoded, or read past.
			var shadowed struct {
				*results.Result
				Transcript rawInto `json:"transcript"`
			}
			shadowed.Result = &r
			if cfg.lazy {
				shadowed.Transcript.into = &r.RawTranscript
			}
			into = &shadowed
		}
		if err := dec.Decode(into); err != nil {
			return nil, fmt.Errorf("results[%d]: %w", len(rs), err)
		}
		if err := checkResult(r); err != nil {
			return nil, fmt.Errorf("results[%d] (%.200q): %w", len(rs), r.FullName(), err)
		}
		rs = append(rs, r)
	}
	return rs, expectDelim(dec, ']')
}

// expectDelim reads the next token, which must be d.
func expectDelim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if got, ok := tok.(json.Delim); !ok || got != d {
		return fmt.Errorf("expected %q, found %v", d, tok)
	}
	return nil
}

// ReadJSONFile reads the JSON report at path under ctx and returns it
// with the SHA-256 of its bytes, which a certification report cites as
// evidence; the error names the path. The file's size is checked before
// it is read, a directory or a device is refused, and a pipe is read
// under a deadline (internal/infile).
func ReadJSONFile(ctx context.Context, path string, opts ...ReadOption) (results.Run, [sha256.Size]byte, error) {
	f, err := infile.Open(ctx, path, MaxJSONReportSize)
	if err != nil {
		var tooLarge *infile.TooLargeError
		if errors.As(err, &tooLarge) {
			return results.Run{}, [sha256.Size]byte{}, fmt.Errorf("%s: %w: larger than %s", path, ErrNotAReport, infile.Bytes(tooLarge.Limit))
		}
		return results.Run{}, [sha256.Size]byte{}, err // errors name the path
	}
	defer f.Close()
	h := sha256.New()
	run, err := ReadJSONContext(ctx, io.TeeReader(f, h), opts...)
	if err != nil {
		if ctx.Err() != nil {
			return results.Run{}, [sha256.Size]byte{}, err
		}
		return results.Run{}, [sha256.Size]byte{}, fmt.Errorf("%s: %w", path, err)
	}
	// The decoder stops at the report's closing brace: hash whatever
	// follows too (whitespace), so the sum is the file's.
	if _, err := io.Copy(h, f); err != nil {
		return results.Run{}, [sha256.Size]byte{}, fmt.Errorf("%s: %w", path, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return run, sum, nil
}

// WriteFile renders a report into path the way WriteFiles writes the JUnit
// and JSON reports: into a temporary file beside it, renamed into place,
// so a reader never sees half a report.
func WriteFile(path string, render func(io.Writer) error) error {
	return writeAtomic(path, render)
}
