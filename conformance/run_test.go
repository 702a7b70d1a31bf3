package conformance_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/examples/embedded"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// A scenario of a team's own, written in the scenarios DSL, runs through
// ServerOptions.Scenarios like a built-in one: here against the example's
// go-control-plane server.
func TestOwnScenarioRunsThroughTheOptions(t *testing.T) {
	srv, err := embedded.Start()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Stop()) })
	mine := &engine.Scenario{
		ID:           "server/acme/ack-keeps-quiet",
		Title:        "An ACK of a cluster does not make the server push it again",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     []wire.Variant{wire.SotWADS, wire.DeltaADS},
		Needs:        scenarios.Fixture(scenarios.CDS),
		Run: scenarios.ServerScript(func(s *scenarios.S) {
			name := s.Set(scenarios.CDS, "c", 1)
			s.Subscribe(scenarios.CDS, name)
			s.RequireResource(scenarios.CDS, s.ExpectAcked(scenarios.CDS), name, 1)
			s.Never("nothing changed after the ACK", scenarios.CDS)
		}),
	}
	conformance.RunServerSuite(t, conformance.ServerOptions{
		Server:    targets.ServerOptions{Target: srv.XDS, Fixture: srv.Fixture},
		Scenarios: []*engine.Scenario{mine},
	})
}

// Scenario files plug in the same way: here the bug report of
// go-control-plane's missing delta resend, which the example server fails
// with the rule the file names (a known failure, so its subtest is
// skipped saying so; one that broke another rule would fail).
func TestScenarioFilesRunThroughTheOptions(t *testing.T) {
	srv, err := embedded.Start()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Stop()) })
	files, err := scenariofile.Load("../scenarios/scenariofile/testdata/delta-repeat-subscribe.yaml")
	require.NoError(t, err)
	known, err := engine.ParseKnownFailing(strings.NewReader(
		"server/files/delta-repeat-subscribe[delta-*] DELTA-3: the SnapshotCache does not answer a repeated subscribe\n"), "test")
	require.NoError(t, err)
	conformance.RunServerSuite(t, conformance.ServerOptions{
		Server:       targets.ServerOptions{Target: srv.XDS, Fixture: srv.Fixture},
		Scenarios:    files,
		KnownFailing: known,
	})
}
