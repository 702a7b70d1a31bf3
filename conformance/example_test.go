package conformance_test

import (
	"os"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// A management server's conformance test: its xDS port and its fixture
// API (a test build of the server serves both), the known failures beside
// the test, a JUnit report for CI. examples/embedded starts a
// go-control-plane server in-process and does exactly this.
func ExampleRunServerSuite() {
	testConformance := func(t *testing.T) {
		conformance.RunServerSuite(t, conformance.ServerOptions{
			Server:           targets.ServerOptions{Target: "127.0.0.1:18000", Fixture: "127.0.0.1:18001"},
			KnownFailingFile: "testdata/known-failing.txt",
			JUnitReport:      os.Getenv("XDSCONFORM_JUNIT"), // "" writes none
		})
	}
	_ = testConformance // func TestConformance(t *testing.T) in a _test.go file
}

// An xDS client's conformance test: the harness plays the management
// server and launches the client once per pair, pointed at a bootstrap it
// writes ({{.Bootstrap}}; targets.CommandVars lists the rest). Only the
// MUST rules here, in the variants the client speaks.
func ExampleRunClientSuite() {
	testClientConformance := func(t *testing.T) {
		conformance.RunClientSuite(t, conformance.ClientOptions{
			Client: targets.ClientOptions{
				Command:  "./bin/my-xds-client --bootstrap {{.Bootstrap}} --csds-port {{.CSDS}}",
				Variants: []wire.Variant{wire.SotWADS, wire.DeltaADS},
			},
			Levels: []results.Level{results.Must},
		})
	}
	_ = testClientConformance
}

// A team's own scenario, in the scenarios DSL, runs with the built-in
// catalogue (or alone: Scenarios is the whole catalogue run).
func ExampleServerOptions_scenarios() {
	mine := &engine.Scenario{
		ID:           "server/acme/ack-keeps-quiet",
		Title:        "An ACK of a cluster does not make the server push it again",
		Requirements: []string{"UPD-1"},
		Level:        results.Should,
		Variants:     wire.AllVariants,
		Needs:        scenarios.Fixture(scenarios.CDS),
		Run: scenarios.ServerScript(func(s *scenarios.S) {
			name := s.Set(scenarios.CDS, "c", 1)
			s.Subscribe(scenarios.CDS, name)
			s.RequireResource(scenarios.CDS, s.ExpectAcked(scenarios.CDS), name, 1)
			s.Never("nothing changed after the ACK", scenarios.CDS)
		}),
	}
	opts := conformance.ServerOptions{
		Server:    targets.ServerOptions{Target: "127.0.0.1:18000", Fixture: "127.0.0.1:18001"},
		Scenarios: append(scenarios.Server(), mine),
		Timeouts:  engine.Timeouts{Expect: 10 * time.Second}, // a remote server: more patience
	}
	_ = opts
}
