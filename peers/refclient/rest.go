package refclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/wire"
)

// REST mode (Config.Variant wire.REST), as Envoy's api_type REST: each
// type is polled with POST /v3/discovery:<type> (REST-5) of a
// DiscoveryRequest in canonical proto3 JSON (REST-3), one poll of a type
// outstanding at a time (REST-1). The protocol state stays the event
// loop's: a restStream stands in for a per-type gRPC stream, so every
// request the loop sends becomes the next poll, and every
// DiscoveryResponse a poll returns is a response on the stream. The poll
// after a response is therefore its ACK (its version) or its NACK (the
// previous version and error_detail) (REST-6). A poll that ends without a
// DiscoveryResponse (the server held it past requestTimeout, or failed)
// is sent again after refreshDelay. So is one that ended with a response
// the loop did not answer (a type it ignores), but only once the loop has
// handled it: until then the last poll is from before the response, and
// sent again it would overtake the ACK and read as the client holding none
// of it. The loop marks the end of its handling of each response in the
// stream's queue (outgoing.answered), behind any reply. Nonces are
// echoed when the server sends them and not needed (REST-2). Every poll
// carries the node: REST has no stream to remember it.

// REST timings: bootstrap.RESTRefreshDelay and RESTRequestTimeout, the
// values the harness gives an Envoy; Config.RESTRefresh sets another
// refresh delay.
const (
	restRefreshDelay   = 100 * time.Millisecond
	restRequestTimeout = 30 * time.Second
)

// maxRESTReply bounds the bytes read of one poll's reply.
const maxRESTReply = 16 << 20

// restStream carries one type's polls; it implements grpc.ClientStream for
// the slot's goroutines.
type restStream struct {
	c    *Client
	ctx  context.Context
	typ  wire.Type
	url  string
	http *http.Client

	mu    sync.Mutex
	queue []*discovery.DiscoveryRequest
	// unanswered counts the responses handed to the loop that it has not
	// yet marked handled (answered): while any is, the last poll is stale.
	unanswered int
	kick       chan struct{}
	resps      chan *discovery.DiscoveryResponse

	lastVersion string // version_info of the last response (rest-nack-as-ack)
}

// newRESTStream starts polling t's REST endpoint until ctx ends.
func (c *Client) newRESTStream(ctx context.Context, t wire.Type) (*restStream, error) {
	path, ok := t.RESTPath()
	if !ok {
		return nil, fmt.Errorf("refclient: %s has no REST endpoint", t.Short)
	}
	rs := &restStream{
		c: c, ctx: ctx, typ: t, url: "http://" + c.cfg.ServerAddr + path, http: &http.Client{},
		kick: make(chan struct{}, 1), resps: make(chan *discovery.DiscoveryResponse),
	}
	c.wg.Add(1)
	go rs.poller()
	return rs, nil
}

// poller sends the queued requests one poll at a time and, once none is
// queued, the last one again every refreshDelay.
func (rs *restStream) poller() {
	defer rs.c.wg.Done()
	defer rs.http.CloseIdleConnections()
	var last *discovery.DiscoveryRequest
	for {
		req := rs.next(last)
		if req == nil {
			return // the stream ended
		}
		last = req
		if rs.c.fault(FaultRESTTwoOutstanding) {
			// REST-1 broken: the next poll does not wait for this one.
			rs.c.wg.Add(1)
			go func() { defer rs.c.wg.Done(); rs.poll(req) }()
			continue
		}
		rs.poll(req)
	}
}

// next waits for the request to poll with: a queued one, else last again
// once refreshDelay has passed and the loop has handled every response
// handed to it; nil once the stream ended.
func (rs *restStream) next(last *discovery.DiscoveryRequest) *discovery.DiscoveryRequest {
	var again <-chan time.Time
	if last != nil {
		t := time.NewTimer(rs.c.cfg.RESTRefresh)
		defer t.Stop()
		again = t.C
	}
	due := false
	for {
		rs.mu.Lock()
		if len(rs.queue) > 0 {
			req := rs.queue[0]
			rs.queue = rs.queue[1:]
			rs.mu.Unlock()
			return req
		}
		answered := rs.unanswered == 0
		rs.mu.Unlock()
		if due && answered {
			return last
		}
		select {
		case <-rs.ctx.Done():
			return nil
		case <-rs.kick:
		case <-again:
			again, due = nil, true
			if h := rs.c.cfg.hooks.restRefreshDue; h != nil {
				h()
			}
		}
	}
}

// answered is the loop's mark, passed on by the stream's writer behind
// any reply, that it has handled a response of this stream.
func (rs *restStream) answered() {
	rs.mu.Lock()
	rs.unanswered--
	rs.mu.Unlock()
	rs.wake()
}

// wake wakes the poller to look at the queue again.
func (rs *restStream) wake() {
	select {
	case rs.kick <- struct{}{}:
	default:
	}
}

// poll POSTs req and hands the DiscoveryResponse it returns, if any, to
// the slot's reader.
func (rs *restStream) poll(req *discovery.DiscoveryRequest) {
	req = proto.Clone(req).(*discovery.DiscoveryRequest)
	if req.GetNode() == nil && !rs.c.fault(FaultNoNode) {
		req.Node = rs.c.baseNode()
	}
	switch {
	case req.GetErrorDetail() == nil && rs.c.fault(FaultRESTAckWithoutVersion):
		req.VersionInfo = "" // REST-6 broken: the ACK does not say what was accepted
	case req.GetErrorDetail() != nil && rs.c.fault(FaultRESTNackAsAck):
		// REST-6 broken: the rejected version, as if accepted.
		rs.mu.Lock()
		req.VersionInfo, req.ErrorDetail = rs.lastVersion, nil
		rs.mu.Unlock()
	}
	body, err := rs.marshal(req)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(rs.ctx, restRequestTimeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, rs.url, bytes.NewReader(body))
	if err != nil {
		return
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := rs.http.Do(hreq)
	if err != nil {
		return // held past the request timeout, or the server is away
	}
	defer hresp.Body.Close()
	reply, err := io.ReadAll(io.LimitReader(hresp.Body, maxRESTReply))
	if err != nil || hresp.StatusCode != http.StatusOK {
		return
	}
	resp := &discovery.DiscoveryResponse{}
	if err := protojson.Unmarshal(reply, resp); err != nil {
		return // not a DiscoveryResponse: as a failed poll
	}
	if resp.GetNonce() == "" && rs.c.fault(FaultRESTRequiresNonce) {
		return // REST-2 not used (MAY): a response without a nonce is dropped
	}
	rs.mu.Lock()
	rs.lastVersion = resp.GetVersionInfo()
	rs.unanswered++ // before the loop can see it, so its mark cannot come first
	rs.mu.Unlock()
	select {
	case rs.resps <- resp:
	case <-rs.ctx.Done():
	}
}

// marshal writes req in canonical proto3 JSON (REST-3).
func (rs *restStream) marshal(req *discovery.DiscoveryRequest) ([]byte, error) {
	if rs.c.fault(FaultRESTGoJSONPolls) {
		return json.Marshal(req) // REST-3 broken: Go's struct encoding, not proto3 JSON
	}
	return protojson.Marshal(req)
}

// SendMsg queues m, a DiscoveryRequest, as a poll.
func (rs *restStream) SendMsg(m any) error {
	req, ok := m.(*discovery.DiscoveryRequest)
	if !ok {
		return fmt.Errorf("refclient: REST carries DiscoveryRequests, not %T", m)
	}
	if rs.ctx.Err() != nil {
		return rs.ctx.Err()
	}
	rs.mu.Lock()
	rs.queue = append(rs.queue, req)
	rs.mu.Unlock()
	rs.wake()
	return nil
}

// RecvMsg waits for the next DiscoveryResponse a poll returned.
func (rs *restStream) RecvMsg(m any) error {
	dst, ok := m.(*discovery.DiscoveryResponse)
	if !ok {
		return fmt.Errorf("refclient: REST returns DiscoveryResponses, not %T", m)
	}
	select {
	case resp := <-rs.resps:
		proto.Merge(dst, resp)
		return nil
	case <-rs.ctx.Done():
		return rs.ctx.Err()
	}
}

// The rest of grpc.ClientStream: REST has no headers, trailers or
// half-close.
func (rs *restStream) Header() (metadata.MD, error) { return nil, nil }
func (rs *restStream) Trailer() metadata.MD         { return nil }
func (rs *restStream) CloseSend() error             { return nil }
func (rs *restStream) Context() context.Context     { return rs.ctx }

var _ grpc.ClientStream = (*restStream)(nil)

// openStream opens the next stream of slot sl: a gRPC stream, or in REST
// mode the type's poller.
func (c *Client) openStream(ctx context.Context, sl *slot) (grpc.ClientStream, error) {
	if !c.cfg.Variant.IsREST() {
		return sl.conn.NewStream(ctx, &streamDesc, sl.method)
	}
	t, ok := wire.TypeByURL(sl.typ)
	if !ok {
		return nil, errors.New("refclient: REST has no aggregated stream")
	}
	return c.newRESTStream(ctx, t)
}
