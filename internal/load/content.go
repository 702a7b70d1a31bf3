package load

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/fixture/fixturepb"
	"github.com/xdsconform/xdsconform/wire"
)

// A fixture that builds content (Capabilities.builds_content: Consul and
// Envoy Gateway through their adapters, say) serves resources of the
// server's own making from what the load sets: the marker in metadata
// does not reach the clients. Such a fixture copies instead a few fields
// of the resource set into the one served, its revision fields (the
// fixture API's name for them), and says which in each SetResource
// answer. Two of them are fields the load already fills from the change
// id (build: rev): a cluster's connect_timeout and an endpoint
// assignment's first endpoint port. So against such a fixture a client
// reads the change off that field of the served resource, and which
// resource it is off its type and its served name; the change's origin
// it takes from the collector, which the driving shard fills before it
// asks for the change.
//
// Listeners and routes carry no such field: the adapters key their
// revisions on values of their own choosing (a fresh port, a fresh host
// name) that no client can map back to a change without being told. So
// content mode takes profiles of CDS and EDS only; it runs in one shard
// (another shard would not know the origins), and plants no bad
// resources (the server builds what it serves: a resource planted bad
// would be served as a good one).

// contentPaths are the revision fields content mode reads, by type URL.
var contentPaths = map[string]string{
	wire.Cluster.URL:  fixture.ConnectTimeoutPath,
	wire.Endpoint.URL: fixture.EndpointPortPath,
}

// content is what content mode needs: per resource, the value of its
// revision field at each change of it.
type content struct {
	// revs, per resource, map the revision field's value (as
	// fixture.Field renders it) to the change id that set it (0: the
	// initial state); vals the other way round.
	revs []map[string]int64
	vals []map[int64]string
}

// newContent works out content mode for p against a fixture claiming
// caps; nil when the fixture serves what it is given (the markers then
// reach the clients).
func newContent(p *plan, caps *fixturepb.Capabilities) (*content, error) {
	if !caps.GetBuildsContent() {
		return nil, nil
	}
	const why = "the target's fixture builds the content it serves, so a load run tells its changes apart by a cluster's connect_timeout and an assignment's endpoint port (docs/load.md)"
	switch {
	case p.Shards > 1:
		return nil, fmt.Errorf("--shard %d/%d: %s, and only the shard that drives the fixture knows when it made them: run one shard", p.Shard, p.Shards, why)
	case p.NackBurst > 0:
		return nil, fmt.Errorf("--nack-burst %d: %s; it serves what it builds, so it cannot serve a resource planted bad", p.NackBurst, why)
	}
	c := &content{revs: make([]map[string]int64, len(p.resources)), vals: make([]map[int64]string, len(p.resources))}
	for i, res := range p.resources {
		if _, ok := contentPaths[res.t.URL]; !ok {
			return nil, fmt.Errorf("--profile %s: %s: give a profile of CDS and EDS only (e.g. 'CDS=cluster;EDS=cluster'), not %s", p.profile, why, res.t.Short)
		}
		c.revs[i], c.vals[i] = map[string]int64{}, map[int64]string{}
		if err := c.add(p, i, 0); err != nil {
			return nil, err
		}
	}
	for _, ch := range p.changes {
		if err := c.add(p, ch.res, ch.id); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add records the revision field of resource i at change id.
func (c *content) add(p *plan, i int, id int64) error {
	v, err := p.revision(i, id)
	if err != nil {
		return err
	}
	if prev, ok := c.revs[i][v]; ok {
		return fmt.Errorf("%s: changes %d and %d give its revision field the same value %s, so a client could not tell them apart: plan fewer changes", p.resources[i], prev, id, v)
	}
	c.revs[i][v], c.vals[i][id] = id, v
	return nil
}

// revision is the value of resource i's revision field at change id.
func (p *plan) revision(i int, id int64) (string, error) {
	a, err := p.build(i, marker{res: i, change: id})
	if err != nil {
		return "", err
	}
	m, err := a.UnmarshalNew()
	if err != nil {
		return "", fmt.Errorf("building %s: %w", p.resources[i], err)
	}
	f, err := fixture.Field(m, contentPaths[p.resources[i].t.URL])
	if err != nil {
		return "", fmt.Errorf("building %s: %w", p.resources[i], err)
	}
	return f.GetValue(), nil
}

// check says whether the fixture's answer to setting resource i at
// change id names the revision field content mode reads, with the value
// set: if it does not copy it, no client will ever see the change.
func (c *content) check(p *plan, i int, id int64, got []*fixturepb.RevisionField) error {
	path := contentPaths[p.resources[i].t.URL]
	want := c.vals[i][id]
	for _, f := range got {
		if f.GetPath() == path && f.GetValue() == want {
			return nil
		}
	}
	return fmt.Errorf("the fixture serves %s with revision fields %v, not %s = %s, which a load run reads its changes by", p.resources[i], got, path, want)
}

// servedNames are the names the fixture serves the run's resources under,
// per node, when they are not the names set (Capabilities.generates_names):
// the clients must subscribe to those.
type servedNames struct {
	// shared is set when the target serves every node the same resources
	// (sharedResources): the fixture is driven on node 0 alone, and its
	// names are every node's.
	shared bool

	mu    sync.RWMutex
	names map[int][]string // node number → per resource; "" as set
}

// note records that node n is served resource i as name; it reports
// whether that differs from a name noted before (which no client would
// follow: they subscribe once).
func (s *servedNames) note(p *plan, n, i int, name string) bool {
	if name == p.resources[i].name {
		name = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byRes := s.names[n]
	if byRes == nil {
		if name == "" {
			return false
		}
		if s.names == nil {
			s.names = map[int][]string{}
		}
		byRes = make([]string, len(p.resources))
		s.names[n] = byRes
	}
	prev := byRes[i]
	byRes[i] = name
	return prev != "" && prev != name
}

// name is the name node n is served resource i under.
func (s *servedNames) name(p *plan, n, i int) string {
	if s.shared {
		n = 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if byRes := s.names[n]; byRes != nil && byRes[i] != "" {
		return byRes[i]
	}
	return p.resources[i].name
}

// contentMarker is the marker of a resource served by a fixture that
// builds content, read off its type, served name and revision field; ok
// is false for a resource the run did not set.
func (r *runner) contentMarker(c *client, b *anypb.Any) (marker, bool) {
	path, ok := contentPaths[b.GetTypeUrl()]
	if r.content == nil || !ok {
		return marker{}, false
	}
	m, err := b.UnmarshalNew()
	if err != nil {
		return marker{}, false
	}
	name := wire.NameOf(m)
	res := -1
	for i, rs := range r.p.resources {
		if rs.t.URL == b.GetTypeUrl() && r.names.name(r.p, c.nodeNum, i) == name {
			res = i
			break
		}
	}
	if res < 0 {
		return marker{}, false
	}
	f, err := fixture.Field(m, path)
	if err != nil {
		return marker{}, false
	}
	id, ok := r.content.revs[res][f.GetValue()]
	if !ok {
		return marker{}, false
	}
	mk := marker{res: res, change: id}
	if id > 0 {
		mk.origin = r.col.changes[id-1].origin.Load()
	}
	return mk, true
}
