package gcpserver

import (
	"context"
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// linearFixture drives one LinearCache per type behind a MuxCache. The
// caches hold one global set of resources, so node ids only matter for
// Reset, which removes what the harness created under that id.
//
// It implements no optional feature, and leaves ApplyChanges unimplemented:
// a LinearCache takes no TTL (UpdateResource and UpdateResources store
// plain types.Resource) and has no aliases, and a batch could only be
// atomic within one type (LinearCache.UpdateResources); across types it
// would be one update per cache, which an ADS client sees one at a time.
type linearFixture struct {
	fixturepb.UnimplementedFixtureServer

	mux    *cache.MuxCache
	caches map[string]*cache.LinearCache // type URL -> cache

	mu sync.Mutex
	// owners records, per type URL and name, the node ids that set the
	// resource, so Reset of one node keeps a resource another node set too.
	owners map[string]map[string]map[string]bool
}

func newLinearFixture() *linearFixture {
	f := &linearFixture{
		caches: map[string]*cache.LinearCache{},
		owners: map[string]map[string]map[string]bool{},
	}
	muxed := map[string]cache.Cache{}
	for _, t := range wire.AllTypes {
		lc := cache.NewLinearCache(t.URL, cache.WithLogger(nopLogger{}))
		f.caches[t.URL] = lc
		muxed[t.URL] = lc
		f.owners[t.URL] = map[string]map[string]bool{}
	}
	// Both classifiers are needed: MuxCache calls Classify for SotW and
	// ClassifyDelta for delta. The server fills in TypeUrl on per-type
	// streams before it creates a watch, so the request's TypeUrl is always
	// the type asked for.
	f.mux = &cache.MuxCache{
		Classify:      func(r *cache.Request) string { return r.GetTypeUrl() },
		ClassifyDelta: func(r *cache.DeltaRequest) string { return r.GetTypeUrl() },
		Caches:        muxed,
	}
	return f
}

// GetCapabilities implements fixturepb.FixtureServer.
func (f *linearFixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return capabilities(Linear), nil
}

// SetResource implements fixturepb.FixtureServer.
func (f *linearFixture) SetResource(_ context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	if err := refuseNewer(r); err != nil {
		return nil, err
	}
	t, m, err := decode(r.GetTypeUrl(), r.GetName(), r.GetResource())
	if err != nil {
		return nil, err
	}
	switch {
	case r.GetTtl() != nil:
		return nil, unclaimed(fixture.FeatureTTL)
	case len(r.GetAliases()) > 0:
		return nil, unclaimed(fixture.FeatureAliases)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.caches[t.URL].UpdateResource(r.GetName(), m); err != nil {
		return nil, status.Errorf(codes.Internal, "update %s %q: %v", t.Short, r.GetName(), err)
	}
	byName := f.owners[t.URL]
	if byName[r.GetName()] == nil {
		byName[r.GetName()] = map[string]bool{}
	}
	byName[r.GetName()][r.GetNodeId()] = true
	return &fixturepb.SetResourceResponse{Name: r.GetName()}, nil
}

// DeleteResource implements fixturepb.FixtureServer. The resource is
// global, so it is gone for every node and no node owns it any more.
func (f *linearFixture) DeleteResource(_ context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	if err := refuseVariantDelete(r); err != nil {
		return nil, err
	}
	t, err := lookupType(r.GetTypeUrl())
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.caches[t.URL].DeleteResource(r.GetName()); err != nil {
		return nil, status.Errorf(codes.Internal, "delete %s %q: %v", t.Short, r.GetName(), err)
	}
	delete(f.owners[t.URL], r.GetName())
	return &fixturepb.DeleteResourceResponse{}, nil
}

// Reset implements fixturepb.FixtureServer. Each type's deletions go in one
// UpdateResources call so each cache bumps its version once.
func (f *linearFixture) Reset(_ context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	node := r.GetNodeId()
	for _, t := range wire.AllTypes {
		var gone []string
		for name, nodes := range f.owners[t.URL] {
			if !nodes[node] {
				continue
			}
			delete(nodes, node)
			if len(nodes) == 0 {
				gone = append(gone, name)
				delete(f.owners[t.URL], name)
			}
		}
		if len(gone) == 0 {
			continue
		}
		if err := f.caches[t.URL].UpdateResources(map[string]types.Resource{}, gone); err != nil {
			return nil, status.Errorf(codes.Internal, "reset %s for node %q: %v", t.Short, node, err)
		}
	}
	return &fixturepb.ResetResponse{}, nil
}
