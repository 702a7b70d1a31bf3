package gcpserver

import (
	"context"
	"fmt"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// snapshotFixture drives a SnapshotCache the way its users do: it keeps the
// desired state per node and installs a whole new snapshot on every change.
type snapshotFixture struct {
	fixturepb.UnimplementedFixtureServer

	cache cache.SnapshotCache

	// mu serialises changes per server so snapshots are installed in the
	// order their versions were assigned; a newer snapshot overtaken by an
	// older one would roll clients back.
	mu    sync.Mutex
	nodes map[string]*nodeState
}

// nodeState is one node's desired resources and its snapshot counter.
type nodeState struct {
	// version counts snapshots for the node. It survives Reset: the
	// SnapshotCache treats a request carrying the snapshot's version as up
	// to date, so reusing a version would hide changes from clients.
	version   int
	resources map[string]map[string]types.Resource // type URL -> name -> resource
}

func newSnapshotFixture(c cache.SnapshotCache) *snapshotFixture {
	return &snapshotFixture{cache: c, nodes: map[string]*nodeState{}}
}

// GetCapabilities implements fixturepb.FixtureServer.
func (f *snapshotFixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return capabilities(Snapshot), nil
}

// SetResource implements fixturepb.FixtureServer.
func (f *snapshotFixture) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	t, m, err := decode(r.GetTypeUrl(), r.GetName(), r.GetResource())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	if n.resources[t.URL] == nil {
		n.resources[t.URL] = map[string]types.Resource{}
	}
	n.resources[t.URL][r.GetName()] = m
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.SetResourceResponse{Name: r.GetName()}, nil
}

// DeleteResource implements fixturepb.FixtureServer. Deleting an unknown
// name still publishes a new snapshot: cheap, and it keeps every fixture
// call observable the same way.
func (f *snapshotFixture) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	t, err := lookupType(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	delete(n.resources[t.URL], r.GetName())
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.DeleteResourceResponse{}, nil
}

// Reset implements fixturepb.FixtureServer. It installs an empty snapshot
// rather than calling ClearSnapshot: ClearSnapshot also drops the node's
// status, i.e. the open watches, so open streams would never be told that
// their resources went away; an empty snapshot at a new version answers
// every open watch with the deletions.
func (f *snapshotFixture) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.node(r.GetNodeId())
	n.resources = map[string]map[string]types.Resource{}
	if err := f.publish(ctx, r.GetNodeId(), n); err != nil {
		return nil, err
	}
	return &fixturepb.ResetResponse{}, nil
}

// node returns the state of node id, creating it. Caller holds f.mu.
func (f *snapshotFixture) node(id string) *nodeState {
	n, ok := f.nodes[id]
	if !ok {
		n = &nodeState{resources: map[string]map[string]types.Resource{}}
		f.nodes[id] = n
	}
	return n
}

// publish installs n as node id's next snapshot. Caller holds f.mu.
//
// Every type is listed, empty or not: a type missing from the map gets the
// version "" in the snapshot, and an open watch would then receive a
// response with an empty version_info when its last resource is deleted.
// cache.NewSnapshot gives all types the same version, so every change
// bumps every type; that is how go-control-plane is normally used and
// part of what this target measures (see doc.go).
func (f *snapshotFixture) publish(ctx context.Context, id string, n *nodeState) error {
	n.version++
	version := fmt.Sprintf("v%d", n.version)
	all := make(map[resource.Type][]types.Resource, len(wire.AllTypes))
	for _, t := range wire.AllTypes {
		list := make([]types.Resource, 0, len(n.resources[t.URL]))
		for _, m := range n.resources[t.URL] {
			list = append(list, m)
		}
		all[t.URL] = list
	}
	snap, err := cache.NewSnapshot(version, all)
	if err != nil {
		return status.Errorf(codes.Internal, "build snapshot: %v", err)
	}
	if err := f.cache.SetSnapshot(ctx, id, snap); err != nil {
		return status.Errorf(codes.Internal, "set snapshot %s for node %q: %v", version, id, err)
	}
	return nil
}
