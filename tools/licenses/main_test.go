package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// apache is the repository's own licence, the standard Apache-2.0 text.
func apache(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buslTerms quotes the grant of the Business Source License 1.1, as
// Consul's LICENSE carries it since 1.17.
const buslTerms = `Business Source License 1.1

Terms

The Licensor hereby grants you the right to copy, modify, create derivative
works, redistribute, and make non-production use of the Licensed Work. The
Licensor may make an Additional Use Grant, above, permitting limited production use.
`

func TestClassify(t *testing.T) {
	s, err := newScanner()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, text string
		want       string // the licences, or a fragment of the problem
		ok         bool
	}{
		{"apache", string(apache(t)), "Apache-2.0", true},
		{"business source", buslTerms, "under BUSL-1.1, not an OSI-approved licence", false},
		{"unknown", "You may use this software on Tuesdays only, and never to run a conformance harness.\n", "no licence recognised (unknown licences fail)", false},
		{"known with an unread addition", string(apache(t)) + strings.Repeat("Nothing here may be used on Tuesdays, whatever the text above says. ", 200), "the rest is unclassified", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := classify(s, "LICENSE", []byte(c.text))
			if v.ok() != c.ok || !strings.Contains(v.String(), c.want) {
				t.Fatalf("classify = %q (ok %v), want %q (ok %v)", v, v.ok(), c.want, c.ok)
			}
		})
	}
}

func TestCheckReadsEveryLicenceFile(t *testing.T) {
	s, err := newScanner()
	if err != nil {
		t.Fatal(err)
	}
	write := func(dir, name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		files map[string]string
		skip  map[string]string
		want  string
		ok    bool
	}{
		{"none", map[string]string{"README.md": "hello"}, nil, "no licence file", false},
		{"source named like a licence", map[string]string{"license.go": "package license"}, nil, "no licence file", false},
		{"one good", map[string]string{"LICENSE": string(apache(t))}, nil, "Apache-2.0", true},
		{"a second, bad one", map[string]string{"LICENSE": string(apache(t)), "LICENSE-extra": buslTerms}, nil, "LICENSE-extra is under BUSL-1.1", false},
		{"the bad one excepted", map[string]string{"LICENSE": string(apache(t)), "LICENSE.docs": buslTerms}, map[string]string{"LICENSE.docs": "docs only"}, "Apache-2.0", true},
		{"an exception cannot hide the code's licence", map[string]string{"LICENSE": buslTerms, "LICENSE.docs": string(apache(t))}, map[string]string{"LICENSE.docs": "docs only"}, "BUSL-1.1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range c.files {
				write(dir, name, text)
			}
			v := check(s, module{Path: "example.com/m", Version: "v1.0.0", Dir: dir}, c.skip)
			if v.ok() != c.ok || !strings.Contains(v.String(), c.want) {
				t.Fatalf("check = %q (ok %v), want %q (ok %v)", v, v.ok(), c.want, c.ok)
			}
		})
	}
}

func TestExceptionsNeedAReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exceptions.txt")
	if err := os.WriteFile(path, []byte("# comment\nexample.com/m LICENSE.docs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readExceptions(path); err == nil || !strings.Contains(err.Error(), ":2: an exception needs") {
		t.Fatalf("readExceptions = %v, want a refusal naming line 2", err)
	}
	got, err := readExceptions("exceptions.txt")
	if err != nil || len(got) == 0 {
		t.Fatalf("the committed exceptions.txt: %v, %d modules", err, len(got))
	}
}
