package refserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// entry is one stored resource. Entries are immutable once stored, so
// streams may keep them after releasing the server lock.
type entry struct {
	res *anypb.Any
	// version is the per-resource version sent in delta Resource.version
	// (VER-7): a hash of what is served, the content and, when set, the TTL
	// and aliases, so it changes exactly when any of them does and streams,
	// which push what changed version, resend the resource then.
	version string
	// ttl is the TTL the fixture set (feature "ttl"), for the streams to
	// send as Resource.ttl to clients that advertise
	// xds.config.supports-resource-ttl (TTL-1; in SotW inside a Resource
	// wrapper, only for clients that advertise resource-in-sotw, TTL-5).
	// nil: no TTL, and a resource resent without one cancels the client's
	// timer (TTL-3). Never zero or negative.
	ttl *durationpb.Duration
	// aliases are the resource's aliases (feature "aliases"), for delta
	// streams to list in Resource.aliases and to match subscriptions and
	// unsubscriptions against, as names of this resource (DELTA-10).
	// Non-empty, distinct, and none is the name or an alias of another
	// resource of the type, so an alias names one resource only.
	aliases []string
	// variant, when set, makes the entry one variant of a resource, with
	// its dynamic parameter constraints (dynamic.go, xRFC TP2).
	variant *variant
	// err, when set, puts the name in error: it is reported in
	// resource_errors, and res is nil (errors.go, xRFC TP3).
	err *rpcstatus.Status
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
func contentVersion(a *anypb.Any) string { return entryVersion(a, nil, nil) }

// entryVersion is the version of an entry (entry.version): contentVersion
// of the resource when it has no TTL and no aliases, else a hash that also
// covers them.
func entryVersion(a *anypb.Any, ttl *durationpb.Duration, aliases []string) string {
	b := a.GetValue()
	if m, err := a.UnmarshalNew(); err == nil {
		if d, err := (proto.MarshalOptions{Deterministic: true}).Marshal(m); err == nil {
			b = d
		}
	}
	b = append([]byte(a.GetTypeUrl()+"\x00"), b...)
	if ttl != nil {
		b = fmt.Appendf(b, "\x00ttl=%d.%09d", ttl.GetSeconds(), ttl.GetNanos())
	}
	for _, al := range aliases {
		b = fmt.Appendf(b, "\x00alias=%s", al)
	}
	h := sha256.Sum256(b)
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

// snapshot reads the current resources and version of one type of a node,
// as a stream that subscribes without dynamic parameters sees them.
func (s *Server) snapshot(node, typeURL string) snapshot {
	return s.snapshotFor(node, typeURL, nil)
}

// snapshotFor is snapshot for a stream that subscribes each name with the
// dynamic parameters params gives (nil: none), its variants resolved
// (dynamic.go).
func (s *Server) snapshotFor(node, typeURL string, params func(name string) map[string]string) snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshotLocked(node, typeURL, params)
}

// snapshotsFor is snapshotFor for several types of a node read at one
// moment, under one hold of the lock, params giving each type's: a
// change made while they are read (a batch, or sets in a row) is then
// seen whole or not at all, never its listener without its cluster.
func (s *Server) snapshotsFor(node string, typeURLs []string, params func(typeURL string) func(name string) map[string]string) map[string]snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]snapshot, len(typeURLs))
	for _, u := range typeURLs {
		out[u] = s.snapshotLocked(node, u, params(u))
	}
	return out
}

// snapshotLocked is snapshotFor with s.mu held.
func (s *Server) snapshotLocked(node, typeURL string, params func(name string) map[string]string) snapshot {
	if t, ok := wire.TypeByExactURL(typeURL); ok {
		if member, ok := wire.MemberOf(t); ok {
			return s.collectionSnapshotLocked(node, t, member) // COLL-1: built, not stored
		}
	}
	ts := s.typeStoreLocked(node, typeURL)
	cp := make(map[string]*entry, len(ts.resources))
	for k, v := range ts.resources {
		cp[k] = v
	}
	s.resolve(cp, params)
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
	// Everything in every variant: every type, both wildcards and every
	// optional feature, so one global claim says it all and no variant
	// needs an override.
	c := &fixturepb.Capabilities{
		ApiVersion:       fixture.APIVersion,
		Server:           "xdsconform reference server",
		LegacyWildcard:   true,
		ExplicitWildcard: true,
		GeneratesNames:   f.s.generateNames,
		BuildsContent:    f.s.buildsContent,
		NodeScoped:       true,
		TypeUrls:         wire.AllTypeURLs(),
		Variants:         wire.VariantNames(wire.KnownVariants), // REST too (rest.go)
		Features:         slices.Clone(features),
	}
	return c, nil
}

// features are the optional features of the fixture API the reference
// server implements; it claims each one as soon as it honours it.
var features = []string{fixture.FeatureTTL, fixture.FeatureAliases, fixture.FeatureBatch, fixture.FeatureEnvoyWarming,
	fixture.FeatureXdstp, fixture.FeatureListCollections, fixture.FeatureGlobCollections, fixture.FeatureRedirects,
	fixture.FeatureDynamicParameters, fixture.FeatureResourceErrors}

// set is a validated SetResource: the entry to store under name, and the
// response to give.
type set struct {
	t    wire.Type
	name string // the name served, which may be generated
	e    *entry
	resp *fixturepb.SetResourceResponse
}

// prepareSet validates r and builds its entry, without the lock: nothing
// here depends on the store. What does (aliases against the other
// resources of the type) is checked by storeLocked.
func (f fixtureServer) prepareSet(r *fixturepb.SetResourceRequest) (set, error) {
	t, err := typeByURL(r.GetTypeUrl())
	if err != nil {
		return set{}, err
	}
	if r.GetName() == "" {
		return set{}, status.Error(codes.InvalidArgument, "name is empty")
	}
	if err := checkXdstpName(t, r.GetName(), r.GetError() != nil); err != nil {
		return set{}, err
	}
	if _, ok := wire.MemberOf(t); ok {
		return set{}, status.Errorf(codes.InvalidArgument, "%s is a list collection, built from its members: set those", t.URL)
	}
	if r.GetRedirect() != "" {
		// REDIR-1: a redirect is stored as the resource it is served as.
		res, err := f.s.redirectEntry(r)
		if err != nil {
			return set{}, err
		}
		e := &entry{res: res, version: contentVersion(res)}
		return set{t: t, name: r.GetName(), e: e, resp: &fixturepb.SetResourceResponse{Name: r.GetName()}}, nil
	}
	if r.GetError() != nil {
		return f.prepareError(t, r) // errors.go
	}
	if r.GetResource().GetTypeUrl() != t.URL {
		// Storing it would make the server send resources that do not match
		// the response type (STREAM-7), so refuse it here.
		return set{}, status.Errorf(codes.InvalidArgument, "resource type %q does not match type_url %q", r.GetResource().GetTypeUrl(), t.URL)
	}
	ttl, err := fixture.CheckedTTL(r)
	if err != nil {
		return set{}, err
	}
	if ttl != nil {
		ttl = proto.Clone(ttl).(*durationpb.Duration) // entries are immutable; r is the caller's
	}
	aliases := slices.Clone(r.GetAliases())
	for i, a := range aliases {
		if a == "" {
			return set{}, status.Errorf(codes.InvalidArgument, "alias #%d is empty", i)
		}
		if slices.Contains(aliases[:i], a) {
			return set{}, status.Errorf(codes.InvalidArgument, "alias %q is listed twice", a)
		}
	}
	res := proto.Clone(r.GetResource()).(*anypb.Any)
	name := r.GetName()
	if f.s.generateNames {
		name = GeneratedPrefix + name
		renamed, err := wire.Renamed(res, name)
		if err != nil {
			return set{}, status.Errorf(codes.InvalidArgument, "renaming the resource: %v", err)
		}
		res = renamed
	}
	resp := &fixturepb.SetResourceResponse{Name: name}
	if f.s.buildsContent {
		m, err := res.UnmarshalNew()
		if err != nil {
			return set{}, status.Errorf(codes.InvalidArgument, "decoding the resource: %v", err)
		}
		if resp.Revision, err = fixture.RevisionOf(m); err != nil {
			return set{}, status.Errorf(codes.InvalidArgument, "%v", err)
		}
		res.Value = protowire.AppendVarint(protowire.AppendTag(res.Value, builtFieldNumber, protowire.VarintType), 1)
	}
	e := &entry{res: res, version: entryVersion(res, ttl, aliases), ttl: ttl, aliases: aliases}
	if f.s.has(FaultVersionOfBytes) { // breaks UPD-1 when set: the bytes as given, not the message
		h := sha256.Sum256(append([]byte(res.GetTypeUrl()+"\x00"), res.GetValue()...))
		e.version = hex.EncodeToString(h[:8])
	}
	key, err := constrain(r, name, e) // dynamic.go: a variant is stored under a key of its own
	if err != nil {
		return set{}, err
	}
	return set{t: t, name: key, e: e, resp: resp}, nil
}

// storeLocked stores p in resources, the name -> entry map of its type,
// after checking that no name is both a resource and an alias of another
// one; s.mu held (or resources private to the caller).
func storeLocked(resources map[string]*entry, p set) error {
	if err := checkVariants(resources, p); err != nil {
		return err
	}
	for other, e := range resources {
		if other == p.name {
			continue // replaced
		}
		if slices.Contains(p.e.aliases, other) {
			return status.Errorf(codes.InvalidArgument, "alias %q of %s %q is the name of another resource", other, p.t.Short, p.name)
		}
		if slices.Contains(e.aliases, p.name) {
			return status.Errorf(codes.InvalidArgument, "%s name %q is an alias of %q", p.t.Short, p.name, other)
		}
		for _, a := range p.e.aliases {
			if slices.Contains(e.aliases, a) {
				return status.Errorf(codes.InvalidArgument, "alias %q of %s %q is also an alias of %q", a, p.t.Short, p.name, other)
			}
		}
	}
	resources[p.name] = p.e
	return nil
}

func (f fixtureServer) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	if f.s.has(FaultFixtureHangs) {
		return nil, hang(ctx)
	}
	p, err := f.prepareSet(r)
	if err != nil {
		return nil, err
	}
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.typeStoreLocked(r.GetNodeId(), p.t.URL)
	if err := storeLocked(ts.resources, p); err != nil {
		return nil, err
	}
	s.bumpLocked(r.GetNodeId(), ts)
	s.notifyLocked(r.GetNodeId())
	return p.resp, nil
}

// builtFieldNumber is the unknown field the content-building mode adds: the
// highest field number protobuf allows, which no xDS message uses.
const builtFieldNumber = protowire.MaxValidNumber

func (f fixtureServer) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	if f.s.has(FaultFixtureHangs) {
		return nil, hang(ctx)
	}
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
	keys, err := s.deleteKeys(ts.resources, r) // dynamic.go: one variant, or the unconstrained resource
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		delete(ts.resources, k)
	}
	s.bumpLocked(r.GetNodeId(), ts)
	s.notifyLocked(r.GetNodeId())
	return &fixturepb.DeleteResourceResponse{}, nil
}

// ApplyChanges applies a batch (feature "batch") as one change: every
// change is validated and applied, in order, to private copies of the
// types it touches, and only if all succeed do the copies replace the
// stored maps, under one hold of the lock. A stream therefore sees all of
// the batch or none of it. Each type touched gets one new version, as for
// one SetResource or DeleteResource (VER-1, VER-2), and the node's streams
// are woken once, so they push the result as they push any one change.
func (f fixtureServer) ApplyChanges(ctx context.Context, r *fixturepb.ApplyChangesRequest) (*fixturepb.ApplyChangesResponse, error) {
	if f.s.has(FaultFixtureHangs) {
		return nil, hang(ctx)
	}
	type change struct {
		set *set      // nil: a delete
		t   wire.Type // of the delete
		del *fixturepb.DeleteResourceRequest
	}
	changes := make([]change, 0, len(r.GetChanges()))
	for i, c := range r.GetChanges() {
		switch {
		case c.GetSet() != nil:
			p, err := f.prepareSet(c.GetSet())
			if err != nil {
				return nil, fixture.BatchError(i, err)
			}
			changes = append(changes, change{set: &p})
		case c.GetDelete() != nil:
			t, err := typeByURL(c.GetDelete().GetTypeUrl())
			if err != nil {
				return nil, fixture.BatchError(i, err)
			}
			changes = append(changes, change{t: t, del: c.GetDelete()})
		default:
			return nil, status.Errorf(codes.InvalidArgument, "change #%d neither sets nor deletes", i)
		}
	}
	node := r.GetNodeId()
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	working := map[string]map[string]*entry{} // type URL -> the type's resources after the batch so far
	var touched []string                      // type URLs, in order of first change
	resp := &fixturepb.ApplyChangesResponse{}
	for i, c := range changes {
		url := c.t.URL
		if c.set != nil {
			url = c.set.t.URL
		}
		w, ok := working[url]
		if !ok {
			w = maps.Clone(s.typeStoreLocked(node, url).resources)
			working[url] = w
			touched = append(touched, url)
		}
		if c.set == nil {
			keys, err := s.deleteKeys(w, c.del)
			if err != nil {
				return nil, fixture.BatchError(i, err)
			}
			for _, k := range keys {
				delete(w, k)
			}
			continue
		}
		if err := storeLocked(w, *c.set); err != nil {
			return nil, fixture.BatchError(i, err)
		}
		resp.Set = append(resp.Set, c.set.resp)
	}
	for _, url := range touched {
		ts := s.typeStoreLocked(node, url)
		ts.resources = working[url]
		s.bumpLocked(node, ts)
	}
	if len(touched) > 0 {
		s.notifyLocked(node)
	}
	return resp, nil
}

func (f fixtureServer) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	if f.s.has(FaultFixtureHangs) {
		return nil, hang(ctx)
	}
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
