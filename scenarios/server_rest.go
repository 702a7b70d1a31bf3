package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// REST returns the scenario's REST-JSON poller (the rest variant): the
// same node as its gRPC fake client, the target's endpoint and TLS, and
// the pair's transcript.
func (s *S) REST() *fakeclient.RESTClient {
	if s.target.REST == nil {
		s.Abortf("a REST scenario run on a target without a REST endpoint")
	}
	return fakeclient.NewREST(s.target.REST.URL, fakeclient.RESTOptions{
		HTTP: s.target.REST.HTTP, Node: s.C.Node(), MaxBody: int64(s.target.MaxRecvSize), Transcript: s.Transcript,
		OnSend: s.SentToTarget,
	})
}

// Poll POSTs one poll for type t at version, naming names, and returns
// the DiscoveryResponse it gets; written as opts say (UseProtoNames for
// the original field names). A reply that is not 200 with canonical proto3
// JSON fails the current step.
func (s *S) Poll(t wire.Type, version string, opts protojson.MarshalOptions, names ...string) *discovery.DiscoveryResponse {
	ctx, cancel := context.WithTimeout(s.Context(), s.Timeouts.Expect)
	defer cancel()
	p, err := s.REST().PostWith(ctx, t, &discovery.DiscoveryRequest{VersionInfo: version, ResourceNames: names}, opts)
	if err != nil {
		s.Fatalf("%s poll at version %q: no reply within %v: %v", t.Short, version, s.Timeouts.Expect, err)
	}
	return s.mustDecode(t, p)
}

// mustDecode is the DiscoveryResponse of a poll's reply, failing the step
// when there is none: not 200, or not canonical proto3 JSON (REST-3).
func (s *S) mustDecode(t wire.Type, p *fakeclient.Poll) *discovery.DiscoveryResponse {
	switch {
	case p.Status != http.StatusOK:
		s.Fatalf("%s poll answered HTTP %d, not a DiscoveryResponse: %s", t.Short, p.Status, p.Body)
	case p.DecodeErr != nil:
		s.Checking("REST-3").Fatalf("%s poll's reply is not a DiscoveryResponse in canonical proto3 JSON: %v; body: %s", t.Short, p.DecodeErr, p.Body)
	case p.Response.GetTypeUrl() != t.URL:
		s.Checking("REST-5").Fatalf("%s poll's reply has type_url %q, want %q", t.Short, p.Response.GetTypeUrl(), t.URL)
	}
	return p.Response
}

// requirePolled fails unless resp holds name at revision rev.
func (s *S) requirePolled(t wire.Type, resp *discovery.DiscoveryResponse, name string, rev int) {
	for _, a := range resp.GetResources() {
		if n, err := wire.AnyName(a); err == nil && n == name {
			m, err := wire.Unpack(a)
			if err != nil {
				s.Fatalf("%s poll's reply holds %q, which does not decode: %v", t.Short, name, err)
			}
			if ok, why := s.isRevision(t, name, rev, m); !ok {
				s.Fatalf("%s poll's reply (version %q) holds %q, but not at revision %d: %s", t.Short, resp.GetVersionInfo(), name, rev, why)
			}
			return
		}
	}
	s.Fatalf("%s poll's reply (version %q) does not hold %q", t.Short, resp.GetVersionInfo(), name)
}

// restTypes are the types the REST scenarios poll: those a gRPC client
// follows from a listener, all of which have REST endpoints.
var restTypes = []wire.Type{LDS, RDS, CDS, EDS}

// held is the outcome of a poll left running.
type held struct {
	poll *fakeclient.Poll
	err  error
}

// holdPoll starts a poll for t at version naming names and returns where
// its outcome will arrive; the poll is bounded by window plus the expect
// timeout, enough to be held through the one and answered within the
// other.
func (s *S) holdPoll(window time.Duration, t wire.Type, version string, names ...string) <-chan held {
	out := make(chan held, 1)
	rest := s.REST()
	go func() {
		ctx, cancel := context.WithTimeout(s.Context(), window+s.Timeouts.Expect)
		defer cancel()
		p, err := rest.Post(ctx, t, &discovery.DiscoveryRequest{VersionInfo: version, ResourceNames: names})
		out <- held{p, err}
	}()
	return out
}

// xds_protocol#rest-json-polling-subscriptions
var restScenarios = append(restWildcardPolls(), []*engine.Scenario{
	{
		ID:           "server/rest/endpoints",
		Title:        "Each type is served at POST /v3/discovery:<type> with a DiscoveryResponse of that type",
		Requirements: []string{"REST-5"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.REST},
		Needs:        Fixture(restTypes...),
		Run: ServerScript(func(s *S) {
			for _, t := range restTypes {
				a := s.Set(t, "a", 1)
				s.requirePolled(t, s.Poll(t, "", protojson.MarshalOptions{}, a), a, 1)
				// The path names the type: the body's type_url may be left
				// out ("implicit in requests made via singleton xDS APIs such
				// as CDS, LDS, etc. but is required for ADS",
				// DiscoveryRequest.type_url), and REST has no ADS.
				v := s.Checking("REST-5")
				v.requirePolled(t, v.mustDecode(t, v.pollBody(t, s.requestJSON(&discovery.DiscoveryRequest{ResourceNames: []string{a}}))), a, 1)
			}
		}),
	},
	{
		ID:    "server/rest/unreadable-polls",
		Title: "A poll the server cannot read is refused or answered with a DiscoveryResponse of the path's type, never with anything else",
		// A reply is a DiscoveryResponse in canonical proto3 JSON (REST-3)
		// of the path's type (REST-5); how a server refuses a poll is not
		// specified, so any status but 200 passes. A 200 with a body that
		// is no DiscoveryResponse leaves a client nothing to read.
		Requirements: []string{"REST-3", "REST-5"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.REST},
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			for _, row := range []struct {
				what string
				body []byte
			}{
				{"a body cut short", []byte(`{"versionInfo":"1","resourceNames":["` + a + `"]`)},
				{"a DiscoveryRequest of another type", s.requestJSON(&discovery.DiscoveryRequest{TypeUrl: LDS.URL, ResourceNames: []string{a}})},
				{"a DiscoveryRequest of 5 MiB (a NACK's detail)", s.requestJSON(&discovery.DiscoveryRequest{TypeUrl: CDS.URL, ResourceNames: []string{a},
					ErrorDetail: &rpcstatus.Status{Code: 3, Message: strings.Repeat("x", 5<<20)}})},
			} {
				p := s.pollBody(CDS, row.body)
				if p.Status != http.StatusOK {
					continue // refused: how is not specified
				}
				switch {
				case p.DecodeErr != nil:
					s.Checking("REST-3").Errorf("a CDS poll with %s was answered 200 with no DiscoveryResponse in canonical proto3 JSON: %v; body: %q", row.what, p.DecodeErr, p.Body)
				case p.Response.GetTypeUrl() != CDS.URL:
					s.Checking("REST-5").Errorf("a CDS poll with %s was answered with a DiscoveryResponse of type_url %q", row.what, p.Response.GetTypeUrl())
				}
			}
		}),
	},
	{
		ID:           "server/rest/canonical-json",
		Title:        "Polls in either spelling of proto3 JSON are understood and answered in canonical proto3 JSON",
		Requirements: []string{"REST-3"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.REST},
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			// The reply is parsed strictly: "@type" in every Any, no
			// unknown field (mustDecode).
			s.requirePolled(CDS, s.Poll(CDS, "", protojson.MarshalOptions{}, a), a, 1)
			// Parsers accept the original field names as well as the
			// lowerCamelCase ones.
			s.requirePolled(CDS, s.Poll(CDS, "", protojson.MarshalOptions{UseProtoNames: true}, a), a, 1)
		}),
	},
	{
		ID:           "server/rest/long-poll",
		Title:        "A poll at the current version gets no DiscoveryResponse until the resource changes, then the new version",
		Requirements: []string{"REST-4"},
		Level:        results.Must,
		Variants:     []wire.Variant{wire.REST},
		Needs:        Fixture(CDS),
		Run: ServerScript(func(s *S) {
			a := s.Set(CDS, "a", 1)
			first := s.Poll(CDS, "", protojson.MarshalOptions{}, a)
			s.requirePolled(CDS, first, a, 1)
			s.Checking("REST-4").mustHoldUnchanged(CDS, first.GetVersionInfo(), a)
			s.Set(CDS, "a", 2)
			s.Checking("REST-4").requirePolled(CDS, s.pollPastVersion(CDS, first.GetVersionInfo(), a), a, 2)
		}),
	},
}...)

// restWildcardPolls generates, for each wildcard mode, the scenario of a
// REST poll holding a wildcard subscription: a poll is a SotW request
// (xds_protocol: "the same sequencing as SotW"), so one naming nothing is
// the legacy wildcard (WILD-2), one naming "*" the explicit one (WILD-1).
func restWildcardPolls() []*engine.Scenario {
	var out []*engine.Scenario
	for _, m := range wildcardModes {
		var names []string
		if m.name == "star" {
			names = []string{"*"}
		}
		out = append(out, &engine.Scenario{
			ID:           "server/rest/" + m.name + "-wildcard-poll",
			Title:        m.words + ", a REST poll gets every listener and every cluster",
			Requirements: []string{m.rule},
			Level:        results.Should,
			Variants:     []wire.Variant{wire.REST},
			Needs:        with(Fixture(wildcardTypes...), m.need),
			Run: ServerScript(func(s *S) {
				for _, t := range wildcardTypes {
					a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
					v := s.Checking(m.rule)
					resp := v.Poll(t, "", protojson.MarshalOptions{}, names...)
					v.requirePolled(t, resp, a, 1)
					v.requirePolled(t, resp, b, 1)
				}
			}),
		})
	}
	// A poll naming resources of a wildcard type asks for those alone
	// (WILD-8: "full-state semantics then cover only the subscribed
	// names").
	out = append(out, &engine.Scenario{
		ID:           "server/rest/named-poll",
		Title:        "A REST poll naming a listener or a cluster gets that one, not every one of its type",
		Requirements: []string{"WILD-8"},
		Level:        results.Should,
		Variants:     []wire.Variant{wire.REST},
		Needs:        Fixture(wildcardTypes...),
		Run: ServerScript(func(s *S) {
			for _, t := range wildcardTypes {
				a, b := s.Set(t, "a", 1), s.Set(t, "b", 1)
				v := s.Checking("WILD-8")
				resp := v.Poll(t, "", protojson.MarshalOptions{}, a)
				v.requirePolled(t, resp, a, 1)
				for _, r := range resp.GetResources() {
					if n, err := wire.AnyName(r); err == nil && n == b {
						v.Errorf("%s poll naming %q only was answered with %q too (version %q)", t.Short, a, b, resp.GetVersionInfo())
					}
				}
			}
		}),
	})
	return out
}

// requestJSON is req, its node filled in, as canonical proto3 JSON, to be
// POSTed as written (pollBody).
func (s *S) requestJSON(req *discovery.DiscoveryRequest) []byte {
	req.Node = s.C.Node()
	b, err := protojson.Marshal(req)
	if err != nil {
		s.Abortf("encoding a REST poll: %v", err)
	}
	return b
}

// pollBody POSTs body as written to the REST path of t and returns the
// reply, within the expect timeout.
func (s *S) pollBody(t wire.Type, body []byte) *fakeclient.Poll {
	path, ok := t.RESTPath()
	if !ok {
		s.Abortf("%s has no REST endpoint", t.Short)
	}
	ctx, cancel := context.WithTimeout(s.Context(), s.Timeouts.Expect)
	defer cancel()
	p, err := s.REST().PostRaw(ctx, path, body)
	if err != nil {
		s.Fatalf("%s poll to %s: no reply within %v: %v", t.Short, path, s.Timeouts.Expect, err)
	}
	return p
}

// mustHoldUnchanged polls t at the current version and fails at the first
// DiscoveryResponse: none may come without a change (REST-4). A poll the
// server ends without one (how an idle long poll ends is not specified:
// 304, say) is polled again.
//
// The window is about the server's own timer, its long-poll hold (as
// stated: --rest-hold, targets.RESTEndpoint.Hold): a server that answers a
// held poll before its hold ends answers it early, so the window must
// outlast the hold, by a tenth for the reply's way back; a window only as
// long as the quiet window passed a server holding polls for 30 s and
// answering them after 2. A hold longer than the run's budget allows
// (engine.T.TimerWindow) is watched as long as the budget allows, and then
// the check says it proves nothing. The window is of the harness's own
// running time (lag.Deadline), so that a harness stalled meanwhile does not
// take a held poll for an idle one; stalls that still cut it below the
// hold leave the pass in doubt (engine.T.Covers).
func (s *S) mustHoldUnchanged(t wire.Type, version string, names ...string) {
	hold := s.target.REST.Hold
	what := fmt.Sprintf("the window watching a %s poll at the current version, for the server's long-poll hold of %s (--rest-hold)", t.Short, wording.Duration(hold))
	want, covers := s.TimerWindow(s.ruleOr(""), what, hold, max(s.Timeouts.Quiet, hold+hold/10))
	ctx, cancel := context.WithCancel(s.Context())
	defer cancel()
	dl := lag.NewDeadline(want)
	window := dl.Done(ctx)
	for {
		h := s.holdPoll(want, t, version, names...)
		select {
		case <-window:
			if covers {
				s.Covers(s.ruleOr(""), what, hold, dl.Start(), time.Now())
			}
			return // the poll left running ends with the pair's context
		case r := <-h:
			if r.err != nil {
				s.Fatalf("%s poll at the current version %q failed: %v", t.Short, version, r.err)
			}
			if r.poll.Status == http.StatusOK {
				s.Errorf("%s poll at the current version %q was answered %s after the window began, inside the server's long-poll hold of %s, with a DiscoveryResponse (version %q) although nothing changed: %s",
					t.Short, version, wording.Duration(time.Since(dl.Start())), wording.Duration(hold), versionOf(r.poll), r.poll.Body)
				return
			}
			if !s.pollAgainAfter(window) {
				return
			}
		}
	}
}

// repollDelay paces polls after one the server ended without a
// DiscoveryResponse, as a REST client's refresh delay does, so a server
// that ends idle polls at once is not polled in a tight loop.
const repollDelay = 100 * time.Millisecond

// pollAgainAfter waits repollDelay and says whether to poll again: not
// when done fires first.
func (s *S) pollAgainAfter(done <-chan struct{}) bool {
	pace := time.NewTimer(repollDelay)
	defer pace.Stop()
	select {
	case <-pace.C:
		return true
	case <-done:
		return false
	case <-s.Context().Done():
		return false
	}
}

// pollPastVersion polls t at version until a DiscoveryResponse comes,
// within the expect timeout: the held poll answered when the type
// changed, or, when the server ended it idle, the next one.
func (s *S) pollPastVersion(t wire.Type, version string, names ...string) *discovery.DiscoveryResponse {
	deadline := time.Now().Add(s.Timeouts.Expect)
	for {
		ctx, cancel := context.WithDeadline(s.Context(), deadline)
		p, err := s.REST().Post(ctx, t, &discovery.DiscoveryRequest{VersionInfo: version, ResourceNames: names})
		cancel()
		if err != nil {
			s.Fatalf("%s poll at version %q: no DiscoveryResponse within %v of the change: %v", t.Short, version, s.Timeouts.Expect, err)
		}
		if p.Status == http.StatusOK {
			return s.mustDecode(t, p)
		}
		if !time.Now().Before(deadline) || !s.pollAgainAfter(nil) {
			s.Fatalf("%s poll at version %q: no DiscoveryResponse within %v of the change (last reply HTTP %d)", t.Short, version, s.Timeouts.Expect, p.Status)
		}
	}
}

// versionOf is the version_info of a poll's reply, if it decoded.
func versionOf(p *fakeclient.Poll) string {
	if p.Response == nil {
		return fmt.Sprintf("<HTTP %d>", p.Status)
	}
	return p.Response.GetVersionInfo()
}
