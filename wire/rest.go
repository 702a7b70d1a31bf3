package wire

// restPaths are the REST-JSON endpoints of the per-type services, from
// their google.api.http annotations (REST-5). VirtualHosts have none: VHDS
// is incremental only, and REST is state of the world.
var restPaths = map[string]string{
	Listener.URL:    "/v3/discovery:listeners",
	Route.URL:       "/v3/discovery:routes",
	ScopedRoute.URL: "/v3/discovery:scoped-routes",
	Cluster.URL:     "/v3/discovery:clusters",
	Endpoint.URL:    "/v3/discovery:endpoints",
	Secret.URL:      "/v3/discovery:secrets",
	Runtime.URL:     "/v3/discovery:runtime",
}

// RESTPath returns the path a REST-JSON client POSTs its DiscoveryRequest
// for type t to, and whether the type has one.
func (t Type) RESTPath() (string, bool) {
	p, ok := restPaths[t.URL]
	return p, ok
}

// TypeByRESTPath returns the type served at a REST-JSON path.
func TypeByRESTPath(path string) (Type, bool) {
	for _, t := range AllTypes {
		if p, ok := t.RESTPath(); ok && p == path {
			return t, true
		}
	}
	return Type{}, false
}
