package gcpserver

import (
	"context"

	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/config"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"

	"github.com/xdsconform/xdsconform/wire"
)

// handlers is the dispatch layer of go-control-plane's pkg/server/v3
// (server.go:167-352 in v0.14.0) for the eight xDS types: every stream goes
// to the unmodified sotw or delta server with its method's type URL, as
// server.Server does method by method.
//
// Why not server.Server itself: pkg/server/v3 imports the separate module
// github.com/envoyproxy/go-control-plane/ratelimit for its RLS config
// service, which this module does not require. The protocol logic lives
// entirely in pkg/server/sotw/v3, pkg/server/delta/v3 and the caches, which
// run as released. REST Fetch is not served: the harness speaks gRPC
// streams only.
type handlers struct {
	sotw  sotw.Server
	delta delta.Server
}

// newHandlers mirrors server.NewServer with no callbacks.
func newHandlers(ctx context.Context, c cache.Cache, opts ...config.XDSOption) *handlers {
	return &handlers{
		sotw:  sotw.NewServer(ctx, c, nil, opts...),
		delta: delta.NewServer(ctx, c, nil, opts...),
	}
}

// typeURL is the type a method pins: the per-type service's, or
// resource.AnyType on ADS, where each request names its own.
func typeURL(service *wire.Type) string {
	if service == nil {
		return resource.AnyType
	}
	return service.URL
}

func (h *handlers) serveSotW(s wire.SotWServerStream, service *wire.Type) error {
	return h.sotw.StreamHandler(s, typeURL(service))
}

func (h *handlers) serveDelta(s wire.DeltaServerStream, service *wire.Type) error {
	return h.delta.DeltaStreamHandler(s, typeURL(service))
}
