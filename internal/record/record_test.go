package record_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

func mustAny(t *testing.T, m any) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m.(proto.Message))
	require.NoError(t, err)
	return a
}

// kinds are the request and response kinds of variant v.
func kinds(v wire.Variant) (req, resp string) {
	if v.IsDelta() {
		return "DeltaDiscoveryRequest", "DeltaDiscoveryResponse"
	}
	return "DiscoveryRequest", "DiscoveryResponse"
}

// TestRecordsEveryVariant records the reference client following its
// chain from the reference server through the proxy, in each variant,
// and checks that the file holds both directions of every type, on the
// streams the variant opens, and names the variant.
func TestRecordsEveryVariant(t *testing.T) {
	chain := []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint}
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			up, fx := startRef(t)
			seedChain(t, fx, "node-"+v.String(), "svc")
			r := startProxy(t, up, record.Options{})
			c, err := refclient.Start(context.Background(), refclient.Config{ServerAddr: r.Addr(), NodeID: "node-" + v.String(), Variant: v, Listener: "svc"})
			require.NoError(t, err)
			defer c.Close()
			r.waitFor(t, "the client to ACK every type", func(es []transcript.Entry) bool { return recordtest.Acked(es, chain...) })
			c.Close()
			r.Stop()

			f := r.File("test")
			assert.Equal(t, transcript.SideClient, f.Side)
			assert.Equal(t, v.String(), f.Variant)
			assert.Contains(t, f.Source, up)
			req, resp := kinds(v)
			for _, ty := range chain {
				prefix := "ads#"
				if !v.IsADS() {
					prefix = ty.Short + "#"
				}
				assert.True(t, has(f.Entries, prefix, transcript.Sent, req), "%s: no %s sent on %s", ty.Short, req, prefix)
				assert.True(t, has(f.Entries, prefix, transcript.Received, resp), "%s: no %s received on %s", ty.Short, resp, prefix)
			}
			opened := slices.IndexFunc(f.Entries, func(e transcript.Entry) bool { return strings.HasPrefix(e.Note, record.NoteOpened) })
			require.GreaterOrEqual(t, opened, 0)
			assert.Contains(t, f.Entries[opened].Note, "/envoy.service.")
			// The file round-trips through the strict reader.
			path := t.TempDir() + "/rec.json"
			require.NoError(t, transcript.WriteFile(path, f))
			back, err := transcript.ReadFile(context.Background(), path)
			require.NoError(t, err)
			assert.Equal(t, len(f.Entries), len(back.Entries))
		})
	}
}

// capture keeps every message one end of a stream sends and receives,
// through an interceptor on the server or on the client.
type capture struct {
	mu       sync.Mutex
	notify   chan struct{}
	sent     map[string][]proto.Message // by method: streams interleave
	received map[string][]proto.Message
	n        int // messages received, all streams
}

func newCapture() *capture {
	return &capture{notify: make(chan struct{}, 1), sent: map[string][]proto.Message{}, received: map[string][]proto.Message{}}
}

func (c *capture) server(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, &capturingServer{ServerStream: ss, c: c, method: info.FullMethod})
}

func (c *capture) client(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	cs, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil {
		return nil, err
	}
	return &capturingClient{ClientStream: cs, c: c, method: method}, nil
}

func (c *capture) add(sent bool, method string, m any) {
	c.mu.Lock()
	if sent {
		c.sent[method] = append(c.sent[method], proto.Clone(m.(proto.Message)))
	} else {
		c.received[method] = append(c.received[method], proto.Clone(m.(proto.Message)))
		c.n++
	}
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

type capturingServer struct {
	grpc.ServerStream
	c      *capture
	method string
}

func (s *capturingServer) SendMsg(m any) error {
	s.c.add(true, s.method, m)
	return s.ServerStream.SendMsg(m)
}

func (s *capturingServer) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.c.add(false, s.method, m)
	}
	return err
}

type capturingClient struct {
	grpc.ClientStream
	c      *capture
	method string
}

func (s *capturingClient) SendMsg(m any) error {
	s.c.add(true, s.method, m)
	return s.ClientStream.SendMsg(m)
}

func (s *capturingClient) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.c.add(false, s.method, m)
	}
	return err
}

// snapshot waits (bounded) until received holds at least n messages and
// returns both lists.
func (c *capture) snapshot(t *testing.T, n int) (sent, received map[string][]proto.Message) {
	t.Helper()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if c.n >= n {
			defer c.mu.Unlock()
			return maps.Clone(c.sent), maps.Clone(c.received)
		}
		c.mu.Unlock()
		select {
		case <-c.notify:
		case <-deadline.C:
			require.FailNowf(t, "timed out", "waiting %v for %d messages received", wait, n)
		}
	}
}

// sameMessages asserts that every message one end sent on each stream is,
// whole, the one the other end received, in order.
func sameMessages(t *testing.T, what string, sent, received map[string][]proto.Message) {
	t.Helper()
	require.Equal(t, slices.Sorted(maps.Keys(sent)), slices.Sorted(maps.Keys(received)), "%s: the same streams", what)
	for method, ms := range sent {
		require.Len(t, received[method], len(ms), "%s on %s", what, method)
		for i := range ms {
			assert.True(t, proto.Equal(ms[i], received[method][i]), "%s %d on %s changed on the way:\nsent     %s\nreceived %s",
				what, i+1, method, prototext.Format(ms[i]), prototext.Format(received[method][i]))
		}
	}
}

// TestMessagesUnchanged drives the harness's fake client through the
// proxy against the reference server, in each variant, and compares
// whole messages: every response the server sent is the one the client
// got, every request the client sent the one the server got.
func TestMessagesUnchanged(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			atServer, atClient := newCapture(), newCapture()
			up, fx := startRef(t, grpc.StreamInterceptor(atServer.server))
			seedChain(t, fx, "n1", "svc")
			r := startProxy(t, up, record.Options{})
			conn := dial(t, r.Addr(), grpc.WithStreamInterceptor(atClient.client))
			c := fakeclient.New(context.Background(), conn, v, fakeclient.Options{NodeID: "n1", Cluster: "c", Timeout: wait})
			defer c.Close()
			steps := []struct {
				t    wire.Type
				name string
			}{{wire.Listener, "svc"}, {wire.Route, "route-a"}, {wire.Cluster, "cluster-a"}, {wire.Endpoint, "cluster-a"}}
			for _, step := range steps {
				require.NoError(t, c.Subscribe(step.t, step.name))
				resp, err := c.Expect(step.t)
				require.NoError(t, err)
				require.NoError(t, c.Ack(step.t, resp))
			}
			// Two requests per step (subscribe, ACK), one response.
			serverSent, serverGot := atServer.snapshot(t, 2*len(steps))
			clientSent, clientGot := atClient.snapshot(t, len(steps))
			sameMessages(t, "response", serverSent, clientGot)
			sameMessages(t, "request", clientSent, serverGot)
		})
	}
}
