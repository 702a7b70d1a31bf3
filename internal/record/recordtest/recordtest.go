// Package recordtest holds what the tests of recording and replaying
// share: a gRPC server on a loopback port for the test's length, and a
// reading of a transcript for the ACKs a client sent.
package recordtest

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// Serve serves register's services on a fresh loopback port until tb
// ends, with opts, and returns the address.
func Serve(tb testing.TB, register func(grpc.ServiceRegistrar), opts ...grpc.ServerOption) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(tb, err)
	g := grpc.NewServer(opts...)
	register(g)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	tb.Cleanup(func() { g.Stop(); <-done })
	return lis.Addr().String()
}

// Acked reports whether entries, seen from the client's side, show the
// client ACKing a response of every type in types: a request echoing the
// nonce of a response of the type, without error_detail.
func Acked(entries []transcript.Entry, types ...wire.Type) bool {
	for _, ty := range types {
		nonces := map[string]bool{}
		ok := false
		for _, e := range entries {
			var m struct {
				TypeURL string          `json:"type_url"`
				Nonce   string          `json:"nonce"`
				Echo    string          `json:"response_nonce"`
				Error   json.RawMessage `json:"error_detail"`
			}
			if len(e.Message) == 0 || json.Unmarshal(e.Message, &m) != nil || m.TypeURL != ty.URL {
				continue
			}
			switch e.Direction {
			case transcript.Received:
				nonces[m.Nonce] = true
			case transcript.Sent:
				if m.Echo != "" && nonces[m.Echo] && len(m.Error) == 0 {
					ok = true
				}
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
