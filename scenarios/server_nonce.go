package scenarios

import (
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#when-to-send-an-update (nonces and staleness)
var nonceScenarios = []*engine.Scenario{
	{
		ID:           "server/nonce/non-empty",
		Title:        "Every streamed response carries a non-empty nonce",
		Requirements: []string{"NONCE-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			v := s.Checking("NONCE-1")
			require.NotEmpty(v, s.ExpectAcked(EDS).Nonce, "response nonce")
			s.Set(EDS, "a", 2)
			require.NotEmpty(v, s.AwaitResource(EDS, a).Nonce, "nonce of the pushed update")
		}),
	},
	{
		ID:           "server/nonce/distinct",
		Title:        "Nonces are never reused for two responses of a type on one stream",
		Requirements: []string{"NONCE-2"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(EDS, "a", 1)
			s.Subscribe(EDS, a)
			seen := map[string]int{s.ExpectAcked(EDS).Nonce: 1}
			for rev := 2; rev <= 4; rev++ {
				s.Set(EDS, "a", rev)
				r := s.AwaitResource(EDS, a)
				s.Ack(EDS, r)
				require.Zero(s.Checking("NONCE-2"), seen[r.Nonce], "nonce %q of revision %d was already used for revision %d", r.Nonce, rev, seen[r.Nonce])
				seen[r.Nonce] = rev
			}
		}),
	},
	{
		ID:           "server/nonce/stale-request-ignored",
		Title:        "A request carrying an older nonce than the latest response does not produce a response",
		Requirements: []string{"NONCE-7"},
		Level:        results.Should,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			old := s.ExpectAcked(EDS)
			s.Set(EDS, "a", 2)
			s.RequireResource(EDS, s.Expect(EDS), a, 2) // the latest nonce is now this response's
			s.SubscribeWithNonce(EDS, old.Nonce, b)     // stale: names {a, b}, old nonce
			s.Never("the request's nonce is stale", EDS)
		}),
	},
	{
		ID:           "server/nonce/converges-after-stale",
		Title:        "After a stale request is ignored, ACKing the latest nonce with the same names is served",
		Requirements: []string{"NONCE-8", "HINT-3"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			s.AddedNamesServed(EDS) // after no stale request
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			old := s.ExpectAcked(EDS)
			s.Set(EDS, "a", 2)
			latest := s.Expect(EDS)                 // crosses the hint update below
			s.SubscribeWithNonce(EDS, old.Nonce, b) // stale: names {a, b}, old nonce
			s.Ack(EDS, latest)                      // names {a, b}, latest nonce
			s.Checking("NONCE-8").AwaitRevision(EDS, b, 1)
		}),
	},
	{
		ID:           "server/nonce/delta-stale-nonce-subscribe",
		Title:        "Delta: a subscription carried by a request with a stale nonce is honoured",
		Requirements: []string{"NONCE-12"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			old := s.ExpectAcked(EDS)
			s.Set(EDS, "a", 2)
			latest := s.Expect(EDS)
			s.RequireResource(EDS, latest, a, 2)
			s.SubscribeWithNonce(EDS, old.Nonce, b)
			// The latest response is still owed its ACK (ACK-1), and a
			// server may hold further responses of the type until it
			// comes; the ACK subscribes nothing, so b arrives only if the
			// stale-nonce request's subscription was kept.
			s.Ack(EDS, latest)
			s.Checking("NONCE-12").AwaitRevision(EDS, b, 1)
		}),
	},
	{
		ID:           "server/nonce/delta-unknown-nonce-subscribe",
		Title:        "Delta: a subscription carried by a request with a nonce the server never sent is honoured",
		Requirements: []string{"NONCE-12"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.SubscribeWithNonce(EDS, "xdsconform-never-sent", b)
			s.Checking("NONCE-12").AwaitRevision(EDS, b, 1)
		}),
	},
	{
		ID:           "server/update/latest-request-supersedes",
		Title:        "The subscription follows the latest request, even one sent before any response",
		Requirements: []string{"UPD-3"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			foo, bar := s.Set(EDS, "foo", 1), s.Set(EDS, "bar", 1)
			s.must(EDS, s.C.SendSotW(EDS, s.C.SotWRequest(EDS, []string{foo})))
			s.must(EDS, s.C.SendSotW(EDS, s.C.SotWRequest(EDS, []string{bar})))
			s.Ack(EDS, s.Checking("UPD-3").AwaitResource(EDS, bar))
			s.Set(EDS, "foo", 2)
			s.NeverCarrying("foo is no longer subscribed", EDS, foo)
		}),
	},
}
