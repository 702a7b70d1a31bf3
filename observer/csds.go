package observer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	status "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	grpcstatus "google.golang.org/grpc/status"
)

// CSDS observes a client through its Client Status Discovery Service.
//
// Its reads are outside the pool that bounds /config_dump reads: a gRPC
// message is received whole before anything can look at it, so a read's
// size is not known until it has been paid for, and reserving the most it
// could cost (StatusViewBytes) would let only a few pairs read at once.
// Instead each response is bounded by the connection's receive limit
// (StatusViewBytes or MaxBytes, enforced by grpc-go before decoding), and an observer
// reads one response at a time (turn): a pair's status view costs at most
// that cap in flight, however many of its checks poll it, so the
// whole run costs at most that times the pairs running at once, the same
// bound --max-recv-size puts on the xDS connections.
type CSDS struct {
	addr     string
	conn     *grpc.ClientConn
	client   status.ClientStatusDiscoveryServiceClient
	turn     chan struct{} // holds a token while a read is in flight
	maxBytes int64
}

var _ Observer = (*CSDS)(nil)

// DialCSDS prepares a plaintext connection to the CSDS endpoint at addr
// (host:port). The connection is lazy: nothing is dialled until the first
// Observe, so a client that is still starting up is not an error here.
func DialCSDS(addr string, opts ...Option) (*CSDS, error) {
	cfg := configure(opts)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		// A status view is bounded like a config dump.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(int(cfg.maxBytes))))
	if err != nil {
		return nil, fmt.Errorf("csds client for %s: %w", addr, err)
	}
	return &CSDS{addr: addr, conn: conn, client: status.NewClientStatusDiscoveryServiceClient(conn), turn: make(chan struct{}, 1),
		maxBytes: cfg.maxBytes}, nil
}

// Observe fetches the client's status once. It uses the unary
// FetchClientStatus and, for servers that implement only the streaming
// method (gRPC C-core's Python CSDS handler), falls back to one round trip
// on StreamClientStatus. Reads of one observer take turns (see CSDS);
// ctx bounds the wait for a turn too.
func (c *CSDS) Observe(ctx context.Context) ([]Resource, error) {
	select {
	case c.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("csds %s: waiting for another read of the status view: %w", c.addr, ctx.Err())
	}
	defer func() { <-c.turn }()
	resp, err := c.client.FetchClientStatus(ctx, &status.ClientStatusRequest{})
	if grpcstatus.Code(err) == codes.Unimplemented {
		resp, err = c.stream(ctx)
	}
	if overCap(err) {
		return nil, fmt.Errorf("csds %s: the response is over %d bytes (the harness reads at most that): %v: %w", c.addr, c.maxBytes, err, ErrTooLarge)
	}
	if err != nil {
		return nil, fmt.Errorf("csds %s: %w", c.addr, err)
	}
	return FlattenClientStatus(resp), nil
}

// overCap reports whether err is grpc-go refusing, on the harness's side,
// a CSDS response over the connection's receive limit, the observer's cap.
// The request is an empty ClientStatusRequest, which no client refuses for
// its size, so these words here are always the harness's own; a client
// that could not send its view for a send limit of its own says "trying to
// send", which stays the client's.
func overCap(err error) bool {
	st, ok := grpcstatus.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return false
	}
	m := st.Message()
	return strings.Contains(m, "grpc: received message larger than max") || strings.Contains(m, "message after decompression larger than max")
}

// stream performs one request/response exchange on StreamClientStatus.
func (c *CSDS) stream(ctx context.Context) (*status.ClientStatusResponse, error) {
	// A child context so the stream is torn down when we return, whatever
	// the server does with the half-close.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.client.StreamClientStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("open StreamClientStatus: %w", err)
	}
	if err := st.Send(&status.ClientStatusRequest{}); err != nil {
		// The real cause of a failed Send is reported by Recv.
		if _, rerr := st.Recv(); rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("StreamClientStatus: %w", rerr)
		}
		return nil, fmt.Errorf("send on StreamClientStatus: %w", err)
	}
	resp, err := st.Recv()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("StreamClientStatus closed without a response")
		}
		return nil, fmt.Errorf("receive on StreamClientStatus: %w", err)
	}
	_ = st.CloseSend()
	return resp, nil
}

// Close closes the connection to the CSDS endpoint.
func (c *CSDS) Close() error { return c.conn.Close() }

// FlattenClientStatus turns a CSDS response into Resources: every
// generic_xds_config of every ClientConfig (gRPC clients report several
// ClientConfigs when they have several client scopes, one per channel
// target). Type URLs are normalised, since grpc-js reports bare names.
func FlattenClientStatus(resp *status.ClientStatusResponse) []Resource {
	var out []Resource
	for _, cc := range resp.GetConfig() {
		for _, g := range cc.GetGenericXdsConfigs() {
			out = append(out, Resource{
				TypeURL:      NormalizeTypeURL(g.GetTypeUrl()),
				Name:         g.GetName(),
				Version:      g.GetVersionInfo(),
				State:        StateOf(g.GetClientStatus()),
				Error:        g.GetErrorState().GetDetails(),
				ErrorVersion: g.GetErrorState().GetVersionInfo(),
				Config:       g.GetXdsConfig(),
			})
		}
	}
	return out
}

// StateOf maps the CSDS per-resource status enum onto State; values this
// build does not know become Unknown rather than a made-up name.
func StateOf(s admin.ClientResourceStatus) State {
	switch s {
	case admin.ClientResourceStatus_REQUESTED:
		return Requested
	case admin.ClientResourceStatus_DOES_NOT_EXIST:
		return DoesNotExist
	case admin.ClientResourceStatus_ACKED:
		return Acked
	case admin.ClientResourceStatus_NACKED:
		return Nacked
	case admin.ClientResourceStatus_RECEIVED_ERROR:
		return ReceivedError
	case admin.ClientResourceStatus_TIMEOUT:
		return Timeout
	}
	return Unknown
}
