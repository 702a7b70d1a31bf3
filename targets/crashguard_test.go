package targets_test

import (
	"context"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/targets"
)

// panicky is the reference server's fixture in front of an ADS handler
// that panics on the first request.
type panicky struct{ *refserver.Server }

func (panicky) Register(g grpc.ServiceRegistrar) {
	discovery.RegisterAggregatedDiscoveryServiceServer(g, panicADS{})
}

type panicADS struct {
	discovery.UnimplementedAggregatedDiscoveryServiceServer
}

func (panicADS) StreamAggregatedResources(s discovery.AggregatedDiscoveryService_StreamAggregatedResourcesServer) error {
	if _, err := s.Recv(); err != nil {
		return err
	}
	var m map[string]int
	m["x"]++ // a nil map: what a mutant of a peer's state does
	return nil
}

// A panic in an in-process target is its death, as in a process of its
// own: the stream ends, the target is marked dead with the panic and
// where it happened, and it accepts nothing more. The harness's process
// lives on to report it.
func TestInProcessPanicIsTheTargetsDeath(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := targets.ServeInProcess(ctx, "panicky", panicky{refserver.New()})
	require.NoError(t, err)
	defer srv.Close()
	conn, err := grpc.NewClient(srv.Addr, srv.Dial...)
	require.NoError(t, err)
	defer conn.Close()
	stream, err := discovery.NewAggregatedDiscoveryServiceClient(conn).StreamAggregatedResources(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&discovery.DiscoveryRequest{TypeUrl: "x"}))
	_, err = stream.Recv()
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))

	select {
	case <-srv.Gone():
	case <-ctx.Done():
		t.Fatal("the target was not marked dead")
	}
	require.Error(t, srv.Died())
	assert.Contains(t, srv.Died().Error(), "panicked: assignment to entry in nil map")
	assert.Contains(t, srv.Died().Error(), "crashguard_test.go")
	assert.Error(t, srv.CheckAlive(ctx), "a dead target accepts no connection")
}
