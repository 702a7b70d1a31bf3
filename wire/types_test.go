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

// The list collection types are found by type URL, so their responses
// decode, but are none of the eight types (COLL-1).
func TestCollectionTypes(t *testing.T) {
	c, ok := TypeByExactURL(ListenerCollection.URL)
	assert.True(t, ok)
	assert.Equal(t, ListenerCollection.URL, c.URL)
	assert.NotContains(t, AllTypeURLs(), ListenerCollection.URL)
	m, ok := MemberOf(ListenerCollection)
	assert.True(t, ok)
	assert.Equal(t, Listener.URL, m.URL)
	back, ok := CollectionOf(Listener)
	assert.True(t, ok)
	assert.Equal(t, ListenerCollection.URL, back.URL)
	_, ok = CollectionOf(Cluster)
	assert.False(t, ok)
}
