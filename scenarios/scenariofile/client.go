package scenariofile

import (
	"fmt"
	"slices"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fakeserver"
	"github.com/xdsconform/xdsconform/internal/wording"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// Base names of the chain a gRPC-profile client follows: the listener it
// was pointed at, its route and its cluster (whose endpoints bear the
// cluster's name). Any other base name is a resource beyond the chain.
const (
	ChainListener = "listener"
	ChainRoute    = "route"
	ChainCluster  = "cluster"
)

// servedMsg is what a serve step sent, for the steps that refer to it.
type servedMsg struct {
	t              wire.Type
	nonce, version string
}

// clientRun is one pair of a client-role file scenario in progress.
type clientRun struct {
	c      *scenarios.C
	labels map[string]servedMsg
}

// name is the name the pair uses for base: the chain's own for listener,
// route and cluster, else a resource beyond the chain (C.Extra).
func (r *clientRun) name(base string) string {
	switch base {
	case ChainListener:
		return r.c.L
	case ChainRoute:
		return r.c.R
	case ChainCluster:
		return r.c.CL
	}
	return r.c.Extra(base)
}

func (r *clientRun) names(bases []string) []string {
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = r.name(b)
	}
	return out
}

func (r *clientRun) checking(rule string) *scenarios.C {
	if rule != "" {
		return r.c.Checking(rule)
	}
	return r.c
}

// value is a literal, or the field of the labelled message a reference
// names.
func (r *clientRun) value(v, label, field string) string {
	if label == "" {
		return v
	}
	m := r.labels[label]
	if field == "nonce" {
		return m.nonce
	}
	return m.version
}

// build is a served resource as the catalogue builds the chain's.
func (r *clientRun) build(t wire.Type, res ServedResource) proto.Message {
	name := r.name(res.Name)
	switch t.URL {
	case wire.Listener.URL:
		if res.Invalid {
			return wire.InvalidListener(name, res.Revision)
		}
		route := r.c.R
		if res.Route != "" {
			route = r.name(res.Route)
		}
		return wire.ClientListener(name, route, res.Revision)
	case wire.Route.URL:
		if len(res.Clusters) == 0 {
			return wire.ClientRoute(name, r.c.CL, res.Revision)
		}
		return wire.ClientRoutes(name, res.Revision, r.names(res.Clusters)...)
	case wire.Cluster.URL:
		if res.Invalid {
			return wire.InvalidCluster(name, res.Revision)
		}
		return wire.ClientCluster(name, res.Revision)
	}
	return wire.ClientEndpoints(name, res.Revision)
}

type clientOp func(r *clientRun)

// response is the response a serve step with a nonce of its own sends,
// shaped as fakeserver's Respond and RespondDelta shape theirs.
func response(delta bool, t wire.Type, version, nonce string, msgs []proto.Message, removed []string) (proto.Message, error) {
	anys := make([]*anypb.Any, len(msgs))
	for i, m := range msgs {
		a, err := anypb.New(m)
		if err != nil {
			return nil, fmt.Errorf("packing %T: %w", m, err)
		}
		anys[i] = a
	}
	if delta {
		resp := &discovery.DeltaDiscoveryResponse{TypeUrl: t.URL, SystemVersionInfo: version, Nonce: nonce, RemovedResources: removed}
		for i, m := range msgs {
			name := wire.NameOf(m)
			resp.Resources = append(resp.Resources, &discovery.Resource{Name: name, Version: fakeserver.ResourceVersion(version, name), Resource: anys[i]})
		}
		return resp, nil
	}
	return &discovery.DiscoveryResponse{TypeUrl: t.URL, VersionInfo: version, Nonce: nonce, Resources: anys}, nil
}

// client compiles a client-role document's steps. Every client-role file
// scenario is written for the gRPC profile: it serves the chain a gRPC
// client follows.
func (c *compiler) client() (func(*engine.T), error) {
	c.addNeed(targets.NeedGRPCProfile)
	var ops []clientOp
	for i, st := range c.doc.ClientSteps {
		op, err := c.clientStep(i, st)
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return scenarios.ClientScript(func(cs *scenarios.C) {
		r := &clientRun{c: cs, labels: map[string]servedMsg{}}
		for _, op := range ops {
			op(r)
		}
	}), nil
}

func (c *compiler) clientStep(i int, st ClientStep) (clientOp, error) {
	switch {
	case st.Chain != nil:
		a := st.Chain
		t, err := c.typeOf(stepPtr(i, "chain", "upTo"), a.UpTo)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "chain", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		if a.Rule == "" {
			c.checks("RES-1") // each hop's request names it
			c.checks("ACK-2")
		}
		return func(r *clientRun) { r.checking(a.Rule).Chain(t) }, nil

	case st.Serve != nil:
		a := st.Serve
		t, err := c.typeOf(stepPtr(i, "serve", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "serve", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		if len(a.Removed) > 0 && c.sotw {
			return nil, c.errf(stepPtr(i, "serve", "removed"), "removed: only delta responses list removals: list only delta variants (variants: [delta-ads, delta-pertype])")
		}
		for j, res := range a.Resources {
			ptr := fmt.Sprintf("/steps/%d/serve/resources/%d", i, j)
			switch {
			case res.Invalid && t.URL != wire.Listener.URL && t.URL != wire.Cluster.URL:
				return nil, c.errf(ptr+"/invalid", "invalid: the catalogue builds invalid listeners and clusters only")
			case res.Route != "" && t.URL != wire.Listener.URL:
				return nil, c.errf(ptr+"/route", "route: only a listener uses a route")
			case len(res.Clusters) > 0 && t.URL != wire.Route.URL:
				return nil, c.errf(ptr+"/clusters", "clusters: only a route uses clusters")
			}
		}
		vLabel, vField, err := c.ref(stepPtr(i, "serve", "version"), a.Version, "version")
		if err != nil {
			return nil, err
		}
		nLabel, nField, err := c.ref(stepPtr(i, "serve", "nonce"), a.Nonce, "nonce")
		if err != nil {
			return nil, err
		}
		if err := c.define(stepPtr(i, "serve", "as"), a.As, t); err != nil {
			return nil, err
		}
		return func(r *clientRun) {
			cc := r.checking(a.Rule)
			var msgs []proto.Message
			for _, res := range a.Resources {
				msgs = append(msgs, r.build(t, res))
			}
			version := r.value(a.Version, vLabel, vField)
			var nonce string
			switch {
			case a.Nonce != "":
				nonce = r.value(a.Nonce, nLabel, nField)
				m, err := response(r.c.Variant.IsDelta(), t, version, nonce, msgs, r.names(a.Removed))
				if err != nil {
					r.c.Abortf("%v", err)
				}
				cc.Send(t, m)
			case len(a.Removed) > 0:
				nonce = cc.RespondDelta(t, version, msgs, r.names(a.Removed)...)
			default:
				nonce = cc.Respond(t, version, msgs...)
			}
			if a.As != "" {
				r.labels[a.As] = servedMsg{t: t, nonce: nonce, version: version}
			}
		}, nil

	case st.Expect != nil:
		return c.clientExpect(i, st.Expect)

	case st.Quiet != nil:
		a := st.Quiet
		t, err := c.typeOf(stepPtr(i, "quiet", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "quiet", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		return func(r *clientRun) { r.checking(a.Rule).QuietRequests(t, a.Why) }, nil

	case st.Status != nil:
		return c.clientStatus(i, st.Status)

	case st.Never != nil:
		a := st.Never
		t, err := c.typeOf(stepPtr(i, "never", "type"), a.Type)
		if err != nil {
			return nil, err
		}
		if err := c.rule(stepPtr(i, "never", "rule"), a.Rule, true); err != nil {
			return nil, err
		}
		if a.State == "" && a.Version == "" {
			return nil, c.errf(stepPtr(i, "never", ""), "never: give the state (state:) or the only version (version:) the status view may show")
		}
		label, field, err := c.ref(stepPtr(i, "never", "version"), a.Version, "version")
		if err != nil {
			return nil, err
		}
		c.observes(observer.State(a.State))
		return func(r *clientRun) {
			name := r.name(a.Name)
			version := r.c.V(r.value(a.Version, label, field), name)
			what := "as " + a.State
			if a.State == "" {
				what = "at another version than " + version
			}
			r.checking(a.Rule).Never(t, name, what, func(res observer.Resource) bool {
				return a.State != "" && res.State == observer.State(a.State) || a.Version != "" && res.Version != version
			})
		}, nil

	case st.Restart != nil:
		code := codes.Unavailable
		switch st.Restart.Code {
		case "INTERNAL":
			code = codes.Internal
		case "UNKNOWN":
			code = codes.Unknown
		case "RESOURCE_EXHAUSTED":
			code = codes.ResourceExhausted
		}
		return func(r *clientRun) { r.c.Restart(code) }, nil
	}
	return nil, c.errf(stepPtr(i, "", ""), "empty step")
}

// observes adds the needs of a step that reads the status view for state.
func (c *compiler) observes(state observer.State) {
	c.addNeed(targets.NeedObserver)
	if slices.Contains(targets.StatusStates, state) {
		c.addNeed(targets.NeedStatus(state))
	}
}

// clientExpect compiles an expect step of the client role: the client's
// next request of a type ACKs or NACKs a labelled response, asks for
// names, or drops them.
func (c *compiler) clientExpect(i int, a *ExpectRequestStep) (clientOp, error) {
	t, err := c.typeOf(stepPtr(i, "expect", "type"), a.Type)
	if err != nil {
		return nil, err
	}
	if err := c.rule(stepPtr(i, "expect", "rule"), a.Rule, true); err != nil {
		return nil, err
	}
	kinds := 0
	for _, set := range []bool{a.Ack != "", a.Nack != "", a.Names != nil, len(a.Dropped) > 0} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return nil, c.errf(stepPtr(i, "expect", ""), "expect: give one of ack, nack, names and dropped")
	}
	for _, l := range []struct{ field, label string }{{"ack", a.Ack}, {"nack", a.Nack}} {
		if l.label == "" {
			continue
		}
		lt, err := c.use(stepPtr(i, "expect", l.field), l.label)
		if err != nil {
			return nil, err
		}
		if lt.URL != t.URL {
			return nil, c.errf(stepPtr(i, "expect", l.field), "%s labels %s response, but the step expects %s request", l.label, wording.A(lt.Short), wording.A(t.Short))
		}
	}
	if a.Rule == "" {
		switch {
		case a.Ack != "":
			c.checks(ruleFor(c, "ACK-2", "DELTA-1"))
		case a.Nack != "":
			c.checks(ruleFor(c, "ACK-3", "DELTA-1"))
		case a.Names != nil:
			c.checks("RES-1")
		}
	}
	return func(r *clientRun) {
		cc := r.checking(a.Rule)
		switch {
		case a.Ack != "":
			m := r.labels[a.Ack]
			cc.ExpectAck(t, m.nonce, m.version)
		case a.Nack != "":
			cc.ExpectNack(t, r.labels[a.Nack].nonce)
		case a.Names != nil && a.Next:
			cc.ExpectSubscribed(t, r.names(a.Names)...)
		case a.Names != nil:
			cc.AwaitSubscribed(t, r.names(a.Names)...)
		case len(a.Dropped) > 0:
			for _, n := range r.names(a.Dropped) {
				cc.AwaitDropped(t, n)
			}
		default:
			cc.Expect(t)
		}
	}, nil
}

// ruleFor is the SotW rule when the scenario runs in SotW, else the delta
// one.
func ruleFor(c *compiler, sotwRule, deltaRule string) string {
	if c.sotw {
		return sotwRule
	}
	return deltaRule
}

// clientStatus compiles a status step: the client's status view comes to
// show a resource in a state, at a version, or no longer holding it.
func (c *compiler) clientStatus(i int, a *StatusStep) (clientOp, error) {
	t, err := c.typeOf(stepPtr(i, "status", "type"), a.Type)
	if err != nil {
		return nil, err
	}
	if err := c.rule(stepPtr(i, "status", "rule"), a.Rule, true); err != nil {
		return nil, err
	}
	if a.Gone && (a.State != "" || a.Version != "") {
		return nil, c.errf(stepPtr(i, "status", "gone"), "gone: says the view no longer holds the resource; it goes with no state or version")
	}
	if !a.Gone && a.State == "" && a.Version == "" {
		return nil, c.errf(stepPtr(i, "status", ""), "status: give the state, the version, or gone: true")
	}
	label, field, err := c.ref(stepPtr(i, "status", "version"), a.Version, "version")
	if err != nil {
		return nil, err
	}
	c.observes(observer.State(a.State))
	return func(r *clientRun) {
		cc := r.checking(a.Rule)
		name := r.name(a.Name)
		switch {
		case a.Gone:
			cc.AwaitGone(t, name)
		case a.State == string(observer.Acked) && a.Version != "":
			cc.AwaitAcked(t, name, r.value(a.Version, label, field))
		case a.Version == "":
			cc.AwaitState(t, name, observer.State(a.State))
		default:
			v := r.c.V(r.value(a.Version, label, field), name)
			cc.Await(t, name, fmt.Sprintf("as %s at version %s", a.State, v), 0, func(res observer.Resource) bool {
				return res.Version == v && (a.State == "" || res.State == observer.State(a.State))
			})
		}
	}, nil
}
