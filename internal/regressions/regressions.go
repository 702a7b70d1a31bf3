// Package regressions reads scenarios/regressions: one scenario file per
// real bug found in a real peer, named after the peer, and the lists of
// those the peers still fail. The e2e suite runs each peer's files against
// it; a unit test runs every file against the reference peers, where it
// must pass.
package regressions

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
)

// Area is the area of every regression scenario's ID
// (ROLE/regression/FILE), kept apart from the catalogue's areas so that no
// regression can take a built-in scenario's ID.
const Area = "regression"

// KnownFailingDir is the directory, inside the regressions directory, of
// the per-peer lists of regressions still present: PEER.txt, in the
// --known-failing format.
const KnownFailingDir = "known-failing"

// File is one regression file.
type File struct {
	// Path is the file's path, as found under the directory given to Load.
	Path string
	// Peer is the peer the bug is in: the longest peer name that, with a
	// dash, begins the file's name (PEER-SHORT-BUG.yaml).
	Peer string
	// Scenario is the file's one scenario.
	Scenario *engine.Scenario
}

// Peers are the names a regression file may begin with: the real peers
// with a shipped known-failing list, whose names the e2e suite uses.
func Peers() []string { return knownfailing.Peers() }

// Load reads every *.yaml file of dir, in name order. Each must hold one
// scenario whose ID is ROLE/regression/NAME (NAME: the file's name without
// .yaml) and whose name begins with a peer's (Peers); an error names the
// file and what is wrong with it.
func Load(dir string) ([]File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("regressions in %s: %w", dir, err)
	}
	slices.Sort(paths)
	peers := Peers()
	var out []File
	for _, path := range paths {
		f, err := load(path, peers)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func load(path string, peers []string) (File, error) {
	base := strings.TrimSuffix(filepath.Base(path), ".yaml")
	peer := PeerOf(base, peers)
	if peer == "" {
		return File{}, fmt.Errorf("%s: the name does not begin with the peer the bug is in (one of %s, then a dash)", path, strings.Join(peers, ", "))
	}
	ss, err := scenariofile.Load(path)
	if err != nil {
		return File{}, err
	}
	if len(ss) != 1 {
		return File{}, fmt.Errorf("%s: %d scenarios; a regression file holds one, for one bug", path, len(ss))
	}
	role, _, _ := strings.Cut(ss[0].ID, "/")
	if want := role + "/" + Area + "/" + base; ss[0].ID != want {
		return File{}, fmt.Errorf("%s: the scenario's id is %q; a regression's is %q, after its file", path, ss[0].ID, want)
	}
	return File{Path: path, Peer: peer, Scenario: ss[0]}, nil
}

// PeerOf is the longest of peers that, followed by a dash, begins name
// ("envoy-gateway-x" is Envoy Gateway's, not Envoy's), or "".
func PeerOf(name string, peers []string) string {
	best := ""
	for _, p := range peers {
		if strings.HasPrefix(name, p+"-") && len(p) > len(best) {
			best = p
		}
	}
	return best
}

// For is the files of peer among files.
func For(files []File, peer string) []File {
	var out []File
	for _, f := range files {
		if f.Peer == peer {
			out = append(out, f)
		}
	}
	return out
}

// Scenarios is the scenarios of files.
func Scenarios(files []File) []*engine.Scenario {
	out := make([]*engine.Scenario, len(files))
	for i, f := range files {
		out[i] = f.Scenario
	}
	return out
}

// KnownFailing reads dir/known-failing/PEER.txt: the regressions peer still
// fails, each with the rule it breaks and the line of the peer's source
// that causes it. A peer with no list has an empty one (every file of it
// must pass).
func KnownFailing(dir, peer string) (*engine.KnownFailing, error) {
	path := filepath.Join(dir, KnownFailingDir, peer+".txt")
	k, err := engine.LoadKnownFailing(path)
	if errors.Is(err, os.ErrNotExist) {
		return engine.ParseKnownFailing(strings.NewReader(""), path)
	}
	if err != nil {
		return nil, fmt.Errorf("regressions: %w", err)
	}
	return k, nil
}
