//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/internal/process"
)

// docsMarker, on the line before a fenced block of the docs, says that
// the block's commands run as written from the repository root, with
// xdsconform on PATH, once make e2e-deps has installed the real peers:
// the specs below run them so, and a command that no longer works fails
// make e2e rather than the reader who copies it.
const docsMarker = "<!-- e2e: run from the repository root -->"

// docPages are the pages, relative to the repository root, whose marked
// blocks are run: the README, scenarios/regressions' and every page under
// docs/.
func docPages() []string {
	pages, err := filepath.Glob(filepath.Join(repoRoot(), "docs", "*.md"))
	if err != nil {
		panic(err)
	}
	out := []string{"README.md", filepath.Join("scenarios", "regressions", "README.md")}
	for _, p := range pages {
		out = append(out, filepath.Join("docs", filepath.Base(p)))
	}
	return out
}

// docBlock is one fenced block of a page.
type docBlock struct {
	page string
	line int // of the opening fence, 1-based
	text string
	// marked says the block carries docsMarker.
	marked bool
}

func (b docBlock) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

// docBlocks reads the fenced blocks of every page in docPages.
func docBlocks() []docBlock {
	var out []docBlock
	for _, page := range docPages() {
		f, err := os.Open(filepath.Join(repoRoot(), page))
		if err != nil {
			panic(fmt.Sprintf("reading the docs: %v", err))
		}
		sc := bufio.NewScanner(f)
		var (
			in       bool
			cur      docBlock
			body     strings.Builder
			previous string
		)
		for n := 1; sc.Scan(); n++ {
			line := sc.Text()
			switch {
			case !in && strings.HasPrefix(line, "```"):
				in = true
				cur = docBlock{page: page, line: n, marked: strings.TrimSpace(previous) == docsMarker}
				body.Reset()
			case in && strings.TrimSpace(line) == "```":
				in = false
				cur.text = body.String()
				out = append(out, cur)
			case in:
				body.WriteString(line + "\n")
			}
			previous = line
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			panic(fmt.Sprintf("reading %s: %v", page, err))
		}
	}
	return out
}

// repoRoot is the repository root: the e2e package runs in e2e/.
func repoRoot() string {
	d, err := filepath.Abs("..")
	if err != nil {
		panic(err)
	}
	return d
}

// runsARealPeer reports whether a block's commands name a driver of the
// real peers: such a block must be marked, so that it is run.
func runsARealPeer(text string) bool {
	return strings.Contains(text, "e2e/peers/") || strings.Contains(text, "driver.js") || strings.Contains(text, "driver.py")
}

// docsRunBound bounds one block's run: each runs one or a few families of
// the client suite against real clients, well under a minute each.
const docsRunBound = 10 * time.Minute

var _ = Describe("the docs' commands", Ordered, ContinueOnFailure, Label("docs", "client"), func() {
	var bin string
	blocks := docBlocks()

	BeforeAll(func() { bin = buildCLI() })

	It("marks every block that runs a real peer's driver, and has some", func() {
		marked := 0
		for _, b := range blocks {
			if b.marked {
				marked++
				continue
			}
			assert.False(GinkgoT(), runsARealPeer(b.text), "%s runs a real peer's driver but is not marked %q, so nothing checks that it works", b, docsMarker)
		}
		require.NotZero(GinkgoT(), marked, "no block of the docs is marked to be run")
	})

	for _, b := range blocks {
		if !b.marked {
			continue
		}
		It(fmt.Sprintf("runs %s as written", b), func() {
			runDocBlock(b, bin)
		})
	}
})

// buildCLI builds the xdsconform command into a directory of its own,
// removed after the spec, and returns the directory.
func buildCLI() string {
	bin := GinkgoT().TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, "xdsconform"), "./cmd/xdsconform")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	require.NoError(GinkgoT(), err, "building xdsconform: %s", out)
	return bin
}

// runDocBlock runs the commands of b under sh -e from the repository root,
// with the xdsconform in bin first on PATH, and requires them all to
// succeed (exit 0: every failure is in the peer's known-failing list).
func runDocBlock(b docBlock, bin string) {
	t := GinkgoT()
	ctx, cancel := context.WithTimeout(context.Background(), docsRunBound)
	defer cancel()
	GinkgoWriter.Printf("%s:\n%s", b, b.text)
	proc, err := process.StartShell(ctx, "set -e\n"+b.text, process.Options{
		Dir:        repoRoot(),
		Env:        []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
		StderrTail: 64 << 10,
	})
	require.NoError(t, err)
	select {
	case <-proc.Exited():
	case <-ctx.Done():
		_ = proc.Stop(2 * time.Second)
		require.Fail(t, "timed out", "%s did not finish within %v; its output ends with:\n%s", b, docsRunBound, proc.Tail())
	}
	GinkgoWriter.Printf("%s", proc.Tail())
	require.NoError(t, proc.ExitErr(), "%s failed as written; its output ends with:\n%s", b, proc.Tail())
	_ = proc.Stop(time.Second) // reaps what is left of the group, if anything
}
