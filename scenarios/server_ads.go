package scenarios

import (
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#aggregated-discovery-service
var adsScenarios = []*engine.Scenario{
	{
		ID:           "server/ads/per-type-nonces",
		Title:        "ADS: a request is judged stale against its own type's latest nonce only",
		Requirements: []string{"ADS-1", "NONCE-8"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.SotWADS}, // delta requests are never stale
		Needs:        Fixture(CDS, EDS),
		Run: ServerScript(func(s *S) {
			c, e1, e2 := s.Set(CDS, "c", 1), s.Set(EDS, "e1", 1), s.Set(EDS, "e2", 1)
			s.Subscribe(CDS, c)
			s.ExpectAcked(CDS)
			s.Subscribe(EDS, e1)
			s.ExpectAcked(EDS)
			s.Set(CDS, "c", 2)
			s.Ack(CDS, s.AwaitRevision(CDS, c, 2)) // CDS now has the newest nonce on the stream
			s.Subscribe(EDS, e2)                   // carries EDS's own latest nonce: not stale
			s.Checking("ADS-1").AwaitRevision(EDS, e2, 1)
		}),
	},
	{
		ID:           "server/ads/nack-one-type-others-continue",
		Title:        "ADS: a NACK of one type does not disturb the other types on the stream",
		Requirements: []string{"ADS-1", "VER-2"},
		Level:        results.Must,
		Variants:     ads,
		Needs:        Fixture(CDS, EDS),
		Run: ServerScript(func(s *S) {
			c, e, bar := s.Set(CDS, "c", 1), s.Set(EDS, "e", 1), s.Set(CDS, "barrier", 1)
			s.Subscribe(CDS, c)
			s.ExpectAcked(CDS)
			s.Subscribe(EDS, e)
			s.Nack(EDS, s.Expect(EDS))
			// Nothing more is asked of EDS: a request would wake a server
			// that stalls a type after a NACK. A CDS barrier on the one
			// stream makes sure the server has read the NACK.
			s.Barrier(CDS, bar)
			v := s.Checking("ADS-1")
			s.Set(CDS, "c", 2)
			s.Ack(CDS, v.AwaitRevision(CDS, c, 2))
			s.Set(EDS, "e", 2)
			v.AwaitRevision(EDS, e, 2)
		}),
	},
	{
		ID:           "server/ads/no-head-of-line",
		Title:        "ADS: a subscription the server cannot answer yet does not hold back the answers of other types",
		Requirements: []string{"ADS-2"},
		Level:        results.Should,
		Variants:     ads,
		Needs:        with(Fixture(CDS, EDS), targets.NeedChosenNames),
		Run: ServerScript(func(s *S) {
			c := s.Set(CDS, "c", 1)
			s.Subscribe(EDS, s.Name("not-yet")) // nothing to send for it
			s.Subscribe(CDS, c)
			s.Checking("ADS-2").AwaitRevision(CDS, c, 1)
		}),
	},
}
