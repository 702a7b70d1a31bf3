package refserver

import (
	"context"

	"google.golang.org/grpc/status"
)

// The faults of the fixture API itself: they break no rule of xDS but the
// harness's contract with the server (docs/fixture-api.md), so that the
// harness's handling of a fixture that misbehaves is shown able to fail.
const (
	// FaultFixtureHangs answers GetCapabilities but never a call that
	// changes state (SetResource, DeleteResource, ApplyChanges, Reset):
	// each blocks until its caller gives up. A test build wedged on a lock
	// does this; the harness must stop at once, naming the fixture, not
	// wait out every pair's timeout one after the other.
	FaultFixtureHangs Fault = "fixture-hangs"
)

func init() {
	faultDescriptions[FaultFixtureHangs] = "fixture API: answers GetCapabilities but never SetResource, DeleteResource, ApplyChanges or Reset (each blocks until its caller gives up)"
	AllFaults = append(AllFaults, FaultFixtureHangs)
}

// hang is FaultFixtureHangs: the call blocks until its caller's context
// ends, and then fails as a call that ran out of time does.
func hang(ctx context.Context) error {
	<-ctx.Done()
	return status.FromContextError(ctx.Err()).Err()
}
