package record_test

import (
	"context"
	"testing"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/wire"
)

// echoServer answers every SotW request with resp.
func echoServer(b *testing.B, resp *discovery.DiscoveryResponse) string {
	lis := recordtest.Serve(b, func(g grpc.ServiceRegistrar) {
		wire.RegisterServices(g, wire.Handlers{
			SotW: func(ss wire.SotWServerStream, _ *wire.Type) error {
				for {
					if _, err := ss.Recv(); err != nil {
						return nil
					}
					if err := ss.Send(resp); err != nil {
						return err
					}
				}
			},
			Delta: func(wire.DeltaServerStream, *wire.Type) error { return nil },
		})
	})
	return lis
}

// BenchmarkRecordOverhead measures one request and its response (a
// Cluster response of ten clusters, about 1.6 KB) exchanged directly,
// through the proxy forwarding only, and through the proxy recording:
// the differences are what the extra hop and the recording (decoding,
// redaction, rendering into the transcript) cost per exchange of two
// messages.
func BenchmarkRecordOverhead(b *testing.B) {
	resp := &discovery.DiscoveryResponse{TypeUrl: wire.Cluster.URL, VersionInfo: "1", Nonce: "1"}
	for i := range 10 {
		a, err := anypb.New(wire.Build(wire.Cluster, "cluster-"+string(rune('a'+i)), 1).(*cluster.Cluster))
		if err != nil {
			b.Fatal(err)
		}
		resp.Resources = append(resp.Resources, a)
	}
	up := echoServer(b, resp)
	run := func(b *testing.B, addr string) {
		conn, err := grpc.NewClient(addr, plaintext()...)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		cs, err := conn.NewStream(context.Background(), adsDesc, adsSotW)
		if err != nil {
			b.Fatal(err)
		}
		req := &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"cluster-a"}, VersionInfo: "1", ResponseNonce: "1"}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := cs.SendMsg(req); err != nil {
				b.Fatal(err)
			}
			if err := cs.RecvMsg(&discovery.DiscoveryResponse{}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		_ = cs.CloseSend()
	}
	b.Run("direct", func(b *testing.B) { run(b, up) })
	// MaxMessages 1: past the first message the proxy only forwards, so
	// this is the cost of the extra hop alone.
	b.Run("forwarded", func(b *testing.B) {
		p, err := record.Start(record.Options{Upstream: up, Dial: plaintext(), MaxMessages: 1})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Stop()
		run(b, p.Addr())
	})
	b.Run("recorded", func(b *testing.B) {
		p, err := record.Start(record.Options{Upstream: up, Dial: plaintext()})
		if err != nil {
			b.Fatal(err)
		}
		defer p.Stop()
		run(b, p.Addr())
	})
}
