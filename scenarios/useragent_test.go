package scenarios

import (
	"testing"

	"github.com/xdsconform/xdsconform/peers/refclient"
)

// The catalogue writes out the reference client's user agent rather than
// import the reference client; it must be the one the client sends.
func TestReferenceClientUserAgentIsTheClients(t *testing.T) {
	if referenceClientUserAgent != refclient.UserAgentName {
		t.Fatalf("referenceClientUserAgent is %q, the reference client sends %q", referenceClientUserAgent, refclient.UserAgentName)
	}
}
