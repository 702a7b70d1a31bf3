// Package e2e runs both conformance suites against real xDS
// implementations the harness did not write, and checks that each fails
// exactly what its shipped known-failing list says. It is built only with
// the e2e tag (make e2e): the peers it drives are installed by make
// e2e-deps (npm packages, Debian packages), not by go test.
//
// Every spec writes the report of one scenario family of one peer to
// e2e/out/PEER/FAMILY.json (make e2e-heavy: e2e/heavy-results, which is
// committed); make compat turns those into COMPATIBILITY.md.
package e2e
