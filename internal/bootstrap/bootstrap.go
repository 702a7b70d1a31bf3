// Package bootstrap renders the bootstrap files that point a real xDS
// client at the harness's management server: the gRPC xDS bootstrap JSON
// (grpc-go, grpc-js, gRPC C-core) and the Envoy v3 bootstrap.
package bootstrap

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/xdsconform/xdsconform/wire"
)

// Params describes the client to bootstrap.
type Params struct {
	// ServerAddr is the management server, host:port.
	ServerAddr string
	// NodeID and Cluster fill the node the client identifies itself with.
	// NodeID is required.
	NodeID, Cluster string
	// Variant selects how Envoy talks to the server: Delta variants use
	// DELTA_GRPC, per-type variants give LDS and CDS an api_config_source
	// of their own instead of ADS, REST polls them over REST-JSON (an
	// HTTP/1.1 xds_cluster). gRPC clients only speak SotW ADS.
	Variant wire.Variant
	// ServerFeatures go into the gRPC bootstrap's xds_servers entry; nil
	// means ["xds_v3"], an empty non-nil slice means none.
	ServerFeatures []string
	// AdminAddr is Envoy's admin address, host:port; empty leaves Envoy
	// without an admin interface.
	AdminAddr string
	// Authorities go into the gRPC bootstrap's "authorities" map (gRFC
	// A47 federation): each maps an xdstp authority to its own servers
	// and listener name template. Nil leaves the map out.
	Authorities []Authority
	// DefaultListenerTemplate is the gRPC bootstrap's
	// client_default_listener_resource_name_template (gRFC A47): how a
	// target without an authority becomes a listener name. Empty leaves
	// it out, which means "%s".
	DefaultListenerTemplate string
	// CDSFile, when set, makes Envoy read its clusters from a file
	// (path_config_source) instead of the management server (FS-1..3).
	CDSFile *FileSource
	// RESTRefreshDelay is the REST variant's refresh_delay; 0 means
	// RESTRefreshDelay.
	RESTRefreshDelay time.Duration
}

// Authority is one entry of the gRPC bootstrap's authorities map (gRFC
// A47).
type Authority struct {
	// Name is the authority, as written in xdstp://NAME/ and xds://NAME/.
	Name string
	// ServerAddr is the management server for the authority, host:port;
	// empty means the top-level xds_servers (A47: an authority without
	// xds_servers uses them).
	ServerAddr string
	// ListenerTemplate is its client_listener_resource_name_template;
	// empty leaves it out, which means
	// "xdstp://NAME/envoy.config.listener.v3.Listener/%s".
	ListenerTemplate string
}

// FileSource is a filesystem subscription: a path_config_source.
type FileSource struct {
	// Path is the file holding a DiscoveryResponse; Envoy picks its
	// parser from the extension (.yaml, .json, .pb, .pb_text).
	Path string
	// WatchedDirectory, when set, is the directory whose moved-in entries
	// make Envoy reload Path (a Kubernetes ConfigMap's ..data swap).
	WatchedDirectory string
}

// REST polling timings the Envoy bootstrap of the REST variant gives. The
// refresh delay (the wait before polling again) is short, so a run does not
// wait on it; the request timeout is long, so that a poll the harness holds
// (a long poll, REST-4) is not given up and sent again while a scenario
// watches it (Envoy's default is 1 s).
const (
	RESTRefreshDelay   = 100 * time.Millisecond
	RESTRequestTimeout = 30 * time.Second
)

func (p Params) validate() error {
	var errs []error
	if p.ServerAddr == "" {
		errs = append(errs, errors.New("empty ServerAddr"))
	} else if _, _, err := splitHostPort(p.ServerAddr); err != nil {
		errs = append(errs, fmt.Errorf("ServerAddr: %w", err))
	}
	if p.NodeID == "" {
		errs = append(errs, errors.New("empty NodeID"))
	}
	if p.AdminAddr != "" {
		if _, _, err := splitHostPort(p.AdminAddr); err != nil {
			errs = append(errs, fmt.Errorf("AdminAddr: %w", err))
		}
	}
	seen := map[string]bool{}
	for _, a := range p.Authorities {
		if seen[a.Name] {
			errs = append(errs, fmt.Errorf("authority %q given twice", a.Name))
		}
		seen[a.Name] = true
		if a.ServerAddr != "" {
			if _, _, err := splitHostPort(a.ServerAddr); err != nil {
				errs = append(errs, fmt.Errorf("authority %q: ServerAddr: %w", a.Name, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bootstrap params: %w", err)
	}
	return nil
}

// GRPC renders a gRPC xDS bootstrap (gRFC A27) for p. The node carries a
// locality because grpc-js exits when a channel opens without one.
func GRPC(p Params) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if p.Variant != wire.SotWADS {
		// The gRPC bootstrap cannot ask for anything else: every gRPC
		// client speaks SotW over ADS only.
		return nil, fmt.Errorf("bootstrap params: gRPC clients speak %s only, not %s", wire.SotWADS, p.Variant)
	}
	features := p.ServerFeatures
	if features == nil {
		features = []string{"xds_v3"}
	}
	server := func(addr string) []any {
		return []any{obj{
			"server_uri":      addr,
			"channel_creds":   []any{obj{"type": "insecure"}},
			"server_features": features,
		}}
	}
	doc := obj{
		"xds_servers": server(p.ServerAddr),
		"node": obj{
			"id":       p.NodeID,
			"cluster":  p.Cluster,
			"locality": obj{"zone": "z"},
		},
	}
	if p.DefaultListenerTemplate != "" {
		doc["client_default_listener_resource_name_template"] = p.DefaultListenerTemplate
	}
	if p.Authorities != nil {
		auths := obj{}
		for _, a := range p.Authorities {
			entry := obj{}
			if a.ServerAddr != "" {
				entry["xds_servers"] = server(a.ServerAddr)
			}
			if a.ListenerTemplate != "" {
				entry["client_listener_resource_name_template"] = a.ListenerTemplate
			}
			auths[a.Name] = entry
		}
		doc["authorities"] = auths
	}
	return marshal(doc)
}

// Envoy renders an Envoy v3 bootstrap for p, as YAML.
//
// The output is JSON, which is valid YAML: building it with encoding/json
// keeps the module free of a YAML dependency, and Envoy accepts it under a
// .yaml or .json file name alike.
func Envoy(p Params) ([]byte, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	host, port, _ := splitHostPort(p.ServerAddr)

	// STATIC needs an IP literal; a host name (e.g. localhost) resolves
	// through DNS instead.
	clusterType := "STATIC"
	if net.ParseIP(host) == nil {
		clusterType = "STRICT_DNS"
	}
	xdsCluster := obj{
		"name":            "xds_cluster",
		"type":            clusterType,
		"connect_timeout": "1s",
		"load_assignment": obj{
			"cluster_name": "xds_cluster",
			"endpoints": []any{obj{"lb_endpoints": []any{obj{
				"endpoint": obj{"address": socketAddress(host, port)},
			}}}},
		},
	}
	if !p.Variant.IsREST() {
		// xDS is gRPC, so the upstream connection must be HTTP/2; REST
		// polls are plain HTTP/1.1 POSTs.
		xdsCluster["typed_extension_protocol_options"] = obj{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": obj{
				"@type":                "type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
				"explicit_http_config": obj{"http2_protocol_options": obj{}},
			},
		}
	}

	apiType := "GRPC"
	if p.Variant.IsDelta() {
		apiType = "DELTA_GRPC"
	}
	apiSource := func() obj {
		return obj{
			"api_type":              apiType,
			"transport_api_version": "V3",
			"grpc_services":         []any{obj{"envoy_grpc": obj{"cluster_name": "xds_cluster"}}},
		}
	}
	var dynamic obj
	switch {
	case p.Variant.IsREST():
		// REST-JSON polling (REST-5): each type on an api_config_source of
		// api_type REST; RDS and EDS follow the config sources the
		// server's resources name.
		rest := func() obj {
			return obj{
				"api_type":              "REST",
				"transport_api_version": "V3",
				"cluster_names":         []any{"xds_cluster"},
				"refresh_delay":         duration(cmp.Or(p.RESTRefreshDelay, RESTRefreshDelay)),
				"request_timeout":       duration(RESTRequestTimeout),
			}
		}
		dynamic = obj{
			"lds_config": obj{"api_config_source": rest(), "resource_api_version": "V3"},
			"cds_config": obj{"api_config_source": rest(), "resource_api_version": "V3"},
		}
	case p.Variant.IsADS():
		dynamic = obj{
			"ads_config": apiSource(),
			"lds_config": obj{"ads": obj{}, "resource_api_version": "V3"},
			"cds_config": obj{"ads": obj{}, "resource_api_version": "V3"},
		}
	default:
		dynamic = obj{
			"lds_config": obj{"api_config_source": apiSource(), "resource_api_version": "V3"},
			"cds_config": obj{"api_config_source": apiSource(), "resource_api_version": "V3"},
		}
	}
	if f := p.CDSFile; f != nil {
		// FS-1: clusters from a file; listeners still from the server.
		src := obj{"path": f.Path}
		if f.WatchedDirectory != "" {
			src["watched_directory"] = obj{"path": f.WatchedDirectory}
		}
		dynamic["cds_config"] = obj{"path_config_source": src, "resource_api_version": "V3"}
	}

	node := obj{"id": p.NodeID}
	if p.Cluster != "" {
		node["cluster"] = p.Cluster
	}
	doc := obj{
		"node":              node,
		"static_resources":  obj{"clusters": []any{xdsCluster}},
		"dynamic_resources": dynamic,
	}
	if p.AdminAddr != "" {
		ah, ap, _ := splitHostPort(p.AdminAddr)
		doc["admin"] = obj{"address": socketAddress(ah, ap)}
	}
	return marshal(doc)
}

// obj is a JSON object; map keys are marshalled sorted, so output is
// deterministic.
type obj = map[string]any

// duration renders d as a proto3 JSON Duration, e.g. "0.100s".
func duration(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func socketAddress(host string, port int) obj {
	return obj{"socket_address": obj{"address": host, "port_value": port}}
}

func splitHostPort(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		return "", 0, fmt.Errorf("%q has no host", addr)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: bad port %q", addr, ps)
	}
	return host, port, nil
}

func marshal(doc obj) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("render bootstrap: %w", err)
	}
	return append(b, '\n'), nil
}
