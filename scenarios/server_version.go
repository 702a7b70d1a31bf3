package scenarios

import (
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
)

// xds_protocol#resource-type-instance-version
var versionScenarios = []*engine.Scenario{
	{
		ID:           "server/version/changes-on-update",
		Title:        "version_info changes whenever a resource of the type changes",
		Requirements: []string{"VER-1"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			s.Subscribe(CDS, a)
			first := s.ExpectAcked(CDS)
			s.Set(CDS, "a", 2)
			second := s.AwaitRevision(CDS, a, 2)
			require.NotEqual(s, first.Version, second.Version, "a changed resource must come with a new version_info")
		}),
	},
	{
		ID:           "server/version/independent-per-type",
		Title:        "A change to one type produces no response of another type",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        Fixture(CDS, EDS),
		Run: ServerScript(func(s *S) {
			c, e := s.Set(CDS, "c", 1), s.Set(EDS, "e", 1)
			s.Subscribe(CDS, c)
			s.ExpectAcked(CDS)
			s.Subscribe(EDS, e)
			s.ExpectAcked(EDS)
			s.Set(EDS, "e", 2)
			s.Ack(EDS, s.AwaitRevision(EDS, e, 2))
			s.Never("only an EDS resource changed; CDS has nothing new", CDS)
		}),
	},
	{
		ID:           "server/version/delta-resource-versions",
		Title:        "Delta resources carry a per-resource version that changes with the resource, and only with it",
		Requirements: []string{"VER-7"},
		Level:        results.Should,
		Variants:     delta,
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a, b := s.Set(CDS, "a", 1), s.Set(CDS, "b", 1)
			s.Subscribe(CDS, a, b)
			s.AwaitAll(CDS, a, b)
			before := s.C.Known(CDS) // the versions received so far
			require.NotEmpty(s, before[a], "version of %q", a)
			require.NotEmpty(s, before[b], "version of %q", b)
			s.Set(CDS, "a", 2)
			second := s.AwaitRevisionChecking(CDS, a, 2, func(r *fakeclient.Response) {
				// b did not change: if it comes along, its version stays.
				if r.Has(b) {
					require.Equal(s, before[b], r.ResourceVersion(b), "%q did not change, so its version must not (response %q)", b, r.Nonce)
				}
			})
			require.NotEmpty(s, second.ResourceVersion(a), "version of %q after a change", a)
			require.NotEqual(s, before[a], second.ResourceVersion(a), "the resource changed, so must its version")
		}),
	},
}
