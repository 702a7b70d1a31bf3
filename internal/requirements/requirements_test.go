package requirements

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/xdsconform/xdsconform/internal/requirements/internal/specmd"
)

// docPath is the repository's copy of the catalogue document, the one
// catalog.tsv is generated from.
const docPath = "requirements.md"

// sharedPath is where the original document sits relative to this package
// when the shared/ tree is checked out beside the repository.
const sharedPath = "../../../shared/spec/requirements.md"

func TestKnownRequirements(t *testing.T) {
	tests := []struct {
		id, binds, strength, variants, title string
	}{
		{"NONCE-7", "server", "SHOULD", "SotW, ADS, per-type", "Server ignores stale-nonce requests"},
		{"DUP-1", "server", "MUST", "All", "No duplicate names within a response"},
		{"STREAM-1", "client", "MUST", "SotW, Delta, ADS, per-type", "Client speaks first on every stream"},
		{"VALID-1", "both", "MAY", "", "PGV annotations are not a protocol contract"},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			r, ok := Lookup(tt.id)
			if !ok {
				t.Fatalf("Lookup(%q) not found", tt.id)
			}
			want := Requirement{ID: tt.id, Family: strings.SplitN(tt.id, "-", 2)[0], Title: tt.title,
				Binds: tt.binds, Strength: tt.strength, Variants: tt.variants}
			if tt.variants == "" {
				want.Variants = r.Variants
			}
			// The long text fields are checked below for one rule.
			got := r
			got.BlackBox, got.Provenance, got.Source, got.Text, got.Test, got.Note = "", "", "", "", "", ""
			if got != want {
				t.Errorf("Lookup(%q) = %+v, want %+v", tt.id, got, want)
			}
		})
	}
}

func TestRequirementFullEntry(t *testing.T) {
	r, _ := Lookup("NONCE-7")
	want := Requirement{
		ID: "NONCE-7", Family: "NONCE", Title: "Server ignores stale-nonce requests",
		Binds: "server", Strength: "SHOULD", Variants: "SotW, ADS, per-type",
		BlackBox:   "Yes (FX)",
		Provenance: "SRC (001, 002, 004)",
		Source:     `S1 §Resource updates ("should not send a DiscoveryResponse for any DiscoveryRequest that has a stale nonce")`,
		Text:       "A request whose nonce is older than the latest response sent for that type is stale and should not trigger a response.",
		Test:       "H-client + FX: receive Resp(N=A); FX-publish a change so the server sends Resp(N=B); then send Req(N=A, same names); assert no response is caused by it (no response within 5 s other than ones due to FX changes).",
		Note:       "Contested: envoy issue #10363 (open) shows ignored stale requests can lose subscription changes; gate on NONCE-8 rather than on this rule.",
	}
	if r != want {
		t.Errorf("Lookup(NONCE-7) =\n%+v\nwant\n%+v", r, want)
	}
	// A rule without a Note bullet has an empty Note.
	if r, _ := Lookup("STREAM-1"); r.Note != "" || r.BlackBox != "Yes" {
		t.Errorf("STREAM-1: Note %q, BlackBox %q; want empty and Yes", r.Note, r.BlackBox)
	}
	// Every rule has its required fields, and its family is its ID prefix.
	for _, r := range All() {
		if r.Family+"-" != r.ID[:len(r.Family)+1] {
			t.Errorf("%s: family %q", r.ID, r.Family)
		}
		for name, f := range map[string]string{"title": r.Title, "variants": r.Variants, "black-box": r.BlackBox,
			"provenance": r.Provenance, "source": r.Source, "requirement": r.Text, "test": r.Test} {
			if f == "" {
				t.Errorf("%s: empty %s", r.ID, name)
			}
		}
	}
}

// The expected numbers are the document's summary table ("196 requirements
// in 30 areas", the All row and "By party bound") plus the rules the
// repository adds in its own appendix (4 in the ROB area: 3 server, 1
// client; 1 in the SEQ area, client; 2 in the LOC area, one binding both,
// one client; all MUST), so a catalogue that loses or duplicates rules
// fails here.
func TestCatalogueMatchesDocumentSummary(t *testing.T) {
	all := All()
	if len(all) != 196+7 {
		t.Fatalf("catalogue has %d requirements, document summary says 196 and the repository adds 7", len(all))
	}

	strength := map[string]int{}
	binds := map[string]int{}
	areas := map[string]bool{}
	for _, r := range all {
		strength[r.Strength]++
		binds[r.Binds]++
		areas[r.ID[:strings.LastIndexByte(r.ID, '-')]] = true
	}
	if want := map[string]int{"MUST": 132 + 7, "SHOULD": 43, "MAY": 21}; !reflect.DeepEqual(strength, want) {
		t.Errorf("by strength = %v, want %v", strength, want)
	}
	if want := map[string]int{"server": 89 + 3, "client": 84 + 3, "both": 21 + 1, "proxy": 2}; !reflect.DeepEqual(binds, want) {
		t.Errorf("by binds = %v, want %v", binds, want)
	}
	if len(areas) != 30+3 {
		t.Errorf("%d areas, want 33", len(areas))
	}
	// Catalogue order is document order: the shared rules, then the added.
	if first, last := all[0].ID, all[len(all)-1].ID; first != "STREAM-1" || last != "LOC-2" {
		t.Errorf("first/last = %s/%s, want STREAM-1/LOC-2", first, last)
	}
}

func TestAllReturnsACopy(t *testing.T) {
	a := All()
	a[0].ID = "changed"
	if got := All()[0].ID; got != "STREAM-1" {
		t.Errorf("All() shares its backing array: first ID now %q", got)
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, id := range []string{"", "NONCE-0", "NONCE-999", "nonce-7", "SUP-1", " NONCE-7"} {
		if r, ok := Lookup(id); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", id, r)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		ids     []string
		wantErr string
	}{
		{"nil", nil, ""},
		{"all known", []string{"NONCE-7", "DUP-1", "XDSTP-20"}, ""},
		{"one unknown", []string{"NONCE-7", "NONCE-99"}, `unknown requirement ID "NONCE-99"`},
		{"every unknown named once", []string{"X-1", "DUP-1", "nonce-7", "X-1", ""}, `unknown requirement IDs "X-1", "nonce-7", ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.ids)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Validate(%q) = %q, want %q", tt.ids, got, tt.wantErr)
			}
		})
	}
}

func TestLoadRejectsMalformed(t *testing.T) {
	line := "A-1\tt\tserver\tMUST\tAll\tSRC\tS1\ttext\ttest\tYes\t\n"
	if rs, err := load(specmd.Header + "\n" + line); err != nil || len(rs) != 1 || rs[0].BlackBox != "Yes" || rs[0].Family != "A" {
		t.Fatalf("load of a good line = %+v, %v", rs, err)
	}
	for name, tsv := range map[string]string{
		"bad header":   "id\ttitle\n",
		"short line":   specmd.Header + "\nA-1\tt\tserver\tMUST\n",
		"duplicate ID": specmd.Header + "\n" + line + line,
		"no family":    specmd.Header + "\n" + strings.Replace(line, "A-1", "A1", 1),
	} {
		if _, err := load(tsv); err == nil {
			t.Errorf("%s: load accepted %q", name, tsv)
		}
	}
}

// TestCatalogUpToDate regenerates the catalogue in memory with the
// generator's own code from the repository's copy of the document and
// compares it with the embedded file, so a document edit without make
// generate is caught.
func TestCatalogUpToDate(t *testing.T) {
	f, err := os.Open(docPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	entries, err := specmd.Parse(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", docPath, err)
	}
	var buf bytes.Buffer
	if err := specmd.WriteTSV(&buf, entries); err != nil {
		t.Fatal(err)
	}
	if buf.String() != catalogTSV {
		t.Errorf("catalog.tsv is stale (%d bytes embedded, %d regenerated from %s): run make generate", len(catalogTSV), buf.Len(), docPath)
	}
}

// additionsHeading starts the repository's own appendix of rules, the
// only part of requirements.md that is not the shared document.
const additionsHeading = "\n## Appendix D. Rules this repository adds\n"

// TestCatalogCopyMatchesShared checks, where the shared/ tree is checked out
// beside the repository, that requirements.md is still a byte-identical copy
// of the shared document, followed only by the repository's own appendix.
func TestCatalogCopyMatchesShared(t *testing.T) {
	shared, err := os.ReadFile(sharedPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s not present (shared/ tree not checked out beside the repo); cannot compare the copy", sharedPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	local, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	copied, added, ok := bytes.Cut(local, []byte(additionsHeading))
	if !ok {
		t.Fatalf("internal/requirements/requirements.md has no %q heading for the repository's own rules", strings.TrimSpace(additionsHeading))
	}
	if !bytes.Equal(shared, copied) {
		t.Errorf("internal/requirements/requirements.md, up to its own appendix, differs from shared/spec/requirements.md: copy the shared document over that part and run make generate")
	}
	if bytes.Contains(added, []byte("\n## ")) {
		t.Errorf("the repository's appendix must be the last section of internal/requirements/requirements.md")
	}
}

// TestCatalogueVersion checks that the catalogue version is the hash of
// the requirements.md beside this file, so that it changes exactly when
// the document does.
func TestCatalogueVersion(t *testing.T) {
	b, err := os.ReadFile("requirements.md")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	if want := "sha256:" + hex.EncodeToString(sum[:]); CatalogueVersion() != want {
		t.Errorf("CatalogueVersion() = %s, want %s", CatalogueVersion(), want)
	}
}
