package refclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/wire"
)

// Filesystem subscriptions (Config.CDSFile), as Envoy's
// path_config_source for CDS: the clusters come from a file holding a
// DiscoveryResponse, read with the parser its extension names (.yaml or
// .yml, .json, .pb binary, .pb_text text proto) (FS-1). The path must
// exist at start. As in Envoy, only moves are atomic, so only a move
// reloads: an entry moved onto the path (the path's own inode changes),
// or, with a watched directory, any entry moved into that directory (a
// Kubernetes ConfigMap's ..data symlink swap, which leaves the path's own
// symlink as it was) (FS-3). A file written in place is not read, so a
// half-written one never is. Each entry seen is held open (pinned) until
// the next look, so that two moves between looks cannot hand the second
// file the first one's inode number and go unnoticed. A file that does not parse, or holds a
// response the client rejects, changes nothing: the last valid clusters
// stay in use (FS-2), and there is no one to ACK or NACK to. Watching is
// a poll of the entries' identities every fsPollEvery.

// FileSource is a filesystem subscription: bootstrap.FileSource.
type FileSource struct {
	// Path is the file holding a DiscoveryResponse.
	Path string
	// WatchedDirectory, when set, is watched for entries moved into it.
	WatchedDirectory string
}

// fsPollEvery is how often the watched entries are looked at.
const fsPollEvery = 20 * time.Millisecond

// evFile is a file loaded (resp) or found unusable (err).
type evFile struct {
	resp *discovery.DiscoveryResponse
	err  error
}

// fileSourced reports whether type u comes from a file, not the server.
func (c *Client) fileSourced(u string) bool {
	return c.cfg.CDSFile != nil && u == wire.Cluster.URL
}

// checkFileSource checks, at start, that the client can read its file.
func checkFileSource(cfg Config) error {
	f := cfg.CDSFile
	if f == nil {
		return nil
	}
	if cfg.Profile != ProfileEnvoy {
		return errors.New("refclient: filesystem subscriptions are an Envoy feature (profile envoy)")
	}
	if _, err := os.Stat(f.Path); err != nil {
		return fmt.Errorf("refclient: the CDS path must exist at start: %w", err)
	}
	return nil
}

// watchFile loads the file, then again on every move that concerns it,
// until the client stops. Every read comes after the identities of the
// entries were taken, never before: taken after a read, they would be
// those of a file moved in between, which would then pass for the file
// read and never show as a change (the first load once had that window).
// Taken first, any move after them shows at the next look, and at worst
// reloads a file already read.
func (c *Client) watchFile() {
	defer c.wg.Done()
	f := c.cfg.CDSFile
	prev := c.watchedEntries(f)
	defer func() { prev.close() }()
	if !c.loadFile() {
		return
	}
	if h := c.cfg.hooks.fileLoaded; h != nil {
		h()
	}
	if c.fault(FaultFSLoadOnce) { // FS-1, FS-3 broken: never again
		return
	}
	tick := time.NewTicker(fsPollEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
		cur := c.watchedEntries(f)
		changed := moved(prev, cur)
		prev.close()
		prev = cur
		if changed && !c.loadFile() {
			return
		}
	}
}

// entries are the watched entries by path: what each is (its identity)
// and a handle pinning it, so that its inode number cannot be reused by a
// file moved in later, which would then pass for it.
type entries map[string]entry

type entry struct {
	fi  os.FileInfo
	pin *os.File // nil when the entry could not be pinned
}

func (es entries) close() {
	for _, e := range es {
		if e.pin != nil {
			_ = e.pin.Close()
		}
	}
}

// watchedEntries are the entries whose replacement reloads the file: the
// path itself (not what a symlink there points at) and, with a watched
// directory, each of its entries.
func (c *Client) watchedEntries(f *FileSource) entries {
	es := entries{}
	add := func(p string) {
		if fd, err := pin(p); err == nil {
			if fi, err := fd.Stat(); err == nil {
				es[p] = entry{fi, fd}
				return
			}
			_ = fd.Close()
		}
		if fi, err := os.Lstat(p); err == nil {
			es[p] = entry{fi, nil}
		}
	}
	add(f.Path)
	if f.WatchedDirectory == "" || c.fault(FaultFSIgnoresWatchedDirectory) { // else FS-3 broken
		return es
	}
	names, err := os.ReadDir(f.WatchedDirectory)
	if err != nil {
		return es
	}
	for _, n := range names {
		add(filepath.Join(f.WatchedDirectory, n.Name()))
	}
	return es
}

// moved reports whether an entry of cur is new or another file than in
// prev: something was moved in. Entries removed do not count.
func moved(prev, cur entries) bool {
	for p, e := range cur {
		if old, ok := prev[p]; !ok || !os.SameFile(old.fi, e.fi) {
			return true
		}
	}
	return false
}

// loadFile reads the file and hands the outcome to the loop; false once
// the client is stopping.
func (c *Client) loadFile() bool {
	resp, err := c.readFile(c.cfg.CDSFile.Path)
	return c.emit(evFile{resp: resp, err: err})
}

// readFile parses path as a DiscoveryResponse by its extension.
func (c *Client) readFile(path string) (*discovery.DiscoveryResponse, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	ext := filepath.Ext(path)
	if c.fault(FaultFSIgnoresExtension) {
		ext = ".json" // FS-1 broken
	}
	resp := &discovery.DiscoveryResponse{}
	switch ext {
	case ".pb":
		err = proto.Unmarshal(b, resp)
	case ".pb_text":
		err = prototext.Unmarshal(b, resp)
	case ".json":
		err = protojson.Unmarshal(b, resp)
	case ".yaml", ".yml":
		var doc any
		if err = yaml.Unmarshal(b, &doc); err == nil {
			var j []byte
			if j, err = json.Marshal(doc); err == nil {
				err = protojson.Unmarshal(j, resp)
			}
		}
	default:
		return nil, fmt.Errorf("%s: unknown extension %q (want .yaml, .yml, .json, .pb or .pb_text)", path, ext)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a DiscoveryResponse: %w", path, err)
	}
	if u := resp.GetTypeUrl(); u != wire.Cluster.URL {
		return nil, fmt.Errorf("%s holds a response of type %q, not clusters", path, u)
	}
	return resp, nil
}

// onFile applies a loaded file as a CDS response with no one to answer:
// the same validation as a response off the wire, the reply dropped. A
// file that could not be used changes nothing (FS-2).
func (c *Client) onFile(ev evFile) {
	if c.fileStream == nil {
		sl := &slot{typ: wire.Cluster.URL, method: "file", types: []string{wire.Cluster.URL}}
		c.fileStream = &stream{
			slot: sl, gen: 1, nonces: map[string]string{}, prevNonces: map[string]string{},
			sent: map[string]bool{}, sentNames: map[string]map[string]bool{},
			nackedLatest: map[string]bool{}, acceptedNonces: map[string]string{},
			repliedNames: map[string][]string{}, rejectedVersion: map[string]string{},
		}
	}
	st := c.fileStream
	rejected := ev.err != nil
	if !rejected {
		before := c.nackedTypes[wire.Cluster.URL]
		c.nackedTypes[wire.Cluster.URL] = false
		c.onSotW(st, ev.resp)
		rejected = c.nackedTypes[wire.Cluster.URL]
		c.nackedTypes[wire.Cluster.URL] = before || rejected
	}
	st.pending = nil // no ACK or NACK: the file has no server
	if rejected && c.fault(FaultFSInvalidReplaces) {
		for _, s := range c.sorted(wire.Cluster.URL) {
			if s.any != nil {
				c.remove(s) // FS-2 broken: the last valid clusters go
			}
		}
	}
}
