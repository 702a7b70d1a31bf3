package scenarios

import (
	"strconv"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#ack-nack-and-resource-type-instance-version
var clientAckScenarios = append([]*engine.Scenario{
	{
		ID:           "client/ack/version-and-nonce",
		Title:        "An ACK carries the accepted response's version and nonce, no error, and the full name set",
		Requirements: []string{"ACK-2"},
		Level:        results.Must,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			n := c.Respond(LDS, "2", c.Hop(LDS, 2))
			ack := c.ExpectAck(LDS, n, "2")
			require.Equal(c, []string{c.L}, ack.Names(), "%s should keep asking for the listener", ack)
		}),
	},
	{
		ID:           "client/ack/every-response",
		Title:        "The client ACKs every response, one after another",
		Requirements: []string{"ACK-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			for rev := 2; rev <= 5; rev++ {
				c.Update(CDS, strconv.Itoa(rev), rev)
			}
		}),
	},
	{
		ID:           "client/ack/versions-per-type",
		Title:        "Each type's ACK carries that type's own version",
		Requirements: []string{"VER-2", "ADS-1"},
		Level:        results.Must,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			for i, hop := range c.hops(1) {
				c.ExpectSubscribed(hop.t, hop.name)
				v := []string{"lds-1", "rds-1", "cds-1", "eds-1"}[i]
				c.ExpectAck(hop.t, c.Respond(hop.t, v, hop.res), v)
			}
			c.ExpectAck(EDS, c.Respond(EDS, "eds-2", c.Hop(EDS, 2)), "eds-2")
			c.ExpectAck(CDS, c.Respond(CDS, "cds-2", c.Hop(CDS, 2)), "cds-2")
			// Every ACK above also carries the newest version of the stream;
			// a CDS request prompted by a route change is where a client
			// using one version for the whole stream shows. Its version may
			// be empty: carrying the current one is a hint update, which
			// is optional (HINT-1, client/ack/hint-update).
			// (A client may add the new cluster in steps: the request
			// that names both is read, as in the deletion scenarios.)
			cl2 := c.Extra("second-cluster")
			c.ExpectAck(RDS, c.Respond(RDS, "rds-2", wire.ClientRoutes(c.R, 2, c.CL, cl2)), "rds-2")
			sub := c.AwaitSubscribed(CDS, c.CL, cl2)
			if v := sub.Version(); v != "" && v != "cds-2" {
				c.Errorf("%s changes the CDS subscription at version %q: it should carry the CDS version (cds-2) or none", sub, v)
			}
		}),
	},
	{
		ID:           "client/nack/error-detail",
		Title:        "A NACK carries the rejected nonce, an error_detail with a code and the names asked for; nothing accepted yet means an empty version",
		Requirements: []string{"ACK-3", "DELTA-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fresh,
		Run: ClientScript(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			nack := c.Checking(c.either("ACK-3", "DELTA-1")).ExpectNack(LDS, c.Respond(LDS, "1", wire.InvalidListener(c.L, 1)))
			if nack.SotW != nil { // delta requests have no version_info
				require.Empty(c, nack.Version(), "%s: nothing was accepted yet, so the NACK's version must be empty", nack)
			}
		}),
	},
	{
		ID:           "client/nack/error-message",
		Title:        "A NACK's error_detail says in its message what was wrong",
		Requirements: []string{"ACK-4"},
		Level:        results.Should,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			nack := c.ExpectNack(LDS, c.Respond(LDS, "2", wire.InvalidListener(c.L, 2)))
			require.NotEmpty(c, nack.ErrorDetail().GetMessage(), "%s should say in error_detail.message why it rejected the listener", nack)
		}),
	},
	{
		ID:           "client/nack/last-accepted-version",
		Title:        "A NACK carries the version last accepted, not the rejected one",
		Requirements: []string{"ACK-3"},
		Level:        results.Must,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			n := c.Respond(LDS, "2", wire.InvalidListener(c.L, 2))
			nack := c.ExpectNack(LDS, n)
			require.Equal(c, "1", nack.Version(), "%s should carry version 1, the last accepted", nack)
		}),
	},
	{
		ID:           "client/nack/keeps-previous",
		Title:        "After a NACK the client keeps using the last accepted resource",
		Requirements: []string{"ACK-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.ExpectNack(CDS, c.Respond(CDS, "2", wire.InvalidCluster(c.CL, 2)))
			v1 := c.V("1", c.CL)
			c.Never(CDS, c.CL, "using the rejected cluster", func(r observer.Resource) bool { return r.Version != v1 })
			c.RequireConfig(c.Await(CDS, c.CL, "still at version "+v1, 0, func(r observer.Resource) bool { return r.Version == v1 }), c.Hop(CDS, 1))
		}),
	},
	{
		ID:           "client/nack/partial-use",
		Title:        "Of a NACKed response, the valid resources may be used and the invalid ones kept at their last version",
		Requirements: []string{"ACK-8"},
		Level:        results.May,
		Variants:     allVariants,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			other := c.routeToTwoClusters()
			c.ExpectAck(CDS, c.Respond(CDS, "1", c.Hop(CDS, 1), wire.ClientCluster(other, 1)), "1")
			// Cluster 1 changes validly, cluster 2 invalidly: one NACK.
			c.ExpectNack(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2), wire.InvalidCluster(other, 2)))
			c.Checking("ACK-7").Never(CDS, other, "using the rejected cluster", func(r observer.Resource) bool { return r.Version != c.V("1", other) })
			c.Checking("ACK-8").AwaitAcked(CDS, c.CL, "2")
		}),
	},
	{
		ID:           "client/nack/reported-in-status",
		Title:        "The client's status view shows the rejected resource as NACKED, with the error",
		Requirements: []string{"OBS-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(observed, targets.NeedStatus(observer.Nacked)),
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.ExpectNack(CDS, c.Respond(CDS, "2", wire.InvalidCluster(c.CL, 2)))
			r := c.AwaitState(CDS, c.CL, observer.Nacked)
			require.NotEmpty(c, r.Error, "the NACKED cluster should come with the error the client found")
		}),
	},
	{
		ID:    "client/nack/first-version-in-status",
		Title: "A resource whose first version was rejected is shown NACKED, with the error, and no version in use",
		// OBS-1: the view shows what the client uses and what it
		// rejected; nothing of this resource was ever accepted (ACK-7: the
		// rejected version is not applied), yet it is no less rejected.
		Requirements: []string{"OBS-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(observed, targets.NeedStatus(observer.Nacked)),
		Run: ClientScript(func(c *C) {
			c.precondition("RES-1").AwaitSubscribed(LDS, c.L)
			c.Checking("ACK-7").ExpectNack(LDS, c.Respond(LDS, "1", wire.InvalidListener(c.L, 1)))
			c.showsAfter(LDS, c.L, observer.Nacked, "the NACK of its first version", "", nil)
			r := c.AwaitState(LDS, c.L, observer.Nacked)
			v := c.Checking("OBS-1")
			require.NotEmpty(v, r.Error, "the NACKED listener should come with the error the client found")
			require.Empty(v, r.Version, "nothing of listener %s was ever accepted, so no version of it is in use", c.L)
		}),
	},
	{
		ID:           "client/nack/recovery",
		Title:        "After a NACK, the next valid response is ACKed",
		Requirements: []string{"ACK-6"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(LDS)
			c.ExpectNack(LDS, c.Respond(LDS, "2", wire.InvalidListener(c.L, 2)))
			c.Checking("ACK-6").Update(LDS, "3", 3)
		}),
	},
	{
		ID:           "client/nack/duplicate-names",
		Title:        "A response naming one resource twice is NACKed, and the previous version stays in use",
		Requirements: []string{"DUP-2"},
		Level:        results.Should,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.ExpectNack(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2), c.Hop(CDS, 3)))
			if c.Observable() {
				v1 := c.V("1", c.CL)
				c.Never(CDS, c.CL, "using a copy of the duplicated cluster", func(r observer.Resource) bool { return r.Version != v1 })
			}
		}),
	},
	{
		ID:           "client/nack/empty-name",
		Title:        "A resource with an empty name is rejected or ignored, and the client carries on",
		Requirements: []string{"ACK-7", "RES-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			n := c.Respond(CDS, "2", c.Hop(CDS, 2), wire.ClientCluster("", 2))
			r := c.Expect(CDS)
			require.Equal(c, n, r.Nonce(), "%s should answer the response with nonce %q", r, n)
			// Invalid and never asked for: a NACK (grpc-go) or silently
			// ignoring it (grpc-js, RES-3) both keep it out of use.
			if d := r.ErrorDetail(); d != nil {
				c.Logf("classification: the client NACKs a resource with an empty name (%q)", d.GetMessage())
			} else {
				c.Logf("classification: the client ignores a resource with an empty name")
			}
			c.Alive("a resource with an empty name must not stop the client")
			c.Update(CDS, "3", 3)
		}),
	},
	{
		ID:           "client/nack/type-mismatch",
		Title:        "A resource whose type differs from the response's type_url is NACKed",
		Requirements: []string{"STREAM-8"},
		Level:        results.Should,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			// A listener under the cluster type: a server mixing up its types.
			wrong := mustAny(c, wire.ClientListener(c.CL, c.R, 2))
			c.ExpectNack(CDS, c.RespondAnys(CDS, "2", mustAny(c, c.Hop(CDS, 2)), wrong))
		}),
	},
	{
		ID:           "client/ack/prompt",
		Title:        "The client ACKs a response as soon as it has processed it",
		Requirements: []string{"UPD-2"},
		Level:        results.Should,
		Variants:     allVariants,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			// Prompt is within the --prompt threshold. Each reply is timed
			// from just before its response is sent, so the time is never
			// shorter than the client took; the harness's own lag in that
			// window is weighed (engine.T.Within).
			for rev := 2; rev <= 3; rev++ {
				v := strconv.Itoa(rev)
				sent := time.Now()
				ack := c.ExpectAck(CDS, c.Respond(CDS, v, c.Hop(CDS, rev)), v)
				c.Within("UPD-2", "the ACK of version "+v, ack.Arrived.Sub(sent), c.Timeouts.Prompt, sent, ack.Arrived)
			}
		}),
	},
	{
		ID:           "client/ack/reply-first",
		Title:        "SotW: after a response, the client's next request of its type is the ACK or NACK of it",
		Requirements: []string{"UPD-4"},
		Level:        results.Should,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			n := c.Respond(LDS, "1", c.Hop(LDS, 1))
			r := c.expectReply(LDS, n)
			if r.Nonce() != n || (r.ErrorDetail() == nil && r.Version() != "1") {
				c.Checking("UPD-4").Fatalf("%s (version %q) is the first LDS request after the response with nonce %q at version 1, but neither ACKs nor NACKs it", r, r.Version(), n)
			}
		}),
	},
	{
		ID:           "client/ack/hint-update",
		Title:        "SotW: a subscription change between responses carries the current version and nonce (a hint update)",
		Requirements: []string{"HINT-1"},
		Level:        results.May,
		Variants:     sotw,
		Run: ClientScript(func(c *C) {
			nonces := c.Chain(EDS)
			other := c.Extra("cluster-2")
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "2")
			hint := c.AwaitSubscribed(CDS, c.CL, other)
			v := c.Checking("HINT-1")
			require.Equal(v, "1", hint.Version(), "%s changes the CDS subscription between responses: a hint update carries the current CDS version", hint)
			require.Equal(v, nonces[CDS.URL], hint.Nonce(), "%s: a hint update carries the latest CDS nonce", hint)
		}),
	},
}, clientNackScenariosCore...)
