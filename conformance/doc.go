// Package conformance runs the xdsconform suites from go test: every pair
// (a scenario in one variant) is a subtest of its own, so go test's -run
// selects pairs, -failfast stops at the first failure, and a CI job needs
// no glue but a test function.
//
//	func TestConformance(t *testing.T) {
//		conformance.RunServerSuite(t, conformance.ServerOptions{
//			Server:           targets.ServerOptions{Target: "127.0.0.1:18000", Fixture: "127.0.0.1:18001"},
//			KnownFailingFile: "testdata/known-failing.txt",
//			JUnitReport:      os.Getenv("XDSCONFORM_JUNIT"), // optional
//		})
//	}
//
// Subtests are named "ID/variant" ("server/nonce/distinct/sotw-ads"), so
//
//	go test -run 'TestConformance/server/nonce/.*'
//
// runs the nonce pairs only. RunClientSuite does the same for an xDS
// client, launched per pair by a command (targets.ClientOptions.Command).
//
// Scenarios of a team's own (written with the scenarios DSL, or loaded
// from scenario files with scenariofile.Load) run with the built-in ones
// through ServerOptions.Scenarios and ClientOptions.Scenarios.
//
// Package ginkgosuite runs the same suites as ginkgo specs. Other test
// frameworks can use Suite, which both are built on. docs/embedding.md has
// the whole story.
package conformance
