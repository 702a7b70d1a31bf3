package refclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// restFSCovered reports whether fault f has a case below, which
// TestEveryFaultChangesBehaviour counts as its own.
func restFSCovered(f Fault) bool {
	for _, tc := range restFaultCases {
		if tc.fault == f {
			return true
		}
	}
	for _, tc := range fileFaultCases {
		if tc.fault == f {
			return true
		}
	}
	return false
}

// restPoll is one poll the test server received.
type restPoll struct {
	path       string
	req        *discovery.DiscoveryRequest
	err        error // the body is not proto3 JSON
	concurrent bool  // another poll of the path was outstanding
	reply      chan *discovery.DiscoveryResponse
}

// restServer answers REST-JSON polls as the test says; unanswered polls
// are held until the client gives up.
type restServer struct {
	t     *testing.T
	addr  string
	polls chan *restPoll
	mu    sync.Mutex
	open  map[string]int
}

func newRESTServer(t *testing.T) *restServer {
	s := &restServer{t: t, polls: make(chan *restPoll, 64), open: map[string]int{}}
	done := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p := &restPoll{path: r.URL.Path, req: &discovery.DiscoveryRequest{}, reply: make(chan *discovery.DiscoveryResponse, 1)}
		p.err = protojson.Unmarshal(body, p.req)
		s.mu.Lock()
		p.concurrent = s.open[p.path] > 0
		s.open[p.path]++
		s.mu.Unlock()
		defer func() { s.mu.Lock(); s.open[p.path]--; s.mu.Unlock() }()
		s.polls <- p
		select {
		case resp := <-p.reply:
			b, _ := protojson.Marshal(resp)
			_, _ = w.Write(b)
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() { close(done) }) // before hs.Close: held polls end
	s.addr = strings.TrimPrefix(hs.URL, "http://")
	return s
}

// next returns the next poll of t, leaving the others held.
func (s *restServer) next(t wire.Type, within time.Duration) (*restPoll, bool) {
	path, _ := t.RESTPath()
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		select {
		case p := <-s.polls:
			if p.path == path {
				return p, true
			}
		case <-timer.C:
			return nil, false
		}
	}
}

func (s *restServer) mustNext(t wire.Type) *restPoll {
	p, ok := s.next(t, wait)
	require.True(s.t, ok, "no %s poll", t.Short)
	return p
}

// answer replies to p with a CDS response at version holding ms.
func (s *restServer) answer(p *restPoll, version, nonce string, ms ...proto.Message) {
	resp := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, VersionInfo: version, Nonce: nonce}
	for _, m := range ms {
		resp.Resources = append(resp.Resources, mustAny(s.t, m))
	}
	p.reply <- resp
}

func startREST(t *testing.T, faults ...Fault) *restServer {
	s := newRESTServer(t)
	c, err := Start(context.Background(), Config{ServerAddr: s.addr, NodeID: "node-1", Cluster: "cluster-1", Variant: wire.REST, Listener: "L", Profile: ProfileEnvoy, Faults: faults})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return s
}

// In REST mode the client polls clusters and listeners by wildcard in
// canonical JSON with the node, ACKs with the next poll, NACKs with the
// previous version and error_detail, and keeps one poll outstanding.
func TestRESTPolling(t *testing.T) {
	s := startREST(t)
	p := s.mustNext(wire.Cluster)
	require.NoError(t, p.err)
	assert.Empty(t, p.req.GetResourceNames())
	assert.Equal(t, "node-1", p.req.GetNode().GetId())
	s.answer(p, "1", "", wire.ClientDNSCluster("C", 1))
	ack := s.mustNext(wire.Cluster)
	assert.Equal(t, "1", ack.req.GetVersionInfo())
	assert.Nil(t, ack.req.GetErrorDetail())
	assert.Equal(t, "node-1", ack.req.GetNode().GetId(), "every poll carries the node")
	s.answer(ack, "2", "n2", wire.InvalidCluster("C", 2))
	nack := s.mustNext(wire.Cluster)
	assert.Equal(t, "1", nack.req.GetVersionInfo())
	assert.NotNil(t, nack.req.GetErrorDetail())
	assert.Equal(t, "n2", nack.req.GetResponseNonce())
	_, again := s.next(wire.Cluster, 300*time.Millisecond)
	assert.False(t, again, "a held poll is not doubled")
}

// The poll after a response is its ACK even when the client takes longer
// to handle the response than the refresh delay: the refresh must not
// resend the poll from before the response, which would read as the
// client holding none of it. A hook holds the loop's handling of the
// response until the refresh delay has passed, so the outcome does not
// depend on timing.
func TestRESTAckAfterSlowHandling(t *testing.T) {
	s := newRESTServer(t)
	due := make(chan struct{}, 1)
	c, err := Start(context.Background(), Config{ServerAddr: s.addr, NodeID: "node-1", Cluster: "cluster-1", Variant: wire.REST, Listener: "L", Profile: ProfileEnvoy,
		hooks: hooks{
			restRefreshDue: func() {
				select {
				case due <- struct{}{}:
				default:
				}
			},
			response: func() {
				select {
				case <-due:
				case <-time.After(wait):
				}
			},
		}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	s.answer(s.mustNext(wire.Cluster), "1", "n1", wire.ClientDNSCluster("C", 1))
	ack := s.mustNext(wire.Cluster)
	assert.Equal(t, "1", ack.req.GetVersionInfo(), "the poll after the response ACKs it")
	assert.Equal(t, "n1", ack.req.GetResponseNonce())
}

// restFaultCases say what each REST fault changes in what the client
// sends.
var restFaultCases = []struct {
	fault             Fault
	scenario          func(s *restServer) string
	reference, faulty string
}{
	{FaultRESTTwoOutstanding, func(s *restServer) string {
		s.answer(s.mustNext(wire.Cluster), "1", "n1", wire.ClientDNSCluster("C", 1))
		s.mustNext(wire.Cluster) // the ACK, held
		p, ok := s.next(wire.Cluster, 500*time.Millisecond)
		return fmt.Sprint(ok && p.concurrent)
	}, "false", "true"},
	{FaultRESTGoJSONPolls, func(s *restServer) string {
		return fmt.Sprint(s.mustNext(wire.Cluster).err == nil)
	}, "true", "false"},
	{FaultRESTAckWithoutVersion, func(s *restServer) string {
		s.answer(s.mustNext(wire.Cluster), "1", "n1", wire.ClientDNSCluster("C", 1))
		return s.mustNext(wire.Cluster).req.GetVersionInfo()
	}, "1", ""},
	{FaultRESTNackAsAck, func(s *restServer) string {
		s.answer(s.mustNext(wire.Cluster), "1", "n1", wire.ClientDNSCluster("C", 1))
		s.answer(s.mustNext(wire.Cluster), "2", "n2", wire.InvalidCluster("C", 2))
		r := s.mustNext(wire.Cluster).req
		return fmt.Sprintf("%s %v", r.GetVersionInfo(), r.GetErrorDetail() != nil)
	}, "1 true", "2 false"},
	{FaultRESTRequiresNonce, func(s *restServer) string {
		s.answer(s.mustNext(wire.Cluster), "1", "", wire.ClientDNSCluster("C", 1))
		return s.mustNext(wire.Cluster).req.GetVersionInfo()
	}, "1", ""},
}

// Every REST fault changes what the client sends.
func TestRESTFaults(t *testing.T) {
	for _, tc := range restFaultCases {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			t.Run("reference", func(t *testing.T) { assert.Equal(t, tc.reference, tc.scenario(startREST(t))) })
			t.Run("faulty", func(t *testing.T) { assert.Equal(t, tc.faulty, tc.scenario(startREST(t, tc.fault))) })
		})
	}
}

// fsFile is a clusters file in a test directory.
type fsFile struct {
	t         *testing.T
	dir, path string
	watched   bool
	gen       int
}

// put moves b onto the path, or swaps a ConfigMap's ..data to it.
func (f *fsFile) put(b []byte) {
	require.NoError(f.t, f.stage(b)())
	if f.watched && f.gen == 1 {
		require.NoError(f.t, os.Symlink(filepath.Join("..data", filepath.Base(f.path)), f.path))
	}
}

// stage writes b beside the path and returns the one atomic move that
// puts it in place (put without the move), so that a test can make the
// move at a chosen moment from any goroutine.
func (f *fsFile) stage(b []byte) (move func() error) {
	f.gen++
	if !f.watched {
		tmp := filepath.Join(f.dir, fmt.Sprintf(".tmp%d", f.gen))
		require.NoError(f.t, os.WriteFile(tmp, b, 0o600))
		return func() error { return os.Rename(tmp, f.path) }
	}
	data := fmt.Sprintf("..%d", f.gen)
	tmp := fmt.Sprintf("..tmp%d", f.gen)
	require.NoError(f.t, os.Mkdir(filepath.Join(f.dir, data), 0o700))
	require.NoError(f.t, os.WriteFile(filepath.Join(f.dir, data, filepath.Base(f.path)), b, 0o600))
	require.NoError(f.t, os.Symlink(data, filepath.Join(f.dir, tmp)))
	return func() error { return os.Rename(filepath.Join(f.dir, tmp), filepath.Join(f.dir, "..data")) }
}

// clusters is a CDS DiscoveryResponse at version holding cluster C at
// rev, in JSON or, for a .pb_text path, text proto.
func (f *fsFile) clusters(version string, rev int) []byte {
	a, err := anypb.New(wire.ClientDNSCluster("C", rev))
	require.NoError(f.t, err)
	resp := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, VersionInfo: version, Resources: []*anypb.Any{a}}
	marshal := protojson.Marshal
	if filepath.Ext(f.path) == ".pb_text" {
		marshal = prototext.Marshal
	}
	b, err := marshal(resp)
	require.NoError(f.t, err)
	return b
}

// startFS starts an Envoy-profile client reading clusters from f, which
// holds cluster C at version "1".
func startFS(t *testing.T, ext string, watched bool, faults ...Fault) (*harness, *fsFile) {
	f := newFSFile(t, ext, watched)
	return startFSFile(t, f, func(c *Config) { c.Faults = faults }), f
}

// newFSFile is a clusters file with the extension ext holding cluster C
// at version "1", in a ConfigMap-like watched directory when watched.
func newFSFile(t *testing.T, ext string, watched bool) *fsFile {
	f := &fsFile{t: t, dir: t.TempDir(), watched: watched}
	f.path = filepath.Join(f.dir, "cds"+ext)
	f.put(f.clusters("1", 1))
	return f
}

// startFSFile starts an Envoy-profile client reading clusters from f,
// with mod applied to its configuration.
func startFSFile(t *testing.T, f *fsFile, mod func(*Config)) *harness {
	src := &FileSource{Path: f.path}
	if f.watched {
		src.WatchedDirectory = f.dir
	}
	return start(t, wire.SotWADS, func(c *Config) {
		c.Profile, c.CDSFile = ProfileEnvoy, src
		mod(c)
	})
}

// shownWithin is the cluster C's CSDS status and version once it shows
// version within d, or as it is after d.
func shownWithin(h *harness, version string, d time.Duration) string {
	h.waitCSDS(wire.Cluster, "C", d, func(g *statuspb.ClientConfig_GenericXdsConfig) bool { return g.GetVersionInfo() == version })
	return statusOf(h, wire.Cluster, "C")
}

// The file is read at start, by its extension; a move onto the path
// reloads it; a file that does not parse changes nothing; nothing is
// asked of the server for clusters.
func TestFileSubscription(t *testing.T) {
	h, f := startFS(t, ".json", false)
	assert.Equal(t, "ACKED 1", shownWithin(h, "1", wait))
	f.put(f.clusters("2", 2))
	assert.Equal(t, "ACKED 2", shownWithin(h, "2", wait))
	f.put([]byte("{not json"))
	f.put(f.clusters("3", 3))
	assert.Equal(t, "ACKED 3", shownWithin(h, "3", wait))
	_, asked := h.tryNext(wire.Cluster, wire.Cluster.URL, 200*time.Millisecond)
	assert.False(t, asked, "clusters come from the file, not the server")

	_, err := Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Listener: "L", Profile: ProfileEnvoy, CDSFile: &FileSource{Path: filepath.Join(t.TempDir(), "missing.yaml")}})
	assert.ErrorContains(t, err, "must exist at start")
}

// A move that lands just after the client first read its file is seen
// and reloads it (FS-3): the client took the identities of the entries it
// watches no later than its read, so the move shows as a change at the
// next look. Taken after the read, they would be the moved file's, and
// the client would keep the first file for good. The move is made from a
// hook at that very point, so the outcome does not depend on timing.
func TestFileMovedRightAfterFirstLoad(t *testing.T) {
	for _, watched := range []bool{false, true} {
		t.Run(fmt.Sprintf("watched directory %v", watched), func(t *testing.T) {
			f := newFSFile(t, ".json", watched)
			move := f.stage(f.clusters("2", 2))
			moved := make(chan error, 1)
			var once sync.Once
			h := startFSFile(t, f, func(c *Config) {
				c.hooks.fileLoaded = func() { once.Do(func() { moved <- move() }) }
			})
			select {
			case err := <-moved:
				require.NoError(t, err)
			case <-time.After(wait):
				t.Fatal("the client never loaded its file")
			}
			assert.Equal(t, "ACKED 2", shownWithin(h, "2", wait), "the move right after the first load is seen")
		})
	}
}

// fileFaultCases say what each filesystem fault changes in what the
// client uses.
var fileFaultCases = []struct {
	fault             Fault
	ext               string
	watched           bool
	scenario          func(h *harness, f *fsFile) string
	reference, faulty string
}{
	{FaultFSLoadOnce, ".json", false, func(h *harness, f *fsFile) string {
		shownWithin(h, "1", wait)
		f.put(f.clusters("2", 2))
		return shownWithin(h, "2", 500*time.Millisecond)
	}, "ACKED 2", "ACKED 1"},
	{FaultFSIgnoresExtension, ".pb_text", false, func(h *harness, _ *fsFile) string {
		return shownWithin(h, "1", 500*time.Millisecond)
	}, "ACKED 1", "absent"},
	{FaultFSInvalidReplaces, ".json", false, func(h *harness, f *fsFile) string {
		shownWithin(h, "1", wait)
		f.put([]byte("{not json"))
		h.waitCSDS(wire.Cluster, "C", 500*time.Millisecond, func(*statuspb.ClientConfig_GenericXdsConfig) bool { return false })
		return statusOf(h, wire.Cluster, "C")
	}, "ACKED 1", "absent"},
	{FaultFSIgnoresWatchedDirectory, ".json", true, func(h *harness, f *fsFile) string {
		shownWithin(h, "1", wait)
		f.put(f.clusters("2", 2))
		return shownWithin(h, "2", 500*time.Millisecond)
	}, "ACKED 2", "ACKED 1"},
}

// Every filesystem fault changes what the client uses.
func TestFileFaults(t *testing.T) {
	for _, tc := range fileFaultCases {
		t.Run(string(tc.fault), func(t *testing.T) {
			t.Parallel()
			run := func(t *testing.T, faults ...Fault) string {
				h, f := startFS(t, tc.ext, tc.watched, faults...)
				return tc.scenario(h, f)
			}
			t.Run("reference", func(t *testing.T) { assert.Equal(t, tc.reference, run(t)) })
			t.Run("faulty", func(t *testing.T) { assert.Equal(t, tc.faulty, run(t, tc.fault)) })
		})
	}
}
