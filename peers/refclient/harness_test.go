package refclient

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// wait bounds every wait for something that must happen.
const wait = 5 * time.Second

// treq is a SotW or Delta request in one shape: Names is resource_names
// (SotW) or resource_names_subscribe (Delta). Empty lists and maps are nil
// so tests can compare with plain literals.
type treq struct {
	TypeURL        string
	Names, Unsub   []string
	Version, Nonce string
	Err            *status.Status
	Node           *core.Node
	IRV            map[string]string
	Seq            int // position on its stream, 0 for the first request
	// Locators are resource_locators (Delta: resource_locators_subscribe)
	// as "name map[k:v]" (xRFC TP2).
	Locators []string
	// UnsubLocators are Delta resource_locators_unsubscribe, written alike
	// (LOC-1).
	UnsubLocators []string
}

func fromSotW(r *discovery.DiscoveryRequest) treq {
	return treq{TypeURL: r.GetTypeUrl(), Names: nilIfEmpty(r.GetResourceNames()), Version: r.GetVersionInfo(),
		Nonce: r.GetResponseNonce(), Err: r.GetErrorDetail(), Node: r.GetNode(), Locators: locatorStrings(r.GetResourceLocators())}
}

func fromDelta(r *discovery.DeltaDiscoveryRequest) treq {
	q := treq{TypeURL: r.GetTypeUrl(), Names: nilIfEmpty(r.GetResourceNamesSubscribe()),
		Unsub: nilIfEmpty(r.GetResourceNamesUnsubscribe()), Nonce: r.GetResponseNonce(),
		Err: r.GetErrorDetail(), Node: r.GetNode(), Locators: locatorStrings(r.GetResourceLocatorsSubscribe()),
		UnsubLocators: locatorStrings(r.GetResourceLocatorsUnsubscribe())}
	if len(r.GetInitialResourceVersions()) > 0 {
		q.IRV = r.GetInitialResourceVersions()
	}
	return q
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// tstream is one stream the scripted server accepted; the test reads its
// requests and sends its responses, and ends it through end.
type tstream struct {
	key     string // "" for ADS, else the type URL of the per-type service
	delta   bool
	sotw    wire.SotWServerStream
	dlt     wire.DeltaServerStream
	reqs    chan treq
	end     chan error
	pending []treq // read but not yet consumed; test goroutine only
}

// tserver is the scripted management server: every stream is handed to the
// test through streams.
type tserver struct {
	addr     string
	streams  chan *tstream
	stop     chan struct{}
	handlers wire.Handlers
	g        *grpc.Server // the test goroutine's (outage), and Cleanup's
}

func newServer(t *testing.T) *tserver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &tserver{addr: lis.Addr().String(), streams: make(chan *tstream, 64), stop: make(chan struct{})}
	key := func(svc *wire.Type) string {
		if svc == nil {
			return ""
		}
		return svc.URL
	}
	s.handlers = wire.Handlers{
		SotW: func(st wire.SotWServerStream, svc *wire.Type) error {
			ts := &tstream{key: key(svc), sotw: st}
			return s.serve(st.Context(), ts, func() (treq, error) {
				r, err := st.Recv()
				if err != nil {
					return treq{}, err
				}
				return fromSotW(r), nil
			})
		},
		Delta: func(st wire.DeltaServerStream, svc *wire.Type) error {
			ts := &tstream{key: key(svc), delta: true, dlt: st}
			return s.serve(st.Context(), ts, func() (treq, error) {
				r, err := st.Recv()
				if err != nil {
					return treq{}, err
				}
				return fromDelta(r), nil
			})
		},
	}
	s.serveOn(lis)
	t.Cleanup(func() {
		close(s.stop)
		s.g.Stop()
	})
	return s
}

// serveOn serves the scripted services on lis.
func (s *tserver) serveOn(lis net.Listener) {
	s.g = grpc.NewServer()
	wire.RegisterServices(s.g, s.handlers)
	go func() { _ = s.g.Serve(lis) }()
}

// outage stops the server (every stream and connection ends), closes the
// next refusals connections the client makes as they come, then serves
// again on the same address.
func (s *tserver) outage(t *testing.T, refusals int) {
	t.Helper()
	s.g.Stop()
	lis, err := net.Listen("tcp", s.addr)
	require.NoError(t, err)
	for range refusals {
		require.NoError(t, lis.(*net.TCPListener).SetDeadline(time.Now().Add(wait)))
		conn, err := lis.Accept()
		require.NoError(t, err, "the client did not try to connect again")
		_ = conn.Close()
	}
	require.NoError(t, lis.Close())
	lis, err = net.Listen("tcp", s.addr)
	require.NoError(t, err)
	s.serveOn(lis)
}

func (s *tserver) serve(ctx context.Context, ts *tstream, recv func() (treq, error)) error {
	ts.reqs = make(chan treq, 256)
	ts.end = make(chan error, 1)
	go func() {
		defer close(ts.reqs)
		for seq := 0; ; seq++ {
			r, err := recv()
			if err != nil {
				return
			}
			r.Seq = seq
			select {
			case ts.reqs <- r:
			case <-ctx.Done():
				return
			}
		}
	}()
	select {
	case s.streams <- ts:
	case <-ctx.Done():
		return nil
	case <-s.stop:
		return nil
	}
	select {
	case err := <-ts.end:
		return err
	case <-ctx.Done():
		return nil
	case <-s.stop:
		return nil
	}
}

// harness drives one reference client against the scripted server.
type harness struct {
	t       *testing.T
	v       wire.Variant
	srv     *tserver
	c       *Client
	streams map[string]*tstream // current stream per key
	csdsCC  *grpc.ClientConn
}

func start(t *testing.T, v wire.Variant, mod func(*Config)) *harness {
	t.Helper()
	srv := newServer(t)
	cfg := Config{ServerAddr: srv.addr, NodeID: "node-1", Cluster: "cluster-1", Variant: v, Listener: "L"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := Start(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	cc, err := grpc.NewClient(c.CSDSAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return &harness{t: t, v: v, srv: srv, c: c, streams: map[string]*tstream{}, csdsCC: cc}
}

func (h *harness) key(typ wire.Type) string {
	if h.v.IsADS() {
		return ""
	}
	return typ.URL
}

// stream returns the current stream carrying typ, waiting for it to open.
func (h *harness) stream(typ wire.Type) *tstream {
	h.t.Helper()
	k := h.key(typ)
	if s := h.streams[k]; s != nil {
		return s
	}
	timeout := time.After(wait)
	for {
		select {
		case s := <-h.srv.streams:
			h.streams[s.key] = s
			if s.key == k {
				return s
			}
		case <-timeout:
			h.t.Fatalf("no %s stream opened", typ.Short)
		}
	}
}

// closeStreams ends every current stream with err; the client must reopen
// them.
func (h *harness) closeStreams(err error) {
	for k, s := range h.streams {
		s.end <- err
		delete(h.streams, k)
	}
}

// next returns the next request of type typ on its stream.
func (h *harness) next(typ wire.Type) treq {
	h.t.Helper()
	r, ok := h.tryNext(typ, typ.URL, wait)
	if !ok {
		h.t.Fatalf("no %s request within %v", typ.Short, wait)
	}
	return r
}

// tryNext waits up to d for the next request whose type_url is url on the
// stream carrying typ.
func (h *harness) tryNext(typ wire.Type, url string, d time.Duration) (treq, bool) {
	h.t.Helper()
	s := h.stream(typ)
	if r, ok := s.takePending(url); ok {
		return r, true
	}
	timeout := time.After(d)
	for {
		select {
		case r, ok := <-s.reqs:
			if !ok {
				h.t.Fatalf("%s stream ended while waiting for a request", typ.Short)
			}
			if r.TypeURL == url {
				return r, true
			}
			s.pending = append(s.pending, r)
		case <-timeout:
			return treq{}, false
		}
	}
}

// takePending takes the oldest request of type url already read from s.
func (s *tstream) takePending(url string) (treq, bool) {
	for i, r := range s.pending {
		if r.TypeURL == url {
			s.pending = slices.Delete(s.pending, i, i+1)
			return r, true
		}
	}
	return treq{}, false
}

// nextAny returns the next request on the stream carrying typ, whatever its
// type.
func (h *harness) nextAny(typ wire.Type) treq {
	h.t.Helper()
	s := h.stream(typ)
	if len(s.pending) > 0 {
		r := s.pending[0]
		s.pending = s.pending[1:]
		return r
	}
	select {
	case r, ok := <-s.reqs:
		if !ok {
			h.t.Fatalf("%s stream ended while waiting for a request", typ.Short)
		}
		return r
	case <-time.After(wait):
		h.t.Fatalf("no request within %v", wait)
	}
	return treq{}
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

// send sends one response of type typ; in Delta, version is both the
// system_version_info and every resource's version.
func (h *harness) send(typ wire.Type, version, nonce string, ms ...proto.Message) {
	h.t.Helper()
	anys := make([]*anypb.Any, len(ms))
	for i, m := range ms {
		anys[i] = mustAny(h.t, m)
	}
	h.sendAnys(typ, version, nonce, anys...)
}

func (h *harness) sendAnys(typ wire.Type, version, nonce string, anys ...*anypb.Any) {
	h.t.Helper()
	s := h.stream(typ)
	if s.delta {
		resp := &discovery.DeltaDiscoveryResponse{TypeUrl: typ.URL, Nonce: nonce, SystemVersionInfo: version}
		for _, a := range anys {
			name, _ := wire.AnyName(a)
			resp.Resources = append(resp.Resources, &discovery.Resource{Name: name, Version: version, Resource: a})
		}
		require.NoError(h.t, s.dlt.Send(resp))
		return
	}
	require.NoError(h.t, s.sotw.Send(&discovery.DiscoveryResponse{TypeUrl: typ.URL, VersionInfo: version, Nonce: nonce, Resources: anys}))
}

// sendDelta sends a hand-made delta response on the stream carrying typ.
func (h *harness) sendDelta(typ wire.Type, resp *discovery.DeltaDiscoveryResponse) {
	h.t.Helper()
	require.NoError(h.t, h.stream(typ).dlt.Send(resp))
}

// expectAck reads the next request of typ and checks it ACKs the response
// (version, nonce) naming names: ACK-2 in SotW, DELTA-1 in Delta.
func (h *harness) expectAck(typ wire.Type, version, nonce string, names ...string) treq {
	h.t.Helper()
	r := h.next(typ)
	require.Nil(h.t, r.Err, "%s: expected an ACK, got a NACK: %v", typ.Short, r.Err)
	require.Equal(h.t, nonce, r.Nonce, "%s ACK nonce", typ.Short)
	if !h.v.IsDelta() {
		require.Equal(h.t, version, r.Version, "%s ACK version", typ.Short)
		require.Equal(h.t, nilIfEmpty(names), r.Names, "%s ACK names", typ.Short)
	}
	return r
}

// expectNack reads the next request of typ and checks it NACKs nonce.
func (h *harness) expectNack(typ wire.Type, nonce string) treq {
	h.t.Helper()
	r := h.next(typ)
	require.NotNil(h.t, r.Err, "%s: expected a NACK", typ.Short)
	require.Equal(h.t, nonce, r.Nonce, "%s NACK nonce", typ.Short)
	return r
}

// expectSubscribe reads the next request of typ and checks it asks for
// names as a fresh subscription.
func (h *harness) expectSubscribe(typ wire.Type, names ...string) treq {
	h.t.Helper()
	r := h.next(typ)
	require.Nil(h.t, r.Err, "%s subscription carries error_detail", typ.Short)
	require.Equal(h.t, nilIfEmpty(names), r.Names, "%s subscription names", typ.Short)
	return r
}

// csds reads the client's status view, keyed "LDS/name".
func (h *harness) csds() map[string]*statuspb.ClientConfig_GenericXdsConfig {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	resp, err := statuspb.NewClientStatusDiscoveryServiceClient(h.csdsCC).FetchClientStatus(ctx, &statuspb.ClientStatusRequest{})
	require.NoError(h.t, err)
	require.Len(h.t, resp.GetConfig(), 1)
	out := map[string]*statuspb.ClientConfig_GenericXdsConfig{}
	for _, g := range resp.GetConfig()[0].GetGenericXdsConfigs() {
		typ, ok := wire.TypeByURL(g.GetTypeUrl())
		require.True(h.t, ok, "CSDS type %q", g.GetTypeUrl())
		out[typ.Short+"/"+g.GetName()] = g
	}
	return out
}

// resource returns the CSDS entry of one resource (nil if absent).
func (h *harness) resource(typ wire.Type, name string) *statuspb.ClientConfig_GenericXdsConfig {
	h.t.Helper()
	return h.csds()[typ.Short+"/"+name]
}

// csdsStatus is the CSDS client_status of a resource, "absent" when CSDS
// does not list it.
func csdsStatus(h *harness, typ wire.Type, name string) string {
	h.t.Helper()
	return csdsShown(h, typ, name, false)
}

// statusOf is csdsStatus and the version shown: "STATUS version".
func statusOf(h *harness, typ wire.Type, name string) string {
	h.t.Helper()
	return csdsShown(h, typ, name, true)
}

// csdsShown reads the CSDS entry of a resource once for csdsStatus and
// statusOf, so the two describe an entry the same way.
func csdsShown(h *harness, typ wire.Type, name string, withVersion bool) string {
	h.t.Helper()
	g := h.resource(typ, name)
	switch {
	case g == nil:
		return "absent"
	case withVersion:
		return g.GetClientStatus().String() + " " + g.GetVersionInfo()
	}
	return g.GetClientStatus().String()
}

// waitCSDS waits until the CSDS entry of (typ, name) satisfies ok, reading
// again whenever the client publishes a new view.
func (h *harness) waitCSDS(typ wire.Type, name string, d time.Duration, ok func(*statuspb.ClientConfig_GenericXdsConfig) bool) (*statuspb.ClientConfig_GenericXdsConfig, bool) {
	h.t.Helper()
	timeout := time.After(d)
	for {
		changed := h.c.stateChanged()
		g := h.resource(typ, name)
		if g != nil && ok(g) {
			return g, true
		}
		select {
		case <-changed:
		case <-timeout:
			return g, false
		}
	}
}

// chain drives the full reference chain L → R → C → C (EDS) as chainTypes
// lists it, checking every request, ACK and node.
func (h *harness) chain() {
	h.t.Helper()
	for _, ct := range chainTypes {
		sub := h.expectSubscribe(ct.typ, ct.name)
		require.Empty(h.t, sub.Nonce, "%s first request nonce (NONCE-4)", ct.typ.Short)
		h.checkNode(sub)
		h.send(ct.typ, ct.version, ct.nonce, ct.build)
		h.checkNode(h.expectAck(ct.typ, ct.version, ct.nonce, ct.name))
	}
}

// checkNode asserts the node is on the first request of a stream and only
// there (STREAM-3).
func (h *harness) checkNode(r treq) {
	h.t.Helper()
	if r.Seq != 0 {
		require.Nil(h.t, r.Node, "node on request #%d of the stream", r.Seq)
		return
	}
	require.NotNil(h.t, r.Node, "no node on the first request of the stream")
	require.Equal(h.t, "node-1", r.Node.GetId())
	require.Equal(h.t, "cluster-1", r.Node.GetCluster())
	require.Equal(h.t, UserAgentName, r.Node.GetUserAgentName())
	require.NotEmpty(h.t, r.Node.GetUserAgentVersion())
}

// nextOrDone waits for the next request of typ or for the client to stop;
// ok is false when the client stopped.
func (h *harness) nextOrDone(typ wire.Type) (treq, bool) {
	h.t.Helper()
	s := h.stream(typ)
	if r, ok := s.takePending(typ.URL); ok {
		return r, true
	}
	reqs := s.reqs
	timeout := time.After(wait)
	for {
		select {
		case r, ok := <-reqs:
			if !ok {
				reqs = nil // the stream ended: only Done can come now
				continue
			}
			if r.TypeURL == typ.URL {
				return r, true
			}
			s.pending = append(s.pending, r)
		case <-h.c.Done():
			return treq{}, false
		case <-timeout:
			h.t.Fatalf("neither a %s request nor a stop within %v", typ.Short, wait)
		}
	}
}

// newStreamFirst reports whether a new stream carrying typ opens before a
// request of typ arrives on the current one: no window to guess.
func (h *harness) newStreamFirst(typ wire.Type) bool {
	h.t.Helper()
	s := h.stream(typ)
	if _, ok := s.takePending(typ.URL); ok {
		return false
	}
	timeout := time.After(wait)
	for {
		select {
		case r, ok := <-s.reqs:
			if !ok {
				h.t.Fatalf("%s stream ended while waiting for a request", typ.Short)
			}
			if r.TypeURL == typ.URL {
				return false
			}
			s.pending = append(s.pending, r)
		case ns := <-h.srv.streams:
			h.streams[ns.key] = ns
			if ns.key == h.key(typ) {
				return true
			}
		case <-timeout:
			h.t.Fatalf("neither a %s request nor a new stream within %v", typ.Short, wait)
		}
	}
}

// newStreamWithin reports whether a new stream carrying typ opens within d.
func (h *harness) newStreamWithin(typ wire.Type, d time.Duration) bool {
	h.t.Helper()
	k := h.key(typ)
	timeout := time.After(d)
	for {
		select {
		case s := <-h.srv.streams:
			h.streams[s.key] = s
			if s.key == k {
				return true
			}
		case <-timeout:
			return false
		}
	}
}
