package wire

import (
	"testing"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
)

// Matches follows DYN-7 row by row.
func TestMatches(t *testing.T) {
	prod := Exact("env", "prod")
	for _, tc := range []struct {
		name   string
		c      *discovery.DynamicParameterConstraints
		params map[string]string
		want   bool
	}{
		{"no constraints match anything", nil, map[string]string{"env": "x"}, true},
		{"exact value", prod, map[string]string{"env": "prod"}, true},
		{"other value", prod, map[string]string{"env": "test"}, false},
		{"key absent", prod, nil, false},
		{"extra keys do not matter", prod, map[string]string{"env": "prod", "zone": "eu"}, true},
		{"exists, any value", Exists("canary"), map[string]string{"canary": ""}, true},
		{"exists, absent", Exists("canary"), map[string]string{}, false},
		{"not exists, absent", Not(Exists("canary")), map[string]string{}, true},
		{"not exists, present", Not(Exists("canary")), map[string]string{"canary": "1"}, false},
		{"and, all", And(prod, Exact("v", "2")), map[string]string{"env": "prod", "v": "2"}, true},
		{"and, one missing", And(prod, Exact("v", "2")), map[string]string{"env": "prod"}, false},
		{"and of nothing", And(), nil, true},
		{"or, one", Or(prod, Exact("env", "dev")), map[string]string{"env": "dev"}, true},
		{"or, none", Or(prod, Exact("env", "dev")), map[string]string{"env": "qa"}, false},
		{"or of nothing", Or(), nil, false},
		{"empty constraint matches nothing", &discovery.DynamicParameterConstraints{}, nil, false},
	} {
		assert.Equal(t, tc.want, Matches(tc.c, tc.params), "%s: %s against %v", tc.name, ConstraintsString(tc.c), tc.params)
	}
}

// Equal constraints have one key, different ones different keys, and no
// constraints the plain name.
func TestVariantKey(t *testing.T) {
	assert.Equal(t, "a", VariantKey("a", nil))
	assert.Equal(t, VariantKey("a", And(Exact("x", "1"), Exists("y"))), VariantKey("a", And(Exact("x", "1"), Exists("y"))))
	assert.NotEqual(t, VariantKey("a", Exact("x", "1")), VariantKey("a", Exact("x", "2")))
	assert.NotEqual(t, VariantKey("a", Exact("x", "1")), "a")
	assert.Equal(t, "(env=prod AND NOT canary exists)", ConstraintsString(And(Exact("env", "prod"), Not(Exists("canary")))))
}
