package record_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/internal/record"
	"github.com/xdsconform/xdsconform/internal/record/recordtest"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// scripted is an upstream whose SotW streams run the script a test sets.
type scripted struct {
	script chan func(wire.SotWServerStream) error
}

func startScripted(t *testing.T, opts ...grpc.ServerOption) (string, *scripted) {
	t.Helper()
	s := &scripted{script: make(chan func(wire.SotWServerStream) error, 1)}
	addr := recordtest.Serve(t, func(g grpc.ServiceRegistrar) {
		wire.RegisterServices(g, wire.Handlers{
			SotW: func(ss wire.SotWServerStream, _ *wire.Type) error {
				select {
				case f := <-s.script:
					return f(ss)
				case <-ss.Context().Done():
					return ss.Context().Err()
				}
			},
			Delta: func(wire.DeltaServerStream, *wire.Type) error {
				return status.Error(codes.Unimplemented, "delta is not scripted")
			},
		})
	}, opts...)
	return addr, s
}

var adsSotW = wire.MethodFor(wire.SotWADS, wire.Type{})

// openADS opens a SotW ADS stream on conn.
func openADS(t *testing.T, ctx context.Context, conn *grpc.ClientConn) grpc.ClientStream {
	t.Helper()
	cs, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, adsSotW)
	require.NoError(t, err)
	return cs
}

// note returns the note of the last event of stream that starts with
// prefix, or "".
func note(entries []transcript.Entry, stream, prefix string) string {
	for i := len(entries) - 1; i >= 0; i-- {
		if e := entries[i]; e.Stream == stream && e.Direction == transcript.Event && strings.HasPrefix(e.Note, prefix) {
			return e.Note
		}
	}
	return ""
}

func hasNote(prefix string) func([]transcript.Entry) bool {
	return func(es []transcript.Entry) bool { return note(es, "ads#1", prefix) != "" }
}

// TestStatusMetadataAndTrailersPropagate ends a stream from the server
// with a status, header and trailer metadata: the client gets them as the
// server sent them, and the recording says who ended the stream and how.
func TestStatusMetadataAndTrailersPropagate(t *testing.T) {
	up, s := startScripted(t)
	r := startProxy(t, up, record.Options{})
	got := make(chan metadata.MD, 1)
	s.script <- func(ss wire.SotWServerStream) error {
		md, _ := metadata.FromIncomingContext(ss.Context())
		got <- md
		if _, err := ss.Recv(); err != nil {
			return err
		}
		_ = ss.SendHeader(metadata.Pairs("x-served-by", "upstream-7"))
		ss.SetTrailer(metadata.Pairs("x-why", "because"))
		return status.Error(codes.PermissionDenied, "go away")
	}
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-tenant", "blue", "authorization", "Bearer s3cr3t-t0ken-value",
		"x-custom-auth", "Basic dXNlcjpjdXN0MG0tcGFzcw==")
	cs := openADS(t, ctx, dial(t, r.Addr()))
	require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{TypeUrl: wire.Listener.URL}))
	err := cs.RecvMsg(&discovery.DiscoveryResponse{})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	assert.Equal(t, "go away", status.Convert(err).Message())
	hdr, _ := cs.Header()
	assert.Equal(t, []string{"upstream-7"}, hdr.Get("x-served-by"))
	assert.Equal(t, []string{"because"}, cs.Trailer().Get("x-why"))

	md := <-got
	assert.Equal(t, []string{"blue"}, md.Get("x-tenant"))
	assert.Equal(t, []string{"Bearer s3cr3t-t0ken-value"}, md.Get("authorization"))

	r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
	r.Stop()
	f := r.File("test")
	opened := note(f.Entries, "ads#1", record.NoteOpened)
	assert.Contains(t, opened, "x-tenant=blue")
	assert.Contains(t, opened, "authorization="+transcript.RedactedSecret)
	assert.Contains(t, opened, "x-custom-auth="+transcript.RedactedSecret, "a credential's shape is redacted under any name")
	assert.Equal(t, record.NoteClosedByServer+"PermissionDenied: go away; trailer: x-why=because", note(f.Entries, "ads#1", record.NoteClosedByServer))
	assert.Equal(t, "server headers: x-served-by=upstream-7", note(f.Entries, "ads#1", "server headers: "))
	path := t.TempDir() + "/rec.json"
	require.NoError(t, transcript.WriteFile(path, f))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "s3cr3t-t0ken-value")
	assert.NotContains(t, string(b), "dXNlcjpjdXN0MG0tcGFzcw")
}

// TestEndOfStreamPropagates ends streams every other way: the server
// returning OK, the client half-closing, the client cancelling, and
// checks that the client's deadline reaches the server.
func TestEndOfStreamPropagates(t *testing.T) {
	up, s := startScripted(t)

	t.Run("server-ok", func(t *testing.T) {
		r := startProxy(t, up, record.Options{})
		s.script <- func(ss wire.SotWServerStream) error {
			_, err := ss.Recv()
			return err
		}
		cs := openADS(t, context.Background(), dial(t, r.Addr()))
		require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
		assert.ErrorIs(t, cs.RecvMsg(&discovery.DiscoveryResponse{}), io.EOF)
		r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
		assert.Equal(t, record.NoteClosedByServer+"OK (end of stream)", note(r.Transcript().Entries(), "ads#1", record.NoteClosedByServer))
	})

	t.Run("client-half-closes", func(t *testing.T) {
		r := startProxy(t, up, record.Options{})
		sawEOF := make(chan error, 1)
		s.script <- func(ss wire.SotWServerStream) error {
			_, err := ss.Recv()
			sawEOF <- err
			return nil
		}
		cs := openADS(t, context.Background(), dial(t, r.Addr()))
		require.NoError(t, cs.CloseSend())
		assert.ErrorIs(t, <-sawEOF, io.EOF)
		assert.ErrorIs(t, cs.RecvMsg(&discovery.DiscoveryResponse{}), io.EOF)
		r.waitFor(t, "the close", hasNote(record.NoteClosedByServer))
		assert.NotEmpty(t, note(r.Transcript().Entries(), "ads#1", record.NoteHalfClosed))
	})

	t.Run("client-cancels-with-deadline", func(t *testing.T) {
		r := startProxy(t, up, record.Options{})
		type seen struct {
			deadline time.Duration
			ok       bool
			end      error
		}
		got := make(chan seen, 1)
		received := make(chan struct{})
		s.script <- func(ss wire.SotWServerStream) error {
			d, ok := ss.Context().Deadline()
			_, _ = ss.Recv()
			close(received)
			<-ss.Context().Done()
			got <- seen{time.Until(d), ok, ss.Context().Err()}
			return nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cs := openADS(t, ctx, dial(t, r.Addr()))
		require.NoError(t, cs.SendMsg(&discovery.DiscoveryRequest{}))
		<-received
		cancel()
		g := <-got
		assert.True(t, g.ok, "the client's deadline reached the server")
		assert.True(t, g.deadline > 0 && g.deadline <= 30*time.Second, "deadline %v", g.deadline)
		assert.ErrorIs(t, g.end, context.Canceled)
		r.waitFor(t, "the close", hasNote(record.NoteClosedByClient))
		assert.Contains(t, note(r.Transcript().Entries(), "ads#1", record.NoteClosedByClient), "Canceled")
	})
}

// bytesCodec sends and receives raw bytes, so a test can put exactly the
// bytes it likes on the wire and see exactly the bytes that arrive.
type bytesCodec struct{}

func (bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (bytesCodec) Name() string { return "proto" }

// odd is a DiscoveryResponse encoded as no proto library would: fields
// out of order, the nonce twice (the last wins) and a field no version of
// the API has. Re-encoding it would change every one of those.
func odd() []byte {
	var b []byte
	b = protowire.AppendTag(b, 5, protowire.BytesType) // nonce
	b = protowire.AppendString(b, "first")
	b = protowire.AppendTag(b, 4, protowire.BytesType) // type_url
	b = protowire.AppendString(b, wire.Listener.URL)
	b = protowire.AppendTag(b, 999, protowire.VarintType) // unknown
	b = protowire.AppendVarint(b, 42)
	b = protowire.AppendTag(b, 1, protowire.BytesType) // version_info
	b = protowire.AppendString(b, "v1")
	b = protowire.AppendTag(b, 5, protowire.BytesType)
	b = protowire.AppendString(b, "second")
	return b
}

// TestBytesUnchanged forwards messages no proto library would write and
// checks that each side gets exactly the bytes the other sent, while the
// recording decodes them.
func TestBytesUnchanged(t *testing.T) {
	resp := odd()
	var req []byte
	req = protowire.AppendTag(req, 2, protowire.BytesType) // node before version_info... a node with an unknown field
	req = protowire.AppendBytes(req, protowire.AppendVarint(protowire.AppendTag(nil, 4242, protowire.VarintType), 7))
	req = protowire.AppendTag(req, 1, protowire.BytesType)
	req = protowire.AppendString(req, "v0")
	gotReq := make(chan []byte, 1)
	up := recordtest.Serve(t, func(grpc.ServiceRegistrar) {}, grpc.ForceServerCodecV2(bytesCodec{}),
		grpc.UnknownServiceHandler(func(_ any, ss grpc.ServerStream) error {
			var b []byte
			if err := ss.RecvMsg(&b); err != nil {
				return err
			}
			gotReq <- b
			return ss.SendMsg(&resp)
		}))
	r := startProxy(t, up, record.Options{})
	conn := dial(t, r.Addr(), grpc.WithDefaultCallOptions(grpc.ForceCodecV2(bytesCodec{})))
	cs := openADS(t, context.Background(), conn)
	require.NoError(t, cs.SendMsg(&req))
	var got []byte
	require.NoError(t, cs.RecvMsg(&got))
	assert.True(t, bytes.Equal(resp, got), "response bytes changed:\nsent %x\ngot  %x", resp, got)
	assert.True(t, bytes.Equal(req, <-gotReq), "request bytes changed")
	r.waitFor(t, "both messages", func(es []transcript.Entry) bool {
		return has(es, "ads#", transcript.Sent, "DiscoveryRequest") && has(es, "ads#", transcript.Received, "DiscoveryResponse")
	})
	var m discovery.DiscoveryResponse
	require.NoError(t, proto.Unmarshal(got, &m))
	assert.Equal(t, "second", m.GetNonce())
	for _, e := range r.Transcript().Entries() {
		if e.Direction == transcript.Received {
			assert.Contains(t, string(e.Message), `"nonce":"second"`)
		}
	}
}

// TestUnknownMethodRefused: the proxy forwards the discovery streams only.
func TestUnknownMethodRefused(t *testing.T) {
	up, _ := startScripted(t)
	r := startProxy(t, up, record.Options{})
	cs, err := dial(t, r.Addr()).NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/grpc.health.v1.Health/Watch")
	require.NoError(t, err)
	err = cs.RecvMsg(&discovery.DiscoveryResponse{})
	assert.Equal(t, codes.Unimplemented, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "discovery streams only")
}
