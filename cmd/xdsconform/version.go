package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// noVersionInfo is what --version and the reports say of a binary that
// carries no version at all, so that a user can tell why, and how to get one.
const noVersionInfo = "devel (no version information: built without VCS stamping)"

// revisionLen is how many hex digits of a VCS revision are shown: as many as
// a Go pseudo-version carries, enough to be unique in any real repository.
const revisionLen = 12

func init() {
	// Resolved once, before any command runs, so that --version, the
	// console's banner and every report's harness_version say the same.
	info, _ := debug.ReadBuildInfo()
	version = resolveVersion(version, info)
}

// resolveVersion is the harness's version, from the best source there is:
// the linker's (-X main.version=…, as make build, the Dockerfile and the
// release builds set it); else the main module's version, which the go
// command records for `go install …@vX.Y.Z` and, since Go 1.24, derives from
// the VCS tags and commit when it stamps a build from a checkout; else the
// VCS revision stamped into the build; else a sentence saying there is none.
// A bare "dev" is never the answer: it tells a bug report nothing.
func resolveVersion(linker string, info *debug.BuildInfo) string {
	if linker != "" {
		return linker
	}
	if info == nil {
		return noVersionInfo
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, when string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if revision == "" {
		return noVersionInfo
	}
	if len(revision) > revisionLen {
		revision = revision[:revisionLen]
	}
	var b strings.Builder
	b.WriteString("devel-")
	b.WriteString(revision)
	if dirty {
		b.WriteString("-dirty")
	}
	if when != "" {
		b.WriteString(" (")
		b.WriteString(when)
		b.WriteString(")")
	}
	return b.String()
}

// newVersionCmd is `xdsconform version`: what --version prints, for users
// who try the subcommand as most tools have one.
func newVersionCmd(out io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the harness's version (as --version does)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(out, "xdsconform version %s\n", version)
			return err
		},
	}
}
