package targets

import (
	"context"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"

	"google.golang.org/protobuf/types/known/anypb"
)

// renamedNodes tells the fixture the node id the fake client sends
// (ServerOptions.NodeID) instead of the pair's own, so that a node-scoped
// server keys what the fixture sets on the node that asks for it.
type renamedNodes struct {
	f    fixture.Fixture
	name func(string) string
}

func (r renamedNodes) Capabilities(ctx context.Context) (*fixturepb.Capabilities, error) {
	return r.f.Capabilities(ctx)
}

func (r renamedNodes) Set(ctx context.Context, node string, t wire.Type, name string, res *anypb.Any) (fixture.Served, error) {
	return r.f.Set(ctx, r.name(node), t, name, res)
}

func (r renamedNodes) SetWith(ctx context.Context, node string, req fixture.SetRequest) (fixture.Served, error) {
	return r.f.SetWith(ctx, r.name(node), req)
}

func (r renamedNodes) Delete(ctx context.Context, node string, t wire.Type, name string) error {
	return r.f.Delete(ctx, r.name(node), t, name)
}

func (r renamedNodes) DeleteWith(ctx context.Context, node string, req fixture.DeleteRequest) error {
	return r.f.DeleteWith(ctx, r.name(node), req)
}

func (r renamedNodes) Reset(ctx context.Context, node string) error {
	return r.f.Reset(ctx, r.name(node))
}

func (r renamedNodes) Apply(ctx context.Context, node string, changes []fixture.Change) ([]fixture.Served, error) {
	return r.f.Apply(ctx, r.name(node), changes)
}
