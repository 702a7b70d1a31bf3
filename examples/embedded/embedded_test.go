package embedded

import (
	"testing"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/targets"
)

// TestConformance runs the server suite against the server of server.go,
// each pair a subtest named ID/variant.
func TestConformance(t *testing.T) {
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	conformance.RunServerSuite(t, conformance.ServerOptions{
		Server:           targets.ServerOptions{Target: srv.XDS, Fixture: srv.Fixture},
		KnownFailingFile: "known-failing.txt",
	})
}
