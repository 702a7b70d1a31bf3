package wording

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestArticle(t *testing.T) {
	for phrase, want := range map[string]string{
		// xDS type acronyms, read letter by letter.
		"EDS response": "an", "LDS response": "an", "RDS response": "an", "SRDS": "an",
		"SDS": "an", "RTDS": "an", "ECDS": "an", "ADS stream": "an", "CDS response": "a",
		"VHDS": "a", "URL": "a", "NACK": "an", "ACK": "an", "HTTP/2 frame": "an",
		"X": "an", "gRPC status": "a", "xdstp:// name": "an",
		// Words.
		"error": "an", "response": "a", "update": "an", "unknown type": "an",
		"unique name": "a", "one-off": "a", "hour": "an", "empty request": "an",
		"SotW stream": "a", "Envoy": "an", "": "a",
		// Quoted or bracketed, and numbers.
		`"x" name`: "a", `"alpha"`: "an", "(EDS)": "an",
		"8s wait": "an", "11": "an", "18": "an", "180": "a", "11000": "an", "2": "a",
	} {
		assert.Equal(t, want, Article(phrase), "%q", phrase)
	}
	assert.Equal(t, "an EDS response", A("EDS response"))
	assert.Equal(t, "a CDS response", A("CDS response"))
}

func TestCountAndPlural(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "scenario run", "1 scenario run"},
		{2, "scenario run", "2 scenario runs"},
		{0, "failure", "0 failures"},
		{1, "stale known-failing entry", "1 stale known-failing entry"},
		{3, "stale known-failing entry", "3 stale known-failing entries"},
		{2, "pass", "2 passes"},
		{2, "day", "2 days"},
		{2, "NACK", "2 NACKs"},
		{4, "EDS", "4 EDSs"},
		{2, "match", "2 matches"},
	} {
		assert.Equal(t, tc.want, N(tc.n, tc.noun))
	}
	assert.Equal(t, "1 child", Count(1, "child", "children"))
	assert.Equal(t, "5 children", Count(5, "child", "children"))
}

func TestDuration(t *testing.T) {
	assert.Equal(t, "5s", Duration(5*time.Second+183*time.Microsecond))
	assert.Equal(t, "4.99s", Duration(4991*time.Millisecond))
	assert.Equal(t, "3ms", Duration(3*time.Millisecond+200*time.Microsecond))
	assert.Equal(t, "0s", Duration(0))
}
