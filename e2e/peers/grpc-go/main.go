// Command grpc-go-driver is grpc-go's xDS client as an xdsconform client
// target, built from its own version-pinned module:
//
//	grpc-go-driver TARGET CSDS_ADDR   (bootstrap in $GRPC_XDS_BOOTSTRAP)
//
// It opens one channel to TARGET (xds:///<listener>), leaves idle mode so
// the xDS client subscribes and follows the resource chain, and serves
// grpc-go's own CSDS on CSDS_ADDR. It exits on SIGTERM or SIGINT.
//
// It repeats grpcgoclient's child driver on purpose: importing the harness
// would tie the grpc-go version it runs to the harness's own.
package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/xds" // the xds:/// resolver and the xDS balancers
	"google.golang.org/grpc/xds/csds"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: grpc-go-driver TARGET CSDS_ADDR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintf(os.Stderr, "grpc-go-driver: %v\n", err)
		os.Exit(1)
	}
}

func run(target, csdsAddr string) error {
	// Signals first, so a stop racing with start-up is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	// CSDS before the channel: the harness polls it as soon as the process
	// runs, and an address that refuses connections reads as "not yet".
	lis, err := net.Listen("tcp", csdsAddr)
	if err != nil {
		return fmt.Errorf("csds listener: %w", err)
	}
	cs, err := csds.NewClientStatusDiscoveryServer()
	if err != nil {
		return fmt.Errorf("csds server: %w", err)
	}
	defer cs.Close()
	srv := grpc.NewServer()
	status.RegisterClientStatusDiscoveryServiceServer(srv, cs)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("channel to %s: %w", target, err)
	}
	defer conn.Close()
	conn.Connect()

	select {
	case <-sigs:
		return nil
	case err := <-serveErr:
		return fmt.Errorf("csds server: %w", err)
	}
}
