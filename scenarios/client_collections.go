package scenarios

import (
	"slices"
	"strings"

	xdscore "github.com/cncf/xds/go/xds/core/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/internal/xdstp"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Glob collections and redirects in the client role (xRFC TP1): a client
// that claims them is pointed at a glob of listeners, or served a
// redirect, by the federation scenarios' servers (client_xdstp.go).

// needing is xdstpNeeds and the optional features of a scenario.
func needing(features ...string) []engine.Need {
	needs := slices.Clone(xdstpNeeds)
	for _, f := range features {
		needs = append(needs, targets.NeedClientFeature(f))
	}
	return needs
}

// NeverAsked checks that no request of t on c's server names name
// within the quiet window; why says what such a request would mean.
// Replies to earlier responses may come meanwhile: each restarts the
// window.
func (c *C) NeverAsked(t wire.Type, name, why string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	st := c.Stream(t)
	for {
		r, err := st.None(ctx, t)
		if err != nil {
			c.fail("watching for %s requests: %v", t.Short, err)
		}
		if r == nil {
			return
		}
		if slices.Contains(r.Names(), name) {
			c.Fatalf("%s asks for %s: %s", r, name, why)
		}
	}
}

// redirect sends, on the delta stream carrying t, the resource name as a
// redirect to target (REDIR-1): a Resource whose payload is the
// xds.core.v3.ResourceLocator of target. It returns the nonce.
func (c *C) redirect(t wire.Type, name, target string) string {
	l, err := xdstp.MustParse(target).Locator()
	if err != nil {
		c.fail("the redirect to %s: %v", target, err)
	}
	a, err := anypb.New(l)
	if err != nil {
		c.fail("packing the redirect to %s: %v", target, err)
	}
	st := c.Stream(t)
	nonce := st.NewNonce()
	c.Send(t, &discovery.DeltaDiscoveryResponse{TypeUrl: t.URL, Nonce: nonce, SystemVersionInfo: "1",
		Resources: []*discovery.Resource{{Name: name, Version: "1", Resource: a}}})
	return nonce
}

// lcoll is the list collection type of listeners (COLL-1). It travels on
// the listener service, so its requests are read off the stream
// carrying LDS.
var lcoll = wire.ListenerCollection

// expectCollection returns the next request for the listener collection.
func (c *C) expectCollection() *fakeserver.Request {
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := c.Stream(LDS).Next(ctx, lcoll)
	if err != nil {
		c.fail("expected %s request: %v", wording.A(lcoll.Short), err)
	}
	return r
}

// respondCollection sends the listener collection name at version,
// listing members, in a Resource named name (a collection has no name
// of its own; SotW wraps it), and returns the nonce.
func (c *C) respondCollection(name, version string, members ...string) string {
	return c.respondEntries(name, version, nil, members...)
}

// respondEntries is respondCollection with inline entries (COLL-3) first.
func (c *C) respondEntries(name, version string, inline []*xdscore.CollectionEntry_InlineEntry, members ...string) string {
	lc := &listener.ListenerCollection{}
	for _, e := range inline {
		lc.Entries = append(lc.Entries, &xdscore.CollectionEntry{ResourceSpecifier: &xdscore.CollectionEntry_InlineEntry_{InlineEntry: e}})
	}
	for _, m := range members {
		l, err := xdstp.MustParse(m).Locator()
		if err != nil {
			c.fail("the collection entry %s: %v", m, err)
		}
		lc.Entries = append(lc.Entries, &xdscore.CollectionEntry{ResourceSpecifier: &xdscore.CollectionEntry_Locator{Locator: l}})
	}
	inner, err := anypb.New(lc)
	if err != nil {
		c.fail("packing the collection: %v", err)
	}
	res := &discovery.Resource{Name: name, Version: version, Resource: inner}
	nonce := c.Stream(LDS).NewNonce()
	if c.Variant.IsDelta() {
		c.Send(LDS, &discovery.DeltaDiscoveryResponse{TypeUrl: lcoll.URL, Nonce: nonce, SystemVersionInfo: version, Resources: []*discovery.Resource{res}})
		return nonce
	}
	wrapped, err := anypb.New(res)
	if err != nil {
		c.fail("wrapping the collection: %v", err)
	}
	c.Send(LDS, &discovery.DiscoveryResponse{TypeUrl: lcoll.URL, VersionInfo: version, Nonce: nonce, Resources: []*anypb.Any{wrapped}})
	return nonce
}

// expectCollectionAck reads the client's ACK of the collection response
// with nonce.
func (c *C) expectCollectionAck(nonce, version string) {
	ctx, cancel := c.untilExit()
	defer cancel()
	r, err := c.Stream(LDS).Next(ctx, lcoll)
	if err != nil {
		c.Checking("ACK-1").fail("expected an answer to the %s response with nonce %q: %v", lcoll.Short, nonce, err)
	}
	c.checkAck(r, nonce, version)
}

// xdstp_protocol (TP1) §List, §Glob, §Server redirects, §Transport network addressing.
var clientCollectionScenarios = []*engine.Scenario{
	{
		ID:           "client/collections/list-membership",
		Title:        "A client follows a list collection's entries as they come and go",
		Requirements: []string{"COLL-2"},
		Level:        results.Must,
		// On ADS only: TP1 does not say whether a per-type client asks for
		// a collection on the stream of its members' service or on one of
		// its own there.
		Variants: ads,
		Needs:    needing(targets.ClientFeatureListCollections),
		Run: fed(fedSetup{shared: []string{authA}, names: func(t *engine.T, n *chain) {
			n.L = xname(authA, lcoll, t.Name("listeners"))
		}}, func(f *F) {
			member := func(leaf string) string { return xname(authA, LDS, f.Name("listeners")+"/"+leaf) }
			bar, baz, burp := member("bar"), member("baz"), member("burp")
			r := f.expectCollection()
			require.Equal(f.Checking("COLL-2"), []string{f.L}, r.Names(), "%s should subscribe to the collection %s", r, f.L)
			f.expectCollectionAck(f.respondCollection(f.L, "1", bar, baz), "1")
			f.Checking("COLL-2").AwaitSubscribed(LDS, bar, baz)
			// bar leaves, burp comes; an inline entry (COLL-3) comes
			// first, which a client may use or not, but which does not end
			// its reading of the entries after it.
			inline := &xdscore.CollectionEntry_InlineEntry{Name: "inline", Version: "2", Resource: mustAny(f.C, wire.ClientListener(member("inline"), f.R, 2))}
			f.expectCollectionAck(f.respondEntries(f.L, "2", []*xdscore.CollectionEntry_InlineEntry{inline}, baz, burp), "2")
			if !f.Variant.IsDelta() {
				f.Checking("COLL-2").AwaitSubscribed(LDS, baz, burp)
				return
			}
			d := f.Checking("COLL-2").Expect(LDS)
			require.Equal(f.Checking("COLL-2"), []string{burp}, d.Delta.GetResourceNamesSubscribe(), "%s should subscribe to the new entry", d)
			require.Equal(f.Checking("COLL-2"), []string{bar}, d.Delta.GetResourceNamesUnsubscribe(), "%s should unsubscribe the entry gone", d)
		}),
	},
	{
		ID:           "client/collections/glob-over-delta-only",
		Title:        "A glob collection is subscribed to over delta, never over SotW",
		Requirements: []string{"COLL-6"},
		Level:        results.Must,
		// Over SotW per-type a client pointed at a glob alone has no
		// stream to open at all: nothing to see there.
		Variants: []wire.Variant{wire.SotWADS, wire.DeltaADS, wire.DeltaPerType},
		Needs:    needing(targets.ClientFeatureGlobCollections),
		Run: fed(globListener, func(f *F) {
			if !f.Variant.IsDelta() {
				f.Checking("COLL-6").NeverAsked(LDS, f.L, "a glob collection is for delta streams only; SotW uses list collections")
				return
			}
			r := f.Checking("COLL-6").Expect(LDS)
			require.Equal(f.Checking("COLL-6"), []string{f.L}, r.Names(), "%s should subscribe to the glob %s", r, f.L)
			// A member, one level under the glob, is used: the client
			// follows it to its route.
			member := strings.TrimSuffix(f.L, "*") + "web"
			f.ExpectAck(LDS, f.RespondDelta(LDS, "1", []proto.Message{wire.ClientListener(member, f.R, 1)}), "1")
			f.Checking("COLL-6").AwaitSubscribed(RDS, f.R)
		}),
	},
	{
		ID:    "client/collections/glob-direct-members-only",
		Title: "A resource two path levels below a glob is no member of it: the client ignores it",
		// Delivered under the glob's subscription, a resource deeper than
		// one level is one the client did not subscribe to (COLL-4: a
		// member is one path level below its glob, as in
		// xds-transport-next-steps §Alternatives considered).
		Requirements: []string{"DELTA-5"},
		Level:        results.Should,
		Variants:     delta,
		Needs:        needing(targets.ClientFeatureGlobCollections),
		Run: fed(globListener, func(f *F) {
			f.precondition("COLL-6").AwaitSubscribed(LDS, f.L)
			dir := strings.TrimSuffix(f.L, "*")
			member, nested := dir+"web", dir+"deep/web"
			deepRoute := f.Extra("deep-route")
			f.precondition(chainAckRule).ExpectAck(LDS, f.RespondDelta(LDS, "1", []proto.Message{
				wire.ClientListener(member, f.R, 1), wire.ClientListener(nested, deepRoute, 1)}), "1")
			why := nested + " is two path levels below the glob " + f.L + ", so no member of it: the client ignores it and asks for nothing it names"
			v := f.Checking("DELTA-5")
			// The member is used: the client asks for its route.
			r := f.precondition("RES-1").Expect(RDS)
			if slices.Contains(r.Names(), deepRoute) {
				v.Fatalf("%s asks for %s: %s", r, deepRoute, why)
			}
			if !slices.Contains(r.Names(), f.R) {
				f.precondition("RES-1").Fatalf("%s should ask for %s, the route of the glob's member %s", r, f.R, member)
			}
			v.NeverAsked(RDS, deepRoute, why)
		}),
	},
	{
		ID:    "client/collections/glob-resubscribed-on-reconnect",
		Title: "On a new stream the client subscribes to the glob it holds members of again, not to its members by name",
		// DELTA-7: a reconnecting client subscribes to everything it did;
		// it subscribed to the glob, whose members it holds through it.
		Requirements: []string{"DELTA-7"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        needing(targets.ClientFeatureGlobCollections),
		Run: fed(globListener, func(f *F) {
			f.precondition("COLL-6").AwaitSubscribed(LDS, f.L)
			member := strings.TrimSuffix(f.L, "*") + "web"
			f.precondition(chainAckRule).ExpectAck(LDS, f.RespondDelta(LDS, "1", []proto.Message{wire.ClientListener(member, f.R, 1)}), "1")
			f.precondition("RES-1").AwaitSubscribed(RDS, f.R)
			f.Restart(codes.Unavailable)
			v := f.Checking("DELTA-7")
			r := v.Expect(LDS)
			require.Equal(v, []string{f.L}, r.Names(), "%s, the first listener request of the new stream, should subscribe to the glob %s again, not to the member %s it holds through it", r, f.L, member)
		}),
	},
	{
		ID:           "client/redirects/target-on-its-authority",
		Title:        "A redirect's target is asked of the server of its own authority",
		Requirements: []string{"REDIR-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        needing(targets.ClientFeatureRedirects),
		Run: fed(fedSetup{shared: []string{authA}, own: []string{authB}, names: func(t *engine.T, n *chain) {
			n.R = xname(authA, RDS, t.Name("route"))
		}}, func(f *F) {
			f.Chain(LDS)
			f.AwaitSubscribed(RDS, f.R)
			target := xname(authB, RDS, f.Name("moved"))
			f.ExpectAck(RDS, f.redirect(RDS, f.R, target), "1")
			f.On[authB].Checking("REDIR-3").serve(RDS, target, wire.ClientRoute(target, f.CL, 1))
			// The route it was redirected to is the one used.
			f.Checking("REDIR-3").AwaitSubscribed(CDS, f.CL)
		}),
	},
	{
		ID:           "client/redirects/unknown-authority",
		Title:        "A redirect to an authority missing from the bootstrap fails: NACKed or shown in error, and asked of no server",
		Requirements: []string{"REDIR-3"},
		Level:        results.Must,
		Variants:     delta,
		Needs:        needing(targets.ClientFeatureRedirects),
		Run: fed(fedSetup{shared: []string{authA}, names: func(t *engine.T, n *chain) {
			n.R = xname(authA, RDS, t.Name("route"))
		}}, func(f *F) {
			f.Chain(LDS)
			f.AwaitSubscribed(RDS, f.R)
			target := xname(authUnknown, RDS, f.Name("moved"))
			nonce := f.redirect(RDS, f.R, target)
			// The fetch fails (REDIR-3): the client says so, by NACKing
			// the redirect or, if it ACKs it, in its status view. A client
			// that only never asks for the target may have dropped the
			// redirect without a word.
			v := f.Checking("REDIR-3")
			r := f.expectReply(RDS, nonce)
			v.NeverAsked(RDS, target, "its authority "+authUnknown+" is in no bootstrap, so no server may be asked for it")
			if r.ErrorDetail() == nil {
				if !f.Observable() {
					v.Fatalf("%s ACKs the redirect of %s to %s, whose authority %s is in no bootstrap, and the client has no status view that could show the fetch failed", r, f.R, target, authUnknown)
				}
				v.Await(RDS, f.R, "in an error state (NACKED or RECEIVED_ERROR): its redirect to "+target+" cannot be fetched", 0, func(r observer.Resource) bool {
					return r.State == observer.Nacked || r.State == observer.ReceivedError
				})
			}
		}),
	},
}

// globListener points the client's listener at a glob collection of
// authA, every other name of the chain a plain xdstp name of it.
var globListener = fedSetup{shared: []string{authA}, names: func(t *engine.T, n *chain) {
	n.L = xname(authA, LDS, t.Name("listeners")+"/*")
}}
