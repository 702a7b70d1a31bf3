// Package footprint checks what a program that imports the harness's public
// packages links: none of the container stack (testcontainers-go, the
// moby and docker clients, OpenTelemetry, gopsutil) and none of the
// built-in peers, which only the packages that register them
// (docker, peers/builtin) bring, and only to programs that import them
// (issue 14, item 4). The public packages are listed without their own
// tests, the worked example (examples/embedded) with them. tools/footprint.sh measures the same from outside
// the module.
package footprint

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const module = "github.com/xdsconform/xdsconform"

// external matches the packages of other modules an importer must not
// link; of the module's own, docker and peers/ are forbidden (isHeavy).
var external = regexp.MustCompile(`testcontainers|/moby/|docker|opentelemetry|gopsutil`)

// isHeavy says an importer must not link package p.
func isHeavy(p string) bool {
	p = plain(p)
	if p == module || strings.HasPrefix(p, module+"/") {
		return p == module+"/docker" || strings.HasPrefix(p, module+"/peers/")
	}
	return external.MatchString(p)
}

// importerFacing are the packages an importer of the suites uses, listed
// without their tests: a package's own tests may run the built-in or
// container targets (targets' and conformance's do), which no importer
// links. conformance joins them when the checkout has it.
var importerFacing = []string{
	"./scenarios/...", "./engine", "./targets", "./fixture/...", "./fakeclient", "./fakeserver",
	"./reports/...", "./results", "./transcript", "./observer", "./wire",
}

// optional are importer-facing packages the checkout may not have yet.
var optional = []string{"conformance"}

// embedding are the packages whose tests are an importer's tests (the
// worked examples, server and client): listed with their tests, when the
// checkout has them.
var embedding = []string{"examples/embedded", "examples/embedded-client"}

// mustFind are packages the listing has to contain, so that a pattern
// that matches nothing cannot make the check pass.
var mustFind = []string{"scenarios", "scenarios/scenariofile", "engine", "targets", "fixture", "fakeclient", "fakeserver", "reports", "results", "transcript", "observer", "wire"}

// present are those of dirs the checkout has.
func present(t *testing.T, dirs []string) []string {
	t.Helper()
	var out []string
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(root(t), dir)); err == nil {
			out = append(out, dir)
		}
	}
	return out
}

// root is the module's root directory: two levels up from this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", dir, err)
	}
	return dir
}

// graph is an import graph as go list -deps gives it: every package
// reached and what each imports.
type graph map[string][]string

// list runs go list -deps (with -test when tests) on patterns in the
// module root, bounded in time.
func list(t *testing.T, tests bool, patterns ...string) graph {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the packages: %v", err)
	}
	args := []string{"list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`}
	if tests {
		args = append(args, "-test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd, append(args, patterns...)...)
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	g := graph{}
	for line := range strings.Lines(string(out)) {
		// A test variant reads "p [q.test]": keep its name whole.
		name, imports := line, ""
		if i := strings.Index(line, "] "); i >= 0 && strings.Contains(line[:i], " [") {
			name, imports = line[:i+1], line[i+2:]
		} else if i := strings.IndexByte(line, ' '); i >= 0 {
			name, imports = line[:i], line[i+1:]
		}
		g[strings.TrimSpace(name)] = strings.Fields(imports)
	}
	return g
}

// forbidden are the heavy packages in g, each with the import chain that
// reaches it from a package of the module, as evidence.
func (g graph) forbidden() []string {
	var out []string
	for _, p := range slices.Sorted(maps.Keys(g)) {
		if isHeavy(p) {
			out = append(out, g.chainTo(p))
		}
	}
	return out
}

// plain is p without a test variant's suffix.
func plain(p string) string {
	name, _, _ := strings.Cut(p, " [")
	return name
}

// chainTo is the shortest import chain from a package not under g's
// imports (a root of the listing) to p.
func (g graph) chainTo(p string) string {
	imported := map[string]bool{}
	for _, imps := range g {
		for _, i := range imps {
			imported[i] = true
		}
	}
	parent := map[string]string{}
	var queue []string
	for q := range g {
		if !imported[q] {
			queue = append(queue, q)
			parent[q] = ""
		}
	}
	slices.Sort(queue)
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		if q == p {
			var chain []string
			for c := p; c != ""; c = parent[c] {
				chain = append(chain, c)
			}
			slices.Reverse(chain)
			return strings.Join(chain, " → ")
		}
		for _, i := range g[q] {
			if _, seen := parent[i]; !seen {
				parent[i] = q
				queue = append(queue, i)
			}
		}
	}
	return p
}

// An importer of the public packages links no container stack and no
// built-in peer.
func TestImporterFacingPackagesStayLight(t *testing.T) {
	patterns, find := slices.Clone(importerFacing), slices.Clone(mustFind)
	for _, dir := range present(t, optional) {
		patterns, find = append(patterns, "./"+dir+"/..."), append(find, dir)
	}
	g := list(t, false, patterns...)
	for _, p := range find {
		if _, ok := g[module+"/"+p]; !ok {
			t.Errorf("go list did not find %s/%s: the check would pass without looking at it", module, p)
		}
	}
	for _, chain := range g.forbidden() {
		t.Errorf("an importer links a package it must not (issue 14, item 4): %s", chain)
	}
}

// The worked examples' tests are what an importer's tests link; each one
// the checkout has is checked with its tests, and must be found.
func TestEmbeddingTestsStayLight(t *testing.T) {
	dirs := present(t, embedding)
	if len(dirs) == 0 {
		t.Skipf("none of %v is in this checkout yet", embedding)
	}
	var patterns []string
	for _, dir := range dirs {
		patterns = append(patterns, "./"+dir+"/...")
	}
	g := list(t, true, patterns...)
	for _, dir := range dirs {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(g)), func(p string) bool { return strings.HasPrefix(plain(p), module+"/"+dir) }) {
			t.Errorf("go list found no package of %s", dir)
		}
	}
	for _, chain := range g.forbidden() {
		t.Errorf("an embedding test links a package it must not (issue 14, item 4): %s", chain)
	}
}

// The check sees an edge that comes back: the command registers the
// container and built-in targets, so its listing has both kinds, each
// with a chain from the command. Were the matching wrong, the two tests
// above would pass whatever is linked.
func TestTheCheckSeesTheCommandsHeavyEdges(t *testing.T) {
	got := list(t, false, "./cmd/xdsconform").forbidden()
	for _, want := range []string{"github.com/testcontainers/testcontainers-go", "go.opentelemetry.io/otel",
		"github.com/shirou/gopsutil/v4/process", "github.com/moby/moby/client", module + "/docker", module + "/peers/refserver", module + "/peers/builtin"} {
		found := slices.ContainsFunc(got, func(chain string) bool { return strings.HasSuffix(chain, " → "+want) })
		if !found {
			t.Errorf("the check did not report %s in ./cmd/xdsconform, which links it; it reported:\n%s", want, strings.Join(got, "\n"))
		}
	}
	if len(got) > 0 && !strings.HasPrefix(got[0], module+"/cmd/xdsconform → ") {
		t.Errorf("evidence %q does not start at the command", got[0])
	}
}
