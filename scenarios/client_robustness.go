package scenarios

import (
	"strings"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/lag"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// undecodable are bytes that do not parse as any message: field 1,
// length-delimited, with a length running past the end.
var undecodable = []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01}

// the robustness appendix of requirements.md (ROB-3); xds_protocol#ack,
// #how-the-client-specifies-what-resources-to-return
var clientRobustnessScenarios = []*engine.Scenario{
	{
		// The NACK is ACK-7's, as in client/nack/keeps-previous: a client
		// that ACKs a resource it cannot decode has applied an invalid
		// update. The ACK after it is ACK-6's, as in client/nack/recovery.
		// Stopping is ROB-3's, the headline.
		ID:           "client/robustness/undecodable-resource",
		Title:        "A resource whose bytes do not decode is NACKed, and the next valid response is ACKed",
		Requirements: []string{"ROB-3", "ACK-7", "ACK-6"},
		Level:        results.Must,
		Variants:     allVariants,
		Alone:        true,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			n := c.RespondRaw(CDS, "2", c.CL, &anypb.Any{TypeUrl: CDS.URL, Value: undecodable}, c.Stream(CDS).NewNonce())
			c.Checking("ACK-7").requireNack(CDS, n)
			c.Checking("ACK-6").GoesOn(CDS, "3", 3)
		}),
	},
	{
		ID:           "client/robustness/unknown-type",
		Title:        "A response of a type the client never asked for is ignored or NACKed; the client goes on",
		Requirements: []string{"ROB-3"},
		Level:        results.Must,
		Variants:     ads,
		Alone:        true,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.Send(CDS, c.unknownTypeResponse(CDS))
			c.GoesOn(CDS, "3", 3)
		}),
	},
	{
		// A NACK carries the stream's own type, as every request on a
		// per-type stream does (STREAM-6, the fake server's invariant).
		// An empty SotW response read as of the stream's type would be a
		// full state without the cluster (DEL-4).
		ID:           "client/robustness/foreign-type-on-per-type-stream",
		Title:        "A response of another xDS type on a per-type stream is ignored or NACKed, never applied as of the stream's type; the client goes on",
		Requirements: []string{"ROB-3"},
		Level:        results.Must,
		Variants:     perType,
		Alone:        true,
		Needs:        observed,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			v1 := c.V("1", c.CL)
			c.Send(CDS, c.foreignResponse(LDS))
			c.Send(CDS, c.foreignResponse(LDS, wire.ClientListener(c.L, c.R, 2)))
			c.Checking("ROB-3").QuietView(CDS, c.CL, "no longer in use at version "+v1+" after responses of another type on its stream", func(r observer.Resource) bool {
				return r.State != observer.Acked || r.Version != v1
			})
			c.GoesOn(CDS, "3", 3)
		}),
	},
	{
		ID:           "client/robustness/empty-nonce",
		Title:        "A response without a nonce does not stop the client; the next valid response is ACKed",
		Requirements: []string{"ROB-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Alone:        true,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.RespondRaw(CDS, "2", c.CL, mustAny(c, c.Hop(CDS, 2)), "")
			c.GoesOn(CDS, "3", 3)
		}),
	},
	{
		ID:           "client/robustness/long-nonce",
		Title:        "A response with a 64 KiB nonce does not stop the client; the next valid response is ACKed",
		Requirements: []string{"ROB-3"},
		Level:        results.Must,
		Variants:     allVariants,
		Alone:        true,
		Run: ClientScript(func(c *C) {
			c.Chain(CDS)
			c.RespondRaw(CDS, "2", c.CL, mustAny(c, c.Hop(CDS, 2)), strings.Repeat("n", 64<<10))
			c.GoesOn(CDS, "3", 3)
		}),
	},
}

// RespondRaw sends a response of t at version carrying one resource,
// named name and packed as a (which may be broken), with nonce as given
// (which may be empty or odd); the fake server remembers it as sent. It
// returns the nonce.
func (c *C) RespondRaw(t wire.Type, version, name string, a *anypb.Any, nonce string) string {
	if c.Variant.IsDelta() {
		c.Send(t, &discovery.DeltaDiscoveryResponse{TypeUrl: t.URL, SystemVersionInfo: version, Nonce: nonce,
			Resources: []*discovery.Resource{{Name: name, Version: fakeserver.ResourceVersion(version, name), Resource: a}}})
		return nonce
	}
	c.Send(t, &discovery.DiscoveryResponse{TypeUrl: t.URL, VersionInfo: version, Nonce: nonce, Resources: []*anypb.Any{a}})
	return nonce
}

// unknownTypeResponse is a response, of the protocol the variant speaks,
// of a type no client knows, carrying one resource of that type, with a
// fresh nonce of the stream carrying t.
func (c *C) unknownTypeResponse(t wire.Type) proto.Message {
	return c.responseOf(t, notAType, "1", namedAny{c.Extra("not-a-type"), &anypb.Any{TypeUrl: notAType, Value: []byte("xdsconform")}})
}

// foreignResponse is a response of type t carrying ms, on the stream
// carrying CDS: on a per-type client another type's stream.
func (c *C) foreignResponse(t wire.Type, ms ...proto.Message) proto.Message {
	res := make([]namedAny, len(ms))
	for i, m := range ms {
		res[i] = namedAny{wire.NameOf(m), mustAny(c, m)}
	}
	return c.responseOf(CDS, t.URL, "2", res...)
}

// namedAny is a resource of a hand-made response and the name a delta
// Resource gives it.
type namedAny struct {
	name string
	a    *anypb.Any
}

// responseOf is a response of type_url typeURL at version, of the
// protocol the variant speaks, carrying res, with a fresh nonce of the
// stream carrying on.
func (c *C) responseOf(on wire.Type, typeURL, version string, res ...namedAny) proto.Message {
	nonce := c.Stream(on).NewNonce()
	if c.Variant.IsDelta() {
		r := &discovery.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: version, Nonce: nonce}
		for _, x := range res {
			r.Resources = append(r.Resources, &discovery.Resource{Name: x.name, Version: version, Resource: x.a})
		}
		return r
	}
	r := &discovery.DiscoveryResponse{TypeUrl: typeURL, VersionInfo: version, Nonce: nonce}
	for _, x := range res {
		r.Resources = append(r.Resources, x.a)
	}
	return r
}

// requireNack reads the client's answer to the response with nonce, which
// must NACK it; no answer, or an ACK, fails the step's rule (ExpectNack
// would file a missing answer under ACK-1), and a client that stopped
// fails the scenario's headline rule (a crash is what the robustness
// scenarios are about).
func (c *C) requireNack(t wire.Type, nonce string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := c.Stream(t).Next(ctx, t)
	if err != nil {
		// A client that crashes usually shows first as a stream that
		// ended: give its process a moment to be seen gone.
		grace := time.NewTimer(exitGrace)
		defer grace.Stop()
		select {
		case <-c.Client.Exited():
			c.Checking(c.Headline()).fail("expected a NACK of the %s response with nonce %q: %v", t.Short, nonce, err)
		case <-grace.C:
		}
		c.fail("expected a NACK of the %s response with nonce %q: %v", t.Short, nonce, err)
	}
	if r.Nonce() != nonce || r.ErrorDetail() == nil {
		c.Fatalf("%s should NACK the %s response with nonce %q, whose resource does not decode", r, t.Short, nonce)
	}
}

// GoesOn checks that the client goes on after a response it cannot use
// (ROB-3): it is still running, and it ACKs the next valid response of t
// (the chain's resource at revision rev, at version), on its stream or
// on the one it reconnected with. Requests before the ACK (the answer to
// the unusable response, a new stream's first request) are passed over.
// A client that stopped fails the scenario's headline rule; a missing ACK
// fails the step's rule (Checking: ACK-6 after a NACK), else the
// headline's.
func (c *C) GoesOn(t wire.Type, version string, rev int) {
	c.Checking(c.Headline()).Alive("a response the client cannot use must not stop it")
	v := c.Checking(c.ruleOr(""))
	n := v.Respond(t, version, v.Hop(t, rev))
	deadline := lag.NewDeadline(c.Timeouts.Expect)
	for {
		r := v.Expect(t)
		if r.Nonce() == n {
			v.checkAck(r, n, version)
			return
		}
		if deadline.Passed() {
			v.Fatalf("the client should ACK the valid %s response with nonce %q; its last request, %s, does not", t.Short, n, r)
		}
	}
}
