package scenarios

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// resourceTTL is the TTL the TTL scenarios set: long, since no scenario
// waits for a resource to expire; the server only has to pass it on.
const resourceTTL = time.Hour

// subscribeWithTTL switches the scenario to a fake client advertising
// features, sets endpoints a with resourceTTL, subscribes to them and
// returns the response carrying them.
func (s *S) subscribeWithTTL(features ...string) (string, *fakeclient.Response) {
	s.WithFeatures(features...)
	a := s.SetWith(EDS, "a", 1, fixture.SetRequest{TTL: resourceTTL})
	s.Subscribe(EDS, a)
	return a, s.AwaitRevision(EDS, a, 1)
}

// ttlWords says what TTL a response gave.
func ttlWords(d *durationpb.Duration) string {
	if d == nil {
		return "none"
	}
	return d.AsDuration().String()
}

// xds_protocol#ttl
var ttlScenarios = append(ttlOnVariantScenarios(), []*engine.Scenario{
	{
		ID:           "server/ttl/only-for-capable-clients",
		Title:        "A resource set with a TTL reaches a client that did not ask for TTLs without one",
		Requirements: []string{"TTL-1"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedTTL),
		Run: ServerScript(func(s *S) {
			// The client takes SotW Resource wrappers, the only way a
			// TTL can come in SotW, but not TTLs.
			a, r := s.subscribeWithTTL(wire.FeatureResourceInSotW)
			if ttl := r.TTLOf(a); ttl != nil {
				s.Checking("TTL-1").Errorf("%q comes with a TTL of %v (response %q), but the client did not advertise %s", a, ttl.AsDuration(), r.Nonce, wire.FeatureTTL)
			}
		}),
	},
	{
		ID:           "server/ttl/removed-by-resend",
		Title:        "The server passes on a TTL, resends the resource when only its TTL changes, and removes it by resending the resource without one",
		Requirements: []string{"TTL-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(Fixture(EDS), targets.NeedTTL),
		Run: ServerScript(func(s *S) {
			a, r := s.subscribeWithTTL(wire.FeatureTTL, wire.FeatureResourceInSotW)
			v := s.Checking("TTL-3")
			if got := r.TTLOf(a); got.AsDuration() != resourceTTL {
				v.Fatalf("%q was set with a TTL of %v, but response %q gives it %v", a, resourceTTL, r.Nonce, ttlWords(got))
			}
			s.Ack(EDS, r)
			// The same resource with another TTL: the TTL alone changed,
			// and is resent ("To update the TTL ... resends the resource
			// with a new TTL").
			s.SetWith(EDS, "a", 1, fixture.SetRequest{TTL: 2 * resourceTTL})
			s.Ack(EDS, v.awaitWhere(EDS, fmt.Sprintf("a response resending %s with its new TTL of %v", a, 2*resourceTTL), func(r *fakeclient.Response) bool {
				return r.Has(a) && r.TTLOf(a).AsDuration() == 2*resourceTTL
			}))
			s.Set(EDS, "a", 1) // the same resource, no TTL
			v.awaitWhere(EDS, "a response resending "+a+" without a TTL", func(r *fakeclient.Response) bool {
				return r.Has(a) && r.TTLOf(a) == nil
			})
		}),
	},
	{
		ID:           "server/ttl/wrapped-only-for-capable",
		Title:        "SotW: a resource with a TTL is not wrapped for a client that takes TTLs but not Resource wrappers",
		Requirements: []string{"TTL-5"},
		Level:        results.Must,
		Variants:     sotw,
		Needs:        with(Fixture(EDS), targets.NeedTTL),
		Run: ServerScript(func(s *S) {
			a, r := s.subscribeWithTTL(wire.FeatureTTL) // no Resource wrappers
			if r.Wrapped(a) {
				s.Checking("TTL-5").Errorf("%q comes wrapped in a Resource (response %q), but the client did not advertise %s", a, r.Nonce, wire.FeatureResourceInSotW)
			}
		}),
	},
}...)

// ttlOnVariant is one row of the TTL rules on a variant (a resource set
// with dynamic parameter constraints): a variant travels in a Resource
// wrapper of its own (DYN-3), the very place a SotW TTL sits, so a server
// may build it on a path apart from plain resources; the TTL must come
// along there too, and only to a client that takes TTLs.
type ttlOnVariant struct {
	id, title, rule string
	level           results.Level
	takesTTL        bool
}

var ttlOnVariantRows = []ttlOnVariant{
	{"server/ttl/variant-passed-on", "A variant set with a TTL reaches a client that takes TTLs with its TTL", "TTL-3", results.Must, true},
	{"server/ttl/variant-only-for-capable", "A variant set with a TTL reaches a client that did not ask for TTLs without one", "TTL-1", results.Should, false},
}

// ttlOnVariantScenarios generates the scenarios of ttlOnVariantRows: the
// client takes Resource wrappers (and TTLs, or not), subscribes to the
// env=prod variant of a by locator, and the variant's TTL is checked.
func ttlOnVariantScenarios() []*engine.Scenario {
	var out []*engine.Scenario
	for _, row := range ttlOnVariantRows {
		out = append(out, &engine.Scenario{
			ID:           row.id,
			Title:        row.title,
			Requirements: []string{row.rule},
			Level:        row.level,
			Variants:     allVariants,
			Needs:        with(Fixture(EDS), targets.NeedTTL, targets.NeedDynamicParameters),
			Run: ServerScript(func(s *S) {
				features := []string{wire.FeatureResourceInSotW}
				if row.takesTTL {
					features = append(features, wire.FeatureTTL)
				}
				s.WithFeatures(features...)
				a := s.SetWith(EDS, "a", 1, fixture.SetRequest{TTL: resourceTTL, Constraints: envProd})
				s.SetVariant(EDS, "a", 2, envTest)
				s.SubscribeLocator(EDS, a, params{"env": "prod"})
				r := s.AwaitRevision(EDS, a, 1)
				v := s.Checking(row.rule)
				switch got := r.TTLOf(a); {
				case row.takesTTL && got.AsDuration() != resourceTTL:
					v.Errorf("the env=prod variant of %q was set with a TTL of %v, but response %q gives it %v", a, resourceTTL, r.Nonce, ttlWords(got))
				case !row.takesTTL && got != nil:
					v.Errorf("the env=prod variant of %q comes with a TTL of %v (response %q), but the client did not advertise %s", a, got.AsDuration(), r.Nonce, wire.FeatureTTL)
				}
			}),
		})
	}
	return out
}
