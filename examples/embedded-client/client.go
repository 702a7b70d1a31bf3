// Package embeddedclient is a worked example of an xDS client's
// conformance test in go test: the harness plays the management server and
// launches the client under test once per pair, and TestClientConformance
// (client_test.go) runs xdsconform's client suite that way, every pair a
// subtest:
//
//	go test ./examples/embedded-client/
//	go test ./examples/embedded-client/ -run 'TestClientConformance/client/nonce/.*' -v
//
// Run stands for the team's client: grpc-go's xDS client, one channel to
// the target the harness names and a CSDS server showing what the client
// holds. A team points the suite at its own client's command instead; the
// test starts this one by running its own test binary again (TestMain),
// so the example needs no build step.
package embeddedclient

import (
	"context"
	"fmt"
	"net"

	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and balancers
	"google.golang.org/grpc/xds/csds"
)

// Run is the client: it dials target (xds:///LISTENER; grpc-go reads the
// bootstrap the harness wrote from $GRPC_XDS_BOOTSTRAP) and serves CSDS on
// csdsAddr until ctx ends.
func Run(ctx context.Context, target, csdsAddr string) error {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("channel to %s: %w", target, err)
	}
	defer conn.Close()
	// Leave idle mode without an RPC: the xDS client subscribes to the
	// listener and follows the chain from there.
	conn.Connect()

	lis, err := net.Listen("tcp", csdsAddr)
	if err != nil {
		return fmt.Errorf("CSDS listener: %w", err)
	}
	cs, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		lis.Close()
		return fmt.Errorf("CSDS server: %w", err)
	}
	defer cs.Close()
	srv := grpc.NewServer()
	status.RegisterClientStatusDiscoveryServiceServer(srv, cs)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		srv.Stop()
		<-served
		return nil
	case err := <-served:
		return fmt.Errorf("CSDS server: %w", err)
	}
}
