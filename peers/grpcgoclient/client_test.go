package grpcgoclient

import (
	"context"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/bootstrap"
	"github.com/xdsconform/xdsconform/internal/process"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/wire"
)

func TestMain(m *testing.M) {
	RunChildIfRequested()
	os.Exit(m.Run())
}

// adsServer is a bare SotW ADS endpoint: the test reads every request
// and writes every response itself.
type adsServer struct {
	addr    string
	reqs    chan *discovery.DiscoveryRequest
	streams chan wire.SotWServerStream
	seen    []*discovery.DiscoveryRequest
}

func startADS(t *testing.T) *adsServer {
	t.Helper()
	a := &adsServer{reqs: make(chan *discovery.DiscoveryRequest, 1000), streams: make(chan wire.SotWServerStream, 10)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a.addr = lis.Addr().String()
	g := grpc.NewServer()
	wire.RegisterServices(g, wire.Handlers{
		SotW: func(s wire.SotWServerStream, svc *wire.Type) error {
			if svc != nil {
				return status.Error(codes.Unimplemented, "ADS only")
			}
			// Bounded by the stream: a test that stopped reading must not
			// leave the handler blocked.
			select {
			case a.streams <- s:
			case <-s.Context().Done():
				return s.Context().Err()
			}
			for {
				req, err := s.Recv()
				if err != nil {
					return err
				}
				select {
				case a.reqs <- req:
				case <-s.Context().Done():
					return s.Context().Err()
				}
			}
		},
		Delta: func(wire.DeltaServerStream, *wire.Type) error {
			return status.Error(codes.Unimplemented, "SotW only")
		},
	})
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return a
}

// await returns the first request, seen so far or arriving before ctx
// ends, for which match is true.
func (a *adsServer) await(ctx context.Context, t *testing.T, what string, match func(*discovery.DiscoveryRequest) bool) *discovery.DiscoveryRequest {
	t.Helper()
	for _, r := range a.seen {
		if match(r) {
			return r
		}
	}
	for {
		select {
		case r := <-a.reqs:
			t.Logf("request: %s", prototext.Format(r))
			a.seen = append(a.seen, r)
			if match(r) {
				return r
			}
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		}
	}
}

func subscription(typ wire.Type, names ...string) func(*discovery.DiscoveryRequest) bool {
	return func(r *discovery.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typ.URL && r.GetResponseNonce() == "" && slices.Equal(r.GetResourceNames(), names)
	}
}

func answer(typ wire.Type, nonce string) func(*discovery.DiscoveryRequest) bool {
	return func(r *discovery.DiscoveryRequest) bool {
		return r.GetTypeUrl() == typ.URL && r.GetResponseNonce() == nonce
	}
}

func send(t *testing.T, s wire.SotWServerStream, typ wire.Type, version, nonce string, ms ...proto.Message) {
	t.Helper()
	resp := &discovery.DiscoveryResponse{TypeUrl: typ.URL, VersionInfo: version, Nonce: nonce}
	for _, m := range ms {
		a, err := anypb.New(m)
		require.NoError(t, err)
		resp.Resources = append(resp.Resources, a)
	}
	require.NoError(t, s.Send(resp))
}

// pollCSDS observes until ok accepts the view or ctx ends.
func pollCSDS(ctx context.Context, t *testing.T, o observer.Observer, what string, ok func([]observer.Resource) bool) []observer.Resource {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last []observer.Resource
	var lastErr error
	for {
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		rs, err := o.Observe(octx)
		cancel()
		if err == nil && ok(rs) {
			return rs
		}
		last, lastErr = rs, err
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for CSDS to show %s: %v; last view %+v, last error %v", what, ctx.Err(), last, lastErr)
		case <-tick.C:
		}
	}
}

func TestGRPCGoClientFollowsChain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ads := startADS(t)
	bs, err := bootstrap.GRPC(bootstrap.Params{ServerAddr: ads.addr, NodeID: "node-1", Cluster: "cluster-1"})
	require.NoError(t, err)

	c, err := Launch(ctx, bs, "lis")
	require.NoError(t, err)
	defer c.Stop()
	require.NotEmpty(t, c.CSDSAddr())
	o, err := observer.DialCSDS(c.CSDSAddr())
	require.NoError(t, err)
	defer o.Close()

	var s wire.SotWServerStream
	select {
	case s = <-ads.streams:
	case <-c.Exited():
		t.Fatalf("client exited: %v", c.Err())
	case <-ctx.Done():
		t.Fatal("client never opened an ADS stream")
	}

	// The very first request subscribes to the listener, with the node.
	first := ads.await(ctx, t, "a request on the ADS stream", func(*discovery.DiscoveryRequest) bool { return true })
	assert.Equal(t, wire.Listener.URL, first.GetTypeUrl())
	assert.Equal(t, []string{"lis"}, first.GetResourceNames())
	assert.Equal(t, "node-1", first.GetNode().GetId())
	assert.Equal(t, "cluster-1", first.GetNode().GetCluster())

	// Follow the chain LDS → RDS → CDS → EDS without any RPC.
	send(t, s, wire.Listener, "1", "lds-1", wire.ClientListener("lis", "route", 1))
	ack := ads.await(ctx, t, "LDS ACK", answer(wire.Listener, "lds-1"))
	assert.Equal(t, "1", ack.GetVersionInfo())
	assert.Nil(t, ack.GetErrorDetail())
	ads.await(ctx, t, "RDS subscription", subscription(wire.Route, "route"))
	send(t, s, wire.Route, "1", "rds-1", wire.ClientRoute("route", "backend", 1))
	ads.await(ctx, t, "CDS subscription", subscription(wire.Cluster, "backend"))
	send(t, s, wire.Cluster, "1", "cds-1", wire.ClientCluster("backend", 1))
	ads.await(ctx, t, "EDS subscription", subscription(wire.Endpoint, "backend"))
	send(t, s, wire.Endpoint, "1", "eds-1", wire.ClientEndpoints("backend", 1))
	ads.await(ctx, t, "EDS ACK", answer(wire.Endpoint, "eds-1"))

	allAcked := func(rs []observer.Resource) bool {
		for _, want := range []struct {
			typ  wire.Type
			name string
		}{{wire.Listener, "lis"}, {wire.Route, "route"}, {wire.Cluster, "backend"}, {wire.Endpoint, "backend"}} {
			r, ok := observer.Find(rs, want.typ.URL, want.name)
			if !ok || r.State != observer.Acked || r.Version != "1" {
				return false
			}
		}
		return true
	}
	rs := pollCSDS(ctx, t, o, "the chain ACKed", allAcked)
	for _, r := range rs {
		t.Logf("csds: %s %q version=%q state=%s", r.TypeURL, r.Name, r.Version, r.State)
		assert.NotNil(t, r.Config, "ACKed resources carry their config")
	}

	// A listener grpc-go must reject: NACKed, last good version kept.
	send(t, s, wire.Listener, "2", "lds-2", wire.InvalidListener("lis", 2))
	nack := ads.await(ctx, t, "LDS NACK", answer(wire.Listener, "lds-2"))
	assert.Equal(t, "1", nack.GetVersionInfo(), "a NACK carries the last accepted version")
	require.NotNil(t, nack.GetErrorDetail())
	t.Logf("NACK error_detail: code=%d message=%q", nack.GetErrorDetail().GetCode(), nack.GetErrorDetail().GetMessage())
	rs = pollCSDS(ctx, t, o, "the listener NACKed", func(rs []observer.Resource) bool {
		r, ok := observer.Find(rs, wire.Listener.URL, "lis")
		return ok && r.State == observer.Nacked
	})
	l, _ := observer.Find(rs, wire.Listener.URL, "lis")
	t.Logf("csds after NACK: version=%q error_version=%q error=%q", l.Version, l.ErrorVersion, l.Error)
	assert.Equal(t, "1", l.Version)
	assert.Equal(t, "2", l.ErrorVersion)
	assert.NotEmpty(t, l.Error)

	pid := c.Pid()
	c.Stop()
	select {
	case <-c.Exited():
	default:
		t.Fatal("Stop returned before the child exited")
	}
	assert.False(t, process.Alive(pid), "child still running")
	assert.Error(t, c.Err())
	c.Stop() // idempotent
}

func TestLaunchFailsWhenChildExits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Without a target the driver gives up before serving CSDS.
	_, err := launch(ctx, []byte(`{}`), "lis", []string{targetEnv + "="})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before serving CSDS")
	assert.Contains(t, err.Error(), "exit status 1")
	assert.Contains(t, err.Error(), targetEnv+" not set", "the child's stderr is in the error")
}

func TestLaunchRejects(t *testing.T) {
	_, err := Launch(context.Background(), []byte(`{not json`), "lis")
	assert.ErrorContains(t, err, "not valid JSON")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Launch(ctx, []byte(`{}`), "lis")
	assert.ErrorIs(t, err, context.Canceled)
}
