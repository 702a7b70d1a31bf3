package scenarios

import "github.com/xdsconform/xdsconform/internal/requirements"

// Invariant is a rule the fake peers check on every message of every scenario of a role.
type Invariant struct {
	// Role is the suite whose every scenario checks the rule:
	// requirements.RoleServer (the fake client checks each response of the
	// server under test) or requirements.RoleClient (the fake server checks
	// each request of the client under test).
	Role string
	// Rule is the catalogue ID, e.g. "NONCE-1".
	Rule string
	// Check says in one line what is checked on each message.
	Check string
}

// Invariants lists them, server role first, in the order the fake peers
// check them (fakeclient's checkResponse, fakeserver's Stream.check). A
// rule listed here counts as covered in its role even when no scenario
// cites it: any scenario of the role fails on a breach.
func Invariants() []Invariant {
	const server, client = requirements.RoleServer, requirements.RoleClient
	return []Invariant{
		{server, "NONCE-1", "every response carries a non-empty nonce"},
		{server, "NONCE-2", "no nonce is used twice for one type on a stream"},
		{server, "STREAM-7", "every response names a v3 resource type (the stream's own on a per-type stream) and every resource, unwrapped, is of that type and decodes"},
		{server, "TTL-5", "SotW resources come wrapped in envoy.service.discovery.v3.Resource only to a client that advertised xds.config.resource-in-sotw or subscribed by resource_locators (DYN-1)"},
		{server, "DELTA-9", "every resource of a delta response has a name"},
		{server, "TTL-3", "a resource without a body is a heartbeat: for a client that takes TTLs, of a resource the stream sent, at the version sent last"},
		{server, "DUP-1", "no resource name appears twice in one response (variants of one name, xRFC TP2, are told apart by their constraints)"},
		{server, "DUP-3", "no delta response both updates and removes a name (or one variant of it)"},
		{server, "DYN-4", "no Resource sets both name and resource_name"},
		{server, "ERR-2", "no resource is both in resources and in resource_errors of one response"},
		{client, "STREAM-6", "every request on an aggregated stream has a type_url, and every type_url is a v3 resource type (the service's own on a per-type stream)"},
		{client, "NONCE-5", "no request echoes a nonce that was never sent on its stream"},
		{client, "STREAM-10", "no SotW stream carries a request for VirtualHosts, which exist only in the incremental protocol"},
	}
}
