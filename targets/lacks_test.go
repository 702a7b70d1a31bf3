package targets_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// perVariant declares what real servers do: "*" in delta only, TTL in
// SotW only, batch everywhere but sotw-pertype, EDS everywhere but
// delta-pertype, and no sotw-pertype at all.
func perVariant() *fixturepb.Capabilities {
	return &fixturepb.Capabilities{
		ApiVersion:     fixture.APIVersion,
		TypeUrls:       []string{wire.Cluster.URL, wire.Endpoint.URL},
		Variants:       []string{"sotw-ads", "delta-ads", "delta-pertype"},
		LegacyWildcard: true,
		Features:       []string{fixture.FeatureBatch},
		VariantCapabilities: []*fixturepb.VariantCapabilities{
			{Variant: "sotw-ads", AddFeatures: []string{fixture.FeatureTTL}},
			{Variant: "delta-ads", ExplicitWildcard: proto.Bool(true)},
			{Variant: "delta-pertype", ExplicitWildcard: proto.Bool(true), LegacyWildcard: proto.Bool(false),
				TypeUrls: []string{wire.Cluster.URL}, RemoveFeatures: []string{fixture.FeatureBatch}},
		},
	}
}

func TestLacksPerVariant(t *testing.T) {
	s := &targets.Server{Caps: perVariant(), Fixture: fixture.FromServer(fixturepb.UnimplementedFixtureServer{})}
	for _, tc := range []struct {
		need engine.Need
		want map[wire.Variant]string // variants served; missing: ""
	}{
		{targets.NeedFixture, nil},
		{targets.NeedLegacyWildcard, map[wire.Variant]string{
			wire.DeltaPerType: "target does not support the legacy wildcard in delta-pertype"}},
		{targets.NeedExplicitWildcard, map[wire.Variant]string{
			wire.SotWADS: `target does not support the explicit "*" wildcard`}},
		{targets.NeedType(wire.Cluster), nil},
		{targets.NeedType(wire.Endpoint), map[wire.Variant]string{
			wire.DeltaPerType: "target does not serve EDS in delta-pertype"}},
		{targets.NeedType(wire.Listener), map[wire.Variant]string{
			wire.SotWADS: "target does not serve LDS", wire.DeltaADS: "target does not serve LDS", wire.DeltaPerType: "target does not serve LDS"}},
		{targets.NeedType(wire.VirtualHost), map[wire.Variant]string{
			wire.SotWADS: "VHDS has no sotw method", wire.DeltaADS: "target does not serve VHDS", wire.DeltaPerType: "target does not serve VHDS"}},
		{targets.NeedTTL, map[wire.Variant]string{
			wire.DeltaADS:     `the fixture does not claim feature "ttl" for delta-ads`,
			wire.DeltaPerType: `the fixture does not claim feature "ttl" for delta-pertype`}},
		{targets.NeedBatch, map[wire.Variant]string{
			wire.DeltaPerType: `the fixture does not claim feature "batch" for delta-pertype`}},
		{targets.NeedAliases, map[wire.Variant]string{
			wire.SotWADS:      `the fixture does not claim feature "aliases" for sotw-ads`,
			wire.DeltaADS:     `the fixture does not claim feature "aliases" for delta-ads`,
			wire.DeltaPerType: `the fixture does not claim feature "aliases" for delta-pertype`}},
		{targets.NeedEnvoyWarming, map[wire.Variant]string{
			wire.SotWADS:      `the fixture does not claim feature "envoy-warming" for sotw-ads`,
			wire.DeltaADS:     `the fixture does not claim feature "envoy-warming" for delta-ads`,
			wire.DeltaPerType: `the fixture does not claim feature "envoy-warming" for delta-pertype`}},
		{"no-such-need", map[wire.Variant]string{
			wire.SotWADS: `unknown need "no-such-need"`, wire.DeltaADS: `unknown need "no-such-need"`, wire.DeltaPerType: `unknown need "no-such-need"`}},
	} {
		t.Run(string(tc.need), func(t *testing.T) {
			sc := &engine.Scenario{Needs: []engine.Need{tc.need}}
			for _, v := range wire.AllVariants {
				want := tc.want[v]
				if v == wire.SotWPerType {
					want = "target does not serve sotw-pertype"
				}
				assert.Equal(t, want, s.Lacks(sc, v), v.String())
			}
		})
	}
}

// The needs and the fixture's vocabulary are one: each need about a claim
// is the name Claims.Has answers for.
func TestNeedsAreCapabilityNames(t *testing.T) {
	claims := fixture.Effective(perVariant(), wire.SotWADS)
	for need, has := range map[engine.Need]bool{
		targets.NeedLegacyWildcard: true, targets.NeedExplicitWildcard: false,
		targets.NeedType(wire.Cluster): true, targets.NeedType(wire.Listener): false,
		targets.NeedTTL: true, targets.NeedBatch: true, targets.NeedAliases: false, targets.NeedEnvoyWarming: false,
	} {
		assert.Equal(t, has, claims.Has(string(need)), need)
	}
	assert.Equal(t, engine.Need("type:CDS"), targets.NeedType(wire.Cluster))
}

// Without a fixture nothing is claimed: scenarios needing a feature are
// skipped for the missing fixture, while those needing only xDS run.
func TestLacksWithoutFixture(t *testing.T) {
	s := &targets.Server{}
	for _, n := range []engine.Need{targets.NeedFixture, targets.NeedTTL, targets.NeedBatch} {
		assert.Equal(t, "needs fixture (start the target with --fixture)", s.Lacks(&engine.Scenario{Needs: []engine.Need{n}}, wire.SotWADS), n)
	}
	for _, n := range []engine.Need{targets.NeedLegacyWildcard, targets.NeedExplicitWildcard, targets.NeedType(wire.Cluster)} {
		assert.Empty(t, s.Lacks(&engine.Scenario{Needs: []engine.Need{n}}, wire.DeltaADS), n)
	}
}

// A v1 fixture (no per-variant fields, no features) is read as before.
func TestLacksV1Fixture(t *testing.T) {
	s := &targets.Server{Fixture: fixture.FromServer(fixturepb.UnimplementedFixtureServer{}), Caps: &fixturepb.Capabilities{
		ApiVersion: "v1", TypeUrls: []string{wire.Cluster.URL}, Variants: wire.VariantNames(wire.AllVariants), LegacyWildcard: true,
	}}
	for _, v := range wire.AllVariants {
		assert.Empty(t, s.Lacks(&engine.Scenario{Needs: []engine.Need{targets.NeedFixture, targets.NeedLegacyWildcard, targets.NeedType(wire.Cluster)}}, v))
		assert.Equal(t, `target does not support the explicit "*" wildcard`, s.Lacks(&engine.Scenario{Needs: []engine.Need{targets.NeedExplicitWildcard}}, v))
		assert.Equal(t, "target does not serve EDS", s.Lacks(&engine.Scenario{Needs: []engine.Need{targets.NeedType(wire.Endpoint)}}, v))
	}
}

// The built-in targets declare per variant: the reference server claims
// everything everywhere; go-control-plane's SnapshotCache honours "*" in
// delta only, its LinearCache in both.
func TestLacksBuiltinClaims(t *testing.T) {
	star := &engine.Scenario{Needs: []engine.Need{targets.NeedFixture, targets.NeedExplicitWildcard}}
	all := &engine.Scenario{Needs: []engine.Need{targets.NeedFixture, targets.NeedLegacyWildcard, targets.NeedExplicitWildcard,
		targets.NeedTTL, targets.NeedAliases, targets.NeedBatch, targets.NeedEnvoyWarming}}
	for _, tc := range []struct {
		target string
		check  func(t *testing.T, s *targets.Server, v wire.Variant)
	}{
		{targets.BuiltinReference, func(t *testing.T, s *targets.Server, v wire.Variant) {
			assert.Empty(t, s.Lacks(all, v))
		}},
		{targets.BuiltinGoControlPlane, func(t *testing.T, s *targets.Server, v wire.Variant) {
			if v.IsDelta() {
				assert.Empty(t, s.Lacks(star, v))
			} else {
				assert.Equal(t, `target does not support the explicit "*" wildcard`, s.Lacks(star, v))
			}
		}},
		{targets.BuiltinGoControlPlaneLin, func(t *testing.T, s *targets.Server, v wire.Variant) {
			assert.Empty(t, s.Lacks(star, v))
		}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			s, err := targets.StartServer(t.Context(), targets.ServerOptions{Target: tc.target})
			require.NoError(t, err)
			defer s.Close()
			for _, v := range wire.AllVariants {
				tc.check(t, s, v)
			}
		})
	}
}

// badCaps is an in-process server whose capabilities cannot be read.
type badCaps struct {
	fixturepb.UnimplementedFixtureServer
}

func (badCaps) Register(grpc.ServiceRegistrar)           {}
func (b badCaps) FixtureServer() fixturepb.FixtureServer { return b }
func (badCaps) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{ApiVersion: "v1", VariantCapabilities: []*fixturepb.VariantCapabilities{{Variant: "delta"}}}, nil
}

func TestServeInProcessChecksCapabilities(t *testing.T) {
	_, err := targets.ServeInProcess(t.Context(), "bad", badCaps{})
	require.ErrorContains(t, err, `unknown variant "delta"`)
}
