package scenarios

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#basic-protocol-overview, #rpc-services-and-variants
var streamScenarios = []*engine.Scenario{
	{
		ID:           "server/stream/node-only-on-first-request",
		Title:        "Requests after the first may omit node (ACKs, a subscription change, a NACK); the server keeps serving them",
		Requirements: []string{"STREAM-4"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			s.AddedNamesServed(EDS) // as a request with node would be
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a) // the only request that carries node
			s.RequireResource(EDS, s.ExpectAcked(EDS), a, 1)
			// Everything after it is node-less: its ACK, a subscription
			// change, a NACK; each must be served like any request.
			v := s.Checking("STREAM-4")
			v.Subscribe(EDS, b)
			v.Nack(EDS, v.AwaitResource(EDS, b))
			v.Set(EDS, "a", 2)
			v.AwaitRevision(EDS, a, 2)
		}),
	},
	{
		ID:    "server/stream/type-implicit-on-per-type",
		Title: "On a per-type stream a request without type_url is a request of the stream's type: the name it adds is served",
		// ROB-4: the type is implicit on the singleton APIs; STREAM-6
		// only asks a client to set it there (SHOULD).
		Requirements: []string{"ROB-4"},
		Level:        results.Must,
		Variants:     perType,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			s.AddedNamesServed(EDS) // as a request with type_url would be
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.Ack(EDS, s.AwaitResource(EDS, a))
			s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.TypeUrl, r.ResourceNames = "", []string{a, b} },
				func(r *discovery.DeltaDiscoveryRequest) { r.TypeUrl, r.ResourceNamesSubscribe = "", []string{b} })
			s.Checking("ROB-4").AwaitResource(EDS, b)
		}),
	},
	{
		ID:           "server/stream/every-type-served",
		Title:        "Every resource type is served on its method with a matching type_url",
		Requirements: []string{"STREAM-9", "STREAM-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.Types() {
				name := s.Set(t, "r", 1)
				s.Subscribe(t, name)
				// The fake client files responses by type_url, so one with
				// the wrong type_url never arrives here: the wait fails, and
				// the global STREAM-7 check names it. A server whose own
				// model catches up with the fixture a little later (Consul)
				// may first send the resource as it was before the change.
				s.Checking("STREAM-9").AwaitRevision(t, name, 1)
			}
		}),
	},
	{
		ID:           "server/stream/vhds-over-delta",
		Title:        "Virtual hosts are served over the incremental protocol, the only one that carries them",
		Requirements: []string{"STREAM-10"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(VHDS),
		Run: ServerScript(func(s *S) {
			vh := s.Set(VHDS, "vh", 1)
			s.Subscribe(VHDS, vh)
			s.Checking("STREAM-10").AwaitRevision(VHDS, vh, 1)
		}),
	},
	{
		ID:           "server/stream/no-unrequested-types",
		Title:        "On ADS the server sends no type the client has not subscribed to",
		Requirements: []string{"STREAM-2"},
		Level:        results.Should,
		Variants:     ads,
		Needs:        Fixture(EDS, CDS, LDS),
		Run: ServerScript(func(s *S) {
			s.Set(CDS, "c", 1)
			s.Set(LDS, "l", 1)
			e := s.Set(EDS, "e", 1)
			s.Subscribe(EDS, e)
			s.ExpectAcked(EDS)
			others := []wire.Type{}
			for _, t := range wire.AllTypes {
				if t.URL != EDS.URL {
					others = append(others, t)
				}
			}
			s.Never("only EDS was subscribed", others...)
		}),
	},
}
