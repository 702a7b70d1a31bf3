package wording

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPeerText(t *testing.T) {
	for in, want := range map[string]string{
		"go-control-plane v0.14.0":          "go-control-plane v0.14.0",
		"x\nPASS: 999 passed":               `x\x0aPASS: 999 passed`,
		"evil\u202Edessap":                  `evil\u202edessap`,
		"tab\there\r":                       `tab\x09here\x0d`,
		"iso\u2066late\u2069 and \u2028sep": `iso\u2066late\u2069 and \u2028sep`,
		"esc \x1b[31mred\a":                 `esc \x1b[31mred\x07`,
	} {
		assert.Equal(t, want, PeerText(in), "%q", in)
	}
	long := PeerText(strings.Repeat("a", 1000))
	assert.Equal(t, strings.Repeat("a", 256)+"…", long)
}
