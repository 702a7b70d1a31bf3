package observer

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// sampleStatus is what a gRPC client reports: one ACKed listener, a NACKed
// cluster (last good version kept), a requested route under a bare type
// name (as grpc-js reports it), and a second client scope.
func sampleStatus(t *testing.T) *status.ClientStatusResponse {
	cfg, err := anypb.New(wrapperspb.String("listener body"))
	require.NoError(t, err)
	return &status.ClientStatusResponse{Config: []*status.ClientConfig{
		{
			ClientScope: "xds:///a",
			GenericXdsConfigs: []*status.ClientConfig_GenericXdsConfig{
				{TypeUrl: "type.googleapis.com/envoy.config.listener.v3.Listener", Name: "lis", VersionInfo: "1",
					ClientStatus: admin.ClientResourceStatus_ACKED, XdsConfig: cfg},
				{TypeUrl: "type.googleapis.com/envoy.config.cluster.v3.Cluster", Name: "c", VersionInfo: "1",
					ClientStatus: admin.ClientResourceStatus_NACKED,
					ErrorState:   &admin.UpdateFailureState{Details: "bad cluster", VersionInfo: "2"}},
				{TypeUrl: "envoy.config.route.v3.RouteConfiguration", Name: "r",
					ClientStatus: admin.ClientResourceStatus_REQUESTED},
			},
		},
		{
			ClientScope: "xds:///b",
			GenericXdsConfigs: []*status.ClientConfig_GenericXdsConfig{
				{TypeUrl: "envoy.config.endpoint.v3.ClusterLoadAssignment", Name: "e",
					ClientStatus: admin.ClientResourceStatus_DOES_NOT_EXIST},
			},
		},
	}}
}

// fullCSDS implements both methods.
type fullCSDS struct {
	status.UnimplementedClientStatusDiscoveryServiceServer
	resp *status.ClientStatusResponse
}

func (s *fullCSDS) FetchClientStatus(context.Context, *status.ClientStatusRequest) (*status.ClientStatusResponse, error) {
	return s.resp, nil
}

func (s *fullCSDS) StreamClientStatus(st status.ClientStatusDiscoveryService_StreamClientStatusServer) error {
	return streamAnswer(st, s.resp)
}

// streamOnlyCSDS leaves FetchClientStatus unimplemented, like the CSDS
// handler a Python C-core client serves generically.
type streamOnlyCSDS struct {
	status.UnimplementedClientStatusDiscoveryServiceServer
	resp *status.ClientStatusResponse
}

func (s *streamOnlyCSDS) StreamClientStatus(st status.ClientStatusDiscoveryService_StreamClientStatusServer) error {
	return streamAnswer(st, s.resp)
}

func streamAnswer(st status.ClientStatusDiscoveryService_StreamClientStatusServer, resp *status.ClientStatusResponse) error {
	for {
		if _, err := st.Recv(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if err := st.Send(resp); err != nil {
			return err
		}
	}
}

func serveCSDS(t *testing.T, impl status.ClientStatusDiscoveryServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	status.RegisterClientStatusDiscoveryServiceServer(s, impl)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

func TestCSDSObserve(t *testing.T) {
	for name, mk := range map[string]func(*status.ClientStatusResponse) status.ClientStatusDiscoveryServiceServer{
		"fetch": func(r *status.ClientStatusResponse) status.ClientStatusDiscoveryServiceServer {
			return &fullCSDS{resp: r}
		},
		"stream-only": func(r *status.ClientStatusResponse) status.ClientStatusDiscoveryServiceServer {
			return &streamOnlyCSDS{resp: r}
		},
	} {
		t.Run(name, func(t *testing.T) {
			resp := sampleStatus(t)
			addr := serveCSDS(t, mk(resp))
			o, err := DialCSDS(addr)
			require.NoError(t, err)
			defer o.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			rs, err := o.Observe(ctx)
			require.NoError(t, err)
			require.Len(t, rs, 4)

			l, ok := Find(rs, "type.googleapis.com/envoy.config.listener.v3.Listener", "lis")
			require.True(t, ok)
			assert.Equal(t, Acked, l.State)
			assert.Equal(t, "1", l.Version)
			require.NotNil(t, l.Config)
			assert.Equal(t, resp.Config[0].GenericXdsConfigs[0].XdsConfig.GetValue(), l.Config.GetValue())

			c, ok := Find(rs, "type.googleapis.com/envoy.config.cluster.v3.Cluster", "c")
			require.True(t, ok)
			assert.Equal(t, Resource{TypeURL: c.TypeURL, Name: "c", Version: "1", State: Nacked, Error: "bad cluster", ErrorVersion: "2"}, c)

			// Bare names are normalised, and Find normalises its argument too.
			r, ok := Find(rs, "envoy.config.route.v3.RouteConfiguration", "r")
			require.True(t, ok)
			assert.Equal(t, "type.googleapis.com/envoy.config.route.v3.RouteConfiguration", r.TypeURL)
			assert.Equal(t, Requested, r.State)

			e, ok := Find(rs, "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment", "e")
			require.True(t, ok)
			assert.Equal(t, DoesNotExist, e.State)
		})
	}
}

func TestCSDSObserveUnreachable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())

	o, err := DialCSDS(addr)
	require.NoError(t, err, "dialling is lazy")
	defer o.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = o.Observe(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), addr)
}

func TestStateOf(t *testing.T) {
	for v, want := range map[admin.ClientResourceStatus]State{
		admin.ClientResourceStatus_UNKNOWN:        Unknown,
		admin.ClientResourceStatus_REQUESTED:      Requested,
		admin.ClientResourceStatus_DOES_NOT_EXIST: DoesNotExist,
		admin.ClientResourceStatus_ACKED:          Acked,
		admin.ClientResourceStatus_NACKED:         Nacked,
		admin.ClientResourceStatus_RECEIVED_ERROR: ReceivedError,
		admin.ClientResourceStatus_TIMEOUT:        Timeout,
		admin.ClientResourceStatus(99):            Unknown,
	} {
		assert.Equal(t, want, StateOf(v), v.String())
	}
}

func TestNormalizeTypeURL(t *testing.T) {
	assert.Equal(t, "type.googleapis.com/envoy.config.cluster.v3.Cluster", NormalizeTypeURL("envoy.config.cluster.v3.Cluster"))
	assert.Equal(t, "type.googleapis.com/envoy.config.cluster.v3.Cluster", NormalizeTypeURL("type.googleapis.com/envoy.config.cluster.v3.Cluster"))
	assert.Equal(t, "", NormalizeTypeURL(""))
}
