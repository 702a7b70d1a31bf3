// Package schema holds the schemas the report files are written to — the
// JSON Schema of the JSON report (report.schema.json, and that of its
// previous layout, report.v2.schema.json), that of the load report
// (load.schema.json) and the common JUnit XSD (junit.xsd, see README.md
// for where it comes from) — and checks a report against them. The tests
// of every package that writes a report use it, so a report that strays
// from its documented layout fails a test, and tools that read reports
// can use it too.
package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	_ "embed" // the schemas ship in the binary and its tests

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// JSONReport is report.schema.json: the JSON Schema (draft 2020-12) of the
// JSON report, schema_version "3".
//
//go:embed report.schema.json
var JSONReport []byte

// JSONReportV2 is report.v2.schema.json: the JSON Schema of the layout
// before it, schema_version "2", which reports.ReadJSON still reads; it
// is kept as it was, so that the reports written then still validate.
//
//go:embed report.v2.schema.json
var JSONReportV2 []byte

// LoadReport is load.schema.json: the JSON Schema (draft 2020-12) of the
// load report (xdsconform load --json, xdsconform report merge --json),
// format "xdsconform.load/v1".
//
//go:embed load.schema.json
var LoadReport []byte

// JUnitXSD is junit.xsd: the JUnit XML schema Jenkins' xUnit plugin
// validates against, as README.md says.
//
//go:embed junit.xsd
var JUnitXSD []byte

// What the compiler knows report.schema.json and load.schema.json as.
const (
	jsonReportURL   = "urn:xdsconform:report:3"
	jsonReportV2URL = "urn:xdsconform:report:2"
	loadReportURL   = "urn:xdsconform:load:1"
)

var (
	compiled   = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile("report.schema.json", jsonReportURL, JSONReport) })
	compiledV2 = sync.OnceValues(func() (*jsonschema.Schema, error) {
		return compile("report.v2.schema.json", jsonReportV2URL, JSONReportV2)
	})
	compiledLoad = sync.OnceValues(func() (*jsonschema.Schema, error) { return compile("load.schema.json", loadReportURL, LoadReport) })
)

func compile(name, url string, schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schema: %s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	// "format": "date-time" is checked, not only documented.
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema: %s: %w", name, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema: compiling %s: %w", name, err)
	}
	return s, nil
}

// ValidateJSONReport checks a JSON report against the schema of the
// layout it declares: report.v2.schema.json for schema_version "2",
// report.schema.json for any other (which accepts only the current
// version, "3"). The error lists every place it strays, with the schema's
// reason.
func ValidateJSONReport(report []byte) error {
	var head struct {
		SchemaVersion string `json:"schema_version"`
	}
	if json.Unmarshal(report, &head) == nil && head.SchemaVersion == "2" {
		return validate(compiledV2, "report.v2.schema.json", report)
	}
	return validate(compiled, "report.schema.json", report)
}

// ValidateLoadReport checks a load report against load.schema.json; the
// error lists every place it strays, with the schema's reason.
func ValidateLoadReport(report []byte) error {
	return validate(compiledLoad, "load.schema.json", report)
}

func validate(compiled func() (*jsonschema.Schema, error), name string, report []byte) error {
	s, err := compiled()
	if err != nil {
		return err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(report))
	if err != nil {
		return fmt.Errorf("schema: the report is not JSON: %w", err)
	}
	if err := s.Validate(doc); err != nil {
		return fmt.Errorf("schema: the report does not validate against %s: %w", name, err)
	}
	return nil
}

// ErrNoXmllint is returned by ValidateJUnit where xmllint (Debian's
// libxml2-utils) is not installed; tests skip on it.
var ErrNoXmllint = errors.New("schema: xmllint is not installed (Debian package libxml2-utils)")

// ValidateJUnit checks a JUnit report against junit.xsd with xmllint,
// libxml2's validator: Go has no XSD validator, and libxml2's is the one
// most CI tooling relies on. The error holds xmllint's complaints.
func ValidateJUnit(ctx context.Context, report []byte) error {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		return ErrNoXmllint
	}
	dir, err := os.MkdirTemp("", "xdsconform-junit-")
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	defer os.RemoveAll(dir)
	xsd, doc := filepath.Join(dir, "junit.xsd"), filepath.Join(dir, "report.xml")
	if err := os.WriteFile(xsd, JUnitXSD, 0o600); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if err := os.WriteFile(doc, report, 0o600); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, xmllint, "--noout", "--nonet", "--schema", xsd, doc)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("schema: the report does not validate against junit.xsd (%w): %s", err, clip(out.String()))
	}
	return nil
}

// clip bounds xmllint's output in an error: a report with a systematic
// fault has one complaint per testcase.
func clip(s string) string {
	const max = 4 << 10
	s = strings.TrimSpace(s)
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
