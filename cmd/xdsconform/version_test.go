package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolveVersion(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	stamped := vcs("vcs", "git", "vcs.revision", "0123456789abcdef0123456789abcdef01234567", "vcs.time", "2026-08-20T10:00:00Z", "vcs.modified", "true")
	for _, tc := range []struct {
		name   string
		linker string
		info   *debug.BuildInfo
		want   string
	}{
		{"linker wins", "v1.2.3", &debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}, Settings: stamped}, "v1.2.3"},
		{"go install @version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, "v0.1.0"},
		{"pseudo-version stamped from a checkout", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260820100000-0123456789ab+dirty"}, Settings: stamped}, "v0.0.0-20260820100000-0123456789ab+dirty"},
		{"revision only", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: stamped}, "devel-0123456789ab-dirty (2026-08-20T10:00:00Z)"},
		{"clean revision, no time", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("vcs.revision", "abc", "vcs.modified", "false")}, "devel-abc"},
		{"nothing stamped", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, noVersionInfo},
		{"no build info", "", nil, noVersionInfo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, resolveVersion(tc.linker, tc.info))
		})
	}
}

// versionPattern is what a stamped binary may print: a module version or
// pseudo-version (a release, go install …@v…, a build from a clone) or a VCS
// revision (make build in a git worktree, or a checkout the go command finds
// a revision but no module version for).
var versionPattern = regexp.MustCompile(`^xdsconform version (v\d+\.\d+\.\d+\S*|[0-9a-f]{7,}(-dirty)?|v\d+\.\d+\.\d+-\d+-g[0-9a-f]+(-dirty)?|devel-[0-9a-f]{7,12}(-dirty)? \(\S+\))$`)

// buildHarness builds this command into a temporary directory the way a user
// building from a checkout would, with VCS stamping on (these machines turn
// it off in GOFLAGS; a flag on the command line wins over GOFLAGS).
func buildHarness(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "xdsconform")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", bin, ".")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// inGitWorktree says whether this checkout is a linked git worktree, where
// the go command stamps no VCS information: it looks, as this does, for the
// nearest .git and takes only a directory (a worktree's .git is a file).
func inGitWorktree(t *testing.T) bool {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return !fi.IsDir()
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		dir = parent
	}
}

// TestVersionOfStampedBuild checks that a plain go build -buildvcs=true from
// a clone says a version or revision, never a bare "dev" or nothing.
func TestVersionOfStampedBuild(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git: a build from a checkout cannot be stamped")
	}
	if inGitWorktree(t) {
		t.Skip("a git worktree: the go command stamps no VCS information there (make build names the version with git describe instead)")
	}
	bin := buildHarness(t)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	line := strings.TrimSpace(string(out))
	assert.Regexp(t, versionPattern, line)
	assert.NotContains(t, line, noVersionInfo)
}

// TestVersionOfMakeBuild checks that make build says a version or revision,
// in a clone and in a worktree alike.
func TestVersionOfMakeBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// The Makefile writes bin/xdsconform; the same recipe is run into a
	// temporary directory so that the checkout's binary is left alone.
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "-C", root, "-n", "build")
	recipe, err := cmd.Output()
	require.NoError(t, err)
	script := strings.ReplaceAll(string(recipe), "-o bin/xdsconform", "-o "+filepath.Join(bin, "xdsconform"))
	require.Contains(t, script, "-buildvcs=true", "make build must turn VCS stamping on")
	build := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s: %s", script, out)
	got, err := exec.Command(filepath.Join(bin, "xdsconform"), "--version").Output()
	require.NoError(t, err)
	assert.Regexp(t, versionPattern, strings.TrimSpace(string(got)))
}

// `xdsconform version` says what --version says.
func TestVersionCommand(t *testing.T) {
	code, sub, _ := run(t, "version")
	require.Equal(t, exitOK, code)
	code, flag, _ := run(t, "--version")
	require.Equal(t, exitOK, code)
	assert.Equal(t, flag, sub)
}
