// Package hostile is the harness's own hostile-peer suite: management
// servers and xDS clients written to misbehave (flood, crash, detach,
// leak secrets, speak garbage), each run against the real xdsconform
// binary as a subprocess, so that exit codes, outcome classification,
// report sizes, peak memory, leftover processes and leaked secrets are
// asserted where a user would see them. It has no code outside its tests.
package hostile
