package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/xdsconform/xdsconform/internal/infile"
)

// FileFormat names the format of a transcript file; a reader refuses any
// other, so a file from a later, incompatible harness fails with a clear
// line instead of a wrong replay.
const FileFormat = "xdsconform.transcript/v1"

// MaxFileBytes bounds what ReadFile reads: a transcript file comes from a
// bug report, so it is input the harness does not trust.
const MaxFileBytes = 64 << 20

// File is a transcript kept on its own, apart from a report: what
// `xdsconform record` writes, and what `replay` and `scaffold` read (a
// failing pair's transcript, taken out of a JSON report, has the same
// shape). Its entries went through the same redaction as every other
// artefact.
type File struct {
	// Format is FileFormat.
	Format string `json:"format"`
	// Recorded is when the recording (or the run) started, in UTC.
	Recorded time.Time `json:"recorded"`
	// HarnessVersion is the version of the harness that wrote the file.
	HarnessVersion string `json:"harness_version,omitempty"`
	// Side is the point of view of the entries' directions: "client"
	// when Sent is what the xDS client sent to the management server
	// (a recording, a server-suite pair), "server" when Sent is what the
	// management server sent to the client (a client-suite pair).
	Side string `json:"side"`
	// Variant is the variant the streams used ("sotw-ads", ...), when
	// one is known.
	Variant string `json:"variant,omitempty"`
	// Source says where the entries come from, in words: the two
	// addresses a recording sat between, or the report and pair they
	// were taken from.
	Source string `json:"source,omitempty"`
	// Scenario is the scenario whose pair the entries are from, if any.
	Scenario string `json:"scenario,omitempty"`
	// Entries are the messages and events, in the order they happened.
	Entries []Entry `json:"entries"`
}

// Sides a transcript file can take its point of view from.
const (
	SideClient = "client"
	SideServer = "server"
)

// WriteFile writes f to path as indented JSON, filling in Format.
func WriteFile(path string, f *File) error {
	f.Format = FileFormat
	if f.Entries == nil {
		f.Entries = []Entry{}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("encode transcript file: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write transcript file: %w", err)
	}
	return nil
}

// ReadFile reads a transcript file written by WriteFile under ctx,
// bounded by MaxFileBytes (checked before reading), refusing unknown
// fields, another format or a side other than SideClient or SideServer.
// A directory or a device is refused and a pipe read under a deadline
// (internal/infile).
func ReadFile(ctx context.Context, path string) (*File, error) {
	b, err := infile.ReadAll(ctx, path, MaxFileBytes)
	var tooLarge *infile.TooLargeError
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("transcript file %s is larger than %d MiB", path, MaxFileBytes>>20)
	case err != nil:
		return nil, fmt.Errorf("read transcript file: %w", err)
	}
	return ParseFile(b, path)
}

// ParseFile decodes a transcript file's bytes; name is used in errors.
func ParseFile(b []byte, name string) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("transcript file %s: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("transcript file %s: trailing data after the transcript", name)
	}
	switch {
	case f.Format != FileFormat:
		return nil, fmt.Errorf("transcript file %s: format %q, want %q", name, f.Format, FileFormat)
	case f.Side != SideClient && f.Side != SideServer:
		return nil, fmt.Errorf("transcript file %s: side %q, want %q or %q", name, f.Side, SideClient, SideServer)
	case len(f.Entries) == 0:
		return nil, errors.New("transcript file " + name + ": no entries")
	}
	// Indentation is the file's, not the message's: compact each message
	// back to what a report would hold.
	for i, e := range f.Entries {
		if len(e.Message) == 0 {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, e.Message); err != nil {
			return nil, fmt.Errorf("transcript file %s: entry %d: %w", name, i+1, err)
		}
		f.Entries[i].Message = buf.Bytes()
	}
	return &f, nil
}
