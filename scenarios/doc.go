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
//
// Every step is a check or a precondition. A check judges the behaviour
// the scenario is about: a step under Checking (the last step, which the
// title is about, always names its rule so), a watch (Never), a global
// invariant, a check about one rule only (an ACK's nonce, NONCE-3). A
// precondition is what the verdict rests on: the base resources served
// and ACKed, the client's chain (C.Chain), a barrier (S.Barrier), a first
// response before the behaviour under test. A check that fails fails its
// rule. A precondition that fails blocks the pair (engine.T.Block, outcome
// blocked) by the rule it rests on, so a target that breaks one rule
// everywhere (a client asking for the wrong listener) shows that rule
// broken, not every scenario's own: the steps of a precondition helper
// always block, whatever Checking their call is made under; any other step
// blocks when it is no check and its own default rule (RES-2 for the answer
// to a first subscription, ACK-1 for a reply, RES-1 for what a client asks
// for, ...) is one the scenario does not cite. A rule the scenario cites
// is never blocked by: its precondition failing is its plain failure.
// testify's require on a precondition step blocks; assert records a
// failure of its rule and lets the body go on (see precondition.go).
package scenarios
