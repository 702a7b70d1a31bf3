package refserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// entry is one stored resource. Entries are immutable once stored, so
// streams may keep them after releasing the server lock.
type entry struct {
	res *anypb.Any
	// version is the per-resource version sent in delta Resource.version
	// (VER-7): a hash of the content, so it changes exactly when the content
	// does.
	version string
}

// typeStore holds the resources of one type for one node.
type typeStore struct {
	// counter is bumped by every Set or Delete of this node and type, so the
	// SotW version_info changes whenever any resource of the type changes
	// (VER-1) and independently of other types (VER-2).
	counter   uint64
	resources map[string]*entry
}

// snapshot is a consistent read of one type of one node.
type snapshot struct {
	version   string            // "v%d" of the type counter
	resources map[string]*entry // a private copy of the name -> entry map
}

// names is the set of every resource name in the snapshot.
func (s snapshot) names() nameSet {
	out := make(nameSet, len(s.resources))
	for n := range s.resources {
		out[n] = true
	}
	return out
}

// filter lists, sorted, the names in the snapshot that keep accepts.
func (s snapshot) filter(keep func(name string) bool) []string {
	var out []string
	for _, n := range sortedNames(s.resources) {
		if keep(n) {
			out = append(out, n)
		}
	}
	return out
}

// contentVersion hashes the resource deterministically, so setting identical
// content keeps the per-resource version (no needless delta pushes, UPD-1).
func contentVersion(a *anypb.Any) string {
	b := a.GetValue()
	if m, err := a.UnmarshalNew(); err == nil {
		if d, err := (proto.MarshalOptions{Deterministic: true}).Marshal(m); err == nil {
			b = d
		}
	}
	h := sha256.Sum256(append([]byte(a.GetTypeUrl()+"\x00"), b...))
	return hex.EncodeToString(h[:8])
}

// typeStoreLocked returns the store of node and type, creating it; s.mu held.
func (s *Server) typeStoreLocked(node, typeURL string) *typeStore {
	n := s.nodes[node]
	if n == nil {
		n = map[string]*typeStore{}
		s.nodes[node] = n
	}
	ts := n[typeURL]
	if ts == nil {
		ts = &typeStore{resources: map[string]*entry{}}
		n[typeURL] = ts
	}
	return ts
}

// snapshot reads the current resources and version of one type of a node.
func (s *Server) snapshot(node, typeURL string) snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.typeStoreLocked(node, typeURL)
	cp := make(map[string]*entry, len(ts.resources))
	for k, v := range ts.resources {
		cp[k] = v
	}
	return snapshot{version: fmt.Sprintf("v%d", ts.counter), resources: cp}
}

// bumpLocked bumps the version counter of the changed type only, so each
// type's version is independent (VER-2); s.mu held.
func (s *Server) bumpLocked(node string, changed *typeStore) {
	changed.counter++
	if s.has(FaultBumpAllTypes) {
		// Breaks VER-2: every type of the node gets a new version.
		for _, t := range wire.AllTypes {
			if ts := s.typeStoreLocked(node, t.URL); ts != changed {
				ts.counter++
			}
		}
	}
}

// notifyLocked wakes every stream of node; s.mu held. The wake channels have
// a buffer of one and the send never blocks, so a slow stream cannot stall
// a fixture call: the stream recomputes what to push from the store state
// when it gets round to it.
func (s *Server) notifyLocked(node string) {
	for w := range s.watchers[node] {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

func (s *Server) watch(node string, w chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.watchers[node] == nil {
		s.watchers[node] = map[chan struct{}]struct{}{}
	}
	s.watchers[node][w] = struct{}{}
}

func (s *Server) unwatch(node string, w chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.watchers[node], w)
	if len(s.watchers[node]) == 0 {
		delete(s.watchers, node)
	}
}

// fixtureServer implements the fixture API on top of the store.
type fixtureServer struct {
	fixturepb.UnimplementedFixtureServer
	s *Server
}

// FixtureServer returns the in-process fixture API of the server; wrap it
// with fixture.FromServer, or register it on a grpc.Server.
func (s *Server) FixtureServer() fixturepb.FixtureServer { return fixtureServer{s: s} }

func (f fixtureServer) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	c := &fixturepb.Capabilities{
		ApiVersion:       fixture.APIVersion,
		Server:           "xdsconform reference server",
		LegacyWildcard:   true,
		ExplicitWildcard: true,
		GeneratesNames:   f.s.generateNames,
		BuildsContent:    f.s.buildsContent,
		NodeScoped:       true,
		TypeUrls:         wire.AllTypeURLs(),
		Variants:         wire.VariantNames(wire.AllVariants),
	}
	return c, nil
}

func (f fixtureServer) SetResource(_ context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	t, err := typeByURL(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name is empty")
	}
	if r.GetResource().GetTypeUrl() != t.URL {
		// Storing it would make the server send resources that do not match
		// the response type (STREAM-7), so refuse it here.
		return nil, status.Errorf(codes.InvalidArgument, "resource type %q does not match type_url %q", r.GetResource().GetTypeUrl(), t.URL)
	}
	res := proto.Clone(r.GetResource()).(*anypb.Any)
	name := r.GetName()
	if f.s.generateNames {
		name = GeneratedPrefix + name
		renamed, err := wire.Renamed(res, name)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "renaming the resource: %v", err)
		}
		res = renamed
	}
	resp := &fixturepb.SetResourceResponse{Name: name}
	if f.s.buildsContent {
		set, err := res.UnmarshalNew()
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "decoding the resource: %v", err)
		}
		if resp.Revision, err = fixture.RevisionOf(set); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "%v", err)
		}
		res.Value = protowire.AppendVarint(protowire.AppendTag(res.Value, builtFieldNumber, protowire.VarintType), 1)
	}
	e := &entry{res: res, version: contentVersion(res)}
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.typeStoreLocked(r.GetNodeId(), t.URL)
	ts.resources[name] = e
	s.bumpLocked(r.GetNodeId(), ts)
	s.notifyLocked(r.GetNodeId())
	return resp, nil
}

// builtFieldNumber is the unknown field the content-building mode adds: the
// highest field number protobuf allows, which no xDS message uses.
const builtFieldNumber = protowire.MaxValidNumber

func (f fixtureServer) DeleteResource(_ context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	t, err := typeByURL(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.typeStoreLocked(r.GetNodeId(), t.URL)
	// Deleting an unknown name is not an error (fixture API), but it still
	// bumps the type version as the brief's store model asks.
	delete(ts.resources, r.GetName())
	s.bumpLocked(r.GetNodeId(), ts)
	s.notifyLocked(r.GetNodeId())
	return &fixturepb.DeleteResourceResponse{}, nil
}

func (f fixtureServer) Reset(_ context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	// Keep the type stores and their counters: dropping them would restart
	// version_info at v0 and could repeat a version the client already has
	// for different content (VER-1).
	for _, ts := range s.nodes[r.GetNodeId()] {
		if len(ts.resources) > 0 {
			ts.resources = map[string]*entry{}
			ts.counter++
		}
	}
	s.notifyLocked(r.GetNodeId())
	return &fixturepb.ResetResponse{}, nil
}
