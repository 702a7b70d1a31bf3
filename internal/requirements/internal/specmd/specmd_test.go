package specmd

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const doc = `# Catalogue

2 requirements in 1 areas, plus things.

### A: The A area

#### A-1: First rule

- **Binds** server | **Strength** SHOULD | **Variants** SotW, ADS, per-type
- **Provenance** SRC (001)
- **Source** S1 §Here ("a quote")
- **Requirement** The server does a thing.
- **Test** H-client: check the thing.
- **Black-box** Yes (FX)
- **Note** A note.

#### A-2: Second rule
- **Binds** client | **Strength** MUST | **Variants** All
- **Provenance** ADDED
- **Source** DP somewhere
- **Requirement** The client does
  another thing	across lines.
- **Test** H-server: check it.
- **Black-box** No

## Appendix

- **Not** a rule bullet.
`

func TestParse(t *testing.T) {
	es, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{ID: "A-1", Title: "First rule", Binds: "server", Strength: "SHOULD", Variants: "SotW, ADS, per-type",
			Provenance: "SRC (001)", Source: `S1 §Here ("a quote")`, Text: "The server does a thing.",
			Test: "H-client: check the thing.", BlackBox: "Yes (FX)", Note: "A note."},
		{ID: "A-2", Title: "Second rule", Binds: "client", Strength: "MUST", Variants: "All",
			Provenance: "ADDED", Source: "DP somewhere", Text: "The client does\n  another thing\tacross lines.",
			Test: "H-server: check it.", BlackBox: "No"},
	}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("Parse =\n%+v\nwant\n%+v", es, want)
	}

	var b bytes.Buffer
	if err := WriteTSV(&b, es); err != nil {
		t.Fatal(err)
	}
	wantTSV := Header + "\n" +
		"A-1\tFirst rule\tserver\tSHOULD\tSotW, ADS, per-type\tSRC (001)\tS1 §Here (\"a quote\")\tThe server does a thing.\tH-client: check the thing.\tYes (FX)\tA note.\n" +
		"A-2\tSecond rule\tclient\tMUST\tAll\tADDED\tDP somewhere\tThe client does another thing across lines.\tH-server: check it.\tNo\t\n"
	if b.String() != wantTSV {
		t.Errorf("WriteTSV =\n%q\nwant\n%q", b.String(), wantTSV)
	}
	for i, l := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if n := strings.Count(l, "\t") + 1; n != Columns {
			t.Errorf("TSV line %d has %d fields, want %d", i+1, n, Columns)
		}
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]struct{ doc, want string }{
		"count mismatch":   {strings.Replace(doc, "2 requirements", "3 requirements", 1), "declares 3"},
		"no summary":       {strings.Replace(doc, "2 requirements in 1 areas", "", 1), "no \"N requirements"},
		"bad heading":      {strings.Replace(doc, "#### A-2: Second rule", "#### Second rule", 1), "not of the form"},
		"missing binds":    {strings.Replace(doc, "- **Binds** server", "- **Bind** server", 1), "not followed by"},
		"bad strength":     {strings.Replace(doc, "MUST", "REQUIRED", 1), "not followed by"},
		"duplicate ID":     {strings.Replace(doc, "A-2", "A-1", 1), "already defined"},
		"trailing header":  {doc + "\n#### A-3: Dangling\n", "has no Binds line"},
		"missing source":   {strings.Replace(doc, "- **Source** DP somewhere\n", "", 1), `A-2 (heading on line 17) has no "- **Source** ..." line`},
		"missing test":     {strings.Replace(doc, "- **Test** H-client: check the thing.\n", "", 1), `A-1 (heading on line 7) has no "- **Test** ..." line`},
		"missing blackbox": {strings.Replace(doc, "- **Black-box** No\n", "", 1), `no "- **Black-box** ..." line`},
		"unknown bullet":   {strings.Replace(doc, "- **Note** A note.", "- **Remark** A note.", 1), "is not one of the bullets"},
		"plain bullet":     {strings.Replace(doc, "- **Note** A note.", "- A note.", 1), "is not one of the bullets"},
		"repeated bullet":  {strings.Replace(doc, "- **Note** A note.", "- **Test** again", 1), `second "- **Test**" bullet`},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestWriteTSVNormalisesWhitespace(t *testing.T) {
	var b bytes.Buffer
	e := Entry{ID: "A-1", Title: "a\tb", Text: "one\n  two \r\n three", Note: " x  y "}
	if err := WriteTSV(&b, []Entry{e}); err != nil {
		t.Fatal(err)
	}
	want := Header + "\nA-1\ta b\t\t\t\t\t\tone two three\t\t\tx  y\n"
	if b.String() != want {
		t.Errorf("WriteTSV = %q, want %q", b.String(), want)
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"plain  spaces":   "plain  spaces",
		" trimmed ":       "trimmed",
		"a\tb":            "a b",
		"a \t b":          "a b",
		"a\n\n\nb\r\nc\n": "a b c",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

// A section of rules the repository adds after the shared document
// declares its own count, and the whole is checked against their sum.
func TestParseCountsAddedSections(t *testing.T) {
	added := doc + `
## Appendix D. Rules this repository adds

1 requirement in 1 area is added here.

#### B-1: An added rule

- **Binds** both | **Strength** MUST | **Variants** All
- **Provenance** ADDED
- **Source** S1 §There
- **Requirement** Both do it.
- **Test** Check it.
- **Black-box** Yes
`
	es, err := Parse(strings.NewReader(added))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 || es[2].ID != "B-1" {
		t.Fatalf("Parse = %+v, want A-1, A-2 and B-1", es)
	}
	// The added section's count is checked too: an undeclared rule fails.
	if _, err := Parse(strings.NewReader(strings.Replace(added, "1 requirement in 1 area", "0 requirements in 1 area", 1))); err == nil || !strings.Contains(err.Error(), "declares 2") {
		t.Errorf("Parse of an added section with a wrong count: error %v, want one saying the sum declared is 2", err)
	}
}
