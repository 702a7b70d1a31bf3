// Package soak runs both suites against the reference peers many times in
// a row (make soak) and reports verdict flips, peak memory and goroutines:
// the evidence that a run is deterministic and leaks nothing over time. It
// has no code outside its test, which builds only with the soak tag, so it
// stays out of make test and .ci/run.
package soak
