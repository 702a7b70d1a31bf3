// Package scenariofile reads declarative scenario files: YAML documents
// (apiVersion xdsconform.io/v1alpha1, kind Scenario) that say what a
// built-in scenario's Go body says — the fixture changes, the messages the
// harness sends, what it expects back — each step naming the rule it
// checks. Load and Parse compile each document into an *engine.Scenario
// whose body runs the steps through the exported DSL of package scenarios
// (S for the server role, C for the client role), so a file gets the same
// engine, isolation, invariants, reports and exit codes as the catalogue.
//
// The format is documented in docs/scenario-files.md and described by
// scenario.schema.json (Schema), which every document is validated
// against. A file that cannot run is an *Error whose text is one line,
// FILE:LINE: what is wrong.
package scenariofile
