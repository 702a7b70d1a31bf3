package gcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	rest "github.com/envoyproxy/go-control-plane/pkg/server/rest/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// Flavour selects which go-control-plane cache backs the server. The two
// caches share the server (pkg/server/v3) but differ in how they decide what
// to send, so they conform differently and are separate targets.
type Flavour string

const (
	// Snapshot is cache.SnapshotCache: one versioned snapshot per node id,
	// the way most go-control-plane users (and its own examples) run it.
	Snapshot Flavour = "snapshot"
	// Linear is a cache.MuxCache over one cache.LinearCache per type:
	// resources are global, versioned per type and per resource.
	Linear Flavour = "linear"
)

// ServerVersion is the go-control-plane release this target runs; it must
// follow go.mod, which pins the module.
const ServerVersion = "go-control-plane v0.14.0"

// Server is go-control-plane's xDS server over one of its caches, together
// with the fixture service that drives that cache.
type Server struct {
	flavour Flavour
	xds     *handlers
	fx      fixturepb.FixtureServer
	// rest serves REST-JSON polls; nil for the Linear flavour, whose
	// LinearCache does not implement Fetch (linear.go:572-574).
	rest rest.Server
}

// New builds a server of the given flavour. ctx bounds the lifetime of the
// go-control-plane server: when it ends, open xDS streams return.
func New(ctx context.Context, flavour Flavour) (*Server, error) {
	var (
		c  cache.Cache
		fx fixturepb.FixtureServer
	)
	switch flavour {
	case Snapshot:
		// ads=false on purpose: with ads=true the cache answers SotW
		// requests only when they name every resource of the type in the
		// snapshot, which no conformance scenario does.
		sc := cache.NewSnapshotCache(false, cache.IDHash{}, nopLogger{})
		c = sc
		fx = newSnapshotFixture(sc)
	case Linear:
		lf := newLinearFixture()
		c = lf.mux
		fx = lf
	default:
		return nil, fmt.Errorf("gcpserver: unknown flavour %q (want %q or %q)", flavour, Snapshot, Linear)
	}
	// The sotw and delta servers take the same option type; WithLogger
	// silences both (the sotw default logger is already a no-op in v0.14.0,
	// but saying so explicitly keeps it quiet if that default changes).
	xds := newHandlers(ctx, c, sotw.WithLogger(nopLogger{}))
	srv := &Server{flavour: flavour, xds: xds, fx: fx}
	if flavour == Snapshot {
		srv.rest = rest.NewServer(c, nil)
	}
	return srv, nil
}

// Register adds go-control-plane's handlers to g: ADS (SotW and delta) and
// the per-type service of each of the eight xDS types, with the streaming
// methods server.Server implements for them (VHDS: delta only;
// go-control-plane has no SotW VHDS handler and the protocol has none,
// STREAM-10). The ECDS and RLS config services of server.Server are left
// out: they are outside the types the harness knows, and RLS is what keeps
// pkg/server/v3 itself out of reach (see handlers).
func (s *Server) Register(g grpc.ServiceRegistrar) {
	wire.RegisterServices(g, wire.Handlers{SotW: s.xds.serveSotW, Delta: s.xds.serveDelta})
}

// FixtureServer returns the in-process fixture service for this server;
// wrap it with fixture.FromServer, or register it on a gRPC server for an
// out-of-process harness.
func (s *Server) FixtureServer() fixturepb.FixtureServer { return s.fx }

// capabilities is what each flavour claims. Every claim was checked against
// the v0.14.0 source, see doc.go:
//   - all eight types: cache.GetResponseType knows every one of them, so the
//     SnapshotCache stores them, and a LinearCache takes any type URL;
//   - all four variants: server.Server implements ADS and the per-type
//     Stream*/Delta* methods (VHDS delta only, which is all it has);
//   - legacy wildcard: on by default for every type (config.Opts);
//   - explicit "*": the stream subscription treats it as wildcard in both
//     protocols (pkg/server/stream/v3/subscription.go), and the LinearCache
//     and the SnapshotCache's delta path serve it so; the SnapshotCache's
//     SotW path then filters by the literal name "*" (simple.go:516-523).
//     So the Snapshot flavour declares it per variant, delta only. WILD-1 is
//     a SHOULD: in the issue tracker's view it is a feature a server may
//     lack, and a server that does not implement "*" in one variant is
//     skipped there, not failed;
//   - "batch" (Snapshot only): all changes go into one snapshot, installed
//     with one SetSnapshot. The LinearCache could only update one type at a
//     time (see linearFixture);
//   - "ttl" (Snapshot, SotW only): resources with a TTL are sent wrapped in
//     a discovery Resource carrying it (cache.go:448-486), but the delta
//     response drops it (RawDeltaResponse.GetDeltaDiscoveryResponse sets no
//     Resource.ttl), so delta does not claim it. The LinearCache keeps no
//     TTL at all. Note that go-control-plane wraps for every client,
//     whatever its client features, which TTL-1 and TTL-5 check;
//   - no "aliases" (go-control-plane never sets Resource.aliases nor reads
//     subscriptions by alias) and no "envoy-warming" (a SotW EDS request
//     carrying the current version and no new name is not answered,
//     simple.go:426-452);
//   - no "dynamic-parameters" and no "resource-errors": go-control-plane
//     implements neither xRFC TP2 nor TP3 (see newer.go);
//   - names are the caller's; resources are per node only for Snapshot.
//   - none of "xdstp", "list-collections", "glob-collections" and
//     "redirects": names are opaque strings, matched only when identical
//     (SotW simple.go:516-521, a set of the requested names; delta
//     delta.go:64-66, a map lookup by name), so context parameters in
//     another order do not match (XDSTP-3), a glob is a literal name and
//     no list collection is ever built; nothing in pkg/ knows xdstp or a
//     ResourceLocator. Their scenarios skip with the capability reason.
func capabilities(flavour Flavour) *fixturepb.Capabilities {
	c := &fixturepb.Capabilities{
		ApiVersion:       fixture.APIVersion,
		Server:           fmt.Sprintf("%s (%s cache)", ServerVersion, flavour),
		TypeUrls:         wire.AllTypeURLs(),
		Variants:         wire.VariantNames(variants(flavour)),
		LegacyWildcard:   true,
		ExplicitWildcard: flavour == Linear,
		GeneratesNames:   false,
		NodeScoped:       flavour == Snapshot,
	}
	if flavour == Snapshot {
		c.Features = []string{fixture.FeatureBatch}
		for _, v := range wire.AllVariants {
			o := &fixturepb.VariantCapabilities{Variant: v.String()}
			if v.IsDelta() {
				o.ExplicitWildcard = proto.Bool(true)
			} else {
				o.AddFeatures = []string{fixture.FeatureTTL}
			}
			c.VariantCapabilities = append(c.VariantCapabilities, o)
		}
	}
	return c
}

// unclaimed refuses a request that uses a feature the flavour does not
// claim, rather than ignoring what was asked for.
func unclaimed(feature string) error {
	return status.Errorf(codes.InvalidArgument, "feature %q is not claimed by this go-control-plane target", feature)
}

// decodeTTL reads the TTL of a set as go-control-plane takes it
// (types.ResourceWithTTL): nil when unset, else a positive duration. The
// checks are fixture.CheckedTTL's, shared with the reference server.
func decodeTTL(r *fixturepb.SetResourceRequest) (*time.Duration, error) {
	ttl, err := fixture.CheckedTTL(r)
	if ttl == nil || err != nil {
		return nil, err
	}
	d := ttl.AsDuration()
	return &d, nil
}

// decode checks a fixture request and unpacks its resource: go-control-plane
// caches hold proto messages, not Anys, and key SnapshotCache entries by the
// resource's own name, so a resource whose name differs from the requested
// one could never be served under that name.
func decode(typeURL, name string, res *anypb.Any) (wire.Type, types.Resource, error) {
	t, err := lookupType(typeURL)
	if err != nil {
		return wire.Type{}, nil, err
	}
	if name == "" {
		return wire.Type{}, nil, status.Error(codes.InvalidArgument, "empty resource name")
	}
	if res.GetTypeUrl() != t.URL {
		return wire.Type{}, nil, status.Errorf(codes.InvalidArgument, "resource is a %q, request says %q", res.GetTypeUrl(), t.URL)
	}
	m, err := wire.Unpack(res)
	if err != nil {
		return wire.Type{}, nil, status.Errorf(codes.InvalidArgument, "unpack resource: %v", err)
	}
	if got := wire.NameOf(m); got != name {
		return wire.Type{}, nil, status.Errorf(codes.InvalidArgument, "resource names itself %q, request says %q", got, name)
	}
	return t, m, nil
}

// lookupType accepts only the full type URLs the harness knows, so a typo
// fails the fixture call instead of silently creating an unserved type.
func lookupType(typeURL string) (wire.Type, error) {
	t, ok := wire.TypeByExactURL(typeURL)
	if !ok {
		return wire.Type{}, status.Errorf(codes.InvalidArgument, "unsupported type URL %q", typeURL)
	}
	return t, nil
}

// nopLogger discards go-control-plane's logging, which at Info level writes
// a line per watch and would drown the harness output.
type nopLogger struct{}

func (nopLogger) Debugf(string, ...any) {}
func (nopLogger) Infof(string, ...any)  {}
func (nopLogger) Warnf(string, ...any)  {}
func (nopLogger) Errorf(string, ...any) {}
