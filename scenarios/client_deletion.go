package scenarios

import (
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#deleting-resources, #knowing-when-a-requested-resource-does-not-exist
var clientDeletionScenarios = []*engine.Scenario{
	sotwAbsence("listener", LDS, true, "In SotW a listener missing from an LDS response is deleted"),
	sotwAbsence("cluster", CDS, true, "In SotW a cluster missing from a CDS response is deleted"),
	sotwAbsence("route", RDS, false, "In SotW a route missing from an RDS response is not deleted"),
	sotwAbsence("endpoints", EDS, false, "In SotW endpoints missing from an EDS response are not deleted"),
	{
		ID:           "client/deletion/delta-removed",
		Title:        "A resource in removed_resources is deleted",
		Requirements: []string{"DEL-2"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(CDS)
			c.ExpectAck(CDS, c.Remove(CDS, "2", c.CL), "")
			c.AwaitState(CDS, c.CL, observer.DoesNotExist)
		}),
	},
	{
		ID:           "client/deletion/delta-unknown-removal",
		Title:        "Removing a name the client does not know is harmless",
		Requirements: []string{"DEL-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(CDS)
			c.ExpectAck(CDS, c.Remove(CDS, "2", c.Extra("never-sent")), "")
			c.AwaitAcked(CDS, c.CL, "1")
		}),
	},
}

// xds_protocol#knowing-when-a-requested-resource-does-not-exist
var clientMissingScenarios = []*engine.Scenario{
	{
		ID:           "client/dne/timer",
		Title:        "A requested resource the server never sends is reported as not existing after the client's timer, not before",
		Requirements: []string{"DNE-1", "DNE-6"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(observed, targets.NeedFreshClient),
		Run: cli(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			timer := c.target.Options().DNETimer
			c.NeverWithin(timer/2, LDS, c.L, "as not existing long before the timer", isMissing)
			c.Await(LDS, c.L, "as DOES_NOT_EXIST", timer, isMissing)
		}),
	},
	{
		ID:           "client/dne/absence-not-proof",
		Title:        "In SotW a cluster missing from one CDS response, before it ever arrived, is not taken as not existing",
		Requirements: []string{"DNE-2"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(LDS)
			other := c.Extra("cluster-2")
			c.ExpectSubscribed(RDS, c.R)
			c.ExpectAck(RDS, c.Respond(RDS, "1", wire.ClientRoutes(c.R, 1, c.CL, other)), "1")
			c.AwaitSubscribed(CDS, c.CL, other)
			// This response may answer a request made before the client
			// wanted the second cluster: its absence proves nothing.
			c.ExpectAck(CDS, c.Respond(CDS, "1", c.Hop(CDS, 1)), "1")
			c.Never(CDS, other, "as not existing after one response without it", isMissing)
			c.ExpectAck(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2), wire.ClientCluster(other, 2)), "2")
			c.AwaitAcked(CDS, other, "2")
		}),
	},
	{
		ID:           "client/dne/late-resource-accepted",
		Title:        "A resource that arrives after the client gave up on it is accepted",
		Requirements: []string{"DNE-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(observed, targets.NeedFreshClient),
		Run: cli(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.Await(LDS, c.L, "as DOES_NOT_EXIST", c.target.Options().DNETimer, isMissing)
			c.ExpectAck(LDS, c.Respond(LDS, "1", c.Hop(LDS, 1)), "1")
			c.AwaitAcked(LDS, c.L, "1")
		}),
	},
}

// isMissing is the client reporting a resource as not existing.
func isMissing(r observer.Resource) bool { return r.State == observer.DoesNotExist }

// sotwAbsence is the scenario for a SotW response that leaves out a
// resource the client holds: for LDS and CDS that deletes it (DEL-4), for
// RDS and EDS it changes nothing (DEL-5, GRP-3).
func sotwAbsence(what string, t wire.Type, deletes bool, title string) *engine.Scenario {
	s := &engine.Scenario{
		ID:           "client/deletion/sotw-" + what + "-absence",
		Title:        title,
		Requirements: []string{"DEL-4"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(t)
			c.ExpectAck(t, c.Respond(t, "2"), "2")
			name := c.NameOf(t)
			if deletes {
				c.AwaitState(t, name, observer.DoesNotExist)
				return
			}
			c.Never(t, name, "deleted by omission", isMissing)
			c.RequireConfig(c.AwaitState(t, name, observer.Acked), c.Hop(t, 1))
		}),
	}
	if !deletes {
		s.ID += "-kept"
		s.Requirements = []string{"DEL-5", "GRP-3"}
	}
	return s
}
