package scenarios

import (
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#how-the-client-specifies-what-resources-to-return
var resourceScenarios = []*engine.Scenario{
	{
		ID:           "server/resources/requested-supplied",
		Title:        "Every requested resource that exists is supplied, several names in one request",
		Requirements: []string{"RES-2", "MULTI-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, b, c := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1), s.Set(EDS, "c", 1)
			s.Subscribe(EDS, a, b, c)
			s.AwaitAll(EDS, a, b, c)
		}),
	},
	{
		ID:           "server/resources/new-names-sent",
		Title:        "Names added by a later request (a hint update at the same version) are sent",
		Requirements: []string{"RES-4", "HINT-2"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Subscribe(EDS, b) // same version, same nonce, names {a, b}
			s.RequireResource(EDS, s.AwaitResource(EDS, b), b, 1)
		}),
	},
	{
		ID:           "server/resources/resubscribe-resends",
		Title:        "A name dropped and requested again is sent again although it did not change",
		Requirements: []string{"RES-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a, b)
			s.AwaitAll(EDS, a, b)
			s.Unsubscribe(EDS, b)
			s.ExpectNoneCarrying("b was just unsubscribed", EDS, b)
			s.Subscribe(EDS, b)
			s.RequireResource(EDS, s.AwaitResource(EDS, b), b, 1)
		}),
	},
	{
		ID:           "server/resources/empty-after-names-no-interest",
		Title:        "An empty name list after explicit names means no interest, not wildcard",
		Requirements: []string{"RES-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Unsubscribe(EDS, a) // resource_names is now empty
			s.ExpectNoneCarrying("the client has no EDS subscription left", EDS, a, b)
		}),
	},
	{
		ID:           "server/resources/exact-name",
		Title:        "A listener subscribed by name is returned under exactly that name",
		Requirements: []string{"RES-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        fx(LDS),
		Run: srv(func(s *S) {
			name := s.Set(LDS, "svc.example.com:443", 1)
			s.Subscribe(LDS, name)
			r := s.AwaitResource(LDS, name)
			s.RequireResource(LDS, r, name, 1)
		}),
	},
	{
		ID:           "server/resources/separate-streams",
		Title:        "Two streams of one type each receive only the updates they subscribed to",
		Requirements: []string{"MULTI-2"},
		Level:        results.Must,
		Variants:     perType,
		Needs:        fx(EDS),
		Run: srv(func(s *S) {
			foo, bar := s.Set(EDS, "foo", 1), s.Set(EDS, "bar", 1)
			other := s.Another()
			s.Subscribe(EDS, foo)
			s.ExpectAcked(EDS)
			require.NoError(s, other.Subscribe(EDS, bar))
			r, err := other.Expect(EDS)
			require.NoError(s, err, "second stream")
			require.NoError(s, other.Ack(EDS, r))
			s.Set(EDS, "foo", 2)
			s.AwaitRevision(EDS, foo, 2)
			s.expectNoneCarryingOn(other, "the second stream never subscribed to foo", EDS, foo)
		}),
	},
}
