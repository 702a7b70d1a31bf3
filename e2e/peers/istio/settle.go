package main

import (
	"context"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pilot/pkg/model"
	xdsfake "istio.io/istio/pilot/test/xds"

	"github.com/xdsconform/xdsconform/e2e/peers/istio/fixturepb"
)

// A fixture call returns once istiod serves its change, not when the
// config store took it. Istio takes a change in asynchronously (the
// store's event handlers, then the debounce, 100 ms, then a new push
// context: pilot/pkg/xds/discovery.go:355-426), and until then it answers
// a new subscription from the push context before the change: an empty
// assignment for an endpoint name it does not know yet, a route with only
// the catch-all (pilot/pkg/xds/eds.go, httproute.go). A scenario that
// sets a resource, then subscribes, would take that for the resource it
// set, and the push that follows for a resend. A platform team's test does
// what the fixture does here: apply, then wait until istiod has it (what
// istioctl proxy-status reports), since the protocol is about what
// follows. A load run (-await-served=false) does not wait: its churn
// must reach istiod at the planned rate.

// settleTimeout bounds the wait for istiod to take a change in: the
// harness's own fixture deadline (its expect timeout) ends a call sooner.
const settleTimeout = 10 * time.Second

// settlePoll is how often the node's configuration is generated again
// while waiting.
const settlePoll = 5 * time.Millisecond

// generator builds a node's configuration from istiod's current push
// context, as its xDS generators would answer a new subscription: the
// fake discovery server's own helpers (pilot/pkg/networking/core/fake.go,
// pilot/test/xds/fake.go).
type generator interface {
	SetupProxy(*model.Proxy) *model.Proxy
	resources(p *model.Proxy, typeURL string) []proto.Message
}

// fakeGenerator is the generator over istiod's fake discovery server.
type fakeGenerator struct{ *xdsfake.FakeDiscoveryServer }

func (g fakeGenerator) resources(p *model.Proxy, typeURL string) []proto.Message {
	var out []proto.Message
	switch typeURL {
	case clusterType:
		for _, c := range g.Clusters(p) {
			out = append(out, c)
		}
	case endpointType:
		for _, e := range g.Endpoints(p) {
			out = append(out, e)
		}
	case listenerType:
		for _, l := range g.Listeners(p) {
			out = append(out, l)
		}
	case routeType:
		for _, r := range g.Routes(p) {
			out = append(out, r)
		}
	}
	return out
}

// await waits until the resource named name of typeURL, as istiod would
// now generate it for the node, satisfies done (given nil when istiod
// generates no such resource).
func (f *fixture) await(ctx context.Context, nodeID, ns, typeURL, name string, done func(proto.Message) bool) error {
	return f.poll(ctx, nodeID, typeURL+" "+name, func() bool {
		p := f.proxy(nodeID, ns)
		var got proto.Message
		for _, m := range f.gen.resources(p, typeURL) {
			if resourceName(m) == name {
				got = m
			}
		}
		return done(got)
	})
}

// awaitEmpty waits until istiod generates none of the fixture's services
// for the node: its clusters and listeners are Istio's fixed ones only.
func (f *fixture) awaitEmpty(ctx context.Context, nodeID, ns string) error {
	return f.poll(ctx, nodeID, "the node's reset", func() bool {
		p := f.proxy(nodeID, ns)
		for _, typeURL := range []string{clusterType, listenerType} {
			for _, m := range f.gen.resources(p, typeURL) {
				if strings.Contains(string(mustJSON(m)), ".xdsconform.test") {
					return false
				}
			}
		}
		return true
	})
}

func (f *fixture) poll(ctx context.Context, nodeID, what string, done func() bool) error {
	if f.gen == nil { // -await-served=false
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	for !done() {
		select {
		case <-ctx.Done():
			return status.Errorf(codes.DeadlineExceeded, "istio fixture: istiod did not take %s of node %q in: %v", what, nodeID, ctx.Err())
		case <-tick.C:
		}
	}
	return nil
}

// proxy is the node as istiod sees the harness's connections: a sidecar
// at 127.0.0.1 in namespace ns (model.ParseServiceNodeWithMetadata).
func (f *fixture) proxy(nodeID, ns string) *model.Proxy {
	parts := strings.Split(nodeID, "~")
	return f.gen.SetupProxy(&model.Proxy{
		Type: model.SidecarProxy, ID: parts[2], DNSDomain: parts[3], ConfigNamespace: ns,
		IPAddresses: []string{parts[1]}, Metadata: &model.NodeMetadata{Namespace: ns},
	})
}

// resourceName is the name of a generated resource.
func resourceName(m proto.Message) string {
	f := m.ProtoReflect().Descriptor().Fields().ByName("name")
	if f == nil { // an assignment is named by its cluster
		f = m.ProtoReflect().Descriptor().Fields().ByName("cluster_name")
	}
	return m.ProtoReflect().Get(f).String()
}

// fieldIs says whether m has want's value at want's path, as the harness
// will read it.
func fieldIs(m proto.Message, want *fixturepb.RevisionField) bool {
	got, ok := lookup(mustJSON(m), want.GetPath())
	return ok && got == want.GetValue()
}

func mustJSON(m proto.Message) []byte {
	b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	return b
}
