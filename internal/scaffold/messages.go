package scaffold

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// message is one discovery request or response of a transcript, read from
// its rendered JSON: what a scaffold needs of it and no more, so a message
// whose rendering the transcript cut short, or whose secrets it replaced,
// still yields its names and nonces.
type message struct {
	stream  string
	request bool
	delta   bool
	typeURL string
	// nonce is the response's nonce, or the request's response_nonce.
	nonce   string
	version string
	// names: a SotW request's resource_names, a delta request's
	// subscriptions, a response's resources' names (in wire order).
	names []string
	// unsubscribed are a delta request's unsubscriptions.
	unsubscribed []string
	// initialVersions says a delta request listed resources it holds.
	initialVersions bool
	// errCode and errMessage are a request's error_detail; hasError says
	// there is one.
	hasError   bool
	errCode    int32
	errMessage string
	// contents are, per resource name, a fingerprint of the resource as
	// rendered, to tell revisions apart.
	contents map[string]string
	// raw are the resources as rendered, by name.
	raw map[string]map[string]any
	// removed are a delta response's removed_resources.
	removed []string
	// nodeID is the request's node.id, when it carries the node.
	nodeID string
}

// kinds of the messages a scaffold reads.
const (
	kindRequest       = "DiscoveryRequest"
	kindResponse      = "DiscoveryResponse"
	kindDeltaRequest  = "DeltaDiscoveryRequest"
	kindDeltaResponse = "DeltaDiscoveryResponse"
)

// field returns the first of keys m has: transcripts render proto names
// (type_url), other tools JSON names (typeUrl).
func field(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

func str(m map[string]any, keys ...string) string {
	s, _ := field(m, keys...).(string)
	return s
}

func strs(m map[string]any, keys ...string) []string {
	var out []string
	list, _ := field(m, keys...).([]any)
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// readMessage reads entry e, sent or received, as a discovery message;
// ok is false for anything else (events, fold markers, other services).
func readMessage(e transcript.Entry, side string) (message, bool, error) {
	var m message
	switch e.Kind {
	case kindRequest, kindDeltaRequest:
		m.request = true
	case kindResponse, kindDeltaResponse:
	default:
		return m, false, nil
	}
	if e.Direction != transcript.Sent && e.Direction != transcript.Received {
		return m, false, nil
	}
	// A request travels from the client: on a transcript from the
	// client's side it was sent, from the server's it was received.
	fromClient := (side == transcript.SideClient) == (e.Direction == transcript.Sent)
	if m.request != fromClient {
		return m, false, fmt.Errorf("a %s %s by the %s side", e.Kind, e.Direction, side)
	}
	m.delta = strings.HasPrefix(e.Kind, "Delta")
	m.stream = e.Stream
	var body map[string]any
	if err := json.Unmarshal(e.Message, &body); err != nil {
		return m, false, fmt.Errorf("%s at %v: %w", e.Kind, e.At, err)
	}
	m.typeURL = str(body, "type_url", "typeUrl")
	if node, ok := field(body, "node").(map[string]any); ok {
		m.nodeID = str(node, "id")
	}
	if m.request {
		m.nonce = str(body, "response_nonce", "responseNonce")
		m.version = str(body, "version_info", "versionInfo")
		if m.delta {
			m.names = strs(body, "resource_names_subscribe", "resourceNamesSubscribe")
			m.unsubscribed = strs(body, "resource_names_unsubscribe", "resourceNamesUnsubscribe")
			iv, _ := field(body, "initial_resource_versions", "initialResourceVersions").(map[string]any)
			m.initialVersions = len(iv) > 0
		} else {
			m.names = strs(body, "resource_names", "resourceNames")
		}
		if ed, ok := field(body, "error_detail", "errorDetail").(map[string]any); ok {
			m.hasError = true
			if c, ok := field(ed, "code").(float64); ok {
				m.errCode = int32(c)
			}
			m.errMessage = str(ed, "message")
		}
		return m, true, nil
	}
	m.nonce = str(body, "nonce")
	m.version = str(body, "version_info", "versionInfo", "system_version_info", "systemVersionInfo")
	m.removed = strs(body, "removed_resources", "removedResources")
	m.contents, m.raw = map[string]string{}, map[string]map[string]any{}
	list, _ := field(body, "resources").([]any)
	for _, r := range list {
		res, ok := r.(map[string]any)
		if !ok {
			continue
		}
		name, content := resourceOf(res, m.delta)
		if name == "" {
			continue
		}
		m.names = append(m.names, name)
		m.contents[name] = fingerprint(content)
		if c, ok := content.(map[string]any); ok {
			m.raw[name] = c
		}
	}
	return m, true, nil
}

// resourceTypeDiscovery is the wrapper a resource comes in (delta, or a
// SotW response to a client that takes it).
const resourceTypeDiscovery = "type.googleapis.com/envoy.service.discovery.v3.Resource"

// resourceOf finds a rendered resource's name and content: the wrapper's
// name and inner resource, or the name field of the resource itself.
func resourceOf(res map[string]any, delta bool) (string, any) {
	if delta || str(res, "@type") == resourceTypeDiscovery {
		inner := field(res, "resource")
		name := str(res, "name")
		if name == "" {
			if m, ok := inner.(map[string]any); ok {
				name = nameOf(m)
			}
		}
		return name, inner
	}
	return nameOf(res), res
}

// nameOf is a resource's own name: cluster_name for endpoint assignments,
// name for every other type.
func nameOf(m map[string]any) string {
	if str(m, "@type") == wire.Endpoint.URL {
		return str(m, "cluster_name", "clusterName")
	}
	return str(m, "name")
}

// fingerprint renders content canonically (encoding/json sorts keys).
func fingerprint(content any) string {
	b, err := json.Marshal(content)
	if err != nil {
		return fmt.Sprint(content)
	}
	return string(b)
}

// causal reorders messages so that every request comes after the
// response that caused it: a reply (a request with a response_nonce) after
// the response it answers, and a request naming a route, cluster or
// endpoints after the first response that refers to it (a listener names
// its route, a route its clusters, a cluster its endpoints). The two sides
// of a stream record their messages on their own goroutines — the
// harness's fake server records a response once it is sent — so a
// transcript can list an ACK, or the request a response provoked, a moment
// before the response.
func causal(msgs []message) []message {
	key := func(stream, url, nonce string) string { return stream + "\x00" + url + "\x00" + nonce }
	responseAt := map[string]int{}
	firstRef := map[string]int{} // type URL + name → first response referring to it
	for i, m := range msgs {
		if m.request {
			continue
		}
		if _, ok := responseAt[key(m.stream, m.typeURL, m.nonce)]; !ok {
			responseAt[key(m.stream, m.typeURL, m.nonce)] = i
		}
		for _, ref := range m.references() {
			if _, ok := firstRef[ref]; !ok {
				firstRef[ref] = i
			}
		}
	}
	need := make([]int, len(msgs))
	for i, m := range msgs {
		need[i] = -1
		if !m.request {
			continue
		}
		if j, ok := responseAt[key(m.stream, m.typeURL, m.nonce)]; ok && m.nonce != "" && j > i {
			need[i] = j
		}
		for _, n := range m.names {
			if j, ok := firstRef[m.typeURL+"\x00"+n]; ok && j > i {
				need[i] = max(need[i], j)
			}
		}
	}
	out := make([]message, 0, len(msgs))
	var held []int
	for i, m := range msgs {
		if need[i] >= 0 {
			held = append(held, i)
			continue
		}
		out = append(out, m)
		if m.request {
			continue
		}
		kept := held[:0]
		for _, h := range held {
			if need[h] <= i {
				out = append(out, msgs[h])
			} else {
				kept = append(kept, h)
			}
		}
		held = kept
	}
	for _, h := range held {
		out = append(out, msgs[h])
	}
	return out
}

// references are the resources a response refers to, as type URL + name:
// a listener's route, a route's clusters, a cluster's endpoints.
func (m message) references() []string {
	var refs []string
	for _, n := range m.names {
		raw := m.raw[n]
		switch m.typeURL {
		case wire.Listener.URL:
			for _, r := range findStrings(raw, "route_config_name", "routeConfigName") {
				refs = append(refs, wire.Route.URL+"\x00"+r)
			}
		case wire.Route.URL:
			for _, c := range findStrings(raw, "cluster") {
				refs = append(refs, wire.Cluster.URL+"\x00"+c)
			}
		case wire.Cluster.URL:
			refs = append(refs, wire.Endpoint.URL+"\x00"+n)
			for _, e := range findStrings(raw, "service_name", "serviceName") {
				refs = append(refs, wire.Endpoint.URL+"\x00"+e)
			}
		}
	}
	return refs
}

// sortedKeys lists m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
