package scenarios

import (
	"fmt"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Per-resource errors (xRFC TP3, gRFC A88): the harness, as the server,
// tells the client why it cannot send a resource in resource_errors, and
// reads what the client made of it from its status view. Only clients
// that claim the resource-errors feature are held to these rules; the
// others skip them.

// takesErrors is the need of every scenario here.
var takesErrors = targets.NeedClientFeature(targets.ClientFeatureResourceErrors)

// showsErrors says the scenario's verdict rests on the status view
// reporting RECEIVED_ERROR (ERR-12).
var showsErrors = with(observed, takesErrors, targets.NeedStatus(observer.ReceivedError))

// resourceError is the error code for name, as a TP3 server sends it.
func resourceError(name string, code codes.Code) *discovery.ResourceError {
	return &discovery.ResourceError{
		ResourceName: &discovery.ResourceName{Name: name},
		ErrorDetail:  &rpcstatus.Status{Code: int32(code), Message: "xdsconform: the server reports " + code.String()},
	}
}

// RespondErrors sends a response of type t at version carrying no
// resources and the errors errs, and returns its nonce.
func (c *C) RespondErrors(t wire.Type, version string, errs ...*discovery.ResourceError) string {
	n, err := c.Stream(t).RespondWrapped(c.Context(), t, version, nil, errs)
	if err != nil {
		c.fail("sending %s response with resource_errors: %v", wording.A(t.Short), err)
	}
	return n
}

// errorFor sends a response of CDS at version whose only content is an
// error code for the chain's cluster, and expects the ACK: the response
// is valid, whatever the client makes of the error.
func (c *C) errorFor(version string, code codes.Code) {
	c.ExpectAck(CDS, c.RespondErrors(CDS, version, resourceError(c.CL, code)), version)
}

// awaitClusterSubscribed serves the chain up to the route and waits for
// the cluster's subscription, which it returns.
func (c *C) awaitClusterSubscribed() time.Time {
	c.Chain(RDS)
	return c.AwaitSubscribed(CDS, c.CL).Arrived
}

// keepsThroughErrors serves the chain's cluster, then an error of each
// code for it, and checks, under rule, that the cluster at version 1
// stays in use after each (ERR-7, ERR-9). In SotW the responses leave
// the cluster out, as they must (ERR-2): a client that reads the error
// reads the absence as not a deletion.
//
// One watch covers every error, from the first to the end of the pair
// and its trailing quiet window, so the codes cost one window, not one
// each; the transcript shows which error came before the change.
func (c *C) keepsThroughErrors(rule string, codes ...codes.Code) {
	c.Chain(CDS)
	v1 := c.V("1", c.CL)
	names := make([]string, len(codes))
	for i, code := range codes {
		names[i] = code.String()
	}
	c.Checking(rule).Never(CDS, c.CL, fmt.Sprintf("no longer at version %s after errors with codes %s, sent in that order", v1, strings.Join(names, ", ")), func(r observer.Resource) bool {
		return r.Version != v1
	})
	for i, code := range codes {
		c.errorFor(fmt.Sprint(i+2), code)
	}
}

// TP3 §Protocol Behavior; gRFC A88; DiscoveryResponse.resource_errors.
var clientErrorScenarios = []*engine.Scenario{
	{
		ID:           "client/errors/remembered",
		Title:        "An error for a resource is remembered across responses that do not repeat it, until the resource comes",
		Requirements: []string{"ERR-5", "ERR-12"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        showsErrors,
		Run: ClientScript(func(c *C) {
			c.awaitClusterSubscribed()
			// The error is listed after one for a name the client never
			// asked for, which it ignores (RES-3) without ignoring the
			// rest of the list.
			c.ExpectAck(CDS, c.RespondErrors(CDS, "1", resourceError(c.Extra("unasked"), codes.Unavailable), resourceError(c.CL, codes.Unavailable)), "1")
			c.Checking("ERR-12").AwaitState(CDS, c.CL, observer.ReceivedError)
			// Two responses that say nothing of the cluster: the server
			// need send an error only once (ERR-4).
			for _, version := range []string{"2", "3"} {
				c.ExpectAck(CDS, c.RespondErrors(CDS, version), version)
			}
			c.Checking("ERR-5").QuietView(CDS, c.CL, "without the error it was sent", func(r observer.Resource) bool {
				return r.State != observer.ReceivedError
			})
			c.ExpectAck(CDS, c.Respond(CDS, "4", c.Hop(CDS, 1)), "4")
			c.Checking("ERR-5").AwaitAcked(CDS, c.CL, "4")
		}),
	},
	{
		ID:           "client/errors/timer-cancelled",
		Title:        "An error for a resource not yet received ends its does-not-exist timer",
		Requirements: []string{"ERR-6"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(showsMissing, takesErrors),
		Run: ClientScript(func(c *C) {
			c.awaitClusterSubscribed()
			c.errorFor("1", codes.Unavailable)
			// Past the whole timer, as if it had started only now.
			timer := c.target.Options().DNETimer
			c.Checking("ERR-6").NeverThrough(timer, timer+c.Timeouts.Quiet, dneTimerWords(timer), CDS, c.CL, "as not existing when its timer ran out, though the server sent an error for it", isMissing)
		}),
	},
	{
		ID:    "client/errors/cleared-by-resend-at-held-version",
		Title: "Delta: an error for a cached resource is cleared when the resource comes again, even unchanged at the version held",
		// ERR-5: the error is remembered "until a response is received
		// that contains the resource"; a resource with a body is such a
		// response whatever its version, which only a heartbeat (no
		// body, TTL-4) leaves out.
		Requirements: []string{"ERR-5"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        showsErrors,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.errorFor("2", codes.Unavailable)
			c.precondition("ERR-12").AwaitState(CDS, c.CL, observer.ReceivedError)
			nonce := c.Stream(CDS).NewNonce()
			c.Send(CDS, &discovery.DeltaDiscoveryResponse{TypeUrl: CDS.URL, SystemVersionInfo: "3", Nonce: nonce,
				Resources: []*discovery.Resource{{Name: c.CL, Version: c.V("1", c.CL), Resource: mustAny(c, c.Hop(CDS, 1))}}})
			c.ExpectAck(CDS, nonce, "3")
			c.Checking("ERR-5").AwaitAcked(CDS, c.CL, "1")
		}),
	},
	{
		ID:           "client/errors/transient-keeps-cache",
		Title:        "After UNAVAILABLE, INTERNAL or UNKNOWN the cached resource stays in use",
		Requirements: []string{"ERR-7"},
		Level:        results.Must,
		Variants:     allVariants,
		Needs:        with(observed, takesErrors),
		Run: ClientScript(func(c *C) {
			c.keepsThroughErrors("ERR-7", codes.Unavailable, codes.Internal, codes.Unknown)
		}),
	},
	{
		ID:           "client/errors/not-found-is-missing",
		Title:        "NOT_FOUND for a resource not yet received is taken as not existing at once, without waiting for the timer",
		Requirements: []string{"ERR-8"},
		Level:        results.May,
		Variants:     allVariants,
		Needs:        with(showsMissing, takesErrors),
		Run: ClientScript(func(c *C) {
			asked := c.awaitClusterSubscribed()
			c.errorFor("1", codes.NotFound)
			v := c.Checking("ERR-8")
			v.Await(CDS, c.CL, "as not existing", 0, isMissing)
			// Shown only once the timer could have run, it proves nothing:
			// NOT_FOUND is handled like the timer firing, at once.
			timer := c.target.Options().DNETimer
			v.Within("ERR-8", fmt.Sprintf("showing %s %s as not existing after NOT_FOUND, with a does-not-exist timer of %s,", CDS.Short, c.CL, wording.Duration(timer)),
				time.Since(asked), timer/2, asked, time.Now())
		}),
	},
	{
		ID:           "client/errors/permission-denied-drops",
		Title:        "PERMISSION_DENIED for a cached resource drops it: no version of it stays in use",
		Requirements: []string{"ERR-8"},
		Level:        results.May,
		Variants:     allVariants,
		Needs:        with(observed, takesErrors),
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.AwaitAcked(CDS, c.CL, "1")
			c.errorFor("2", codes.PermissionDenied)
			c.Checking("ERR-8").Await(CDS, c.CL, "no longer in use (the cached cluster dropped)", 0, func(r observer.Resource) bool {
				return r.Version == "" || r.State == observer.DoesNotExist
			})
		}),
	},
	{
		ID:           "client/errors/unknown-code-transient",
		Title:        "After an error code TP3 does not name (FAILED_PRECONDITION, ABORTED) the cached resource stays in use",
		Requirements: []string{"ERR-9"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        with(observed, takesErrors),
		Run: ClientScript(func(c *C) {
			c.keepsThroughErrors("ERR-9", codes.FailedPrecondition, codes.Aborted)
		}),
	},
	{
		ID:           "client/errors/delta-not-found-removes",
		Title:        "In delta, NOT_FOUND for a held resource removes it, as removed_resources does",
		Requirements: []string{"ERR-10"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        with(observed, takesErrors),
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.AwaitAcked(CDS, c.CL, "1")
			c.errorFor("2", codes.NotFound)
			c.Checking("ERR-10").AwaitGone(CDS, c.CL)
		}),
	},
	{
		ID:           "client/errors/shown-in-status",
		Title:        "The status view shows a resource with a server error as RECEIVED_ERROR, with the error and the version in use",
		Requirements: []string{"ERR-12"},
		Level:        results.Should,
		Variants:     allVariants,
		Needs:        showsErrors,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.errorFor("2", codes.Unavailable)
			v := c.Checking("ERR-12")
			r := v.AwaitState(CDS, c.CL, observer.ReceivedError)
			require.NotEmpty(v, r.Error, "the RECEIVED_ERROR cluster should come with the server's error (error_state.details)")
			require.Equal(v, c.V("1", c.CL), r.Version, "the RECEIVED_ERROR cluster should still show the version last accepted")
		}),
	},
}
