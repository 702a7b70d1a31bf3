package gcpserver

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// snapshotFixture drives a SnapshotCache the way its users do: it keeps the
// desired state per node and installs a whole new snapshot on every change.
// Unlike cache.NewSnapshot alone, it versions each type on its own, as a
// real control plane would: only the types whose resources changed get a
// new version, so a change to one type does not answer the open SotW
// watches of the others with unchanged content.
type snapshotFixture struct {
	fixturepb.UnimplementedFixtureServer

	cache cache.SnapshotCache

	// mu serialises changes per server so snapshots are installed in the
	// order their versions were assigned; a newer snapshot overtaken by an
	// older one would roll clients back.
	mu    sync.Mutex
	nodes map[string]*nodeState
}

// nodeState is one node's desired resources and their per-type versions.
type nodeState struct {
	// versions counts, per type URL, the changes to that type's resources
	// for the node; a type never changed is at 0. The counters only grow
	// and survive Reset: the SnapshotCache treats a request carrying the
	// type's version as up to date, so reusing a version would hide
	// changes from clients.
	versions map[string]int
	// resources are type URL -> name -> resource, with its TTL if the
	// fixture set one (feature "ttl").
	resources map[string]map[string]types.ResourceWithTTL
}

func newSnapshotFixture(c cache.SnapshotCache) *snapshotFixture {
	return &snapshotFixture{cache: c, nodes: map[string]*nodeState{}}
}

// GetCapabilities implements fixturepb.FixtureServer.
func (f *snapshotFixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return capabilities(Snapshot), nil
}

// change is one decoded fixture change: a set, or a delete when res has no
// Resource.
type change struct {
	t    wire.Type
	name string
	res  types.ResourceWithTTL
}

// decodeSet checks a SetResourceRequest for the SnapshotCache: it keeps
// TTLs (types.ResourceWithTTL) but has no aliases.
func decodeSet(r *fixturepb.SetResourceRequest) (change, error) {
	if err := refuseNewer(r); err != nil {
		return change{}, err
	}
	t, m, err := decode(r.GetTypeUrl(), r.GetName(), r.GetResource())
	if err != nil {
		return change{}, err
	}
	if len(r.GetAliases()) > 0 {
		return change{}, unclaimed(fixture.FeatureAliases)
	}
	ttl, err := decodeTTL(r)
	if err != nil {
		return change{}, err
	}
	return change{t: t, name: r.GetName(), res: types.ResourceWithTTL{Resource: m, TTL: ttl}}, nil
}

// SetResource implements fixturepb.FixtureServer.
func (f *snapshotFixture) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	c, err := decodeSet(r)
	if err != nil {
		return nil, err
	}
	if err := f.apply(ctx, r.GetNodeId(), []change{c}); err != nil {
		return nil, err
	}
	return &fixturepb.SetResourceResponse{Name: r.GetName()}, nil
}

// DeleteResource implements fixturepb.FixtureServer. Deleting an unknown
// name changes no version but still publishes the snapshot, so a node's
// first fixture call installs one whatever it is (see publish).
func (f *snapshotFixture) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	if err := refuseVariantDelete(r); err != nil {
		return nil, err
	}
	t, err := lookupType(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	if err := f.apply(ctx, r.GetNodeId(), []change{{t: t, name: r.GetName()}}); err != nil {
		return nil, err
	}
	return &fixturepb.DeleteResourceResponse{}, nil
}

// ApplyChanges implements fixturepb.FixtureServer (feature "batch"). Every
// change is decoded first, so a bad one applies nothing; then all of them
// go into one snapshot, installed with one SetSnapshot, which is all a
// client can see: the SnapshotCache answers watches from whole snapshots.
func (f *snapshotFixture) ApplyChanges(ctx context.Context, r *fixturepb.ApplyChangesRequest) (*fixturepb.ApplyChangesResponse, error) {
	changes := make([]change, 0, len(r.GetChanges()))
	resp := &fixturepb.ApplyChangesResponse{}
	for i, c := range r.GetChanges() {
		switch {
		case c.GetSet() != nil:
			ch, err := decodeSet(c.GetSet())
			if err != nil {
				return nil, fixture.BatchError(i, err)
			}
			changes = append(changes, ch)
			resp.Set = append(resp.Set, &fixturepb.SetResourceResponse{Name: ch.name})
		case c.GetDelete() != nil:
			if err := refuseVariantDelete(c.GetDelete()); err != nil {
				return nil, fixture.BatchError(i, err)
			}
			t, err := lookupType(c.GetDelete().GetTypeUrl())
			if err != nil {
				return nil, fixture.BatchError(i, err)
			}
			changes = append(changes, change{t: t, name: c.GetDelete().GetName()})
		default:
			return nil, status.Errorf(codes.InvalidArgument, "change #%d neither sets nor deletes", i)
		}
	}
	if err := f.apply(ctx, r.GetNodeId(), changes); err != nil {
		return nil, err
	}
	return resp, nil
}

// apply applies changes, in order, to node id's state and publishes it,
// however many there are: SetResource and DeleteResource are batches of
// one. A type whose resources end up different (content or TTL) gets one
// new version; setting identical content or deleting an unknown name is
// no change, and the type keeps its version.
func (f *snapshotFixture) apply(ctx context.Context, id string, changes []change) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(id)
	next := map[string]map[string]types.ResourceWithTTL{} // type URL -> the type's resources after the changes
	for _, c := range changes {
		named, ok := next[c.t.URL]
		if !ok {
			named = maps.Clone(n.resources[c.t.URL])
			if named == nil {
				named = map[string]types.ResourceWithTTL{}
			}
			next[c.t.URL] = named
		}
		if c.res.Resource == nil {
			delete(named, c.name)
		} else {
			named[c.name] = c.res
		}
	}
	for url, named := range next {
		if !sameResources(n.resources[url], named) {
			n.versions[url]++
		}
		n.resources[url] = named
	}
	return f.publish(ctx, id, n)
}

// sameResources reports whether a and b hold the same names with equal
// content and TTLs.
func sameResources(a, b map[string]types.ResourceWithTTL) bool {
	if len(a) != len(b) {
		return false
	}
	for name, ra := range a {
		rb, ok := b[name]
		if !ok || !proto.Equal(ra.Resource, rb.Resource) || !sameTTL(ra.TTL, rb.TTL) {
			return false
		}
	}
	return true
}

func sameTTL(a, b *time.Duration) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// Reset implements fixturepb.FixtureServer. It installs an empty snapshot
// rather than calling ClearSnapshot: ClearSnapshot also drops the node's
// status, i.e. the open watches, so open streams would never be told that
// their resources went away. Each type that had resources gets a new
// version, which answers its open watches with the deletions; types that
// were already empty keep theirs.
func (f *snapshotFixture) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	for url, named := range n.resources {
		if len(named) > 0 {
			n.versions[url]++
		}
	}
	n.resources = map[string]map[string]types.ResourceWithTTL{}
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.ResetResponse{}, nil
}

// node returns the state of node id, creating it. Caller holds f.mu.
func (f *snapshotFixture) node(id string) *nodeState {
	n, ok := f.nodes[id]
	if !ok {
		n = &nodeState{versions: map[string]int{}, resources: map[string]map[string]types.ResourceWithTTL{}}
		f.nodes[id] = n
	}
	return n
}

// publish installs n as node id's next snapshot, each type at its own
// version. Caller holds f.mu.
//
// Every type is listed, empty or not: a type left out would have the
// version "" in the snapshot, and an open watch would then receive a
// response with an empty version_info when its last resource is deleted.
// The snapshot is assembled from cache.NewResourcesWithTTL, one per type
// with the type's own version, which is all the SnapshotCache reads
// (Snapshot.GetVersion); cache.NewSnapshot (and NewSnapshotWithTTLs) would
// give every type the same one. Delta is not affected: it versions resources by hash
// (ConstructVersionMap). Republishing unchanged versions answers no SotW
// watch, as the cache compares each watch's version_info with its type's
// version.
func (f *snapshotFixture) publish(ctx context.Context, id string, n *nodeState) error {
	var snap cache.Snapshot
	for _, t := range wire.AllTypes {
		i := cache.GetResponseType(t.URL)
		if i == types.UnknownType {
			return status.Errorf(codes.Internal, "build snapshot: unknown resource type %s", t.URL)
		}
		list := make([]types.ResourceWithTTL, 0, len(n.resources[t.URL]))
		for _, r := range n.resources[t.URL] {
			list = append(list, r)
		}
		snap.Resources[i] = cache.NewResourcesWithTTL(typeVersion(n.versions[t.URL]), list)
	}
	if err := f.cache.SetSnapshot(ctx, id, &snap); err != nil {
		return status.Errorf(codes.Internal, "set snapshot for node %q: %v", id, err)
	}
	return nil
}

// typeVersion renders a type's change counter as its version_info; never
// empty, which clients send before they accept anything.
func typeVersion(n int) string { return fmt.Sprintf("v%d", n) }
