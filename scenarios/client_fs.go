package scenarios

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Filesystem subscriptions in the client role: the client reads its
// clusters from a file holding a CDS DiscoveryResponse (its Envoy
// bootstrap's cds_config is a path_config_source), and its listeners
// still from the fake management server over SotW ADS, so the pair runs
// as any other. They run in the sotw-ads variant only, the one whose
// bootstrap carries the file; the variant is about the listeners' stream,
// not the file. The harness writes each new file next to the path and
// moves it there (only moves are atomic, FS-3), or swaps a ConfigMap's
// ..data symlink in a watched directory, and reads the client's view
// (/config_dump). The clusters need no endpoints (LOGICAL_DNS), so
// nothing waits on EDS. FS-2's update_rejected statistic is not read:
// the harness has no stats observer; the last valid clusters staying in
// the view is what is checked.

// fsClient says the scenario needs an Envoy-profile client that reads
// files, whose view it reads, launched by the harness (which writes its
// bootstrap, and so its path_config_source).
var fsClient = []engine.Need{targets.NeedEnvoyProfile, targets.NeedObserver, targets.NeedFreshClient, targets.NeedClientFeature(targets.ClientFeatureFilesystem)}

// fsFiles is the scenario's file subscription: the scratch directory and
// the path the client reads, by extension.
type fsFiles struct {
	dir, path string
	// watched: the path is a ConfigMap's symlink into ..data, and the
	// directory is the client's watched_directory.
	watched bool
	gen     int
}

// fsRun starts a client reading clusters from a file of extension ext,
// holding cluster CL at version "1" when the client starts (the path must
// exist then), and runs body.
func fsRun(ext string, watched bool, body func(c *C, f *fsFiles)) func(*engine.T) {
	return func(t *engine.T) {
		dir, err := process.MkdirScratch("xdsconform-fs-")
		if err != nil {
			t.Abortf("%v", err)
		}
		// Registered before the client starts, so it runs after the
		// client stopped.
		t.Cleanup(func() { _ = process.RemoveScratch(dir) })
		f := &fsFiles{dir: dir, path: filepath.Join(dir, "cds"+ext), watched: watched}
		b, err := f.encode(fsResponse("1", wire.ClientDNSCluster(t.Name("cluster"), 1)))
		if err == nil {
			err = f.put(b)
		}
		if err != nil {
			t.Abortf("writing the first clusters file: %v", err)
		}
		src := &bootstrap.FileSource{Path: f.path}
		if watched {
			src.WatchedDirectory = dir
		}
		c := NewCWith(t, func(s *targets.LaunchSpec) { s.CDSFile = src })
		body(c, f)
	}
}

// fsResponse is a CDS DiscoveryResponse at version holding resources.
func fsResponse(version string, resources ...proto.Message) *discovery.DiscoveryResponse {
	resp := &discovery.DiscoveryResponse{TypeUrl: CDS.URL, VersionInfo: version}
	for _, m := range resources {
		a, err := anypb.New(m)
		if err != nil {
			panic(err) // the harness's own clusters always pack
		}
		resp.Resources = append(resp.Resources, a)
	}
	return resp
}

// encode writes resp in the format the path's extension names, as Envoy
// reads it (FS-1).
func (f *fsFiles) encode(resp *discovery.DiscoveryResponse) ([]byte, error) {
	switch filepath.Ext(f.path) {
	case ".pb":
		return proto.Marshal(resp)
	case ".pb_text":
		return prototext.Marshal(resp)
	case ".json":
		return protojson.Marshal(resp)
	case ".yaml":
		j, err := protojson.Marshal(resp)
		if err != nil {
			return nil, err
		}
		var doc any
		if err := json.Unmarshal(j, &doc); err != nil {
			return nil, err
		}
		return yaml.Marshal(doc) // block style, as people write it
	}
	return nil, fmt.Errorf("no encoding for %s", f.path)
}

// put makes b the path's contents the way its layout is updated: written
// beside it and moved onto it, or, in a watched directory, written into a
// new data directory that the ..data symlink is swapped to.
func (f *fsFiles) put(b []byte) error {
	f.gen++
	if !f.watched {
		tmp := filepath.Join(f.dir, fmt.Sprintf(".tmp-%d", f.gen))
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, f.path); err != nil {
			return fmt.Errorf("moving %s onto %s: %w", tmp, f.path, err)
		}
		return nil
	}
	// A Kubernetes ConfigMap volume: <dir>/cds.yaml → ..data/cds.yaml,
	// ..data → ..<gen>; an update fills ..<gen+1> and swaps ..data by
	// moving a new symlink over it, leaving cds.yaml as it was.
	base := filepath.Base(f.path)
	data := fmt.Sprintf("..%d", f.gen)
	if err := os.Mkdir(filepath.Join(f.dir, data), 0o700); err != nil {
		return fmt.Errorf("making %s: %w", data, err)
	}
	if err := os.WriteFile(filepath.Join(f.dir, data, base), b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", base, err)
	}
	tmp := filepath.Join(f.dir, "..data_tmp")
	if err := os.Symlink(data, tmp); err != nil {
		return fmt.Errorf("linking %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, "..data")); err != nil {
		return fmt.Errorf("swapping ..data: %w", err)
	}
	if f.gen == 1 {
		if err := os.Symlink(filepath.Join("..data", base), f.path); err != nil {
			return fmt.Errorf("linking %s: %w", f.path, err)
		}
		return nil
	}
	return os.RemoveAll(filepath.Join(f.dir, fmt.Sprintf("..%d", f.gen-1)))
}

// Put replaces the file with resp (see put).
func (c *C) Put(f *fsFiles, resp *discovery.DiscoveryResponse) {
	b, err := f.encode(resp)
	if err != nil {
		c.Abortf("encoding the clusters file: %v", err)
	}
	c.PutBytes(f, b)
}

// PutBytes replaces the file with b as it is.
func (c *C) PutBytes(f *fsFiles, b []byte) {
	if err := f.put(b); err != nil {
		c.Abortf("replacing the clusters file: %v", err)
	}
}

// Keeps checks, for the quiet window, that the client's view shows
// cluster name in use at version the whole time: ACKED, or NACKED (the
// view noting the rejected file) with version still in use.
func (c *C) Keeps(name, version string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	// The harness's own running time: a window it was stalled through
	// watched nothing (lag.Deadline).
	end := lag.NewDeadline(c.Timeouts.Quiet)
	for !end.Passed() {
		rs, err := c.observe(ctx, c.Timeouts.Expect)
		if err != nil {
			c.fail("reading the client's status view: %v", err)
		}
		r, ok := observer.Find(rs, CDS.URL, name)
		switch {
		case !ok:
			c.Fatalf("the client's status view no longer lists cluster %s: the last valid file's clusters must stay in use", name)
		case r.State != observer.Acked && r.State != observer.Nacked || r.Version != version:
			// NACKED: still in use at version, the rejected file noted.
			c.Fatalf("the client's status view shows cluster %s %s; the last valid file had it at version %q", name, describe(r), version)
		}
		select {
		case <-time.After(pollEvery):
		case <-ctx.Done():
			c.fail("watching cluster %s: %v", name, ctx.Err())
		}
	}
}

// fsFormats are the file formats Envoy reads, by extension (FS-1).
var fsFormats = []struct{ name, ext string }{
	{"yaml", ".yaml"},
	{"json", ".json"},
	{"binary", ".pb"},
	{"text-proto", ".pb_text"},
}

// fsLoads is, for each format, a scenario loading a file at start and
// again when a new one is moved onto the path.
func fsLoads() []*engine.Scenario {
	var out []*engine.Scenario
	for _, f := range fsFormats {
		out = append(out, &engine.Scenario{
			ID:           "client/fs/loads-" + f.name,
			Title:        fmt.Sprintf("Clusters are loaded from a %s DiscoveryResponse file (%s), at start and when a new one is moved in", f.name, f.ext),
			Requirements: []string{"FS-1"},
			Level:        results.Must,
			Variants:     []wire.Variant{wire.SotWADS},
			Needs:        fsClient,
			Run: fsRun(f.ext, false, func(c *C, files *fsFiles) {
				c.RequireConfig(c.AwaitAcked(CDS, c.CL, "1"), wire.ClientDNSCluster(c.CL, 1))
				c.Put(files, fsResponse("2", wire.ClientDNSCluster(c.CL, 2)))
				c.RequireConfig(c.AwaitAcked(CDS, c.CL, "2"), wire.ClientDNSCluster(c.CL, 2))
			}),
		})
	}
	return out
}

// xds_protocol#filesystem-subscriptions; config_source.proto PathConfigSource
var clientFSScenarios = append(fsLoads(),
	&engine.Scenario{
		ID:           "client/fs/rejected-file-keeps-last-valid",
		Title:        "A file the client rejects changes nothing: the last valid clusters stay in use",
		Requirements: []string{"FS-2"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.SotWADS},
		Needs:        fsClient,
		Run: fsRun(".yaml", false, func(c *C, files *fsFiles) {
			c.AwaitAcked(CDS, c.CL, "1")
			for _, bad := range []struct {
				what  string
				bytes func() []byte
			}{
				{"an invalid cluster", func() []byte {
					b, err := files.encode(fsResponse("2", wire.InvalidCluster(c.CL, 2)))
					if err != nil {
						c.Abortf("encoding: %v", err)
					}
					return b
				}},
				{"a file that does not parse", func() []byte { return []byte("resources: [ {{ not yaml\n") }},
			} {
				c.Logf("moving in %s", bad.what)
				c.PutBytes(files, bad.bytes())
				c.Checking("FS-2").Keeps(c.CL, "1")
			}
			// The watch still works: a valid file is taken.
			c.Put(files, fsResponse("3", wire.ClientDNSCluster(c.CL, 3)))
			c.AwaitAcked(CDS, c.CL, "3")
		}),
	},
	&engine.Scenario{
		ID:           "client/fs/reload-on-move",
		Title:        "A file moved onto the path is loaded, every time",
		Requirements: []string{"FS-3"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.SotWADS},
		Needs:        fsClient,
		Run: fsRun(".yaml", false, func(c *C, files *fsFiles) {
			c.AwaitAcked(CDS, c.CL, "1")
			for rev := 2; rev <= 3; rev++ {
				v := fmt.Sprint(rev)
				c.Put(files, fsResponse(v, wire.ClientDNSCluster(c.CL, rev)))
				c.AwaitAcked(CDS, c.CL, v)
			}
			// Two moves back to back: the file system may give the second
			// file the inode the first just freed, so a client that tells
			// files apart by inode alone, without holding the one it
			// read, misses it. The last one is what it must come to.
			c.Put(files, fsResponse("4", wire.ClientDNSCluster(c.CL, 4)))
			c.Put(files, fsResponse("5", wire.ClientDNSCluster(c.CL, 5)))
			c.AwaitAcked(CDS, c.CL, "5")
		}),
	},
	&engine.Scenario{
		ID:           "client/fs/reload-on-watched-directory-swap",
		Title:        "With a watched directory, a ConfigMap-style ..data symlink swap reloads the path",
		Requirements: []string{"FS-3"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.SotWADS},
		Needs:        fsClient,
		Run: fsRun(".yaml", true, func(c *C, files *fsFiles) {
			c.AwaitAcked(CDS, c.CL, "1")
			for rev := 2; rev <= 3; rev++ {
				v := fmt.Sprint(rev)
				c.Put(files, fsResponse(v, wire.ClientDNSCluster(c.CL, rev)))
				c.AwaitAcked(CDS, c.CL, v)
			}
		}),
	},
)
