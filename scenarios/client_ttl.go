package scenarios

import (
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// TTLs of the client TTL scenarios: short, since each waits for its TTL
// to lapse or not, but never short against the harness's own recent
// stalls: each scenario sends on time only if the harness runs on time,
// so its TTL is ttlPerStall times the longest stall of the last
// ttlLookback, and at least minClientTTL, at most maxClientTTL.
const (
	minClientTTL = time.Second
	maxClientTTL = 8 * time.Second
	ttlPerStall  = 8
	ttlLookback  = 10 * time.Second
)

// clientTTL is the TTL the client TTL scenarios give the chain's cluster,
// sized from the harness's recent stalls (see minClientTTL): from its
// longest stall, and from how much of the last second it was stalled for,
// which a busy harness spends on every step it takes.
func clientTTL() time.Duration {
	return min(max(minClientTTL, ttlPerStall*lag.Recent(ttlLookback).Max, ttlPerStall*lag.Recent(time.Second).Total), maxClientTTL)
}

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

// ttlSend is one response of the TTL scenarios: when it was sent (the
// client's TTL counts from when it has it, which is no earlier) and when
// its ACK came (the client had it by then).
type ttlSend struct {
	sent, acked time.Time
}

// respondWithTTL sends the chain's cluster at revision rev, as version,
// with ttl (0: none) and expects the ACK; a non-empty heartbeatOf sends a
// heartbeat of that version, the one the client holds, instead (no body).
func (c *C) respondWithTTL(version string, rev int, ttl time.Duration, heartbeatOf string) ttlSend {
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
	sent := time.Now()
	if st.Delta {
		resp := &discovery.DeltaDiscoveryResponse{TypeUrl: CDS.URL, SystemVersionInfo: version, Nonce: st.NewNonce(), Resources: []*discovery.Resource{res}}
		c.Send(CDS, resp)
		return ttlSend{sent: sent, acked: c.ExpectAck(CDS, resp.Nonce, "").Arrived}
	}
	return ttlSend{sent: sent, acked: c.ExpectAck(CDS, c.RespondAnys(CDS, version, mustAny(c, res)), version).Arrived}
}

// chainWithTTL serves the chain up to its cluster, skips unless the client
// takes TTLs, then sends the cluster at version 2 with a TTL of ttl.
func (c *C) chainWithTTL(ttl time.Duration) ttlSend {
	c.Chain(CDS)
	c.requireTTL()
	return c.respondWithTTL("2", 2, ttl, "")
}

// onTime ends the scenario in doubt, with no verdict, when the harness
// was too late for what it meant to show: the client had next only at
// next.acked, after the TTL counted from last.sent had lapsed (within a
// tenth of it, for the race in the client between the TTL's timer and
// the refresh), so the client may rightly have let the resource go. A
// harness that sends late has shown nothing about the client; the pair
// runs again by itself.
func (c *C) onTime(what string, last, next ttlSend, ttl time.Duration) {
	if took, limit := next.acked.Sub(last.sent), ttl-ttl/10; took > limit {
		c.Logf("the harness was too late with the %s for the TTL of %s: no verdict", what, wording.Duration(ttl))
		c.DoubtNow(c.Headline(), "the harness's "+what+" reaching the client (its ACK) after the last refresh was sent", took, limit, c.LagIn(last.sent, next.acked))
	}
}

// xds_protocol#ttl
var clientTTLScenarios = append(ttlExpiries(), []*engine.Scenario{
	{
		ID:           "client/ttl/removed-by-resend",
		Title:        "A resource resent without a TTL loses its TTL and stays",
		Requirements: []string{"TTL-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        showsMissing,
		Run: ClientScript(func(c *C) {
			ttl := clientTTL()
			first := c.chainWithTTL(ttl)
			resend := c.respondWithTTL("3", 3, 0, "") // no TTL any more
			c.onTime("resend without a TTL", first, resend, ttl)
			// Twice the TTL: the one the resend removed would have lapsed
			// within the first.
			c.Checking("TTL-3").NeverThrough(ttl, 2*ttl, "the TTL of "+wording.Duration(ttl)+" the resend removed", CDS, c.CL, "gone, though its TTL was removed", isMissing)
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
			ttl := clientTTL()
			last := c.chainWithTTL(ttl)
			held := c.V("2", c.CL)
			v := c.Checking("TTL-4")
			// A heartbeat every half TTL, three times, each half a TTL
			// after the last response was sent (the ACK may come late
			// on a loaded machine): the resource outlives its first TTL
			// only if each one restarted it. A heartbeat the harness got
			// to the client too late shows nothing (onTime).
			for _, version := range []string{"3", "4", "5"} {
				v.NeverWithin(max(ttl/2-time.Since(last.sent), 0), CDS, c.CL, "gone while heartbeats come", c.goneBefore(last.sent, ttl, "the last refresh was sent", nil))
				next := c.respondWithTTL(version, 0, ttl, held)
				c.onTime("heartbeat "+version, last, next, ttl)
				last = next
			}
			v.NeverWithin(ttl/2, CDS, c.CL, "gone or changed by a heartbeat", c.goneBefore(last.sent, ttl, "the last refresh was sent", func(r observer.Resource) bool {
				return r.Version != held
			}))
		}),
	},
}...)

// ttlExpiries are the scenarios of a TTL lapsing (TTL-2): with nothing
// after the response that set it, and with a reconnect after it, which
// refreshes nothing: only a response does, and the new stream's requests
// go unanswered.
func ttlExpiries() []*engine.Scenario {
	var out []*engine.Scenario
	for _, x := range []struct {
		id, title string
		reconnect bool
	}{
		{"client/ttl/expires", "A resource whose TTL lapses without a refresh is no longer used", false},
		{"client/ttl/expires-across-reconnect", "A resource's TTL lapses all the same when the stream breaks after it came: a reconnect refreshes nothing", true},
	} {
		out = append(out, &engine.Scenario{
			ID: x.id, Title: x.title, Requirements: []string{"TTL-2"}, Level: results.Must,
			Variants: allVariants, Needs: showsMissing,
			Run: ClientScript(func(c *C) {
				ttl := clientTTL()
				sent := c.chainWithTTL(ttl)
				// In use before it lapses: a harness that reads the view
				// only once the TTL could have lapsed sees nothing of that.
				v2 := c.V("2", c.CL)
				lapsed := c.goneBefore(sent.sent, ttl, "the cluster was sent with its TTL", nil)
				c.Await(CDS, c.CL, "ACKED at version "+v2, 0, func(r observer.Resource) bool {
					if isMissing(r) {
						lapsed(r) // in doubt once the TTL could have lapsed
						return false
					}
					return r.State == observer.Acked && r.Version == v2
				})
				if x.reconnect {
					c.Restart(codes.Unavailable)
				}
				c.Checking("TTL-2").Await(CDS, c.CL, "gone once its TTL lapsed", ttl, isMissing)
			}),
		})
	}
	return out
}
