package fakeclient_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// sizeLimitPeers starts a fake server accepting requests of at most
// serverMax bytes and a fake client on a connection accepting responses
// of at most clientMax bytes, and returns them with the client's
// transcript.
func sizeLimitPeers(t *testing.T, serverMax, clientMax int) (*fakeserver.Server, *fakeclient.Client, *transcript.Transcript) {
	t.Helper()
	srv, err := fakeserver.Start(fakeserver.Options{Variant: wire.SotWADS, Timeout: 5 * time.Second, MaxRecvSize: serverMax})
	require.NoError(t, err)
	t.Cleanup(srv.Close)
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(clientMax)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	tr := transcript.New()
	c := fakeclient.New(t.Context(), conn, wire.SotWADS, fakeclient.Options{NodeID: "n", Timeout: 5 * time.Second, Transcript: tr})
	t.Cleanup(c.Close)
	return srv, c, tr
}

// closeNote is the transcript's note of how stream ads#1 ended.
func closeNote(tr *transcript.Transcript) string {
	for _, e := range tr.Entries() {
		if e.Stream == "ads#1" && strings.HasPrefix(e.Note, "closed by ") {
			return e.Note
		}
	}
	return ""
}

// TestTargetRefusesAMessage: a target that refuses a request the harness
// sent, as over its own receive limit (here grpc-go's default of 4 MiB,
// and a 5 MiB request), ends the stream with the very status grpc-go
// gives a message over the harness's limit. It is the target's refusal,
// with the size the harness sent and the target's limit; nothing charges
// it to the harness's limit or names --max-recv-size.
func TestTargetRefusesAMessage(t *testing.T) {
	const serverMax = 4 << 20
	_, c, tr := sizeLimitPeers(t, serverMax, 16<<20)
	req := c.SotWRequest(wire.Cluster, []string{strings.Repeat("n", 5<<20)})
	size := proto.Size(req)
	require.NoError(t, c.SendSotW(wire.Cluster, req))
	_, err := c.Expect(wire.Cluster)
	require.Error(t, err)

	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.False(t, fakeclient.RecvLimitExceeded(err), "the harness's limit is not at work: %v", err)
	r, ok := fakeclient.TargetRefused(err)
	require.True(t, ok, "the target refused the request: %v", err)
	assert.Equal(t, wire.SizeRefusal{Size: size, Limit: serverMax}, r)
	var closed *fakeclient.ClosedError
	require.True(t, errors.As(err, &closed))
	assert.Contains(t, err.Error(), "closed by target")
	for _, s := range []string{err.Error(), fakeclient.RefusedNote(r), closeNote(tr)} {
		assert.NotContains(t, s, "--max-recv-size")
		assert.NotContains(t, s, "harness's receive limit")
	}
	assert.Contains(t, fakeclient.RefusedNote(r), "the target refused a message of")
	assert.True(t, strings.HasPrefix(closeNote(tr), "closed by target: ResourceExhausted"), closeNote(tr))
}

// TestOwnLimitRefusesAMessage: a response over the harness's own receive
// limit ends the stream on the harness's side, and is said to: the note
// names --max-recv-size.
func TestOwnLimitRefusesAMessage(t *testing.T) {
	const clientMax = 64 << 10
	srv, c, tr := sizeLimitPeers(t, 4<<20, clientMax)
	require.NoError(t, c.Subscribe(wire.Cluster, "big"))
	st, err := srv.StreamFor(t.Context(), wire.Cluster, 0)
	require.NoError(t, err)
	_, err = st.Next(t.Context(), wire.Cluster)
	require.NoError(t, err)
	_, err = st.Respond(t.Context(), wire.Cluster, "1", &cluster.Cluster{Name: "big", AltStatName: strings.Repeat("b", 2*clientMax)})
	require.NoError(t, err)
	_, err = c.Expect(wire.Cluster)
	require.Error(t, err)

	assert.True(t, fakeclient.RecvLimitExceeded(err), "%v", err)
	_, refused := fakeclient.TargetRefused(err)
	assert.False(t, refused)
	assert.Contains(t, err.Error(), "closed by harness")
	assert.Contains(t, err.Error(), "--max-recv-size")
	assert.True(t, strings.HasPrefix(closeNote(tr), "closed by harness: the target sent a message over the harness's receive limit"), closeNote(tr))
}
