// Package embedded is a worked example of conformance testing in go test:
// a management server built on go-control-plane (a SnapshotCache served
// over ADS, SotW and delta) runs in-process on loopback, with the fixture
// API that lets the harness create, change and delete its resources, and
// TestConformance (embedded_test.go) runs xdsconform's server suite
// against it, every pair a subtest:
//
//	go test ./examples/embedded/
//	go test ./examples/embedded/ -run 'TestConformance/server/nonce/.*' -v
//
// This file stands for a team's own server; known-failing.txt lists what
// go-control-plane v0.14.0's SnapshotCache is known to break, each entry
// with its rule.
package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/delta/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/sotw/v3"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/examples/snapshotfixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
)

// Server is the management server under test and its fixture API, each on
// a loopback port of its own.
type Server struct {
	// XDS is the xDS address (ADS, SotW and delta).
	XDS string
	// Fixture is the fixture API's address.
	Fixture string

	cancel context.CancelFunc
	xds    *grpc.Server
	fx     *grpc.Server
	done   chan error
}

// Start serves xDS and the fixture API on fresh loopback ports until Stop.
func Start() (*Server, error) {
	xdsLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("xDS listener: %w", err)
	}
	fxLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		xdsLis.Close()
		return nil, fmt.Errorf("fixture listener: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	// ads=false: with ads=true the SnapshotCache answers a SotW request
	// only once it names every resource of the type in the snapshot.
	snapshots := cache.NewSnapshotCache(false, cache.IDHash{}, nil)
	s := &Server{XDS: xdsLis.Addr().String(), Fixture: fxLis.Addr().String(), cancel: cancel,
		xds: grpc.NewServer(), fx: grpc.NewServer(), done: make(chan error, 2)}
	discovery.RegisterAggregatedDiscoveryServiceServer(s.xds, &ads{
		sotw:  sotw.NewServer(ctx, snapshots, nil),
		delta: delta.NewServer(ctx, snapshots, nil),
	})
	fixturepb.RegisterFixtureServer(s.fx, snapshotfixture.New(snapshots))
	go func() { s.done <- s.xds.Serve(xdsLis) }()
	go func() { s.done <- s.fx.Serve(fxLis) }()
	return s, nil
}

// Stop stops both servers and returns once they have; its error is a
// Serve that failed before Stop.
func (s *Server) Stop() error {
	s.cancel()
	s.xds.Stop()
	s.fx.Stop()
	return errors.Join(<-s.done, <-s.done)
}

// ads hands ADS streams to go-control-plane's SotW and delta servers.
type ads struct {
	sotw  sotw.Server
	delta delta.Server
}

func (a *ads) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	return a.sotw.StreamHandler(s, resource.AnyType)
}

func (a *ads) DeltaAggregatedResources(s discovery.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	return a.delta.DeltaStreamHandler(s, resource.AnyType)
}
