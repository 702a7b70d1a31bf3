package load

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// hostileADS is an ADS server that does what its mode says.
type hostileADS struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
	mode string
}

func (h hostileADS) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	switch h.mode {
	case "flood":
		// Answers every request with a stream of responses of a type
		// nobody asked for, as fast as it can, until the client leaves.
		for i := 0; ; i++ {
			err := s.Send(&discovery.DiscoveryResponse{TypeUrl: wire.Secret.URL, VersionInfo: "1", Nonce: fmt.Sprint(i)})
			if err != nil {
				return err
			}
		}
	case "hang-up":
		_, _ = s.Recv()
		return fmt.Errorf("goodbye")
	}
	<-s.Context().Done()
	return nil
}

// serveHostile serves mode on loopback; extra server options apply.
func serveHostile(t *testing.T, mode string, opts ...grpc.ServerOption) Target {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	g := grpc.NewServer(opts...)
	discovery.RegisterAggregatedDiscoveryServiceServer(g, hostileADS{mode: mode})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	srv := &targets.Server{Name: mode, Addr: lis.Addr().String(), Dial: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}}
	return Target{Name: mode, Server: srv}
}

// A shard that does not drive the fixture needs none: these run as shard
// 1 of 2 against servers that never serve a resource.
func hostileOptions() Options {
	o := small("hostile")
	o.Shard, o.Shards = 1, 2
	o.SyncTimeout, o.Settle, o.StartWait = 500*time.Millisecond, 200*time.Millisecond, 300*time.Millisecond
	return o
}

// Every hostile server gives a report, within the plan's bounds.
func TestHostileServers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		t     Target
		check func(t *testing.T, notes []string, rep phaseCounts)
	}{
		// A stream limit of one, and a stream that never ends: the other
		// clients' streams never open.
		{"stream limit", serveHostile(t, "hang", grpc.MaxConcurrentStreams(1)), func(t *testing.T, notes []string, _ phaseCounts) {
			assert.Contains(t, fmt.Sprint(notes), "could not all be opened")
		}},
		{"flood", serveHostile(t, "flood"), func(t *testing.T, _ []string, c phaseCounts) {
			assert.Positive(t, c.violations, "STREAM-7: a type never asked for")
			assert.Positive(t, c.responses)
		}},
		{"hang-up", serveHostile(t, "hang-up"), func(t *testing.T, notes []string, c phaseCounts) {
			assert.Positive(t, c.errors)
			assert.Contains(t, fmt.Sprint(notes), "goodbye")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			rep, err := Run(ctx, tc.t, hostileOptions(), "test")
			require.NoError(t, err)
			require.NoError(t, ctx.Err(), "the run ended within its bounds")
			var c phaseCounts
			for _, p := range rep.Phases {
				c.responses += p.Responses
				c.violations += p.Violations
				c.errors += p.Errors
			}
			tc.check(t, rep.Notes, c)
		})
	}
}

type phaseCounts struct{ responses, violations, errors int64 }

// refusingFixture refuses every Set.
type refusingFixture struct{ fixture.Fixture }

func (refusingFixture) Set(context.Context, string, wire.Type, string, *anypb.Any) (fixture.Served, error) {
	return fixture.Served{}, status.Error(codes.PermissionDenied, "no")
}

// A fixture that refuses everything ends the run with notes that say so,
// not one per planned change.
func TestRefusingFixture(t *testing.T) {
	target := reference(t)
	target.Server.Fixture = refusingFixture{target.Server.Fixture}
	o := small("refused")
	o.SyncTimeout, o.Churn, o.Duration = time.Second, 100, 10*time.Second
	rep, err := Run(context.Background(), target, o, "test")
	require.NoError(t, err)
	assert.Contains(t, fmt.Sprint(rep.Notes), "every fixture call failed")
	assert.LessOrEqual(t, len(rep.Notes), maxNotes+1)
	assert.Positive(t, phase(t, rep, loadreport.PhaseInitialSync).Missed)
}
