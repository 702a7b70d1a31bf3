package scenarios

import (
	clusterpb "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#resource-warming: a client that warms clusters and
// listeners (Envoy) waits for their endpoints and routes, and the server
// is expected to provide them.
var warmingScenarios = []*engine.Scenario{
	{
		ID:           "server/warming/endpoints-after-cluster",
		Title:        "The endpoints of a cluster just pushed are sent as soon as the client asks for them",
		Requirements: []string{"WARM-3"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(CDS, EDS),
		Run: ServerScript(func(s *S) {
			c := s.Set(CDS, "c", 1)
			e := s.Set(EDS, "c", 1)
			s.Subscribe(CDS, c)
			r := s.AwaitResource(CDS, c)
			s.Ack(CDS, r)
			// The cluster warms until its endpoints come: those it names.
			eds := endpointsOf(r, c)
			s.Subscribe(EDS, eds)
			if eds != e {
				// A server that builds its own content (Envoy Gateway)
				// gives each cluster endpoints of its own, not those set.
				s.Checking("WARM-3").AwaitResource(EDS, eds)
				return
			}
			s.Checking("WARM-3").AwaitRevision(EDS, e, 1)
		}),
	},
	{
		ID:           "server/warming/endpoints-resent-after-cluster-update",
		Title:        "After a cluster update, the same endpoints requested again are sent again (Envoy warming)",
		Requirements: []string{"WARM-4", "UPD-1", "UNSUB-2"},
		Level:        results.Should,
		Variants:     []wire.Variant{wire.SotWADS},
		Needs:        with(Fixture(CDS, EDS), targets.NeedEnvoyWarming),
		Run: ServerScript(func(s *S) {
			c, d := s.Set(CDS, "c", 1), s.Set(CDS, "d", 1)
			s.Set(EDS, "c", 1)
			s.Set(EDS, "d", 1)
			s.Subscribe(CDS, c, d)
			s.Ack(CDS, s.AwaitResource(CDS, d))
			s.Subscribe(EDS, c, d)
			s.Ack(EDS, s.AwaitResource(EDS, d))
			// The endpoints of d are dropped (the barrier: before the
			// update, which could overtake the request and make it
			// stale); c is updated, and the full state sends d along.
			s.Unsubscribe(EDS, d)
			s.Barrier(EDS, s.Set(EDS, "barrier", 1))
			s.Set(CDS, "c", 2)
			s.Ack(CDS, s.AwaitRevision(CDS, c, 2))
			// As Envoy does for an updated cluster: the same EDS request
			// again, which it answers only with the endpoints, of c alone:
			// those of d were unsubscribed, cluster update or not.
			unsub := s.Checking("UNSUB-2")
			s.Subscribe(EDS)
			s.Ack(EDS, s.Checking("WARM-4").AwaitRevisionChecking(EDS, c, 1, func(r *fakeclient.Response) {
				if r.Has(d) {
					unsub.Errorf("EDS response %q resends the endpoints of %q, which the client unsubscribed from before the cluster update", r.Nonce, d)
				}
			}))
			// Once sent, the endpoints are owed no more: the ACK of the
			// resend asks for nothing new (an ACK answered with the same
			// endpoints again would loop).
			s.Checking("UPD-1").Never("an ACK of the endpoints resent after the cluster update asks for nothing new", EDS)
		}),
	},
	{
		ID:           "server/warming/unchanged-routes-not-resent",
		Title:        "A listener update does not need its unchanged routes sent again",
		Requirements: []string{"WARM-5"},
		Level:        results.May,
		// On ADS, where one stream carries both and a server could most
		// easily send the routes along.
		Variants: ads,
		Needs:    Fixture(LDS, RDS),
		Run: ServerScript(func(s *S) {
			l, r := s.Set(LDS, "l", 1), s.Set(RDS, "r", 1)
			s.Subscribe(LDS, l)
			s.Ack(LDS, s.AwaitResource(LDS, l))
			s.Subscribe(RDS, r)
			s.Ack(RDS, s.AwaitResource(RDS, r))
			s.Checking("WARM-5").NeverCarrying("the routes did not change", RDS, r)
			s.Set(LDS, "l", 2)
			s.AwaitRevision(LDS, l, 2)
		}),
	},
}

// endpointsOf is the name of the ClusterLoadAssignment the cluster named
// cluster in r takes its endpoints from: its EDS service_name, else its
// own name.
func endpointsOf(r *fakeclient.Response, cluster string) string {
	if c, ok := r.Get(cluster).(*clusterpb.Cluster); ok {
		if n := c.GetEdsClusterConfig().GetServiceName(); n != "" {
			return n
		}
	}
	return cluster
}
