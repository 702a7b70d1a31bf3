package refclient

import (
	"context"
	"io"
	"testing"
	"time"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/wire"
)

// chainTypes are the chain's types with the name, version, nonce and
// resource the harness's chain() serves for each.
var chainTypes = []struct {
	typ                  wire.Type
	name, version, nonce string
	build                proto.Message
}{
	{wire.Listener, "L", "1", "l1", wire.ClientListener("L", "R", 1)},
	{wire.Route, "R", "2", "r1", wire.ClientRoute("R", "C", 1)},
	{wire.Cluster, "C", "3", "c1", wire.ClientCluster("C", 1)},
	{wire.Endpoint, "C", "4", "e1", wire.ClientEndpoints("C", 1)},
}

// assertChainHeld checks CSDS shows the whole chain ACKED at its versions,
// with the configs the server sent.
func assertChainHeld(t *testing.T, h *harness) {
	t.Helper()
	view := h.csds()
	require.Len(t, view, 4)
	for _, ct := range chainTypes {
		g := view[ct.typ.Short+"/"+ct.name]
		require.NotNil(t, g, "%s/%s missing from CSDS", ct.typ.Short, ct.name)
		assert.Equal(t, ct.typ.URL, g.GetTypeUrl())
		assert.Equal(t, admin.ClientResourceStatus_ACKED, g.GetClientStatus(), ct.typ.Short)
		assert.Equal(t, ct.version, g.GetVersionInfo(), ct.typ.Short)
		assert.Nil(t, g.GetErrorState(), ct.typ.Short)
		m, err := wire.Unpack(g.GetXdsConfig())
		require.NoError(t, err)
		assert.True(t, proto.Equal(ct.build, m), "%s config differs", ct.typ.Short)
	}
}

func TestChainInEveryVariant(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, nil)
			h.chain()
			assertChainHeld(t, h)
		})
	}
}

func TestRequestedBeforeTheResourceArrives(t *testing.T) {
	h := start(t, wire.SotWADS, nil)
	h.expectSubscribe(wire.Listener, "L")
	g := h.resource(wire.Listener, "L")
	require.NotNil(t, g)
	assert.Equal(t, admin.ClientResourceStatus_REQUESTED, g.GetClientStatus())
	assert.Empty(t, g.GetVersionInfo())
	assert.Nil(t, g.GetXdsConfig())
}

// TestNack: an invalid update is NACKed with the last accepted version,
// the rejected nonce and an error_detail (ACK-3, ACK-4), nothing is applied
// (ACK-7), CSDS shows NACKED with error_state and the old config, and a
// later valid update is ACKed normally (ACK-6).
func TestNack(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, nil)
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")

			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			nack := h.expectNack(wire.Listener, "l2")
			assert.Equal(t, int32(codes.InvalidArgument), nack.Err.GetCode())
			assert.NotEmpty(t, nack.Err.GetMessage())
			if !v.IsDelta() {
				assert.Equal(t, "1", nack.Version, "NACK carries the last accepted version")
				assert.Equal(t, []string{"L"}, nack.Names)
			}
			g := h.resource(wire.Listener, "L")
			require.NotNil(t, g)
			assert.Equal(t, admin.ClientResourceStatus_NACKED, g.GetClientStatus())
			assert.Equal(t, "1", g.GetVersionInfo())
			assert.True(t, proto.Equal(mustAny(t, wire.ClientListener("L", "R", 1)), g.GetXdsConfig()))
			require.NotNil(t, g.GetErrorState())
			assert.Equal(t, "2", g.GetErrorState().GetVersionInfo())
			assert.NotEmpty(t, g.GetErrorState().GetDetails())

			h.send(wire.Listener, "3", "l3", wire.ClientListener("L", "R", 3))
			h.expectAck(wire.Listener, "3", "l3", "L")
			g = h.resource(wire.Listener, "L")
			assert.Equal(t, admin.ClientResourceStatus_ACKED, g.GetClientStatus())
			assert.Equal(t, "3", g.GetVersionInfo())
			assert.Nil(t, g.GetErrorState())
		})
	}
}

// TestRejections lists what makes a response invalid; every one is NACKed
// and leaves the previous config in place.
func TestRejections(t *testing.T) {
	// A wrapper is fine (the client advertises resource-in-sotw), but not
	// one holding another type.
	wrapped := mustAny(t, &discovery.Resource{Name: "L", Version: "2", Resource: mustAny(t, wire.ClientCluster("L", 2))})
	cases := []struct {
		name string
		typ  wire.Type
		anys func(t *testing.T) []*anypb.Any
	}{
		{"invalid listener", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{mustAny(t, wire.InvalidListener("L", 2))}
		}},
		{"type mismatch (STREAM-8)", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{mustAny(t, wire.ClientListener("L", "R", 2)), mustAny(t, wire.ClientCluster("C", 2))}
		}},
		{"duplicate names (DUP-2)", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{mustAny(t, wire.ClientListener("L", "R", 2)), mustAny(t, wire.ClientListener("L", "R", 3))}
		}},
		{"empty name", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{mustAny(t, wire.ClientListener("", "R", 2))}
		}},
		{"resource wrapper of the wrong type in SotW", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{wrapped}
		}},
		{"listener without HttpConnectionManager", wire.Listener, func(t *testing.T) []*anypb.Any {
			l := &listener.Listener{Name: "L", ApiListener: &listener.ApiListener{ApiListener: mustAny(t, wire.ClientCluster("C", 1))}}
			return []*anypb.Any{mustAny(t, l)}
		}},
		{"undecodable", wire.Listener, func(t *testing.T) []*anypb.Any {
			return []*anypb.Any{{TypeUrl: wire.Listener.URL, Value: []byte{0xff, 0xff}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, wire.SotWADS, nil)
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			h.sendAnys(wire.Listener, "2", "l2", tc.anys(t)...)
			nack := h.expectNack(wire.Listener, "l2")
			assert.Equal(t, "1", nack.Version)
			assert.NotEmpty(t, nack.Err.GetMessage())
			g := h.resource(wire.Listener, "L")
			assert.Equal(t, "1", g.GetVersionInfo(), "nothing applied (ACK-7)")
		})
	}
}

func TestInvalidClusterIsNacked(t *testing.T) {
	h := start(t, wire.SotWADS, nil)
	h.chain()
	h.send(wire.Cluster, "5", "c2", wire.InvalidCluster("C", 2))
	nack := h.expectNack(wire.Cluster, "c2")
	assert.Equal(t, "3", nack.Version)
	g := h.resource(wire.Cluster, "C")
	assert.Equal(t, admin.ClientResourceStatus_NACKED, g.GetClientStatus())
	assert.Equal(t, "3", g.GetVersionInfo())
	assert.Equal(t, "5", g.GetErrorState().GetVersionInfo())
}

func TestCheckBuilders(t *testing.T) {
	cases := []struct {
		name  string
		m     proto.Message
		valid bool
	}{
		{"ClientListener", wire.ClientListener("L", "R", 1), true},
		{"ClientRoute", wire.ClientRoute("R", "C", 1), true},
		{"ClientCluster", wire.ClientCluster("C", 1), true},
		{"ClientDNSCluster", wire.ClientDNSCluster("C", 1), true},
		{"ClientEndpoints", wire.ClientEndpoints("C", 1), true},
		{"InvalidListener", wire.InvalidListener("L", 1), false},
		{"InvalidCluster", wire.InvalidCluster("C", 1), false},
		{"unnamed route", &route.RouteConfiguration{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.m, false)
			if tc.valid {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
}

// TestReconnect: when the server ends the streams (OK or UNAVAILABLE,
// RECONN-2) the client reopens them with fresh state: node on the first
// request, empty nonces (NONCE-5), every name again with the last versions
// (SotW: RECONN-3, VER-4; Delta: DELTA-6, DELTA-7), and keeps its cache
// meanwhile (RECONN-4).
func TestReconnect(t *testing.T) {
	ends := map[string]error{"ok": nil, "unavailable": grpcstatus.Error(codes.Unavailable, "go away")}
	for _, v := range wire.AllVariants {
		for endName, end := range ends {
			t.Run(v.String()+"/"+endName, func(t *testing.T) {
				h := start(t, v, nil)
				h.chain()
				h.closeStreams(end)
				for _, ct := range chainTypes {
					r := h.next(ct.typ)
					h.checkNode(r)
					assert.Empty(t, r.Nonce, "%s nonce on the new stream", ct.typ.Short)
					assert.Nil(t, r.Err)
					assert.Equal(t, []string{ct.name}, r.Names, ct.typ.Short)
					if v.IsDelta() {
						assert.Equal(t, map[string]string{ct.name: ct.version}, r.IRV, ct.typ.Short)
					} else {
						assert.Equal(t, ct.version, r.Version, ct.typ.Short)
					}
				}
				assertChainHeld(t, h)
				h.send(wire.Listener, "5", "l5", wire.ClientListener("L", "R", 5))
				ack := h.expectAck(wire.Listener, "5", "l5", "L")
				assert.Nil(t, ack.IRV, "initial_resource_versions only on the first request (DELTA-6)")
			})
		}
	}
}

// TestDoesNotExistTimer: a name the server never answers becomes
// DOES_NOT_EXIST after the timer (DNE-1, DNE-6), and a late resource is
// still accepted (DNE-4).
func TestDoesNotExistTimer(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, func(c *Config) { c.DNETimeout = 200 * time.Millisecond })
			h.expectSubscribe(wire.Listener, "L")
			_, ok := h.waitCSDS(wire.Listener, "L", wait, func(g *statuspb.ClientConfig_GenericXdsConfig) bool {
				return g.GetClientStatus() == admin.ClientResourceStatus_DOES_NOT_EXIST
			})
			require.True(t, ok, "L never became DOES_NOT_EXIST")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			g := h.resource(wire.Listener, "L")
			assert.Equal(t, admin.ClientResourceStatus_ACKED, g.GetClientStatus())
			assert.Equal(t, "1", g.GetVersionInfo())
		})
	}
}

// TestDeletionAndUnsubscribe: a Cluster missing from a SotW CDS response
// (DEL-4) or removed in Delta (DEL-2) does not exist, and its endpoints are
// unsubscribed (UNSUB-1, UNSUB-3); a missing RouteConfiguration is kept
// (DEL-5).
func TestDeletionAndUnsubscribe(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, nil)
			h.chain()
			if v.IsDelta() {
				h.sendDelta(wire.Cluster, &discovery.DeltaDiscoveryResponse{TypeUrl: wire.Cluster.URL, Nonce: "c2", RemovedResources: []string{"C", "never-seen"}})
			} else {
				h.send(wire.Route, "5", "r2") // DEL-5: an empty RDS response changes nothing
				h.expectAck(wire.Route, "5", "r2", "R")
				h.send(wire.Cluster, "6", "c2")
			}
			h.expectAck(wire.Cluster, "6", "c2", "C")
			unsub := h.next(wire.Endpoint)
			if v.IsDelta() {
				assert.Equal(t, []string{"C"}, unsub.Unsub)
				assert.Nil(t, unsub.Names)
			} else {
				assert.Nil(t, unsub.Names)
				assert.Equal(t, "4", unsub.Version)
				assert.Equal(t, "e1", unsub.Nonce)
			}
			view := h.csds()
			assert.Equal(t, admin.ClientResourceStatus_DOES_NOT_EXIST, view["CDS/C"].GetClientStatus())
			assert.Nil(t, view["CDS/C"].GetXdsConfig())
			assert.NotContains(t, view, "EDS/C", "endpoints of a deleted cluster are no longer watched")
			assert.Equal(t, admin.ClientResourceStatus_ACKED, view["RDS/R"].GetClientStatus())
		})
	}
}

// TestReferenceChange: a route pointing at another cluster swaps the CDS
// and EDS watches.
func TestReferenceChange(t *testing.T) {
	for _, v := range wire.AllVariants {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, nil)
			h.chain()
			h.send(wire.Route, "5", "r2", wire.ClientRoute("R", "C2", 2))
			h.expectAck(wire.Route, "5", "r2", "R")
			cds := h.next(wire.Cluster)
			eds := h.next(wire.Endpoint)
			if v.IsDelta() {
				assert.Equal(t, []string{"C2"}, cds.Names)
				assert.Equal(t, []string{"C"}, cds.Unsub)
				assert.Equal(t, []string{"C"}, eds.Unsub)
			} else {
				assert.Equal(t, []string{"C2"}, cds.Names)
				assert.Equal(t, "3", cds.Version)
				assert.Equal(t, "c1", cds.Nonce)
				assert.Nil(t, eds.Names)
			}
			view := h.csds()
			assert.Equal(t, admin.ClientResourceStatus_REQUESTED, view["CDS/C2"].GetClientStatus())
			assert.NotContains(t, view, "CDS/C")
		})
	}
}

// TestUnwatchedResourcesIgnored: a resource nobody asked for is ignored,
// not NACKed (RES-3, DELTA-5).
func TestUnwatchedResourcesIgnored(t *testing.T) {
	for _, v := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		t.Run(v.String(), func(t *testing.T) {
			h := start(t, v, nil)
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.ClientListener("L", "R", 1), wire.ClientListener("other", "R", 1))
			h.expectAck(wire.Listener, "1", "l1", "L")
			assert.NotContains(t, h.csds(), "LDS/other")
		})
	}
}

func TestCSDSStream(t *testing.T) {
	h := start(t, wire.SotWADS, nil)
	h.expectSubscribe(wire.Listener, "L")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	st, err := statuspb.NewClientStatusDiscoveryServiceClient(h.csdsCC).StreamClientStatus(ctx)
	require.NoError(t, err)
	for range 2 {
		require.NoError(t, st.Send(&statuspb.ClientStatusRequest{}))
		resp, err := st.Recv()
		require.NoError(t, err)
		require.Len(t, resp.GetConfig(), 1)
		assert.Equal(t, "node-1", resp.GetConfig()[0].GetNode().GetId())
		assert.Len(t, resp.GetConfig()[0].GetGenericXdsConfigs(), 1)
	}
	require.NoError(t, st.CloseSend())
	_, err = st.Recv()
	assert.ErrorIs(t, err, io.EOF)
}

func TestLifecycle(t *testing.T) {
	t.Run("close is idempotent", func(t *testing.T) {
		srv := newServer(t)
		c, err := Start(context.Background(), Config{ServerAddr: srv.addr, Variant: wire.SotWADS, Listener: "L"})
		require.NoError(t, err)
		c.Close()
		c.Close()
		select {
		case <-c.Done():
		default:
			t.Fatal("Done not closed after Close")
		}
		assert.NoError(t, c.Err())
	})
	t.Run("context end stops the client", func(t *testing.T) {
		srv := newServer(t)
		ctx, cancel := context.WithCancel(context.Background())
		c, err := Start(ctx, Config{ServerAddr: srv.addr, Variant: wire.DeltaPerType, Listener: "L"})
		require.NoError(t, err)
		cancel()
		select {
		case <-c.Done():
		case <-time.After(wait):
			t.Fatal("client did not stop")
		}
		assert.ErrorIs(t, c.Err(), context.Canceled)
		c.Close()
	})
	t.Run("unreachable server", func(t *testing.T) {
		c, err := Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Variant: wire.SotWPerType, Listener: "L"})
		require.NoError(t, err, "connecting is asynchronous")
		c.Close()
	})
	t.Run("bad config", func(t *testing.T) {
		_, err := Start(context.Background(), Config{Listener: "L"})
		assert.Error(t, err)
		_, err = Start(context.Background(), Config{ServerAddr: "127.0.0.1:1"})
		assert.Error(t, err)
		_, err = Start(context.Background(), Config{ServerAddr: "127.0.0.1:1", Listener: "L", Faults: []Fault{"nope"}})
		assert.Error(t, err)
	})
}
