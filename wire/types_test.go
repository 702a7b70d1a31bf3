package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTypeByExactURL(t *testing.T) {
	for _, tc := range []struct {
		url  string
		want bool
	}{
		{Cluster.URL, true},
		{"envoy.config.cluster.v3.Cluster", false},
		{"/" + Cluster.URL, false},
		{"", false},
		{TypePrefix + "envoy.config.cluster.v2.Cluster", false},
	} {
		got, ok := TypeByExactURL(tc.url)
		assert.Equal(t, tc.want, ok, tc.url)
		if ok {
			assert.Equal(t, tc.url, got.URL)
		}
	}
}
