package specmd

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const doc = `# Catalogue

2 requirements in 1 areas, plus things.

#### A-1: First rule

- **Binds** server | **Strength** SHOULD | **Variants** SotW, ADS, per-type
- **Provenance** SRC

#### A-2: Second rule
- **Binds** client | **Strength** MUST | **Variants** All
`

func TestParse(t *testing.T) {
	es, err := Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"A-1", "First rule", "server", "SHOULD", "SotW, ADS, per-type"},
		{"A-2", "Second rule", "client", "MUST", "All"},
	}
	if !reflect.DeepEqual(es, want) {
		t.Errorf("Parse = %+v, want %+v", es, want)
	}

	var b bytes.Buffer
	if err := WriteTSV(&b, es); err != nil {
		t.Fatal(err)
	}
	wantTSV := Header + "\nA-1\tFirst rule\tserver\tSHOULD\tSotW, ADS, per-type\nA-2\tSecond rule\tclient\tMUST\tAll\n"
	if b.String() != wantTSV {
		t.Errorf("WriteTSV = %q, want %q", b.String(), wantTSV)
	}
}

func TestParseRejects(t *testing.T) {
	tests := map[string]struct{ doc, want string }{
		"count mismatch":  {strings.Replace(doc, "2 requirements", "3 requirements", 1), "declares 3"},
		"no summary":      {strings.Replace(doc, "2 requirements in 1 areas", "", 1), "no \"N requirements"},
		"bad heading":     {strings.Replace(doc, "#### A-2: Second rule", "#### Second rule", 1), "not of the form"},
		"missing binds":   {strings.Replace(doc, "- **Binds** server", "- **Bind** server", 1), "not followed by"},
		"bad strength":    {strings.Replace(doc, "MUST", "REQUIRED", 1), "not followed by"},
		"duplicate ID":    {strings.Replace(doc, "A-2", "A-1", 1), "already defined"},
		"trailing header": {doc + "\n#### A-3: Dangling\n", "has no Binds line"},
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

func TestWriteTSVRejectsTabs(t *testing.T) {
	if err := WriteTSV(&bytes.Buffer{}, []Entry{{ID: "A-1", Title: "a\tb"}}); err == nil {
		t.Error("WriteTSV accepted a field with a tab")
	}
}
