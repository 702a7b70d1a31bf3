package scaffold

import (
	"fmt"
	"slices"

	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
	"github.com/xdsconform/xdsconform/wire"
)

// chainTypes are the types a client-role scenario serves: the chain a gRPC
// client follows.
var chainTypes = []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint}

// clientBuild is a client-role scaffold in progress.
type clientBuild struct {
	*builder
	steps   []scenariofile.ClientStep
	labels  map[string]string // type URL + nonce → label
	nacked  map[string]bool   // type URL + nonce of responses the client NACKed
	revs    map[string]*revision
	names   map[string][]string // type URL → base names of the last SotW request
	chain   map[string]string   // recorded name → chain base name (recordings)
	nlabels int
}

func (b *builder) client(msgs []message) []scenariofile.ClientStep {
	c := &clientBuild{builder: b, labels: map[string]string{}, nacked: map[string]bool{}, revs: map[string]*revision{},
		names: map[string][]string{}, chain: map[string]string{}}
	b.note("Responses are served as the catalogue builds the chain's resources (wire.ClientListener, ClientRoute, ClientCluster, ClientEndpoints): " +
		"a resource whose recorded content changed is served at the next revision, and a listener or cluster the client NACKed is served invalid; the recorded bytes are not replayed.")
	b.note("ACKs and NACKs are checked against the responses they answer (ack: LABEL), whatever nonces and versions the harness's responses carry.")
	if b.prefix != "" {
		b.note("Resource names are base names: the pair's prefix (%s) is taken off.", b.prefix)
	} else {
		b.note("The first listener, route and cluster the client asked for are the chain's (listener, route, cluster): the client under test is pointed at the harness's own listener.")
	}
	for _, m := range msgs {
		if m.request && m.hasError {
			c.nacked[m.typeURL+"\x00"+m.nonce] = true
		}
	}
	for _, m := range msgs {
		t, ok := typeOf(m.typeURL)
		if !ok || !slices.ContainsFunc(chainTypes, func(u wire.Type) bool { return u.URL == t.URL }) {
			b.note("Messages of type %q were left out: a client-role scenario serves listeners, routes, clusters and endpoints.", m.typeURL)
			continue
		}
		if m.request {
			c.request(t, m)
		} else {
			c.response(t, m)
		}
	}
	return c.steps
}

// baseOf is the base name of a recorded name: the pair's prefix taken off,
// or, in a recording, the chain's own name for the first listener, route
// and cluster asked for.
func (c *clientBuild) baseOf(t wire.Type, name string) string {
	if c.prefix != "" {
		if base, ok := c.base(name); ok {
			return base
		}
		return name
	}
	if base, ok := c.chain[name]; ok {
		return base
	}
	var base string
	switch t.URL {
	case wire.Listener.URL:
		base = scenariofile.ChainListener
	case wire.Route.URL:
		base = scenariofile.ChainRoute
	case wire.Cluster.URL, wire.Endpoint.URL:
		base = scenariofile.ChainCluster
	}
	if base == "" || slices.Contains(mapValues(c.chain), base) {
		base = name
	}
	c.chain[name] = base
	return base
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func (c *clientBuild) basesOf(t wire.Type, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, c.baseOf(t, n))
	}
	return out
}

func (c *clientBuild) request(t wire.Type, m message) {
	label := c.labels[t.URL+"\x00"+m.nonce]
	exp := &scenariofile.ExpectRequestStep{Type: t.Short}
	names := c.basesOf(t, m.names)
	switch {
	case m.hasError && label != "":
		exp.Nack = label
	case m.hasError:
		c.note("A NACK of a response the transcript does not hold is expected as any request.")
	case m.delta && len(m.names) > 0:
		exp.Names = names
	case m.delta && len(m.unsubscribed) > 0:
		exp.Dropped = c.basesOf(t, m.unsubscribed)
	case m.delta && label != "":
		exp.Ack = label
	case m.delta:
	case label != "" && sameSet(names, c.names[t.URL]):
		exp.Ack = label
	case len(names) < len(c.names[t.URL]) && len(without(names, c.names[t.URL])) == 0:
		exp.Dropped = without(c.names[t.URL], names)
	default:
		exp.Names = names
	}
	if !m.delta {
		c.names[t.URL] = names
	}
	if exp.Ack != "" || exp.Nack != "" || exp.Names != nil {
		c.checking++
	}
	if len(exp.Names) == 0 && exp.Names != nil {
		exp.Names = nil // asking for nothing: a request of the type, whatever it names
	}
	c.steps = append(c.steps, scenariofile.ClientStep{Expect: exp})
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func (c *clientBuild) response(t wire.Type, m message) {
	c.nlabels++
	label := fmt.Sprintf("r%d", c.nlabels)
	c.labels[t.URL+"\x00"+m.nonce] = label
	serve := &scenariofile.ServeStep{Type: t.Short, Version: m.version, As: label}
	invalid := c.nacked[t.URL+"\x00"+m.nonce] && (t.URL == wire.Listener.URL || t.URL == wire.Cluster.URL)
	for _, n := range m.names {
		base := c.baseOf(t, n)
		r := c.revs[t.URL+"\x00"+base]
		if r == nil {
			r = &revision{}
			c.revs[t.URL+"\x00"+base] = r
		}
		if fp := m.contents[n]; r.rev == 0 || r.fingerprint != fp {
			r.rev++
			r.fingerprint = fp
		}
		res := scenariofile.ServedResource{Name: base, Revision: r.rev, Invalid: invalid}
		switch t.URL {
		case wire.Listener.URL:
			if route := findStrings(m.raw[n], "route_config_name", "routeConfigName"); len(route) == 1 {
				if b := c.baseOf(wire.Route, route[0]); b != scenariofile.ChainRoute {
					res.Route = b
				}
			}
		case wire.Route.URL:
			clusters := c.basesOf(wire.Cluster, findStrings(m.raw[n], "cluster"))
			slices.Sort(clusters)
			clusters = slices.Compact(clusters)
			if len(clusters) > 0 && !slices.Equal(clusters, []string{scenariofile.ChainCluster}) {
				res.Clusters = clusters
			}
		}
		serve.Resources = append(serve.Resources, res)
	}
	serve.Removed = c.basesOf(t, m.removed)
	if len(serve.Removed) == 0 {
		serve.Removed = nil
	}
	c.steps = append(c.steps, scenariofile.ClientStep{Serve: serve})
}

// findStrings collects the string values of keys anywhere in v.
func findStrings(v any, keys ...string) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(x) {
				if s, ok := x[k].(string); ok && slices.Contains(keys, k) {
					out = append(out, s)
					continue
				}
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
