package scenarios

import (
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#deleting-resources, #knowing-when-a-requested-resource-does-not-exist
var clientDeletionScenarios = []*engine.Scenario{
	{
		ID:           "client/deletion/sotw-listener-absence",
		Title:        "In SotW a listener missing from an LDS response is deleted",
		Requirements: []string{"DEL-4"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(LDS)
			c.ExpectAck(LDS, c.Respond(LDS, "2"), "2")
			c.AwaitState(LDS, c.L, observer.DoesNotExist)
		}),
	},
	{
		ID:           "client/deletion/sotw-cluster-absence",
		Title:        "In SotW a cluster missing from a CDS response is deleted",
		Requirements: []string{"DEL-4"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(CDS)
			c.ExpectAck(CDS, c.Respond(CDS, "2"), "2")
			c.AwaitState(CDS, c.CL, observer.DoesNotExist)
		}),
	},
	{
		ID:           "client/deletion/sotw-route-absence-kept",
		Title:        "In SotW a route missing from an RDS response is not deleted",
		Requirements: []string{"DEL-5", "GRP-3"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(RDS)
			c.ExpectAck(RDS, c.Respond(RDS, "2"), "2")
			c.Never(RDS, c.R, "deleted by omission", func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
			c.RequireConfig(c.AwaitState(RDS, c.R, observer.Acked), c.Hop(RDS, 1))
		}),
	},
	{
		ID:           "client/deletion/sotw-endpoints-absence-kept",
		Title:        "In SotW endpoints missing from an EDS response are not deleted",
		Requirements: []string{"DEL-5", "GRP-3"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(EDS)
			c.ExpectAck(EDS, c.Respond(EDS, "2"), "2")
			c.Never(EDS, c.CL, "deleted by omission", func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
			c.RequireConfig(c.AwaitState(EDS, c.CL, observer.Acked), c.Hop(EDS, 1))
		}),
	},
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
			c.ExpectAck(CDS, c.Remove(CDS, "2", c.Name("never-sent")), "")
			c.AwaitAcked(CDS, c.CL, "1")
		}),
	},
}

// xds_protocol#knowing-when-a-requested-resource-does-not-exist
var clientMissingScenarios = []*engine.Scenario{
	{
		ID:           "client/dne/timer",
		Title:        "A requested resource the server never sends is reported as not existing after the client's timer",
		Requirements: []string{"DNE-1", "DNE-6"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.Await(LDS, c.L, "as DOES_NOT_EXIST", c.target.Options().DNETimer, func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
		}),
	},
	{
		ID:           "client/dne/absence-not-proof",
		Title:        "In SotW a route missing from one RDS response is not taken as not existing",
		Requirements: []string{"DNE-2"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.Chain(LDS)
			c.ExpectSubscribed(RDS, c.R)
			c.ExpectAck(RDS, c.Respond(RDS, "1"), "1")
			c.Never(RDS, c.R, "as not existing after one response without it", func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
			c.ExpectAck(RDS, c.Respond(RDS, "2", c.Hop(RDS, 2)), "2")
			c.AwaitAcked(RDS, c.R, "2")
		}),
	},
	{
		ID:           "client/dne/late-resource-accepted",
		Title:        "A resource that arrives after the client gave up on it is accepted",
		Requirements: []string{"DNE-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        observed,
		Run: cli(func(c *C) {
			c.ExpectSubscribed(LDS, c.L)
			c.Await(LDS, c.L, "as DOES_NOT_EXIST", c.target.Options().DNETimer, func(r observer.Resource) bool { return r.State == observer.DoesNotExist })
			c.ExpectAck(LDS, c.Respond(LDS, "1", c.Hop(LDS, 1)), "1")
			c.AwaitAcked(LDS, c.L, "1")
		}),
	},
}
