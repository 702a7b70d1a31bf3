package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	networking "istio.io/api/networking/v1alpha3"
	"istio.io/istio/pilot/pkg/model"
	"istio.io/istio/pkg/config"
	"istio.io/istio/pkg/config/schema/gvk"

	"github.com/xdsconform/xdsconform/e2e/peers/istio/fixturepb"
)

// The type URLs the fixture serves.
const (
	clusterType  = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointType = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	routeType    = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	listenerType = "type.googleapis.com/envoy.config.listener.v3.Listener"
)

// The revision fields, as the harness reads them off a served resource
// (fixture/revision.go: dotted paths over the canonical JSON).
const (
	connectTimeoutPath = "connect_timeout"
	endpointPortPath   = "endpoints.0.lb_endpoints.0.endpoint.address.socket_address.port_value"
	// A route "PORT" holds a virtual host for each service on PORT, then
	// the catch-all "allow_any" (pilot/pkg/networking/core/httproute.go):
	// the entry's own comes first, its host the first domain.
	routeDomainPath = "virtual_hosts.0.domains.0"
	// A TCP port with an address is a listener of its own, whose one
	// filter chain proxies to the entry's cluster
	// (pilot/pkg/networking/core/listener.go).
	listenerClusterPath = "filter_chains.0.filters.0.typed_config.cluster"
)

// endpointAddress is where the assignments' endpoints are: an address of
// TEST-NET-1, since an endpoint at a node's own IP (the harness's nodes are
// 127.0.0.1) makes it a workload of the entry, with inbound clusters and
// listeners of its own.
const endpointAddress = "192.0.2.1"

// servicePort is the port of the entries behind clusters and endpoint
// assignments: one port for all, TCP, so that they bring no route.
const servicePort = 80

// fixture maps the fixture API onto Istio's config store: what a platform
// team's kubectl apply does, done in process.
type fixture struct {
	fixturepb.UnimplementedFixtureServer
	store   model.ConfigStore
	gen     generator
	version string

	mu    sync.Mutex
	nodes map[string]*node // by node id
	port  int              // the next route's port
	seq   int              // the next route or listener revision's host
	vip   int              // the next listener's address
}

// node is what the harness set for one node id: the Istio objects, by
// kind and name, in the node's namespace.
type node struct {
	namespace string
	objects   map[objectKey]bool
	// The port of each route and the address of each listener, which
	// their served names are made of: kept across revisions and
	// deletions, so that a resource set again comes back under its name.
	routes    map[string]int    // r-N → its port
	listeners map[string]string // l-N → its address
}

type objectKey struct {
	kind config.GroupVersionKind
	name string
}

func newFixture(store model.ConfigStore, gen generator, version string) *fixture {
	return &fixture{store: store, gen: gen, version: version, nodes: map[string]*node{}, port: 10001, seq: 1, vip: 1}
}

// GetCapabilities: listeners, route configurations, clusters and endpoint
// assignments, over ADS in SotW and delta (the fake registers only the
// aggregated service, pilot/pkg/xds/discovery.go Register); names and
// content are Istio's, and each node sees its own namespace.
func (f *fixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion: "v1",
		Server:     "Istio " + f.version + " istiod DiscoveryServer (pilot/test/xds fake, plain grpc.NewServer)",
		TypeUrls:   []string{listenerType, routeType, clusterType, endpointType},
		Variants:   []string{"sotw-ads", "delta-ads"},
		// Clusters and listeners are wildcard types to Istio
		// (pkg/xds/server.go IsWildcardTypeURL): an empty first request
		// subscribes to all, and so does "*" (delta.go).
		LegacyWildcard:   true,
		ExplicitWildcard: true,
		GeneratesNames:   true,
		NodeScoped:       true,
		BuildsContent:    true,
	}, nil
}

// SetResource writes the Istio objects behind the resource into the node's
// namespace.
func (f *fixture) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	if r.GetTtl() != nil || len(r.GetAliases()) > 0 || r.GetDynamicParameterConstraints() != nil || r.GetError() != nil || r.GetRedirect() != "" {
		return nil, status.Error(codes.Unimplemented, "istio serves no TTLs, aliases, dynamic parameters, resource errors or redirects")
	}
	msg, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the resource: %v", err)
	}
	resp, ns, err := f.set(r.GetNodeId(), r.GetName(), msg)
	if err != nil {
		return nil, err
	}
	want := resp.GetRevision()[0]
	return resp, f.await(ctx, r.GetNodeId(), ns, r.GetTypeUrl(), resp.GetName(), func(m proto.Message) bool {
		return m != nil && fieldIs(m, want)
	})
}

// set writes the objects behind msg, named name, for the node.
func (f *fixture) set(nodeID, name string, msg proto.Message) (*fixturepb.SetResourceResponse, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.nodeLocked(nodeID)
	if err != nil {
		return nil, "", err
	}
	resp, err := f.setLocked(n, dnsLabel(name), msg)
	return resp, n.namespace, err
}

func (f *fixture) setLocked(n *node, label string, msg proto.Message) (*fixturepb.SetResourceResponse, error) {
	switch m := msg.(type) {
	case *cluster.Cluster:
		field, err := revisionField(m, connectTimeoutPath)
		if err != nil {
			return nil, err
		}
		host := label + ".c.xdsconform.test"
		if err := f.put(n, gvk.ServiceEntry, "c-"+label, serviceEntry(host, servicePort, "TCP", 0)); err != nil {
			return nil, err
		}
		dr := &networking.DestinationRule{Host: host, TrafficPolicy: &networking.TrafficPolicy{ConnectionPool: &networking.ConnectionPoolSettings{
			Tcp: &networking.ConnectionPoolSettings_TCPSettings{ConnectTimeout: m.GetConnectTimeout()},
		}}}
		if err := f.put(n, gvk.DestinationRule, "c-"+label, dr); err != nil {
			return nil, err
		}
		return &fixturepb.SetResourceResponse{Name: clusterName(host), Revision: []*fixturepb.RevisionField{field}}, nil
	case *endpoint.ClusterLoadAssignment:
		field, err := revisionField(m, endpointPortPath)
		if err != nil {
			return nil, err
		}
		port, err := strconv.ParseUint(field.GetValue(), 10, 16)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "istio fixture: endpoint port %q: %v", field.GetValue(), err)
		}
		host := label + ".e.xdsconform.test"
		if err := f.put(n, gvk.ServiceEntry, "e-"+label, serviceEntry(host, servicePort, "TCP", uint32(port))); err != nil {
			return nil, err
		}
		return &fixturepb.SetResourceResponse{Name: clusterName(host), Revision: []*fixturepb.RevisionField{field}}, nil
	case *listener.Listener:
		vip, ok := n.listeners["l-"+label]
		if !ok {
			vip = fmt.Sprintf("10.200.%d.%d", f.vip/250, 1+f.vip%250)
			f.vip++
		}
		host := fmt.Sprintf("l%d.xdsconform.test", f.seq)
		f.seq++
		se := serviceEntry(host, servicePort, "TCP", 0)
		se.Addresses = []string{vip}
		if err := f.put(n, gvk.ServiceEntry, "l-"+label, se); err != nil {
			return nil, err
		}
		n.listeners["l-"+label] = vip
		return &fixturepb.SetResourceResponse{Name: fmt.Sprintf("%s_%d", vip, servicePort),
			Revision: []*fixturepb.RevisionField{{Path: listenerClusterPath, Value: clusterName(host)}}}, nil
	case *route.RouteConfiguration:
		port, ok := n.routes["r-"+label]
		if !ok {
			port = f.port
			f.port++
		}
		host := fmt.Sprintf("r%d.xdsconform.test", f.seq)
		f.seq++
		if err := f.put(n, gvk.ServiceEntry, "r-"+label, serviceEntry(host, port, "HTTP", 0)); err != nil {
			return nil, err
		}
		n.routes["r-"+label] = port
		return &fixturepb.SetResourceResponse{Name: strconv.Itoa(port),
			Revision: []*fixturepb.RevisionField{{Path: routeDomainPath, Value: host}}}, nil
	}
	return nil, status.Errorf(codes.InvalidArgument, "istio fixture: cannot serve %T", msg)
}

// DeleteResource removes the objects behind a served name; an unknown name
// is not an error.
func (f *fixture) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	ns, err := f.delete(r)
	if err != nil {
		return nil, err
	}
	return &fixturepb.DeleteResourceResponse{}, f.await(ctx, r.GetNodeId(), ns, r.GetTypeUrl(), r.GetName(), func(m proto.Message) bool { return m == nil })
}

func (f *fixture) delete(r *fixturepb.DeleteResourceRequest) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.nodeLocked(r.GetNodeId())
	if err != nil {
		return "", err
	}
	var drop []objectKey
	switch served := r.GetName(); r.GetTypeUrl() {
	case clusterType:
		label := strings.TrimSuffix(strings.TrimPrefix(served, clusterName("")), ".c.xdsconform.test")
		drop = []objectKey{{gvk.ServiceEntry, "c-" + label}, {gvk.DestinationRule, "c-" + label}}
	case endpointType:
		label := strings.TrimSuffix(strings.TrimPrefix(served, clusterName("")), ".e.xdsconform.test")
		drop = []objectKey{{gvk.ServiceEntry, "e-" + label}}
	case listenerType:
		for name, vip := range n.listeners {
			if fmt.Sprintf("%s_%d", vip, servicePort) == served {
				drop = []objectKey{{gvk.ServiceEntry, name}}
			}
		}
	case routeType:
		for name, port := range n.routes {
			if strconv.Itoa(port) == served {
				drop = []objectKey{{gvk.ServiceEntry, name}}
			}
		}
	}
	for _, k := range drop {
		if err := f.drop(n, k); err != nil {
			return "", err
		}
	}
	return n.namespace, nil
}

// Reset removes every object of the node's namespace.
func (f *fixture) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	ns, err := f.reset(r.GetNodeId())
	if err != nil {
		return nil, err
	}
	return &fixturepb.ResetResponse{}, f.awaitEmpty(ctx, r.GetNodeId(), ns)
}

func (f *fixture) reset(nodeID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.nodeLocked(nodeID)
	if err != nil {
		return "", err
	}
	for k := range n.objects {
		if err := f.drop(n, k); err != nil {
			return "", err
		}
	}
	return n.namespace, nil
}

// nodeLocked is the node's record, its namespace read from its id as
// Istio reads it (model.ParseServiceNodeWithMetadata, context.go:
// TYPE~IP~ID~DOMAIN, the namespace the first label of DOMAIN).
func (f *fixture) nodeLocked(id string) (*node, error) {
	if n := f.nodes[id]; n != nil {
		return n, nil
	}
	parts := strings.Split(id, "~")
	if len(parts) != 4 {
		return nil, status.Errorf(codes.InvalidArgument,
			"istio fixture: node id %q is not TYPE~IP~ID~DOMAIN; run with --node-id 'sidecar~127.0.0.1~{{.NodeID}}~{{.NodeID}}.svc.cluster.local'", id)
	}
	ns, _, _ := strings.Cut(parts[3], ".")
	if ns == "istio-system" || !labelPattern.MatchString(ns) {
		return nil, status.Errorf(codes.InvalidArgument, "istio fixture: node id %q names namespace %q, which is not one a pair can own", id, ns)
	}
	n := &node{namespace: ns, objects: map[objectKey]bool{}, routes: map[string]int{}, listeners: map[string]string{}}
	f.nodes[id] = n
	return n, nil
}

// put creates or replaces an object in the node's namespace. The store
// pushes the change to the sidecars whose scope it touches, after the
// debounce. An object set again unchanged is left alone, as Kubernetes
// leaves an apply that changes nothing: no watch event, no push (the
// in-memory store would announce every update).
func (f *fixture) put(n *node, kind config.GroupVersionKind, name string, spec config.Spec) error {
	c := config.Config{Meta: config.Meta{GroupVersionKind: kind, Name: name, Namespace: n.namespace}, Spec: spec}
	var err error
	switch old := f.store.Get(kind, name, n.namespace); {
	case old == nil:
		_, err = f.store.Create(c)
	case proto.Equal(old.Spec.(proto.Message), spec.(proto.Message)):
	default:
		_, err = f.store.Update(c)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "istio fixture: %s %s/%s: %v", kind.Kind, n.namespace, name, err)
	}
	n.objects[objectKey{kind, name}] = true
	return nil
}

func (f *fixture) drop(n *node, k objectKey) error {
	if !n.objects[k] {
		return nil
	}
	if err := f.store.Delete(k.kind, k.name, n.namespace, nil); err != nil {
		return status.Errorf(codes.Internal, "istio fixture: deleting %s %s/%s: %v", k.kind.Kind, n.namespace, k.name, err)
	}
	delete(n.objects, k)
	return nil
}

// serviceEntry is a mesh-internal, statically resolved entry for host with
// one port; with endpointPort, one endpoint at endpointAddress on that port.
func serviceEntry(host string, port int, protocol string, endpointPort uint32) *networking.ServiceEntry {
	name := strings.ToLower(protocol)
	se := &networking.ServiceEntry{
		Hosts:      []string{host},
		Location:   networking.ServiceEntry_MESH_INTERNAL,
		Resolution: networking.ServiceEntry_STATIC,
		Ports:      []*networking.ServicePort{{Number: uint32(port), Name: name, Protocol: protocol}},
	}
	if endpointPort != 0 {
		se.Endpoints = []*networking.WorkloadEntry{{Address: endpointAddress, Ports: map[string]uint32{name: endpointPort}}}
	}
	return se
}

// clusterName is Istio's name for the outbound cluster of host on
// servicePort (model.BuildSubsetKey: direction|port|subset|host).
func clusterName(host string) string {
	return fmt.Sprintf("outbound|%d||%s", servicePort, host)
}

var labelPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// dnsLabel is name when it can be a DNS label (the harness's names are),
// and otherwise a hash of it: host names and object names are made of it.
func dnsLabel(name string) string {
	if labelPattern.MatchString(name) && len(name) <= 40 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h" + hex.EncodeToString(sum[:])[:20]
}

// revisionField is the field of m at path as the harness reads it: the
// canonical JSON value, strings unquoted.
func revisionField(m proto.Message, path string) (*fixturepb.RevisionField, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "istio fixture: %v", err)
	}
	v, ok := lookup(b, path)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "istio fixture: the resource has no %s", path)
	}
	return &fixturepb.RevisionField{Path: path, Value: v}, nil
}

// lookup walks a dotted path through the JSON document b and renders the
// scalar found there as the harness does (fixture/revision.go lookup).
func lookup(b []byte, path string) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var cur any
	if err := dec.Decode(&cur); err != nil {
		return "", false
	}
	for _, part := range strings.Split(path, ".") {
		switch v := cur.(type) {
		case map[string]any:
			next, ok := v[part]
			if !ok {
				return "", false
			}
			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(v) {
				return "", false
			}
			cur = v[i]
		default:
			return "", false
		}
	}
	switch v := cur.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	}
	return "", false
}
