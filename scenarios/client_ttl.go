package scenarios

import (
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// clientTTL is the TTL the client TTL scenarios give the chain's cluster:
// short, since each waits for it to lapse or not.
const clientTTL = time.Second

// requireTTL skips the scenario unless the client advertised TTL support
// and, in SotW, Resource wrappers, which carry a TTL there: TTLs are an
// optional feature (xds_protocol#ttl).
func (c *C) requireTTL() {
	features := c.First(CDS).Node().GetClientFeatures()
	if !wire.TakesTTL(features) {
		c.Skipf("the client does not advertise %s (client_features %q)", wire.FeatureTTL, features)
	}
	if !c.Variant.IsDelta() && !wire.TakesResourceInSotW(features) {
		c.Skipf("the client does not advertise %s, which a TTL needs in SotW (client_features %q)", wire.FeatureResourceInSotW, features)
	}
}

// respondWithTTL sends the chain's cluster at revision rev, as version,
// with ttl (nil: none) and expects the ACK; a nil body sends a heartbeat of
// the version the client holds instead.
//
// It returns when the response was sent, which the client's TTL counts
// from.
func (c *C) respondWithTTL(version string, rev int, ttl time.Duration, heartbeatOf string) (sent time.Time) {
	var d *durationpb.Duration
	if ttl > 0 {
		d = durationpb.New(ttl)
	}
	res := &discovery.Resource{Name: c.CL, Ttl: d}
	if heartbeatOf == "" {
		res.Resource = mustAny(c, c.Hop(CDS, rev))
		res.Version = c.V(version, c.CL)
	} else {
		res.Version = heartbeatOf // the version held, and no body
	}
	st := c.Stream(CDS)
	sent = time.Now()
	if st.Delta {
		resp := &discovery.DeltaDiscoveryResponse{TypeUrl: CDS.URL, SystemVersionInfo: version, Nonce: st.NewNonce(), Resources: []*discovery.Resource{res}}
		c.Send(CDS, resp)
		c.ExpectAck(CDS, resp.Nonce, "")
		return sent
	}
	c.ExpectAck(CDS, c.RespondAnys(CDS, version, mustAny(c, res)), version)
	return sent
}

// chainWithTTL serves the chain up to its cluster, skips unless the client
// takes TTLs, then sends the cluster at version 2 with a TTL of clientTTL.
func (c *C) chainWithTTL() (sent time.Time) {
	c.Chain(CDS)
	c.requireTTL()
	return c.respondWithTTL("2", 2, clientTTL, "")
}

// xds_protocol#ttl
var clientTTLScenarios = []*engine.Scenario{
	{
		ID:           "client/ttl/expires",
		Title:        "A resource whose TTL lapses without a refresh is no longer used",
		Requirements: []string{"TTL-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			c.chainWithTTL()
			c.AwaitAcked(CDS, c.CL, "2")
			c.Checking("TTL-2").Await(CDS, c.CL, "gone once its TTL lapsed", clientTTL, isMissing)
		}),
	},
	{
		ID:           "client/ttl/removed-by-resend",
		Title:        "A resource resent without a TTL loses its TTL and stays",
		Requirements: []string{"TTL-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			c.chainWithTTL()
			c.respondWithTTL("3", 3, 0, "") // no TTL any more
			c.Checking("TTL-3").NeverWithin(2*clientTTL, CDS, c.CL, "gone, though its TTL was removed", isMissing)
			c.AwaitAcked(CDS, c.CL, "3")
		}),
	},
	{
		ID:           "client/ttl/heartbeat-refreshes",
		Title:        "Heartbeats keep a resource with a TTL alive, unchanged, past its first TTL",
		Requirements: []string{"TTL-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			sent := c.chainWithTTL()
			held := c.V("2", c.CL)
			v := c.Checking("TTL-4")
			// A heartbeat every half TTL, three times, each half a TTL
			// after the last response was sent (the ACK may come late
			// on a loaded machine): the resource outlives its first TTL
			// only if each one restarted it.
			for _, version := range []string{"3", "4", "5"} {
				v.NeverWithin(max(clientTTL/2-time.Since(sent), 0), CDS, c.CL, "gone while heartbeats come", isMissing)
				sent = c.respondWithTTL(version, 0, clientTTL, held)
			}
			v.NeverWithin(clientTTL/2, CDS, c.CL, "gone or changed by a heartbeat", func(r observer.Resource) bool {
				return isMissing(r) || r.Version != held
			})
		}),
	},
}
