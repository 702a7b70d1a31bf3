package refserver

import "net/http"

// The faults below mirror survivors of mutation testing (make mutation)
// in the reference server's newer families: xdstp names, collections and
// globs, dynamic parameters, resource errors and REST. Each is a
// plausible implementer's mistake that a mutant showed no scenario
// caught, and each breaks the step written to catch it. They live in a
// file of their own and join AllFaults at init.
const (
	// FaultGlobUnsubscribeIgnored never ends a glob subscription: a glob
	// in resource_names_unsubscribe stays subscribed, so its members keep
	// coming (UNSUB-2).
	FaultGlobUnsubscribeIgnored Fault = "glob-unsubscribe-ignored"
	// FaultGlobMembersStillHeld ends a glob subscription but goes on
	// tracking the members the client held through it as held, so their
	// deletions are still reported (UNSUB-2).
	FaultGlobMembersStillHeld Fault = "glob-members-still-held"
	// FaultRESTWildcardIgnored answers a REST poll that names nothing, or
	// names "*", with no resource, as if it named none (WILD-2, WILD-1).
	FaultRESTWildcardIgnored Fault = "rest-wildcard-ignored"
	// FaultRESTTypeURLRequired rejects a REST poll whose body has no
	// type_url, which the path already implies (REST-5).
	FaultRESTTypeURLRequired Fault = "rest-type-url-required"
	// FaultRESTBadPollEmptyOK answers a REST poll it cannot read (a body
	// that is no DiscoveryRequest, too big, or of another type) with 200
	// and an empty body: a reply that is no DiscoveryResponse (REST-3).
	FaultRESTBadPollEmptyOK Fault = "rest-bad-poll-empty-ok"
	// FaultParamChangeNotPushed does not push the variant a SotW
	// subscription's new dynamic parameters match when the request names
	// the same resources as before (DYN-7).
	FaultParamChangeNotPushed Fault = "param-change-not-pushed"
	// FaultNameKeepsParams lets a name subscribed by resource_names keep
	// the dynamic parameters its earlier locator carried (DYN-7).
	FaultNameKeepsParams Fault = "name-keeps-params"
	// FaultErrorsOncePerStream reports a SotW resource error once per
	// stream: a name dropped and subscribed again does not get its error
	// again (RES-4).
	FaultErrorsOncePerStream Fault = "errors-once-per-stream"
	// FaultEmptyRequestKeepsErrors forgets no reported error when a SotW
	// request drops every name (an empty request after names), so the
	// error of a name subscribed again afterwards is not reported (RES-4).
	FaultEmptyRequestKeepsErrors Fault = "empty-request-keeps-errors"
	// FaultTypeURLRequired refuses a request without type_url on a
	// per-type stream, where the type is implicit (ROB-4): the stream
	// ends with INVALID_ARGUMENT.
	FaultTypeURLRequired Fault = "type-url-required"
	// FaultNackRejectsEverySent takes a SotW NACK for a rejection of
	// every resource the stream was ever sent, not only of those the
	// rejected response carried, so an accepted name dropped and asked
	// for again is left out of the answer (RES-5).
	FaultNackRejectsEverySent Fault = "nack-rejects-every-sent"
	// FaultErrorEndsResponse ends a response's resources at the first
	// name in error: the names after it in the response's order are left
	// out (RES-2).
	FaultErrorEndsResponse Fault = "error-ends-response"
	// FaultDeltaErrorsNotHeld does not note a resource error reported on
	// a delta stream as held, so it is pushed again at every change of
	// the type (ERR-4, MAY).
	FaultDeltaErrorsNotHeld Fault = "delta-errors-not-held"
	// FaultAckKeepsRejected does not let an ACK clear what a SotW NACK
	// rejected, so content rejected once is left out of the answer to a
	// later subscription even after the client accepted it (RES-5).
	FaultAckKeepsRejected Fault = "ack-keeps-rejected"
	// FaultRejectedForever leaves a name a SotW NACK rejected out of the
	// answers to later subscriptions whatever its content since (RES-5).
	FaultRejectedForever Fault = "rejected-forever"
	// FaultVersionOfBytes versions a resource by the bytes the fixture was
	// given, not by the message, so content set again identical but
	// encoded otherwise is a change, and pushed (UPD-1).
	FaultVersionOfBytes Fault = "version-of-bytes"
	// FaultReloadUnsubscribed resends, with the endpoints an Envoy asks
	// for again after a cluster update (WARM-4), the endpoints of every
	// cluster sent since, also those the client unsubscribed from
	// (UNSUB-2).
	FaultReloadUnsubscribed Fault = "reload-unsubscribed"
)

// newerFaults are the faults of this file with their descriptions, in the
// order they are added to AllFaults.
var newerFaults = []struct {
	f    Fault
	desc string
}{
	{FaultGlobUnsubscribeIgnored, "UNSUB-2 (SHOULD): an unsubscribed glob collection stays subscribed, its members keep coming"},
	{FaultGlobMembersStillHeld, "UNSUB-2 (SHOULD): after a glob collection is unsubscribed, the deletions of the members the client held are still reported"},
	{FaultRESTWildcardIgnored, "WILD-2, WILD-1 (SHOULD): a REST poll naming nothing or \"*\" gets no resource"},
	{FaultRESTTypeURLRequired, "REST-5: a REST poll without type_url in its body is rejected"},
	{FaultParamChangeNotPushed, "DYN-7: a SotW request changing only a locator's dynamic parameters gets no new variant"},
	{FaultNameKeepsParams, "DYN-7: a name subscribed by resource_names keeps the parameters of its earlier locator"},
	{FaultErrorsOncePerStream, "RES-4: a SotW resource error is reported once per stream, not again to a request that names the resource anew"},
	{FaultEmptyRequestKeepsErrors, "RES-4: a SotW request that drops every name forgets no error, so a name subscribed again does not get its error"},
	{FaultTypeURLRequired, "ROB-4: a request without type_url on a per-type stream ends the stream"},
	{FaultNackRejectsEverySent, "RES-5: a SotW NACK rejects every resource ever sent, so an accepted one dropped and asked for again is not sent"},
	{FaultErrorEndsResponse, "RES-2: a response leaves out the resources named after one in error"},
	{FaultDeltaErrorsNotHeld, "ERR-4 (MAY): a resource error reported on a delta stream is pushed again at every change of its type"},
	{FaultRESTBadPollEmptyOK, "REST-3: a REST poll the server cannot read is answered 200 with an empty body"},
	{FaultAckKeepsRejected, "RES-5: an ACK does not clear what a SotW NACK rejected, so that content, accepted since, is not sent to a later subscription"},
	{FaultRejectedForever, "RES-5: a name a SotW NACK rejected is not sent to a later subscription, whatever its content since"},
	{FaultVersionOfBytes, "UPD-1 (SHOULD): a resource is versioned by the bytes it was set with, so identical content encoded otherwise is pushed again"},
	{FaultReloadUnsubscribed, "UNSUB-2 (SHOULD): the endpoints resent after a cluster update include those of clusters the client unsubscribed from"},
}

func init() {
	for _, x := range newerFaults {
		AllFaults = append(AllFaults, x.f)
		faultDescriptions[x.f] = x.desc
	}
}

// badPollAsOK is FaultRESTBadPollEmptyOK's response writer: the 400 that
// refuses a poll, and its text, are dropped, so net/http answers 200 with
// an empty body.
type badPollAsOK struct {
	http.ResponseWriter
	dropped bool
}

// WriteHeader drops a 400.
func (b *badPollAsOK) WriteHeader(code int) {
	if code == http.StatusBadRequest {
		b.dropped = true
		return
	}
	b.ResponseWriter.WriteHeader(code)
}

// Write drops the text of a dropped 400.
func (b *badPollAsOK) Write(p []byte) (int, error) {
	if b.dropped {
		return len(p), nil
	}
	return b.ResponseWriter.Write(p)
}
