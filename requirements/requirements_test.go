package requirements

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/xdsconform/xdsconform/requirements/internal/specmd"
)

// specPath is where the catalogue document sits relative to this package
// when the shared/ tree is checked out beside the repository.
const specPath = "../../shared/spec/requirements.md"

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
			want := Requirement{ID: tt.id, Title: tt.title, Binds: tt.binds, Strength: tt.strength, Variants: tt.variants}
			if tt.variants == "" {
				want.Variants = r.Variants
			}
			if r != want {
				t.Errorf("Lookup(%q) = %+v, want %+v", tt.id, r, want)
			}
		})
	}
}

// The expected numbers are the document's summary table ("196 requirements
// in 30 areas", the All row and "By party bound"), so a catalogue that loses
// or duplicates rules fails here.
func TestCatalogueMatchesDocumentSummary(t *testing.T) {
	all := All()
	if len(all) != 196 {
		t.Fatalf("catalogue has %d requirements, document summary says 196", len(all))
	}

	strength := map[string]int{}
	binds := map[string]int{}
	areas := map[string]bool{}
	for _, r := range all {
		strength[r.Strength]++
		binds[r.Binds]++
		areas[r.ID[:strings.LastIndexByte(r.ID, '-')]] = true
	}
	if want := map[string]int{"MUST": 132, "SHOULD": 43, "MAY": 21}; !reflect.DeepEqual(strength, want) {
		t.Errorf("by strength = %v, want %v", strength, want)
	}
	if want := map[string]int{"server": 89, "client": 84, "both": 21, "proxy": 2}; !reflect.DeepEqual(binds, want) {
		t.Errorf("by binds = %v, want %v", binds, want)
	}
	if len(areas) != 30 {
		t.Errorf("%d areas, want 30", len(areas))
	}
	// Catalogue order is document order.
	if first, last := all[0].ID, all[len(all)-1].ID; first != "STREAM-1" || last != "VALID-1" {
		t.Errorf("first/last = %s/%s, want STREAM-1/VALID-1", first, last)
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
	for name, tsv := range map[string]string{
		"bad header":   "id\ttitle\n",
		"short line":   specmd.Header + "\nA-1\tt\tserver\tMUST\n",
		"duplicate ID": specmd.Header + "\nA-1\tt\tserver\tMUST\tAll\nA-1\tt\tserver\tMUST\tAll\n",
	} {
		if _, err := load(tsv); err == nil {
			t.Errorf("%s: load accepted %q", name, tsv)
		}
	}
}

// TestCatalogUpToDate regenerates the catalogue in memory with the
// generator's own code and compares it with the embedded file, so a spec
// edit without go generate is caught wherever shared/ is present.
func TestCatalogUpToDate(t *testing.T) {
	f, err := os.Open(specPath)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s not present (shared/ tree not checked out beside the repo); cannot check catalog.tsv freshness", specPath)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	entries, err := specmd.Parse(f)
	if err != nil {
		t.Fatalf("parsing %s: %v", specPath, err)
	}
	var buf bytes.Buffer
	if err := specmd.WriteTSV(&buf, entries); err != nil {
		t.Fatal(err)
	}
	if buf.String() != catalogTSV {
		t.Errorf("catalog.tsv is stale (%d bytes embedded, %d regenerated): run go generate ./requirements", len(catalogTSV), buf.Len())
	}
}
