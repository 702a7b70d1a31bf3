package reports

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

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

// ReadJSON reads a JSON report as WriteJSON writes it. Input that is not
// JSON, is not a report (no schema_version, role or results), is of a
// schema version this build does not know, or exceeds MaxJSONReportSize
// is an error wrapping ErrNotAReport; the summary object and the causes
// are not read, as they are recomputed from the results wherever they are
// needed.
func ReadJSON(r io.Reader) (results.Run, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxJSONReportSize+1))
	if err != nil {
		return results.Run{}, err
	}
	if len(b) > MaxJSONReportSize {
		return results.Run{}, fmt.Errorf("%w: larger than %d MiB", ErrNotAReport, MaxJSONReportSize>>20)
	}
	var run results.Run
	if err := json.Unmarshal(b, &run); err != nil {
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
	return run, nil
}

// ReadJSONFile reads the JSON report at path and returns it with the
// SHA-256 of its bytes, which a certification report cites as evidence;
// the error names the path.
func ReadJSONFile(path string) (results.Run, [sha256.Size]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return results.Run{}, [sha256.Size]byte{}, err // os errors name the path
	}
	defer f.Close()
	h := sha256.New()
	run, err := ReadJSON(io.TeeReader(f, h))
	if err != nil {
		return results.Run{}, [sha256.Size]byte{}, fmt.Errorf("%s: %w", path, err)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return run, sum, nil
}

// WriteFile renders a report into path the way WriteFiles writes the JUnit
// and JSON reports: in memory first, then through a temporary file renamed
// into place, so a reader never sees half a report.
func WriteFile(path string, render func(io.Writer) error) error {
	return writeAtomic(path, render)
}
