package gcpserver

import (
	"testing"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"

	"github.com/xdsconform/xdsconform/wire"
)

// The tests in this file pin the protocol behaviour doc.go describes, the
// conformant and the non-conformant alike, so that a go-control-plane
// upgrade that changes it fails here and the notes get revisited. They
// only assert on responses that do arrive; absence is shown by ordering a
// later, certain response behind the request under test on one stream.

// deltaSub sends a delta request on s.
func deltaSub(t *testing.T, s interface{ SendMsg(any) error }, node string, ty wire.Type, nonce string, sub []string, initial map[string]string) {
	t.Helper()
	r := &discovery.DeltaDiscoveryRequest{TypeUrl: ty.URL, ResponseNonce: nonce, ResourceNamesSubscribe: sub, InitialResourceVersions: initial}
	if node != "" {
		r.Node = &core.Node{Id: node}
	}
	require.NoError(t, s.SendMsg(r))
}

// TestSotWExplicitWildcard: the SnapshotCache answers R={"*"} with no
// resources (it filters by the literal names); the LinearCache treats it as
// wildcard.
func TestSotWExplicitWildcard(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "a", 1)
			h.set(t, "n1", wire.Cluster, "b", 1)
			s := h.stream(t, wire.SotWPerType, wire.Cluster)
			require.NoError(t, s.SendMsg(sotwReq("n1", wire.Cluster, "", "", "*")))
			got := sotwByName(t, recvSotW(t, s))
			if fl == Snapshot {
				assert.Empty(t, got, "snapshot cache: explicit * yields an empty CDS response")
			} else {
				assert.Contains(t, got, "a")
				assert.Contains(t, got, "b")
			}
		})
	}
}

// TestSotWNACKResend: a NACK carries the last accepted version, which the
// SnapshotCache compares with its snapshot version and so answers at once
// with the very snapshot that was rejected.
func TestSotWNACKResend(t *testing.T) {
	h := start(t, Snapshot)
	h.set(t, "n1", wire.Cluster, "a", 1)
	s := h.stream(t, wire.SotWPerType, wire.Cluster)
	require.NoError(t, s.SendMsg(sotwReq("n1", wire.Cluster, "", "", "a")))
	r1 := recvSotW(t, s)
	require.NoError(t, s.SendMsg(sotwReq("", wire.Cluster, r1.GetVersionInfo(), r1.GetNonce(), "a")))
	h.set(t, "n1", wire.Cluster, "a", 2)
	r2 := recvSotW(t, s)
	nack := sotwReq("", wire.Cluster, r1.GetVersionInfo(), r2.GetNonce(), "a")
	nack.ErrorDetail = &status.Status{Code: 3, Message: "rejected"}
	require.NoError(t, s.SendMsg(nack))
	r3 := recvSotW(t, s)
	assert.Equal(t, r2.GetVersionInfo(), r3.GetVersionInfo(), "NACKed version resent")
	assertProto(t, wire.Build(wire.Cluster, "a", 2), sotwByName(t, r3)["a"])
}

// TestSotWEmptyAfterNames: after R={a} then R={} the SnapshotCache answers
// the next change with every cluster of the node (the empty name list is
// read as "all" when building the response), violating RES-6/WILD-5.
func TestSotWEmptyAfterNames(t *testing.T) {
	h := start(t, Snapshot)
	h.set(t, "n1", wire.Cluster, "a", 1)
	s := h.stream(t, wire.SotWPerType, wire.Cluster)
	require.NoError(t, s.SendMsg(sotwReq("n1", wire.Cluster, "", "", "a")))
	r1 := recvSotW(t, s)
	require.NoError(t, s.SendMsg(sotwReq("", wire.Cluster, r1.GetVersionInfo(), r1.GetNonce())))
	h.set(t, "n1", wire.Cluster, "b", 1)
	got := sotwByName(t, recvSotW(t, s))
	assert.Contains(t, got, "a")
	assert.Contains(t, got, "b")
}

// TestDeltaResubscribeNotResent: re-subscribing a name the client already
// holds at the current version sends nothing (DELTA-3 violated). The CDS
// subscription after it is answered first, so no EDS resend preceded it.
func TestDeltaResubscribeNotResent(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Endpoint, "e1", 1)
			h.set(t, "n1", wire.Cluster, "c1", 1)
			s := h.stream(t, wire.DeltaADS, wire.Cluster)
			deltaSub(t, s, "n1", wire.Endpoint, "", []string{"e1"}, nil)
			r := recvDelta(t, s)
			deltaSub(t, s, "", wire.Endpoint, r.GetNonce(), nil, nil)
			deltaSub(t, s, "", wire.Endpoint, "", []string{"e1"}, nil)
			deltaSub(t, s, "", wire.Cluster, "", []string{"c1"}, nil)
			r = recvDelta(t, s)
			assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl(), "first response after the re-subscribe")
		})
	}
}

// TestDeltaMissingNameNotRemoved: subscribing to a name that does not
// exist sends no removed_resources (DNE-5 violated).
func TestDeltaMissingNameNotRemoved(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "c1", 1)
			s := h.stream(t, wire.DeltaADS, wire.Cluster)
			deltaSub(t, s, "n1", wire.Endpoint, "", []string{"nope"}, nil)
			deltaSub(t, s, "", wire.Cluster, "", []string{"c1"}, nil)
			r := recvDelta(t, s)
			assert.Equal(t, wire.Cluster.URL, r.GetTypeUrl(), "no EDS response for the missing name")
		})
	}
}

// TestDeltaStaleNonceHonoured: the delta server never checks nonces, so a
// subscription change carrying an old nonce is applied (NONCE-12 holds).
func TestDeltaStaleNonceHonoured(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "a", 1)
			h.set(t, "n1", wire.Cluster, "b", 1)
			s := h.stream(t, wire.DeltaPerType, wire.Cluster)
			deltaSub(t, s, "n1", wire.Cluster, "", []string{"a"}, nil)
			r1 := recvDelta(t, s)
			deltaSub(t, s, "", wire.Cluster, r1.GetNonce(), nil, nil)
			h.set(t, "n1", wire.Cluster, "a", 2)
			r2 := recvDelta(t, s)
			deltaSub(t, s, "", wire.Cluster, r2.GetNonce(), nil, nil)
			deltaSub(t, s, "", wire.Cluster, r1.GetNonce(), []string{"b"}, nil)
			assert.Contains(t, deltaByName(t, recvDelta(t, s)), "b")
		})
	}
}

// TestDeltaInitialVersions: on a stream's first request of a type,
// initial_resource_versions seeds what the server thinks the client has:
// matching names are skipped, differing ones sent, and listed names that
// do not exist come back in removed_resources (DELTA-8).
func TestDeltaInitialVersions(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "a", 1)
			h.set(t, "n1", wire.Cluster, "b", 1)
			// Learn a's version from a first stream.
			s1 := h.stream(t, wire.DeltaPerType, wire.Cluster)
			deltaSub(t, s1, "n1", wire.Cluster, "", []string{"a"}, nil)
			r := recvDelta(t, s1)
			require.Len(t, r.GetResources(), 1)
			va := r.GetResources()[0].GetVersion()

			s2 := h.stream(t, wire.DeltaPerType, wire.Cluster)
			deltaSub(t, s2, "n1", wire.Cluster, "", []string{"a", "b", "c"}, map[string]string{"a": va, "b": "old", "c": "old"})
			r = recvDelta(t, s2)
			got := deltaByName(t, r)
			assert.NotContains(t, got, "a", "a's version matched")
			assert.Contains(t, got, "b")
			assert.Equal(t, []string{"c"}, r.GetRemovedResources())
		})
	}
}

// TestDeltaExplicitWildcard: both caches honour "*" in delta.
func TestDeltaExplicitWildcard(t *testing.T) {
	for _, fl := range flavours {
		t.Run(string(fl), func(t *testing.T) {
			h := start(t, fl)
			h.set(t, "n1", wire.Cluster, "a", 1)
			h.set(t, "n1", wire.Cluster, "b", 1)
			s := h.stream(t, wire.DeltaPerType, wire.Cluster)
			deltaSub(t, s, "n1", wire.Cluster, "", []string{"*"}, nil)
			got := deltaByName(t, recvDelta(t, s))
			assert.Contains(t, got, "a")
			assert.Contains(t, got, "b")
		})
	}
}
