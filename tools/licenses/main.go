// Command licenses checks that every module a Go module builds is under an
// OSI-approved licence, so that the project can say that everything it
// builds is open source.
//
//	go run . [-tags e2e,soak] [-exceptions FILE] DIR...
//
// For each module root DIR it lists every package that any package or test
// of that module builds (go list -deps -test, once without build tags and
// once with each of -tags), reads the licence files at the root of every
// module they come from in the module cache, and classifies their text with
// github.com/google/licensecheck. A module passes only when each of its
// licence files is recognised (most of its words match known licences) and
// every licence found is on the allow-list below. Anything else fails with
// the module's name and what was found: a licence not on the list (the
// Business Source License by name), a file nothing recognises, or no
// licence file at all. An unknown licence fails too: a classifier that
// passed what it could not read would let anything through.
//
// It lives in a module of its own so that its dependency does not enter
// the module graph of whoever imports xdsconform.
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/google/licensecheck"
)

// osiApproved lists the licences, by SPDX ID, that the Open Source
// Initiative has approved and that modules here use. A licence joins it
// only when it is on opensource.org/licenses.
var osiApproved = map[string]bool{
	"0BSD":             true,
	"Apache-2.0":       true,
	"BSD-2-Clause":     true,
	"BSD-3-Clause":     true,
	"BSL-1.0":          true, // Boost Software License, not the Business Source License
	"ISC":              true,
	"MIT":              true,
	"MIT-0":            true,
	"MPL-2.0":          true,
	"Unicode-DFS-2016": true,
	"Unlicense":        true,
	"Zlib":             true,
}

// minCoverage is the share of a licence file's words that known licences
// must match for the file to count as recognised. Copyright lines and
// headers make up the rest; below it, something unread may hide in the
// file, so it fails as unknown.
const minCoverage = 75.0

// busl recognises the Business Source License, which licensecheck does not
// know, so that a module under it fails with its name rather than as
// unknown: Consul has been under it since 1.17. The pattern is the grant in
// its Terms section, which is the same in every copy.
var busl = licensecheck.License{
	ID:   "BUSL-1.1",
	Type: licensecheck.Unrestricted, // unused: the allow-list decides
	URL:  "https://mariadb.com/bsl11/",
	LRE: `The Licensor hereby grants you the right to copy, modify, create derivative
works, redistribute, and make non-production use of the Licensed Work. The
Licensor may make an Additional Use Grant, above, permitting limited production use.`,
}

// listTimeout bounds one go list, which may download a module graph of
// hundreds of modules first.
const listTimeout = 15 * time.Minute

// licenceFile matches the names under which modules keep their licence.
var licenceFile = regexp.MustCompile(`(?i)^(licen[cs]e|copying|unlicense)([.-].*)?$`)

func main() {
	tags := flag.String("tags", "", "comma-separated build tags, each also listed on its own (e.g. e2e,soak)")
	exceptionsFile := flag.String("exceptions", "", "file of 'MODULE FILE REASON' lines: licence files not read, each with the reason")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: licenses [-tags T1,T2] [-exceptions FILE] MODULE_DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	exceptions, err := readExceptions(*exceptionsFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		os.Exit(2)
	}
	scanner, err := newScanner()
	if err != nil {
		fmt.Fprintln(os.Stderr, "licenses:", err)
		os.Exit(2)
	}
	bad := 0
	for _, dir := range flag.Args() {
		mods, err := buildModules(dir, splitTags(*tags))
		if err != nil {
			fmt.Fprintln(os.Stderr, "licenses:", err)
			os.Exit(2)
		}
		counts := map[string]int{}
		dirBad := 0
		for _, m := range mods {
			v := check(scanner, m, exceptions[m.Path])
			if !v.ok() {
				fmt.Printf("%s: %s@%s: %s\n", dir, m.Path, m.Version, v)
				dirBad++
				continue
			}
			for _, id := range v.ids {
				counts[id]++
			}
		}
		if dirBad == 0 {
			fmt.Printf("%s: the %d modules it builds are all under OSI-approved licences (modules by licence: %s)\n", dir, len(mods), summary(counts))
		}
		bad += dirBad
	}
	if bad > 0 {
		fmt.Printf("FAIL: %d modules are not under an OSI-approved licence, or theirs could not be classified\n", bad)
		os.Exit(1)
	}
}

// module is one dependency module, where the module cache keeps it.
type module struct {
	Path, Version, Dir string
}

// buildModules lists the modules whose packages any package or test of the
// module at dir builds, without tags and with each tag, leaving out the
// module itself and modules replaced by directories of this repository
// (they are under the repository's own licence).
func buildModules(dir string, tags []string) ([]module, error) {
	seen := map[string]module{}
	for _, tag := range append([]string{""}, tags...) {
		args := []string{"list", "-deps", "-test", "-json=ImportPath,Standard,Module"}
		if tag != "" {
			args = append(args, "-tags", tag)
		}
		args = append(args, "./...", "tool") // the module's packages and the tools its go.mod names
		out, err := goList(dir, args)
		if err != nil {
			return nil, fmt.Errorf("go list in %s (tags %q): %w", dir, tag, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p struct {
				Standard bool
				Module   *struct {
					Path, Version, Dir string
					Main               bool
					Replace            *struct{ Path, Version, Dir string }
				}
			}
			if err := dec.Decode(&p); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return nil, fmt.Errorf("reading go list in %s: %w", dir, err)
			}
			if p.Standard || p.Module == nil || p.Module.Main {
				continue
			}
			m := module{Path: p.Module.Path, Version: p.Module.Version, Dir: p.Module.Dir}
			if r := p.Module.Replace; r != nil {
				if r.Version == "" { // a directory: this repository's own code
					continue
				}
				m = module{Path: r.Path, Version: r.Version, Dir: r.Dir}
			}
			seen[m.Path+"@"+m.Version] = m
		}
	}
	return slices.SortedFunc(maps.Values(seen), func(a, b module) int { return cmp.Compare(a.Path, b.Path) }), nil
}

// goList runs go with args in dir, bounded by listTimeout (downloads of a
// heavy peer's module graph included), and returns its output.
func goList(dir string, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// verdict is what the licence files of one module say.
type verdict struct {
	ids     []string // every licence recognised, sorted
	problem string   // empty when the module passes
}

func (v verdict) ok() bool { return v.problem == "" }

func (v verdict) String() string {
	if v.ok() {
		return strings.Join(v.ids, ", ")
	}
	return v.problem
}

func newScanner() (*licensecheck.Scanner, error) {
	s, err := licensecheck.NewScanner(append(licensecheck.BuiltinLicenses(), busl))
	if err != nil {
		return nil, fmt.Errorf("building the licence scanner: %w", err)
	}
	return s, nil
}

// check classifies the licence files at the root of one module, but for
// those the exceptions leave out.
func check(s *licensecheck.Scanner, m module, skip map[string]string) verdict {
	if m.Dir == "" {
		return verdict{problem: "not in the module cache (run go mod download)"}
	}
	entries, err := os.ReadDir(m.Dir)
	if err != nil {
		return verdict{problem: fmt.Sprintf("reading %s: %v", m.Dir, err)}
	}
	found := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() || !licenceFile.MatchString(e.Name()) || strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		if _, ok := skip[e.Name()]; ok {
			continue
		}
		text, err := os.ReadFile(filepath.Join(m.Dir, e.Name()))
		if err != nil {
			return verdict{problem: fmt.Sprintf("reading %s: %v", e.Name(), err)}
		}
		v := classify(s, e.Name(), text)
		if !v.ok() {
			return v
		}
		for _, id := range v.ids {
			found[id] = true
		}
	}
	// A file read names a licence at least, or check returned above.
	if len(found) == 0 {
		return verdict{problem: "no licence file at the module's root"}
	}
	return verdict{ids: slices.Sorted(maps.Keys(found))}
}

// classify says which licences one file's text is under: every licence
// found must be OSI-approved, and together they must cover the file.
func classify(s *licensecheck.Scanner, name string, text []byte) verdict {
	cov := s.Scan(text)
	found := map[string]bool{}
	for _, m := range cov.Match {
		found[m.ID] = true
	}
	ids := slices.Sorted(maps.Keys(found))
	refused := slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return osiApproved[id] })
	switch {
	case len(refused) > 0:
		return verdict{ids: ids, problem: fmt.Sprintf("%s is under %s, not an OSI-approved licence", name, strings.Join(refused, ", "))}
	case len(ids) == 0:
		return verdict{problem: fmt.Sprintf("%s: no licence recognised (unknown licences fail)", name)}
	case cov.Percent < minCoverage:
		return verdict{ids: ids, problem: fmt.Sprintf("%s: %s cover only %.0f%% of the file, the rest is unclassified (unknown licences fail)", name, strings.Join(ids, ", "), cov.Percent)}
	}
	return verdict{ids: ids}
}

// readExceptions reads 'MODULE FILE REASON' lines, # starting a comment,
// into reasons by module and file. An exception names one licence file of
// one module, never a whole module: the module's other licence files are
// still read, so the exception cannot hide the licence of its code.
func readExceptions(path string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	if path == "" {
		return out, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading exceptions: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 {
			return nil, fmt.Errorf("%s:%d: an exception needs a module, a licence file and the reason", path, n)
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string]string{}
		}
		out[f[0]][f[1]] = strings.Join(f[2:], " ")
	}
	return out, sc.Err()
}

func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

// summary lists the licences by how many modules are under each, most
// first.
func summary(counts map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}
