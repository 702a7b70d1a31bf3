// Package scenarios is the catalogue of conformance scenarios and the DSL
// they are written in. Each file covers one area of the specification;
// each scenario cites its rules from the requirements catalogue and reads
// like the spec: a short script of protocol steps against a fake peer,
// ending in expectations.
//
// Server returns the server-role catalogue and Client the client-role one.
// A team can write scenarios of its own in the same DSL and run them with
// the built-in ones (conformance.ServerOptions.Scenarios):
//
//	var mine = &engine.Scenario{
//		ID:           "server/acme/ack-keeps-quiet",
//		Title:        "An ACK of a cluster does not make the server push it again",
//		Requirements: []string{"UPD-1"},
//		Level:        results.Should,
//		Variants:     wire.AllVariants,
//		Needs:        scenarios.Fixture(scenarios.CDS),
//		Run: scenarios.ServerScript(func(s *scenarios.S) {
//			name := s.Set(scenarios.CDS, "c", 1)
//			s.Subscribe(scenarios.CDS, name)
//			s.RequireResource(scenarios.CDS, s.ExpectAcked(scenarios.CDS), name, 1)
//			s.Never("nothing changed after the ACK", scenarios.CDS)
//		}),
//	}
//
// S (server role: the harness is an xDS client) and C (client role: the
// harness is a management server) carry the steps; a failing step is filed
// under the rule its Checking names, else its own, else the scenario's
// first requirement.
package scenarios
