package scenarios

import (
	"fmt"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// REST-JSON polling in the client role (the rest variant): the fake
// management server answers POST /v3/discovery:<type>, each type's polls
// being one stream of requests (fakeserver/rest.go), so the usual steps
// apply: Expect is the next poll, Respond answers the poll outstanding,
// and a poll left unanswered is held. REST is an Envoy feature: gRPC
// clients do not poll. The bootstrap polls listeners and clusters over
// REST; the scenarios serve clusters that need no endpoints (LOGICAL_DNS),
// so nothing else is asked for, and leave the listener polls held.

// restClient says the scenario needs an Envoy-profile client that polls
// over REST-JSON.
var restClient = []engine.Need{targets.NeedEnvoyProfile, targets.NeedClientFeature(targets.ClientFeatureREST)}

// restOnly is the variant of the REST scenarios.
var restOnly = []wire.Variant{wire.REST}

// Poll returns the next poll of type t: a DiscoveryRequest in canonical
// proto3 JSON (REST-3), sent while no other poll of t was outstanding
// (REST-1). Either failing breaks that rule, whatever the step checks.
func (c *C) Poll(t wire.Type) *fakeserver.Request {
	r := c.Expect(t)
	checkPoll(c, r)
	return r
}

// checkPoll fails the scenario on a poll that breaks REST-3 or REST-1.
func checkPoll(c *C, r *fakeserver.Request) {
	switch {
	case r.REST == nil:
		c.Fatalf("%s is not a REST-JSON poll", r)
	case r.REST.DecodeErr != nil:
		c.fixedf("REST-3", "%s is not a DiscoveryRequest in canonical proto3 JSON: %v; body: %.300s", r, r.REST.DecodeErr, r.REST.Body)
	case r.REST.Concurrent > 0:
		c.fixedf("REST-1", "%s arrived while %d other poll(s) of %s were outstanding: a REST-JSON client has at most one", r, r.REST.Concurrent, r.TypeURL())
	}
}

// PollAfter returns the first poll of t sent after the server's nth
// response of t: the client's answer to it. Polls sent before it (the
// same poll again, after one ended unanswered) are passed over, within
// the expect timeout.
func (c *C) PollAfter(t wire.Type, n int) *fakeserver.Request {
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	for {
		r := c.Poll(t)
		if r.Answered >= n {
			return r
		}
		if deadline.Passed() {
			c.Fatalf("no %s poll came after the harness's response #%d within %v; the last, %s, came before it", t.Short, n, c.Timeouts.Expect, r)
		}
	}
}

// requireREST6 checks that poll r answers a response as REST-6 says: an
// accepted one (nack false) with its version and no error_detail, a
// rejected one with the version accepted before, version, and an
// error_detail.
func (c *C) requireREST6(r *fakeserver.Request, nack bool, version string) {
	v := c.Checking("REST-6")
	d := r.ErrorDetail()
	switch {
	case !nack && d != nil:
		v.Fatalf("%s should accept the valid response (version %q), but carries error_detail %q", r, version, d.GetMessage())
	case !nack && r.Version() != version:
		v.Fatalf("%s follows an accepted response at version %q, so it must carry that version; it carries %q", r, version, r.Version())
	case nack && d == nil:
		v.Fatalf("%s follows a rejected response, so it must carry an error_detail; it has none (version %q)", r, r.Version())
	case nack && r.Version() != version:
		v.Fatalf("%s NACKs, so it must carry the version accepted before, %q; it carries %q", r, version, r.Version())
	}
}

// holdPolls checks that, while the harness holds t's latest poll, every
// further poll of t comes only once the one before it ended (REST-1).
//
// The window is about the client's own timer, its refresh delay (as the
// harness wrote it into the bootstrap, or as stated: --rest-refresh): a
// client that does not wait for its poll outstanding polls again when
// that delay fires, so the window outlasts it by a tenth, and is at least
// the quiet window. One the run's budget cuts short of the delay proves
// nothing (engine.T.TimerWindow).
func (c *C) holdPolls(t wire.Type) {
	ctx, cancel := c.untilExit()
	defer cancel()
	st := c.Stream(t)
	refresh := c.target.Options().RESTRefresh
	what := fmt.Sprintf("the window holding the %s poll, for the client's REST refresh delay of %s (--rest-refresh)", t.Short, wording.Duration(refresh))
	window, covers := c.TimerWindow(c.ruleOr(""), what, refresh, max(c.Timeouts.Quiet, refresh+refresh/10))
	end := lag.NewDeadline(window)
	defer func() {
		if covers && !c.Decided() {
			c.Covers(c.ruleOr(""), what, refresh, end.Start(), time.Now())
		}
	}()
	for !end.Passed() {
		r, err := st.NoneWithin(ctx, max(end.Left(), 0), t)
		if err != nil {
			c.fail("holding the %s poll: %v", t.Short, err)
		}
		if r == nil {
			return // the window passed with no other poll
		}
		checkPoll(c, r)
	}
}

// xds_protocol#rest-json-polling-subscriptions
var clientRESTScenarios = []*engine.Scenario{
	{
		ID:           "client/rest/one-poll-outstanding",
		Title:        "A REST-JSON client has at most one poll of a type outstanding, also while the server holds one",
		Requirements: []string{"REST-1"},
		Level:        results.Must,
		Variants:     restOnly,
		Needs:        restClient,
		Run: ClientScript(func(c *C) {
			c.Poll(CDS)
			c.Respond(CDS, "1", wire.ClientDNSCluster(c.CL, 1))
			c.PollAfter(CDS, 1) // the ACK, held from here on
			c.Checking("REST-1").holdPolls(CDS)
		}),
	},
	{
		ID:           "client/rest/canonical-json",
		Title:        "Every poll is a DiscoveryRequest in canonical proto3 JSON",
		Requirements: []string{"REST-3"},
		Level:        results.Must,
		Variants:     restOnly,
		Needs:        restClient,
		Run: ClientScript(func(c *C) {
			v := c.Checking("REST-3")
			v.Poll(LDS)
			v.Poll(CDS)
			v.Respond(CDS, "1", wire.ClientDNSCluster(c.CL, 1))
			v.PollAfter(CDS, 1)
		}),
	},
	{
		ID:           "client/rest/ack-nack-next-poll",
		Title:        "The poll after a response ACKs it with its version, or NACKs it with the previous version and error_detail",
		Requirements: []string{"REST-6"},
		Level:        results.Must,
		Variants:     restOnly,
		Needs:        restClient,
		Run: ClientScript(func(c *C) {
			// Each row is a response and the poll that must answer it.
			steps := []struct {
				version string
				invalid bool
				want    string // the version the next poll carries
			}{
				{"1", false, "1"},
				{"2", true, "1"},
				{"3", false, "3"},
			}
			c.Poll(CDS)
			for i, s := range steps {
				res := wire.ClientDNSCluster(c.CL, i+1)
				if s.invalid {
					res = wire.InvalidCluster(c.CL, i+1)
				}
				c.Respond(CDS, s.version, res)
				c.requireREST6(c.PollAfter(CDS, i+1), s.invalid, s.want)
			}
		}),
	},
	{
		ID:    "client/rest/polls-again-after-ignored-response",
		Title: "A held poll answered with a response of a type the client never asked for does not stop its polling; the next valid response is ACKed",
		// ROB-3 on REST: the unusable answer ends the poll like any
		// answer, and the client polls again (ignoring it or NACKing it);
		// its ACK of the next valid response is REST-6's.
		Requirements: []string{"ROB-3", "REST-6"},
		Level:        results.Must,
		Variants:     restOnly,
		Needs:        restClient,
		Run: ClientScript(func(c *C) {
			c.Poll(CDS)
			c.Respond(CDS, "1", wire.ClientDNSCluster(c.CL, 1))
			c.PollAfter(CDS, 1) // the ACK, held
			// No resource: a resource of an unknown type cannot be
			// written in JSON.
			c.Send(CDS, &discovery.DiscoveryResponse{TypeUrl: notAType, VersionInfo: "2", Nonce: c.Stream(CDS).NewNonce()})
			c.Checking("ROB-3").PollAfter(CDS, 2)
			c.Respond(CDS, "3", wire.ClientDNSCluster(c.CL, 3))
			c.requireREST6(c.Checking("ROB-3").PollAfter(CDS, 3), false, "3")
		}),
	},
	{
		ID:           "client/rest/response-without-nonce",
		Title:        "A response without a nonce is applied, and the next poll carries its version",
		Requirements: []string{"REST-2"},
		Level:        results.May,
		Variants:     restOnly,
		Needs:        restClient,
		Run: ClientScript(func(c *C) {
			c.Poll(CDS)
			a, err := anypb.New(wire.ClientDNSCluster(c.CL, 1))
			if err != nil {
				c.Abortf("packing the cluster: %v", err)
			}
			c.Send(CDS, &discovery.DiscoveryResponse{TypeUrl: CDS.URL, VersionInfo: "1", Resources: []*anypb.Any{a}})
			r := c.PollAfter(CDS, 1)
			if r.Version() != "1" || r.ErrorDetail() != nil {
				c.Checking("REST-2").Fatalf("%s should ACK the response without a nonce at version \"1\"; it carries version %q and error_detail %v", r, r.Version(), r.ErrorDetail())
			}
		}),
	},
}
