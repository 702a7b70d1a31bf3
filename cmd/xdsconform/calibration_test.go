package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A pair run by itself brings the calibration of the status view it rests
// on, which runs first: against a view that never shows DOES_NOT_EXIST
// the calibration fails OBS-1 and the pair is blocked; declared with
// --status-lacks, both are skipped and the run passes; the calibration
// skipped by name, the pair is judged uncalibrated, as before.
func TestClientCalibration(t *testing.T) {
	args := []string{"client", "--target", "builtin:reference", "--fault", "status-omits-missing",
		"--run", "client/ttl/expires[sotw-ads]", "--timeout", "1s", "-v"}

	code, out, stderr := run(t, args...)
	assert.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, out, "client suite, 2 scenario runs against")
	assert.Contains(t, out, "FAIL  client/status/shows-does-not-exist[sotw-ads]")
	assert.Contains(t, out, "BLOCK client/ttl/expires[sotw-ads]")

	// With a pair that runs: a run of nothing but skips is a usage error.
	code, out, stderr = run(t, append(args, "--status-lacks", "DOES_NOT_EXIST", "--run", "client/nack/recovery[sotw-ads]")...)
	assert.Equal(t, exitOK, code, stderr)
	assert.Contains(t, out, "client suite, 3 scenario runs against")
	assert.Contains(t, out, "PASS: 1 passed, 0 known failing, 2 skipped")

	code, out, stderr = run(t, append(args, "--skip", "client/status/*")...)
	assert.Equal(t, exitFailures, code, stderr)
	assert.Contains(t, out, "client suite, 1 scenario run against")
	assert.Contains(t, out, "FAIL  client/ttl/expires[sotw-ads]")
	assert.Contains(t, out, "TTL-2 (MUST)")
}
