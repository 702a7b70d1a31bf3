// Package knownfailing ships the known-failing files of the built-in
// targets: the scenarios those real implementations fail, each with the
// rule it breaks, so that the default run and make test stay green while
// still reporting every failure.
package knownfailing

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/engine"
)

//go:embed *.txt
var files embed.FS

// For returns the shipped known-failing list of a built-in target, or nil
// when the target has none (e.g. builtin:reference, which must pass).
func For(target string) (*engine.KnownFailing, error) {
	return load(map[string]string{
		"builtin:go-control-plane":        "go-control-plane-snapshot.txt",
		"builtin:go-control-plane-linear": "go-control-plane-linear.txt",
	}[target])
}

// ForClient returns the shipped list for a built-in client target, or nil
// when it has none (the reference client must pass everything).
func ForClient(target string) (*engine.KnownFailing, error) {
	return load(map[string]string{"builtin:grpc-go": "grpc-go.txt"}[target])
}

// Named returns a shipped list by its file name (e.g. "grpc-js.txt"), for
// real peers the e2e suite runs through --client-cmd.
func Named(name string) (*engine.KnownFailing, error) {
	if _, err := files.Open(name); err != nil {
		return nil, fmt.Errorf("no shipped known-failing file %s", name)
	}
	return load(name)
}

// Peers names the real peers with a shipped list, as the e2e suite names
// them (go-control-plane-snapshot, grpc-go, …), sorted.
func Peers() []string {
	names, err := fs.Glob(files, "*.txt")
	if err != nil {
		panic(err) // the pattern is well-formed
	}
	for i, n := range names {
		names[i] = strings.TrimSuffix(n, ".txt")
	}
	slices.Sort(names)
	return names
}

func load(name string) (*engine.KnownFailing, error) {
	if name == "" {
		return nil, nil
	}
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("shipped known-failing file %s: %w", name, err)
	}
	return engine.ParseKnownFailing(bytes.NewReader(b), "internal/knownfailing/"+name)
}
