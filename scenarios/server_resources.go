package scenarios

import (
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// namedTypes are the types a client subscribes to by name in these
// scenarios, in the order of the chain a client follows: the four types
// every client uses, so that a rule is not checked on one type only. A
// target that serves some of them is checked on those.
var namedTypes = []wire.Type{LDS, RDS, CDS, EDS}

// xds_protocol#how-the-client-specifies-what-resources-to-return
var resourceScenarios = []*engine.Scenario{
	{
		ID:           "server/resources/requested-supplied",
		Title:        "Every requested resource that exists is supplied, several names in one request, for every type",
		Requirements: []string{"RES-2", "MULTI-1"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(namedTypes...) {
				a, b, c := s.Set(t, "a", 1), s.Set(t, "b", 1), s.Set(t, "c", 1)
				s.Subscribe(t, a, b, c)
				s.Checking("RES-2").AwaitAll(t, a, b, c)
			}
		}),
	},
	{
		ID:           "server/resources/new-names-sent",
		Title:        "Names added by a later request (a hint update at the same version) are sent, for every type",
		Requirements: []string{"RES-4", "HINT-2"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(),
		Run: ServerScript(func(s *S) {
			for _, t := range s.TypesOf(namedTypes...) {
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				s.Subscribe(t, a)
				s.Ack(t, s.AwaitResource(t, a))
				s.Subscribe(t, b) // same version, same nonce, names {a, b}
				s.Checking("RES-4").AwaitRevision(t, b, 1)
			}
		}),
	},
	{
		ID:           "server/resources/resubscribe-resends",
		Title:        "A name dropped and requested again is sent again although it did not change",
		Requirements: []string{"RES-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			s.AddedNamesServed(EDS) // a name never dropped before
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a, b)
			s.AwaitAll(EDS, a, b)
			s.Unsubscribe(EDS, b)
			// b may come back once requested again; until then it must not.
			s.Checking("UNSUB-2").QuietCarrying("b was just unsubscribed", EDS, b)
			s.Subscribe(EDS, b)
			s.Checking("RES-5").AwaitRevision(EDS, b, 1)
		}),
	},
	{
		ID:           "server/resources/empty-after-names-no-interest",
		Title:        "An empty name list after explicit names means no interest, not wildcard",
		Requirements: []string{"RES-6"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
			s.Subscribe(EDS, a)
			s.ExpectAcked(EDS)
			s.Unsubscribe(EDS, a) // resource_names is now empty
			// A change gives a server that read the empty list as a
			// wildcard something to push, even if it pushes only changes.
			s.Set(EDS, "b", 2)
			s.NeverCarrying("the client has no EDS subscription left", EDS, a, b)
		}),
	},
	{
		ID:           "server/resources/exact-name",
		Title:        "A listener subscribed by name is returned under exactly that name",
		Requirements: []string{"RES-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        Fixture(LDS),
		Run: ServerScript(func(s *S) {
			name := s.Set(LDS, "svc.example.com:443", 1)
			s.Subscribe(LDS, name)
			s.Checking("RES-7").AwaitRevision(LDS, name, 1)
		}),
	},
	{
		ID:           "server/resources/separate-streams",
		Title:        "Two streams of one type each receive only the updates they subscribed to",
		Requirements: []string{"MULTI-2"},
		Level:        results.Must,
		Variants:     perType,
		Needs:        Fixture(EDS),
		Run: ServerScript(func(s *S) {
			foo, bar := s.Set(EDS, "foo", 1), s.Set(EDS, "bar", 1)
			other := s.Another()
			s.Subscribe(EDS, foo)
			s.ExpectAcked(EDS)
			require.NoError(s, other.Subscribe(EDS, bar))
			r, err := other.Expect(EDS)
			require.NoError(s.Checking("RES-2"), err, "second stream")
			require.NoError(s, other.Ack(EDS, r))
			s.Set(EDS, "foo", 2)
			s.AwaitRevision(EDS, foo, 2)
			s.forbidOn(other, s.watch("the second stream never subscribed to foo", EDS, foo))
		}),
	},
}
