package gcpserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/wire"
)

// The tests in this file pin the protocol behaviour doc.go describes, the
// conformant and the non-conformant alike, so that a go-control-plane
// upgrade that changes it fails here and the notes get revisited. They
// only assert on responses that do arrive; absence is shown by ordering a
// later, certain response behind the request under test on one stream.

// sendDelta sends a delta request with exactly this response_nonce,
// subscribe list and initial_resource_versions; the client puts the node on
// the stream's first request only.
func sendDelta(t *testing.T, c *fakeclient.Client, ty wire.Type, nonce string, sub []string, initial map[string]string) {
	t.Helper()
	req := c.DeltaRequest(ty)
	req.ResponseNonce, req.ResourceNamesSubscribe, req.InitialResourceVersions = nonce, sub, initial
	require.NoError(t, c.SendDelta(ty, req))
}

// TestSotWExplicitWildcard: the SnapshotCache answers R={"*"} with no
// resources (it filters by the literal names); the LinearCache treats it as
// wildcard.
func TestSotWExplicitWildcard(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "a", 1)
		h.set(t, "n1", wire.Cluster, "b", 1)
		c := h.client(t, wire.SotWPerType, "n1")
		sendSotW(t, c, wire.Cluster, "", "", "*")
		r := expect(t, c, wire.Cluster)
		if fl == Snapshot {
			assert.Empty(t, r.Resources, "snapshot cache: explicit * yields an empty CDS response")
		} else {
			assert.True(t, r.Has("a"))
			assert.True(t, r.Has("b"))
		}
	})
}

// TestSotWNACKResend: a NACK carries the last accepted version, which the
// SnapshotCache compares with its snapshot version and so answers at once
// with the very snapshot that was rejected.
func TestSotWNACKResend(t *testing.T) {
	h := start(t, Snapshot)
	h.set(t, "n1", wire.Cluster, "a", 1)
	c := h.client(t, wire.SotWPerType, "n1")
	sendSotW(t, c, wire.Cluster, "", "", "a")
	r1 := expect(t, c, wire.Cluster)
	require.NoError(t, c.Ack(wire.Cluster, r1))
	h.set(t, "n1", wire.Cluster, "a", 2)
	r2 := expect(t, c, wire.Cluster)
	require.NoError(t, c.Nack(wire.Cluster, r2, "rejected")) // version_info: r1's, the last accepted
	r3 := expect(t, c, wire.Cluster)
	assert.Equal(t, r2.Version, r3.Version, "NACKed version resent")
	assertProto(t, wire.Build(wire.Cluster, "a", 2), r3.Get("a"))
}

// TestSotWEmptyAfterNames: after R={a} then R={} the SnapshotCache answers
// the next change with every cluster of the node (the empty name list is
// read as "all" when building the response), violating RES-6/WILD-5.
func TestSotWEmptyAfterNames(t *testing.T) {
	h := start(t, Snapshot)
	h.set(t, "n1", wire.Cluster, "a", 1)
	c := h.client(t, wire.SotWPerType, "n1")
	sendSotW(t, c, wire.Cluster, "", "", "a")
	r1 := expect(t, c, wire.Cluster)
	sendSotW(t, c, wire.Cluster, r1.Version, r1.Nonce)
	h.set(t, "n1", wire.Cluster, "b", 1)
	r := expect(t, c, wire.Cluster)
	assert.True(t, r.Has("a"))
	assert.True(t, r.Has("b"))
}

// TestDeltaResubscribeNotResent: re-subscribing a name the client already
// holds at the current version sends nothing (DELTA-3 violated). The CDS
// subscription after it is answered first, so no EDS resend preceded it.
func TestDeltaResubscribeNotResent(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Endpoint, "e1", 1)
		h.set(t, "n1", wire.Cluster, "c1", 1)
		c := h.client(t, wire.DeltaADS, "n1")
		sendDelta(t, c, wire.Endpoint, "", []string{"e1"}, nil)
		r := expect(t, c, wire.Endpoint)
		sendDelta(t, c, wire.Endpoint, r.Nonce, nil, nil)
		sendDelta(t, c, wire.Endpoint, "", []string{"e1"}, nil)
		sendDelta(t, c, wire.Cluster, "", []string{"c1"}, nil)
		expect(t, c, wire.Cluster)
		noneQueued(t, c, "an EDS response before the first response after the re-subscribe", wire.Endpoint)
	})
}

// TestDeltaMissingNameNotRemoved: subscribing to a name that does not
// exist sends no removed_resources (DNE-5 violated).
func TestDeltaMissingNameNotRemoved(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "c1", 1)
		c := h.client(t, wire.DeltaADS, "n1")
		sendDelta(t, c, wire.Endpoint, "", []string{"nope"}, nil)
		sendDelta(t, c, wire.Cluster, "", []string{"c1"}, nil)
		expect(t, c, wire.Cluster)
		noneQueued(t, c, "no EDS response for the missing name", wire.Endpoint)
	})
}

// TestDeltaStaleNonceHonoured: the delta server never checks nonces, so a
// subscription change carrying an old nonce is applied (NONCE-12 holds).
func TestDeltaStaleNonceHonoured(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "a", 1)
		h.set(t, "n1", wire.Cluster, "b", 1)
		c := h.client(t, wire.DeltaPerType, "n1")
		sendDelta(t, c, wire.Cluster, "", []string{"a"}, nil)
		r1 := expect(t, c, wire.Cluster)
		sendDelta(t, c, wire.Cluster, r1.Nonce, nil, nil)
		h.set(t, "n1", wire.Cluster, "a", 2)
		r2 := expect(t, c, wire.Cluster)
		sendDelta(t, c, wire.Cluster, r2.Nonce, nil, nil)
		sendDelta(t, c, wire.Cluster, r1.Nonce, []string{"b"}, nil)
		assert.True(t, expect(t, c, wire.Cluster).Has("b"))
	})
}

// TestDeltaInitialVersions: on a stream's first request of a type,
// initial_resource_versions seeds what the server thinks the client has:
// matching names are skipped, differing ones sent, and listed names that
// do not exist come back in removed_resources (DELTA-8).
func TestDeltaInitialVersions(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "a", 1)
		h.set(t, "n1", wire.Cluster, "b", 1)
		// Learn a's version from a first stream, left open.
		c1 := h.client(t, wire.DeltaPerType, "n1")
		sendDelta(t, c1, wire.Cluster, "", []string{"a"}, nil)
		r := expect(t, c1, wire.Cluster)
		require.Len(t, r.Resources, 1)
		va := r.Resources[0].Version

		c2 := h.client(t, wire.DeltaPerType, "n1")
		sendDelta(t, c2, wire.Cluster, "", []string{"a", "b", "c"}, map[string]string{"a": va, "b": "old", "c": "old"})
		r = expect(t, c2, wire.Cluster)
		assert.False(t, r.Has("a"), "a's version matched")
		assert.True(t, r.Has("b"))
		assert.Equal(t, []string{"c"}, r.Removed)
	})
}

// TestDeltaExplicitWildcard: both caches honour "*" in delta.
func TestDeltaExplicitWildcard(t *testing.T) {
	eachFlavour(t, func(t *testing.T, fl Flavour, h *harness) {
		h.set(t, "n1", wire.Cluster, "a", 1)
		h.set(t, "n1", wire.Cluster, "b", 1)
		c := h.client(t, wire.DeltaPerType, "n1")
		sendDelta(t, c, wire.Cluster, "", []string{"*"}, nil)
		r := expect(t, c, wire.Cluster)
		assert.True(t, r.Has("a"))
		assert.True(t, r.Has("b"))
	})
}
