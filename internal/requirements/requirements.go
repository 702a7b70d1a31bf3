// Package requirements is the catalogue of testable rules from the
// requirements document, embedded in the binary so that the harness can
// check, report and explain requirement IDs.
//
// requirements.md in this directory is a byte-identical copy of
// shared/spec/requirements.md, so that a clean clone has the rules without
// the shared/ tree, followed by one appendix of the repository's own: rules
// the protocol documents imply and the shared catalogue lacks (the ROB and
// LOC families), each in a family of its own so the shared numbering never
// shifts. catalog.tsv is generated from that file and checked in: after the
// document changes, copy it over the part before the appendix and run make
// generate (a test fails while catalog.tsv is out of date with the copy,
// and another while the copied part differs from shared/, when shared/ is
// checked out beside the repo).
package requirements

//go:generate go run ./gen requirements.md catalog.tsv

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/xdsconform/xdsconform/internal/requirements/internal/specmd"
)

//go:embed catalog.tsv
var catalogTSV string

// Requirement is one numbered rule of the catalogue. All fields are the
// document's raw Markdown text on one line (backticks and all).
type Requirement struct {
	// ID is the catalogue ID, e.g. "NONCE-7".
	ID string
	// Family is the ID's area prefix, e.g. "NONCE"; it is derived from
	// the ID, not stored in catalog.tsv.
	Family string
	// Title is the rule's one-line title.
	Title string
	// Binds is who the rule binds: "server", "client", "both" or "proxy".
	Binds string
	// Strength is "MUST", "SHOULD" or "MAY".
	Strength string
	// Variants is the free-text list of variants the rule applies to, e.g.
	// "SotW, ADS, per-type". It is kept raw because the document mixes
	// variants, resource types and client profiles in this field.
	Variants string
	// BlackBox says whether and how the rule can be checked from outside:
	// "Yes", "Yes (FX)" (needs the fixture API), "Yes (oracle)" (needs the
	// client's status view), "Yes (gRPC only)", "Partial ...", "No ...".
	BlackBox string
	// Provenance says where the rule comes from and whether it is newer
	// than the source documents, e.g. "SRC (001, 002, 004)" or "ADDED".
	Provenance string
	// Source cites the document section, usually with the quoted sentence
	// the rule rests on.
	Source string
	// Text is the rule itself (the document's "Requirement" bullet).
	Text string
	// Test is the document's idea of how a harness checks the rule.
	Test string
	// Note is the document's remark on the rule, "" when it has none.
	Note string
}

var (
	catalog = mustLoad(catalogTSV)
	byID    = index(catalog)
)

// mustLoad panics on a malformed catalogue: the file is generated and
// embedded, so a bad one is a build defect, and the tests load it too.
func mustLoad(tsv string) []Requirement {
	rs, err := load(tsv)
	if err != nil {
		panic("requirements: embedded catalog.tsv: " + err.Error())
	}
	return rs
}

func load(tsv string) ([]Requirement, error) {
	lines := strings.Split(strings.TrimSuffix(tsv, "\n"), "\n")
	if len(lines) == 0 || lines[0] != specmd.Header {
		return nil, fmt.Errorf("header is not %q", specmd.Header)
	}
	rs := make([]Requirement, 0, len(lines)-1)
	seen := map[string]bool{}
	for i, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != specmd.Columns {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+2, len(f), specmd.Columns)
		}
		if seen[f[0]] {
			return nil, fmt.Errorf("line %d: duplicate ID %s", i+2, f[0])
		}
		seen[f[0]] = true
		family, _, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("line %d: ID %q has no family prefix", i+2, f[0])
		}
		// Column order is specmd.Header's.
		rs = append(rs, Requirement{ID: f[0], Family: family, Title: f[1], Binds: f[2], Strength: f[3], Variants: f[4],
			Provenance: f[5], Source: f[6], Text: f[7], Test: f[8], BlackBox: f[9], Note: f[10]})
	}
	return rs, nil
}

func index(rs []Requirement) map[string]Requirement {
	m := make(map[string]Requirement, len(rs))
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

// Lookup returns the requirement with the given ID. IDs are matched
// exactly: the catalogue writes them in upper case ("NONCE-7").
func Lookup(id string) (Requirement, bool) {
	r, ok := byID[id]
	return r, ok
}

// All returns every requirement in catalogue (document) order. The slice is
// a fresh copy that the caller may modify.
func All() []Requirement {
	return append([]Requirement(nil), catalog...)
}

// Validate returns nil when every ID is in the catalogue, and otherwise an
// error naming every unknown ID (once each, in first-seen order), so that a
// scenario author sees all typos in one go.
func Validate(ids []string) error {
	var unknown []string
	reported := map[string]bool{}
	for _, id := range ids {
		if _, ok := byID[id]; ok || reported[id] {
			continue
		}
		reported[id] = true
		unknown = append(unknown, fmt.Sprintf("%q", id))
	}
	switch len(unknown) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("unknown requirement ID %s", unknown[0])
	default:
		return fmt.Errorf("unknown requirement IDs %s", strings.Join(unknown, ", "))
	}
}
