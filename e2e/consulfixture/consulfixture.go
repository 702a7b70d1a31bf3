// Package consulfixture implements the xdsconform fixture API over a Consul
// agent's HTTP API, so the server suite can run against Consul's xDS server
// (delta ADS on its gRPC port).
//
// Consul builds xDS from its service catalogue, so the adapter translates:
//   - every node id the harness uses is a connect-proxy service registered
//     under that id (Consul serves a proxy its own configuration);
//   - setting a cluster or endpoint assignment named N makes service N an
//     upstream of that proxy. Consul then serves the cluster and the
//     assignment under the name it generates,
//     N.default.dc1.internal.<trust domain>.consul;
//   - an assignment's first endpoint port becomes the port of N's (connect
//     native) instance, and a cluster's connect_timeout becomes N's
//     service-resolver ConnectTimeout: these are the revision fields the
//     harness recognises each revision by (fixture API builds_content);
//   - deleting the last type set for N drops the upstream, its instance and
//     its resolver.
package consulfixture

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	cluster "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpoint "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// Fixture is the fixture service for one Consul agent.
type Fixture struct {
	fixturepb.UnimplementedFixtureServer

	base    string // http://HOST:PORT of the agent's HTTP API
	version string
	suffix  string // ".default.dc1.internal.<trust domain>.consul"

	mu    sync.Mutex
	nodes map[string]*proxy
	port  int // next local bind port for an upstream
}

// proxy is what the harness set for one node id.
type proxy struct {
	upstreams map[string]*upstream // by service name
}

// upstream is one service the proxy reaches, and the types set for it.
type upstream struct {
	bindPort int
	eds, cds bool
}

// New connects to the agent at addr (HOST:PORT of its HTTP API) and reads
// its version and trust domain.
func New(ctx context.Context, addr string) (*Fixture, error) {
	f := &Fixture{base: "http://" + addr, nodes: map[string]*proxy{}, port: 30000}
	var self struct {
		Config struct{ Version string }
	}
	if err := f.call(ctx, http.MethodGet, "/v1/agent/self", nil, &self); err != nil {
		return nil, err
	}
	var roots struct{ TrustDomain string }
	if err := f.call(ctx, http.MethodGet, "/v1/connect/ca/roots", nil, &roots); err != nil {
		return nil, err
	}
	if roots.TrustDomain == "" {
		return nil, fmt.Errorf("consul at %s has no Connect trust domain yet", addr)
	}
	f.version = self.Config.Version
	f.suffix = ".default.dc1.internal." + roots.TrustDomain
	return f, nil
}

// GetCapabilities: clusters and endpoint assignments, delta ADS only (the
// SotW ADS method answers "not implemented"), names and content generated,
// each node its own proxy.
func (f *Fixture) GetCapabilities(context.Context, *fixturepb.GetCapabilitiesRequest) (*fixturepb.Capabilities, error) {
	return &fixturepb.Capabilities{
		ApiVersion:     fixture.APIVersion,
		Server:         "Consul " + f.version,
		TypeUrls:       []string{wire.Cluster.URL, wire.Endpoint.URL},
		Variants:       []string{wire.DeltaADS.String()},
		LegacyWildcard: true,
		GeneratesNames: true,
		NodeScoped:     true,
		BuildsContent:  true,
	}, nil
}

// SetResource makes the resource's service an upstream of the node's proxy
// and applies the resource's revision to the service.
func (f *Fixture) SetResource(ctx context.Context, r *fixturepb.SetResourceRequest) (*fixturepb.SetResourceResponse, error) {
	svc := r.GetName()
	if err := validService(svc); err != nil {
		return nil, err
	}
	msg, err := r.GetResource().UnmarshalNew()
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decoding the resource: %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.proxyLocked(r.GetNodeId())
	u := p.upstreams[svc]
	if u == nil {
		// Recorded only once Consul took the change: a failed call leaves
		// no upstream behind for the next registration.
		u = &upstream{bindPort: f.port}
		defer func() {
			if p.upstreams[svc] == u {
				f.port++
			}
		}()
	}
	resp := &fixturepb.SetResourceResponse{Name: svc + f.suffix}
	switch m := msg.(type) {
	case *endpoint.ClusterLoadAssignment:
		port, err := fixture.Field(m, fixture.EndpointPortPath)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "consul fixture: %v", err)
		}
		body := map[string]any{"Name": svc, "ID": svc, "Address": "127.0.0.1", "Port": json.Number(port.GetValue()), "Connect": map[string]any{"Native": true}}
		if err := f.call(ctx, http.MethodPut, "/v1/agent/service/register", body, nil); err != nil {
			return nil, err
		}
		u.eds = true
		resp.Revision = []*fixturepb.RevisionField{port}
	case *cluster.Cluster:
		timeout, err := fixture.Field(m, fixture.ConnectTimeoutPath)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "consul fixture: %v", err)
		}
		body := map[string]any{"Kind": "service-resolver", "Name": svc, "ConnectTimeout": m.GetConnectTimeout().AsDuration().String()}
		if err := f.call(ctx, http.MethodPut, "/v1/config", body, nil); err != nil {
			return nil, err
		}
		u.cds = true
		resp.Revision = []*fixturepb.RevisionField{timeout}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "consul fixture: cannot serve %T", msg)
	}
	p.upstreams[svc] = u
	if err := f.registerProxyLocked(ctx, r.GetNodeId()); err != nil {
		return nil, err
	}
	return resp, nil
}

// DeleteResource removes the type from the service; with no type left the
// upstream goes, and the service's instance and resolver with it.
func (f *Fixture) DeleteResource(ctx context.Context, r *fixturepb.DeleteResourceRequest) (*fixturepb.DeleteResourceResponse, error) {
	svc := strings.TrimSuffix(r.GetName(), f.suffix)
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.proxyLocked(r.GetNodeId())
	u := p.upstreams[svc]
	if u == nil {
		return &fixturepb.DeleteResourceResponse{}, nil
	}
	switch r.GetTypeUrl() {
	case wire.Endpoint.URL:
		u.eds = false
	case wire.Cluster.URL:
		u.cds = false
	}
	if u.eds || u.cds {
		return &fixturepb.DeleteResourceResponse{}, nil
	}
	delete(p.upstreams, svc)
	if err := f.registerProxyLocked(ctx, r.GetNodeId()); err != nil {
		return nil, err
	}
	return &fixturepb.DeleteResourceResponse{}, f.dropServiceLocked(ctx, svc)
}

// Reset drops every upstream of the node's proxy (registering the proxy if
// it is new) and the services behind them.
func (f *Fixture) Reset(ctx context.Context, r *fixturepb.ResetRequest) (*fixturepb.ResetResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.proxyLocked(r.GetNodeId())
	old := p.upstreams
	p.upstreams = map[string]*upstream{}
	if err := f.registerProxyLocked(ctx, r.GetNodeId()); err != nil {
		return nil, err
	}
	for svc := range old {
		if err := f.dropServiceLocked(ctx, svc); err != nil {
			return nil, err
		}
	}
	return &fixturepb.ResetResponse{}, nil
}

func (f *Fixture) proxyLocked(node string) *proxy {
	p := f.nodes[node]
	if p == nil {
		p = &proxy{upstreams: map[string]*upstream{}}
		f.nodes[node] = p
	}
	return p
}

// registerProxyLocked (re-)registers the node's proxy with its upstreams;
// Consul pushes the resulting changes to the node's xDS stream.
func (f *Fixture) registerProxyLocked(ctx context.Context, node string) error {
	ups := []map[string]any{}
	for svc, u := range f.nodes[node].upstreams {
		ups = append(ups, map[string]any{"DestinationName": svc, "LocalBindAddress": "127.0.0.1", "LocalBindPort": u.bindPort})
	}
	body := map[string]any{
		"Kind": "connect-proxy", "ID": node, "Name": "xdsconform-proxy", "Address": "127.0.0.1", "Port": 21000,
		"Proxy": map[string]any{"DestinationServiceName": "xdsconform-app", "LocalServicePort": 8080, "Upstreams": ups},
	}
	return f.call(ctx, http.MethodPut, "/v1/agent/service/register", body, nil)
}

func (f *Fixture) dropServiceLocked(ctx context.Context, svc string) error {
	if err := f.call(ctx, http.MethodPut, "/v1/agent/service/deregister/"+svc, nil, nil); err != nil && !isNotFound(err) {
		return err
	}
	return f.call(ctx, http.MethodDelete, "/v1/config/service-resolver/"+svc, nil, nil)
}

// call does one HTTP API request; a status other than 200 is an error
// carrying Consul's answer.
func (f *Fixture) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, f.base+path, rd)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req) // bounded by ctx, which every call carries
	if err != nil {
		return status.Errorf(codes.Unavailable, "consul %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return &httpError{code: resp.StatusCode, msg: fmt.Sprintf("consul %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("consul %s %s: %w", method, path, err)
		}
	}
	return nil
}

type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func isNotFound(err error) bool {
	h, ok := err.(*httpError)
	return ok && h.code == http.StatusNotFound
}

var validName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validService says whether a requested resource name can be the name of
// the Consul service behind it: the harness's names (lower-case letters,
// digits and dashes) can; anything else is refused rather than renamed.
func validService(name string) error {
	if !validName.MatchString(name) {
		return status.Errorf(codes.InvalidArgument, "consul fixture: %q is not a valid service name", name)
	}
	return nil
}
