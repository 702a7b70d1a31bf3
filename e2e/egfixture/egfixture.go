// Package egfixture implements the xdsconform fixture API for Envoy Gateway
// in standalone mode, whose file provider turns Gateway API files in a
// watched folder into xDS.
//
// Envoy Gateway builds xDS from gateways and routes, so the adapter
// translates:
//   - every node id is a Gateway of that name. Envoy Gateway keys its
//     snapshots on node.cluster = envoy-gateway-system/GATEWAY, so the
//     harness sends that cluster (targets.ServerOptions.NodeCluster
//     "envoy-gateway-system/{{.NodeID}}") and each node sees its own
//     gateway only. A gateway needs a listener: one without anything else
//     gets an HTTP listener "base";
//   - a listener N is an HTTP listener l-N of the node's gateway, served
//     as envoy-gateway-system/NODE/l-N, on a port of its own for every
//     revision (the revision field). HTTP, because a TCP listener without
//     routes brings a cluster (EmptyCluster) into every CDS answer; an
//     HTTP one brings a route configuration of the same name instead;
//   - a route configuration N is an HTTP listener r-N with an HTTPRoute
//     r-N attached to it alone, served as envoy-gateway-system/NODE/r-N;
//     each revision gives the route a hostname of its own, which becomes
//     the first virtual host's domain;
//   - a cluster N is an HTTPRoute c-N to a Backend c-N on the gateway's
//     HTTP listener "http", served as
//     httproute/envoy-gateway-system/NODE.c-N/rule/0;
//     a BackendTrafficPolicy carries the cluster's connect_timeout, the
//     revision field;
//   - an endpoint assignment N is an HTTPRoute e-N to a Backend e-N whose
//     port is the assignment's first endpoint port (the revision field),
//     served as httproute/envoy-gateway-system/NODE.e-N/rule/0.
//
// Object names carry the node (NODE.c-N), since they share one namespace.
// A requested name that is no DNS label is served under a hash of it.
//
// Each change rewrites the node's file, written next to the folder and
// renamed into it, because Envoy Gateway parses partial files and logs them
// as errors. The files are JSON, which is YAML.
package egfixture

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listener "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	route "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// Namespace is where Envoy Gateway's file provider puts resources that name
// none.
const Namespace = "envoy-gateway-system"

// NodeCluster is the node.cluster template the harness must send.
const NodeCluster = Namespace + "/{{.NodeID}}"

// GatewayClass is the class every gateway of the adapter uses.
const GatewayClass = "xdsconform"

// Fixture is the fixture service over one watched folder.
type Fixture struct {
	fixturepb.UnimplementedFixtureServer

	dir, stage string
	version    string

	mu    sync.Mutex
	nodes map[string]*gateway
	port  int // next listener port
	seq   int // next route hostname
}

// routeListener is a route configuration's listener port and current hostname.
type routeListener struct {
	port int
	host string
}

// gateway is what the harness set for one node.
type gateway struct {
	listeners map[string]int           // l-N → port
	routes    map[string]routeListener // r-N → its listener and hostname
	clusters  map[string]string        // c-N → connect timeout ("1003ms")
	endpoints map[string]uint32        // e-N → backend port
}

// New writes the GatewayClass into dir, the folder Envoy Gateway watches,
// and stages files in stage, a folder on the same file system. version is
// Envoy Gateway's, for reports.
func New(dir, stage, version string) (*Fixture, error) {
	f := &Fixture{dir: dir, stage: stage, version: version, nodes: map[string]*gateway{}, port: 20000, seq: 1}
	class := object("gateway.networking.k8s.io/v1", "GatewayClass", GatewayClass, map[string]any{
		"controllerName": "gateway.envoyproxy.io/gatewayclass-controller"})
	if err := f.write("gatewayclass", class); err != nil {
		return nil, err
	}
	return f, nil
}

// GetCapabilities: the four types Envoy Gateway translates into, in every
// variant (its go-control-plane server registers ADS and the per-type
// services, SotW and delta); names and content are generated, and each node
// is a gateway of its own.
func (f *Fixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion:       fixture.APIVersion,
		Server:           "Envoy Gateway " + f.version,
		TypeUrls:         []string{wire.Listener.URL, wire.Route.URL, wire.Cluster.URL, wire.Endpoint.URL},
		Variants:         wire.VariantNames(wire.AllVariants),
		LegacyWildcard:   true,
		ExplicitWildcard: true,
		GeneratesNames:   true,
		NodeScoped:       true,
		BuildsContent:    true,
	}, nil
}

// SetResource adds or changes the gateway object behind the resource and
// rewrites the node's file.
func (f *Fixture) SetResource(_ context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	if err := validNode(r.GetNodeId()); err != nil {
		return nil, err
	}
	msg, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the resource: %v", err)
	}
	if c, ok := msg.(*cluster.Cluster); ok {
		// Refused before the node is touched: a failed Set changes nothing.
		if _, err := gatewayDuration(c.GetConnectTimeout()); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.gatewayLocked(r.GetNodeId())
	name := label(r.GetName())
	var resp *fixturepb.SetResourceResponse
	switch m := msg.(type) {
	case *listener.Listener:
		g.listeners["l-"+name] = f.nextPortLocked()
		resp = &fixturepb.SetResourceResponse{Name: listenerName(r.GetNodeId(), "l-"+name),
			Revision: []*fixturepb.RevisionField{{Path: "address.socket_address.port_value", Value: strconv.Itoa(g.listeners["l-"+name])}}}
	case *route.RouteConfiguration:
		host := fmt.Sprintf("r%d.xdsconform.test", f.seq)
		f.seq++
		rt, ok := g.routes["r-"+name]
		if !ok {
			rt.port = f.nextPortLocked() // the listener keeps its port across revisions
		}
		rt.host = host
		g.routes["r-"+name] = rt
		resp = &fixturepb.SetResourceResponse{Name: listenerName(r.GetNodeId(), "r-"+name),
			Revision: []*fixturepb.RevisionField{{Path: "virtual_hosts.0.domains.0", Value: host}}}
	case *cluster.Cluster:
		obj := objectName(r.GetNodeId(), "c-"+name)
		field, err := fixture.Field(m, fixture.ConnectTimeoutPath)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "envoy gateway fixture: %v", err)
		}
		timeout, err := gatewayDuration(m.GetConnectTimeout())
		if err != nil {
			return nil, err
		}
		g.clusters[obj] = timeout
		resp = &fixturepb.SetResourceResponse{Name: clusterName(obj), Revision: []*fixturepb.RevisionField{field}}
	case *endpoint.ClusterLoadAssignment:
		obj := objectName(r.GetNodeId(), "e-"+name)
		field, err := fixture.Field(m, fixture.EndpointPortPath)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "envoy gateway fixture: %v", err)
		}
		port, err := strconv.ParseUint(field.GetValue(), 10, 16)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "envoy gateway fixture: endpoint port %q: %v", field.GetValue(), err)
		}
		g.endpoints[obj] = uint32(port)
		resp = &fixturepb.SetResourceResponse{Name: clusterName(obj), Revision: []*fixturepb.RevisionField{field}}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "envoy gateway fixture: cannot serve %T", msg)
	}
	if err := f.writeNodeLocked(r.GetNodeId()); err != nil {
		return nil, err
	}
	return resp, nil
}

// DeleteResource removes the object behind a served name; an unknown name
// is not an error.
func (f *Fixture) DeleteResource(_ context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	if err := validNode(r.GetNodeId()); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	g, held := f.nodes[r.GetNodeId()]
	if !held {
		return &fixturepb.DeleteResourceResponse{}, nil // nothing set, nothing to write
	}
	served := r.GetName()
	switch r.GetTypeUrl() {
	case wire.Listener.URL:
		delete(g.listeners, strings.TrimPrefix(served, listenerName(r.GetNodeId(), "")))
	case wire.Route.URL:
		key := strings.TrimPrefix(served, listenerName(r.GetNodeId(), ""))
		delete(g.routes, key)
	case wire.Cluster.URL:
		delete(g.clusters, routeOf(served))
	case wire.Endpoint.URL:
		delete(g.endpoints, routeOf(served))
	}
	return &fixturepb.DeleteResourceResponse{}, f.writeNodeLocked(r.GetNodeId())
}

// Reset removes what the harness set for the node. The harness resets a
// node when a pair starts and again when it ends, and the adapter tells
// the two apart by whether it holds the node:
//   - a node it does not hold gets an empty gateway (its base listener
//     only): Envoy Gateway answers no stream of a node.cluster it has no
//     gateway for, and a pair may expect answers before it sets anything;
//   - a node it holds is removed with its file, so that the folder holds
//     the gateways of running pairs only. Envoy Gateway validates every
//     object in the folder again on every change (tens of milliseconds
//     each), so a folder that only grows slows every later change.
//
// A Set on a node it does not hold creates the gateway too. The two calls
// must pair up, which they do within one harness run; the adapter lives
// for one run (the e2e suite starts a fresh one with each Envoy Gateway),
// since node ids repeat between runs and a run cut short leaves nodes held.
func (f *Fixture) Reset(_ context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	node := r.GetNodeId()
	if err := validNode(node); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, held := f.nodes[node]; held {
		delete(f.nodes, node)
		if err := os.Remove(filepath.Join(f.dir, node+".yaml")); err != nil && !os.IsNotExist(err) {
			return nil, status.Errorf(codes.Internal, "removing the gateway of %s: %v", node, err)
		}
		return &fixturepb.ResetResponse{}, nil
	}
	f.gatewayLocked(node)
	return &fixturepb.ResetResponse{}, f.writeNodeLocked(node)
}

func (f *Fixture) gatewayLocked(node string) *gateway {
	g := f.nodes[node]
	if g == nil {
		g = &gateway{listeners: map[string]int{}, routes: map[string]routeListener{},
			clusters: map[string]string{}, endpoints: map[string]uint32{}}
		f.nodes[node] = g
	}
	return g
}

// nextPortLocked hands out listener ports, 20000 to 60000 in turn, so that
// no two listeners of a gateway share a port (Envoy Gateway would merge
// them into one listener) unless a gateway outlives 40000 of them.
func (f *Fixture) nextPortLocked() int {
	p := f.port
	f.port++
	if f.port > 60000 {
		f.port = 20000
	}
	return p
}

// writeNodeLocked renders the node's gateway, its routes, backends and
// policies into its file.
func (f *Fixture) writeNodeLocked(node string) error {
	return f.write(node, objects(node, f.nodes[node])...)
}

// objects renders a node's gateway and everything attached to it, in a
// stable order (a rewrite with no change is the same file).
func objects(node string, g *gateway) []map[string]any {
	var listeners, objs []map[string]any
	for _, l := range sorted(g.listeners) {
		listeners = append(listeners, map[string]any{"name": l, "protocol": "HTTP", "port": g.listeners[l]})
	}
	for _, r := range sorted(g.routes) {
		listeners = append(listeners, map[string]any{"name": r, "protocol": "HTTP", "port": g.routes[r].port})
		// No backend: the rule answers itself, so a route configuration
		// brings no cluster with it.
		objs = append(objs, httpRoute(objectName(node, r), node, r, g.routes[r].host, ""))
	}
	if len(g.clusters)+len(g.endpoints) > 0 {
		listeners = append(listeners, map[string]any{"name": "http", "protocol": "HTTP", "port": 8080})
	}
	for _, c := range sorted(g.clusters) {
		objs = append(objs, httpRoute(c, node, "http", c+".xdsconform.test", c), backend(c, 9),
			object("gateway.envoyproxy.io/v1alpha1", "BackendTrafficPolicy", c, map[string]any{
				"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": c}},
				"timeout":    map[string]any{"tcp": map[string]any{"connectTimeout": g.clusters[c]}},
			}))
	}
	for _, e := range sorted(g.endpoints) {
		objs = append(objs, httpRoute(e, node, "http", e+".xdsconform.test", e), backend(e, g.endpoints[e]))
	}
	if len(listeners) == 0 {
		// A gateway needs a listener. HTTP, because a TCP listener
		// without routes brings a cluster of its own (EmptyCluster).
		listeners = append(listeners, map[string]any{"name": "base", "protocol": "HTTP", "port": 8888})
	}
	gw := object("gateway.networking.k8s.io/v1", "Gateway", node, map[string]any{"gatewayClassName": GatewayClass, "listeners": listeners})
	return append([]map[string]any{gw}, objs...)
}

func httpRoute(name, gateway, section, host, backendName string) map[string]any {
	rule := map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}}}
	if backendName != "" {
		rule["backendRefs"] = []any{map[string]any{"group": "gateway.envoyproxy.io", "kind": "Backend", "name": backendName}}
	}
	return object("gateway.networking.k8s.io/v1", "HTTPRoute", name, map[string]any{
		"parentRefs": []any{map[string]any{"name": gateway, "sectionName": section}},
		"hostnames":  []any{host},
		"rules":      []any{rule},
	})
}

func backend(name string, port uint32) map[string]any {
	return object("gateway.envoyproxy.io/v1alpha1", "Backend", name, map[string]any{
		"endpoints": []any{map[string]any{"ip": map[string]any{"address": "127.0.0.1", "port": port}}}})
}

func object(apiVersion, kind, name string, spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}, "spec": spec}
}

// write renders objs as a multi-document YAML file (each document JSON)
// and moves it into the watched folder in one step.
func (f *Fixture) write(name string, objs ...map[string]any) error {
	var b bytes.Buffer
	for _, o := range objs {
		j, err := json.Marshal(o)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(j)
		b.WriteString("\n")
	}
	tmp := filepath.Join(f.stage, name+".yaml")
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return status.Errorf(codes.Internal, "staging %s: %v", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(f.dir, name+".yaml")); err != nil {
		return status.Errorf(codes.Internal, "moving %s into the watched folder: %v", name, err)
	}
	return nil
}

func sorted[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// objectName names a route, backend or policy of a node's gateway: object
// names share the namespace, so they carry the node.
func objectName(node, name string) string { return node + "." + name }

// listenerName is the name Envoy Gateway gives a gateway listener's xDS
// listener and route configuration.
func listenerName(node, section string) string { return Namespace + "/" + node + "/" + section }

// clusterName is the name of the cluster (and assignment) of an
// HTTPRoute's first rule.
func clusterName(httpRoute string) string {
	return "httproute/" + Namespace + "/" + httpRoute + "/rule/0"
}

// routeOf is the HTTPRoute of a cluster name, "" for other names.
func routeOf(served string) string {
	rest, ok := strings.CutPrefix(served, "httproute/"+Namespace+"/")
	if !ok {
		return ""
	}
	r, _ := strings.CutSuffix(rest, "/rule/0")
	return r
}

// dnsLabel is what Gateway API object and listener names may be (kept
// short enough to leave room for the prefixes the adapter adds).
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,50}[a-z0-9])?$`)

// validNode refuses node ids that cannot name a gateway: the harness sends
// the node id in node.cluster, so the gateway must be named exactly so.
func validNode(node string) error {
	if !dnsLabel.MatchString(node) {
		return status.Errorf(codes.InvalidArgument, "envoy gateway fixture: node id %q cannot name a gateway (not a DNS label)", node)
	}
	return nil
}

// label is the part of the served name the adapter derives from a
// requested name: the name itself when it is a DNS label, otherwise a hash
// of it (the adapter generates names, so any name can be served).
func label(name string) string {
	if dnsLabel.MatchString(name) {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "h" + hex.EncodeToString(sum[:6])
}

// gatewayDuration renders a connect timeout as a Gateway API duration
// ("1003ms"), which has whole milliseconds at most.
func gatewayDuration(d *durationpb.Duration) (string, error) {
	dur := d.AsDuration()
	if dur <= 0 || dur%time.Millisecond != 0 {
		return "", status.Errorf(codes.InvalidArgument, "envoy gateway fixture: connect_timeout %v is not a positive whole number of milliseconds", dur)
	}
	return strconv.FormatInt(dur.Milliseconds(), 10) + "ms", nil
}
