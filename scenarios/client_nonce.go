package scenarios

import (
	"slices"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#ack-nack-and-resource-type-instance-version (nonces), #how-the-client-specifies-what-resources-to-return
var clientNonceScenarios = []*engine.Scenario{
	{
		ID:           "client/nonce/latest-echoed",
		Title:        "A request echoes the nonce of the latest response of its type",
		Requirements: []string{"NONCE-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			c.Update(LDS, "2", 2)
			c.Update(LDS, "3", 3)
		}),
	},
	{
		ID:           "client/nonce/per-type-on-ads",
		Title:        "On ADS a request echoes its own type's latest nonce, not the stream's",
		Requirements: []string{"NONCE-3", "ADS-1"},
		Level:        results.Must,
		// Delta subscription changes carry no nonce at all (NONCE-11).
		Variants: []wire.Variant{wire.SotWADS},
		Run: ClientScript(func(c *C) {
			nonces := c.Chain(EDS)
			// Point the route at a second cluster: the RDS response is the
			// stream's latest, but the CDS request it causes answers CDS.
			other := c.Extra("cluster-2")
			n := c.Respond(RDS, "2", wire.ClientRoute(c.R, other, 2))
			c.ExpectAck(RDS, n, "2")
			// The client may first drop the old cluster: every CDS request
			// up to the one naming the new cluster answers CDS.
			deadline := lag.NewDeadline(c.Timeouts.Expect)
			for {
				r := c.Expect(CDS)
				require.Equal(c, nonces[CDS.URL], r.Nonce(), "%s should carry the latest CDS nonce", r)
				if slices.Contains(r.Names(), other) {
					return
				}
				if deadline.Passed() {
					c.Fatalf("the client should come to ask for %q; its last CDS request, %s, asks for %v", other, r, r.Names())
				}
			}
		}),
	},
	{
		ID:           "client/nonce/empty-only-before-first-response",
		Title:        "Only the first request of a type on a stream has an empty nonce",
		Requirements: []string{"NONCE-4"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        fresh,
		Run: ClientScript(func(c *C) {
			// Not Chain, whose ACK check would catch an empty nonce first:
			// every answer is taken as it comes and judged below.
			for _, hop := range c.hops(1) {
				c.AwaitSubscribed(hop.t, hop.name)
				c.Respond(hop.t, "1", hop.res)
				c.Expect(hop.t)
			}
			c.Respond(LDS, "2", c.Hop(LDS, 2))
			c.Expect(LDS)
			for _, st := range c.Srv.Streams() {
				for _, r := range st.Requests() {
					if r.Answered > 0 {
						require.NotEmpty(c, r.Nonce(), "%s follows a response of its type: its nonce must not be empty", r)
					} else {
						require.Empty(c, r.Nonce(), "%s precedes every response of its type: its nonce must be empty", r)
					}
				}
			}
		}),
	},
	{
		ID:           "client/nonce/fresh-after-reconnect",
		Title:        "After a reconnect no request carries a nonce from the old stream",
		Requirements: []string{"NONCE-5"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.Restart(codes.Unavailable)
			for _, t := range chainTypes {
				r := c.Expect(t)
				require.Empty(c, r.Nonce(), "%s is the first %s request on a new stream: its nonce must be empty", r, t.Short)
			}
		}),
	},
	{
		ID:           "client/nonce/kept-after-unsubscribe-all",
		Title:        "A type's nonce is kept after its last resource is dropped, so re-subscribing is not stale",
		Requirements: []string{"NONCE-6"},
		Level:        results.Should,
		Variants:     []wire.Variant{wire.SotWADS},
		Run: ClientScript(func(c *C) {
			nonces := c.Chain(EDS)
			c.dropEndpoints()
			drop := c.Expect(EDS)
			require.Empty(c.Checking("UNSUB-1"), drop.Names(), "%s should drop the endpoints", drop)
			// The cluster is back: the client wants its endpoints again.
			c.ExpectAck(CDS, c.Respond(CDS, "3", c.Hop(CDS, 3)), "3")
			again := c.ExpectSubscribed(EDS, c.CL)
			require.Equal(c, nonces[EDS.URL], again.Nonce(), "%s re-subscribes endpoints: it should carry the last EDS nonce of the stream", again)
		}),
	},
	{
		ID:           "client/nonce/latest-after-nack",
		Title:        "After a NACK, the client's next request of the type echoes the NACKed response's nonce and the version last accepted",
		Requirements: []string{"NONCE-3", "SEQ-1"},
		Level:        results.Must,
		// Delta subscription changes carry no nonce at all (NONCE-11).
		Variants: sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			n := c.Respond(CDS, "2", wire.InvalidCluster(c.CL, 2))
			c.ExpectNack(CDS, n)
			// A second cluster in the route makes the client ask for it:
			// a CDS request that follows the NACK.
			other := c.Extra("cluster-2")
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "2")
			r := c.AwaitSubscribed(CDS, c.CL, other)
			require.Equal(c.Checking("NONCE-3"), n, r.Nonce(), "%s follows the NACK of the CDS response with nonce %q, the latest of its type", r, n)
			// Version 2 was rejected: with the NACKed nonce and no
			// error_detail, a request at version 2 reads as its ACK.
			if v := r.Version(); v != "1" && v != "" {
				c.Checking("SEQ-1").Errorf("%s changes the CDS subscription after the NACK of version 2, yet carries version %q: until a newer one is accepted, requests carry the version last accepted (1), or none", r, v)
			}
		}),
	},
}

// dropEndpoints deletes the chain's cluster, so that the client loses
// interest in its endpoints, and expects the ACK. Deletion is what every
// client must handle (DEL-2, DEL-4); the other ways to make a gRPC client
// drop a cluster each fail some client for a reason of its own: a route
// to a cluster the server never sends keeps the old cluster until the new
// one is ready; a LOGICAL_DNS cluster is a type a client may lack; a
// virtual host without routes is rejected by gRPC C-core ("No route found
// in the virtual host"); a non-forwarding route crashes grpc-js
// (xds-dependency-manager.js:694) and leaves C-core's cluster in place.
func (c *C) dropEndpoints() {
	if c.Variant.IsDelta() {
		c.ExpectAck(CDS, c.Remove(CDS, "2", c.CL), "")
		return
	}
	c.ExpectAck(CDS, c.Respond(CDS, "2"), "2") // an empty full state: the cluster is gone
}
