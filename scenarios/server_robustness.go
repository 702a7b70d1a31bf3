package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// unusualRequest is one robustness case of the server role: a request the
// server cannot serve (ROB-1) or one at the edges of the message shapes
// (ROB-2), sent on the stream carrying EDS after a first subscription was
// served, after which the server must go on serving (GoesOn).
type unusualRequest struct {
	id, title, rule string
	variants        []wire.Variant
	// send sends the request(s) and returns the client whose stream
	// carried them; a is the resource subscribed and ACKed before.
	send func(s *S, a string) *fakeclient.Client
}

// notAType is a type URL no xDS server serves.
const notAType = wire.TypePrefix + "xdsconform.v3.NotAResourceType"

// oddNames are valid UTF-8 names no configuration would use: control
// characters, a right-to-left override, path and query characters, a
// byte-order mark, letters of several scripts and an emoji.
var oddNames = []string{"\x00", "a\nb\tc", "\u202egnp.exe", "../../etc/passwd", "%2F?#&=", "\ufeffbom", "名前-имя-اسم", "🙂", " "}

// xds_protocol#rpc-services-and-methods-for-each-variant, the robustness
// appendix of requirements.md (ROB)
var unusualRequests = []unusualRequest{
	{
		id: "unknown-type", rule: "ROB-1", variants: ads,
		title: "A request for a type the server does not know costs at most its stream",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.TypeUrl, r.ResponseNonce = notAType, "" },
				func(r *discovery.DeltaDiscoveryRequest) { r.TypeUrl, r.ResourceNamesSubscribe = notAType, []string{a} })
		},
	},
	{
		id: "empty-type-on-ads", rule: "ROB-1", variants: ads,
		title: "A request without a type_url on an aggregated stream costs at most that stream",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.TypeUrl, r.ResponseNonce = "", "" },
				func(r *discovery.DeltaDiscoveryRequest) { r.TypeUrl, r.ResourceNamesSubscribe = "", []string{a} })
		},
	},
	{
		id: "foreign-type-on-per-type-stream", rule: "ROB-1", variants: perType,
		title: "A request for another type on a per-type stream costs at most that stream",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.TypeUrl, r.ResponseNonce = CDS.URL, "" },
				func(r *discovery.DeltaDiscoveryRequest) { r.TypeUrl, r.ResourceNamesSubscribe = CDS.URL, []string{a} })
		},
	},
	{
		id: "no-node", rule: "ROB-1", variants: allVariants,
		title: "A stream whose first request has no node is served or rejected with a status; other streams go on",
		send: func(s *S, a string) *fakeclient.Client {
			s.alsoForNoNode(EDS, a)
			odd := s.Another()
			sotw := odd.SotWRequest(EDS, []string{a})
			delta := odd.DeltaRequest(EDS)
			sotw.Node, delta.Node, delta.ResourceNamesSubscribe = nil, nil, []string{a}
			s.sendOn(odd, EDS, sotw, delta)
			return odd
		},
	},
	{
		id: "many-names", rule: "ROB-2", variants: allVariants,
		title: "A request naming ten thousand resources is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			names := make([]string, 10000)
			for i := range names {
				names[i] = s.Name(fmt.Sprintf("many-%05d", i))
			}
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.ResourceNames = append(r.ResourceNames, names...) },
				func(r *discovery.DeltaDiscoveryRequest) { r.ResourceNamesSubscribe = names })
		},
	},
	{
		id: "long-name", rule: "ROB-2", variants: allVariants,
		title: "A request naming a resource 64 KiB long is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			long := s.Name(strings.Repeat("long-", 64<<10/5))
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.ResourceNames = append(r.ResourceNames, long) },
				func(r *discovery.DeltaDiscoveryRequest) { r.ResourceNamesSubscribe = []string{long} })
		},
	},
	{
		id: "odd-characters", rule: "ROB-2", variants: allVariants,
		title: "Names of control characters, bidi marks, path and query characters and other scripts are names like any other",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.ResourceNames = append(r.ResourceNames, oddNames...) },
				func(r *discovery.DeltaDiscoveryRequest) { r.ResourceNamesSubscribe = oddNames })
		},
	},
	{
		id: "duplicate-names", rule: "ROB-2", variants: allVariants,
		title: "A request naming one resource twice is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.ResourceNames = []string{a, a} },
				func(r *discovery.DeltaDiscoveryRequest) { r.ResourceNamesSubscribe = []string{a, a} })
		},
	},
	{
		id: "subscribe-and-unsubscribe", rule: "ROB-2", variants: delta,
		title: "Delta: a request both subscribing and unsubscribing one name is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, nil, func(r *discovery.DeltaDiscoveryRequest) {
				r.ResourceNamesSubscribe, r.ResourceNamesUnsubscribe = []string{a}, []string{a}
			})
		},
	},
	{
		id: "unknown-version", rule: "ROB-2", variants: sotw,
		title: "SotW: an ACK of a version the server never sent is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.VersionInfo = "xdsconform-never-sent" }, nil)
		},
	},
	{
		id: "unknown-nonce", rule: "ROB-2", variants: sotw,
		title: "SotW: a request echoing a nonce the server never sent is a request like any other",
		send: func(s *S, a string) *fakeclient.Client {
			return s.SendUnusual(EDS, func(r *discovery.DiscoveryRequest) { r.ResponseNonce = "xdsconform-never-sent" }, nil)
		},
	},
	{
		id: "huge-nack", rule: "ROB-2", variants: allVariants,
		title: "A NACK with a 192 KiB message and details of a type the server does not know is still just a NACK",
		send: func(s *S, a string) *fakeclient.Client {
			s.Set(EDS, "a", 2)
			s.NackWith(EDS, s.AwaitRevision(EDS, a, 2), hugeDetail())
			return s.C
		},
	},
}

// hugeNackPiece is repeated to make hugeDetail's message: 24 bytes of
// UTF-8 in several scripts, with a right-to-left override.
const hugeNackPiece = "résumé ✓ 検証 \u202e "

// hugeNackBytes is the size of hugeDetail's message, as the huge-nack
// title and docs/state-space.md say.
const hugeNackBytes = 192 << 10

// hugeDetail is a NACK's error_detail at the edges of its shape: a long
// message of several scripts and a detail of a type no server links.
func hugeDetail() *status.Status {
	return &status.Status{
		Code:    2, // UNKNOWN
		Message: strings.Repeat(hugeNackPiece, hugeNackBytes/len(hugeNackPiece)),
		Details: []*anypb.Any{{TypeUrl: notAType, Value: []byte{0xff, 0xfe, 0x00, 0x01}}},
	}
}

// robustnessScenarios are the server-role robustness scenarios, one per
// unusual request. They may crash or wedge the server, so they run alone,
// after the rest.
var robustnessScenarios = func() []*engine.Scenario {
	var out []*engine.Scenario
	for _, u := range unusualRequests {
		out = append(out, &engine.Scenario{
			ID:           "server/robustness/" + u.id,
			Title:        u.title,
			Requirements: []string{u.rule},
			Level:        results.Must,
			Variants:     u.variants,
			Needs:        Fixture(EDS),
			Alone:        true,
			Run: ServerScript(func(s *S) {
				s.AddedNamesServed(EDS) // GoesOn's follow-up adds a name
				a, b := s.Set(EDS, "a", 1), s.Set(EDS, "b", 1)
				s.Subscribe(EDS, a)
				s.ExpectAcked(EDS)
				s.GoesOn(EDS, b, u.send(s, a))
			}),
		})
	}
	return out
}()

// alsoForNoNode sets name, at revision 1, for the node with the empty id
// too, which is whom a server that serves a node-less stream serves it as
// (the reference server does): the stream then gets an answer at once
// instead of costing GoesOn its quiet window. It changes no verdict: a
// server that refuses the call, or serves the stream as someone else,
// only costs the window. The node's state is reset after the pair, which
// runs alone.
func (s *S) alsoForNoNode(t wire.Type, name string) {
	if s.target.Fixture == nil {
		return
	}
	ctx, cancel := s.fixtureContext()
	defer cancel()
	if _, err := s.target.Fixture.Set(ctx, "", t, name, wire.BuildAny(t, name, 1)); err != nil {
		return
	}
	s.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.Timeouts.Expect)
		defer cancel()
		_ = s.target.Fixture.Reset(ctx, "")
	})
}

// SendUnusual sends on the stream carrying t the request a well-behaved
// client would send now (SotW: the current names, version and nonce;
// delta: empty lists), altered by sotw or delta for the variant's
// protocol, and returns the client that sent it. The scenario's variants
// say which protocols a case has; a nil alteration is never called.
func (s *S) SendUnusual(t wire.Type, sotw func(*discovery.DiscoveryRequest), delta func(*discovery.DeltaDiscoveryRequest)) *fakeclient.Client {
	var sr *discovery.DiscoveryRequest
	var dr *discovery.DeltaDiscoveryRequest
	if s.Variant.IsDelta() {
		dr = s.C.DeltaRequest(t)
		delta(dr)
	} else {
		sr = s.C.SotWRequest(t, s.C.Names(t))
		sotw(sr)
	}
	s.sendOn(s.C, t, sr, dr)
	return s.C
}

// sendOn sends the request of the variant's protocol on c's stream for t.
func (s *S) sendOn(c *fakeclient.Client, t wire.Type, sotw *discovery.DiscoveryRequest, delta *discovery.DeltaDiscoveryRequest) {
	var err error
	if s.Variant.IsDelta() {
		err = c.SendDelta(t, delta)
	} else {
		err = c.SendSotW(t, sotw)
	}
	if err != nil {
		s.Fatalf("sending the unusual request: %v", err)
	}
}

// GoesOn checks that the server goes on serving after the unusual request
// odd's stream for t carried (ROB-1, ROB-2): on the scenario's own stream
// name is served when subscribed, unless the server ended that stream
// with an error status; on odd's stream, when it is another, the server
// ended it with an error status or kept it; and a new connection's stream
// is served name too, so the server neither crashed nor stopped
// answering. Failures are the scenario's headline rule's; a wait the
// harness cut short (its deadline, receive limit or queue bound) or a lost
// connection is an error (failAs): if the target died of the request, the
// engine's liveness check after a pair run alone makes that the failure.
func (s *S) GoesOn(t wire.Type, name string, odd *fakeclient.Client) {
	v := s.Checking(s.Headline())
	if odd != s.C {
		// The server's reaction to the unusual request on a stream of its
		// own (an answer, or the stream's end) is awaited first, for the
		// quiet window: checked at once, a server still busy with it
		// (and about to crash of it) would be judged before it reacted.
		// A server that ignores it costs the window.
		if _, err := odd.ExpectWithin(t, s.Timeouts.Quiet); err != nil && !errors.Is(err, fakeclient.ErrTimeout) {
			if err := odd.StreamClosed(t); err != nil {
				v.requireErrorStatus(err)
			}
		}
	}
	if err := s.servedOn(s.C, t, name); err != nil {
		// A stream the harness's own deadline ended was not ended by the
		// server: failAs says so.
		var closed *fakeclient.ClosedError
		if !errors.As(err, &closed) || cutShort(s.T, err) != "" {
			v.failAs("", err, "after the unusual request the server neither served %s %q on the stream nor ended it: %v", t.Short, name, err)
		}
		v.requireErrorStatus(err)
	}
	if err := s.servedOn(s.Another(), t, name); err != nil {
		if s.refusedWhileUp(err) {
			v.Fatalf("after the unusual request a new stream was not served %s %q: %v (the server still answers connections: it refused to serve, it did not lose the connection)", t.Short, name, err)
		}
		v.failAs("", err, "after the unusual request a new stream was not served %s %q: %v", t.Short, name, err)
	}
}

// refusedWhileUp reports whether err, a fresh stream ended Unavailable
// within the pair's time, came from a server that still answers
// connections: a server that ends every new stream so, while up, has
// stopped serving (ROB-1, ROB-2), whereas a target that cannot be reached
// any more lost the connection, which failAs makes an error and the
// engine, re-checking the target after a pair run alone, a failure.
func (s *S) refusedWhileUp(err error) bool {
	if cutShort(s.T, err) != "" || grpcstatus.Code(err) != codes.Unavailable || s.target == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.Context(), s.Timeouts.Expect)
	defer cancel()
	return s.target.CheckAlive(ctx) == nil && ctx.Err() == nil
}

// requireErrorStatus fails unless err, a stream the server ended, ended
// with a status other than OK: a server that cannot serve a request says
// so (ROB-1, ROB-2), and a stream ended with OK reads as a normal close
// the client would reconnect from with the same request.
func (s *S) requireErrorStatus(err error) {
	var closed *fakeclient.ClosedError
	if errors.As(err, &closed) && errors.Is(closed.Err, io.EOF) {
		s.Fatalf("the server ended %s with status OK after the unusual request, as if nothing were wrong", closed.Stream)
	}
	s.Logf("the server ended the stream after the unusual request: %v", err)
}

// servedOn subscribes c to name of t and waits, within the expect
// timeout, for a response of t carrying it, ACKing every response on the
// way; it returns why not, without failing.
func (s *S) servedOn(c *fakeclient.Client, t wire.Type, name string) error {
	if err := c.Subscribe(t, name); err != nil {
		return err
	}
	start := time.Now()
	deadline := start.Add(s.Timeouts.Expect)
	for passed := 0; ; passed++ {
		r, err := c.ExpectWithin(t, max(time.Until(deadline), 0))
		if errors.Is(err, fakeclient.ErrTimeout) {
			// The last read's own error names only what was left of the wait.
			return fmt.Errorf("%s response carrying %q: %s: %w", t.Short, name, waitEnded(err, t.Short+" response", start, passed), fakeclient.ErrTimeout)
		}
		if err != nil {
			return err
		}
		if err := c.Ack(t, r); err != nil {
			return err
		}
		if r.Has(name) {
			return nil
		}
	}
}
