// Package load is xdsconform's load mode: thousands of simulated xDS
// clients against one management server, driving resource changes through
// the fixture API and measuring what the server does with them (push→ACK
// latency, convergence, amplification, NACKs and resends, missed pushes,
// protocol violations) and what the harness itself used.
//
// A simulated client is not a fakeclient.Client: that one keeps every
// message for a scenario to consume and renders a transcript, which costs
// tens of kilobytes a stream. A load client keeps, per stream, what it
// needs to ACK (the last nonce and version of each type) and, per
// resource, the last change it saw; it ACKs every response at once and
// NACKs the ones carrying a resource planted bad. One client in
// Options.SampleEvery keeps a transcript and checks the global invariants
// in full (fakeclient.Checker); the others check the cheap ones.
//
// Every resource the run sets carries a marker naming the run, the
// resource, the change, the change's origin time and the time this copy
// of it was set (wall clock), so that a client tells which change a push
// brings without decoding it, and the shards of a run (Options.Shard)
// measure against the same moments whichever of them made the change.
// Push→ACK latency runs from the set, convergence from the origin: on a
// node-scoped target one change is a set on every node, and the time
// that fan-out takes is the harness's, not the server's.
package load

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/wire"
)

// MaxPadding bounds Options.Padding: a resource of 64 MiB is past what any
// xDS client accepts by default.
const MaxPadding = 64 << 20

// DefaultMemoryBudget is a run's memory budget when Options gives none:
// 1 GiB, and 64 KiB more for each client of the run (three times what a
// stream holds at rest in the runs of docs/load.md).
func DefaultMemoryBudget(clients int) int64 { return 1<<30 + int64(clients)*64<<10 }

// Options is the plan of a load run.
type Options struct {
	// Clients is how many simulated clients the whole run has (over every
	// shard).
	Clients int
	// Nodes is how many distinct node ids they share; 0: one per client.
	Nodes int
	// Profile is grpc, envoy, or a custom list (see ParseProfile).
	Profile string
	// Variant is the protocol variant every client speaks.
	Variant wire.Variant
	// StreamsPerConn is how many streams share one gRPC connection.
	StreamsPerConn int
	// Churn is fixture changes per second during the churn phase (0: no
	// churn phase); ChurnTypes the types changed (nil: every type of the
	// profile), round-robin over their resources.
	Churn      float64
	ChurnTypes []wire.Type
	// Duration is how long the churn lasts.
	Duration time.Duration
	// NackBurst is how many bad resources the burst phase sets at once
	// (0: no burst phase); BurstWindow how long it then leaves them bad
	// before setting them right.
	NackBurst   int
	BurstWindow time.Duration
	// Shard and Shards split the clients: this process runs the clients
	// whose index is Shard modulo Shards. Shard 0 alone drives the
	// fixture.
	Shard, Shards int
	// RunID names the run: node ids, resource names and markers derive
	// from it, so the shards of a run must share it.
	RunID string
	// SampleEvery: one client in SampleEvery keeps a transcript and checks
	// every invariant in full; 0 keeps no transcript (the cheap checks
	// still run on every stream).
	SampleEvery int
	// SyncTimeout bounds the connect and initial-sync phases together.
	SyncTimeout time.Duration
	// Settle bounds the wait for convergence after a phase's last change.
	Settle time.Duration
	// StartWait bounds how long a shard that does not drive the fixture
	// waits for the driving shard's first change.
	StartWait time.Duration
	// Padding, when not 0, pads every resource the run sets with that
	// many bytes (a string in its metadata), so that a run can measure
	// what big responses cost the server and the harness.
	Padding int
	// MemoryBudget bounds the harness's live heap (its streams, their
	// messages in flight, and an in-process target's too): a run that
	// reaches it is stopped, its figures reported as of then, and it
	// fails, saying so (0: DefaultMemoryBudget for the plan's clients).
	// A client's streams hold about 20 KiB at rest, but every response
	// being received and decoded at once holds about twice its size, so
	// big responses to many clients at once take what this bounds.
	MemoryBudget int64
	// Parallel bounds the streams opened, and the fixture calls made, at
	// once.
	Parallel int
	// ChurnDelay is how long the driving shard waits, once its own
	// clients have synced, before the churn: time for the other shards'
	// clients to sync too, so that none of them first hears of a resource
	// in the middle of the churn. ChurnAfter, when not nil, is waited for
	// as well (bounded by StartWait): a test's way to start the churn
	// once every shard has synced.
	ChurnDelay time.Duration
	ChurnAfter <-chan struct{}
	// OnPhase, when set, is called as each phase begins (from the run's
	// own goroutine; it must not block): the CLI says what the run is
	// doing, a test starts other shards.
	OnPhase func(phase string)
}

// Defaults for the Options the CLI leaves unset.
const (
	DefaultSyncTimeout = 60 * time.Second
	DefaultSettle      = 10 * time.Second
	DefaultStartWait   = 2 * time.Minute
	DefaultBurstWindow = 2 * time.Second
	DefaultParallel    = 64
	// MaxClients bounds --clients: each stream costs a file descriptor's
	// share of a connection and tens of kilobytes; past this, shard.
	MaxClients = 1_000_000
	// MaxChanges bounds the changes one run plans.
	MaxChanges = 100_000
)

// sub is one subscription of a profile step: a type and the resources
// subscribed by name, or by wildcard.
type sub struct {
	t        wire.Type
	wildcard bool
	res      []int // indexes into plan.resources
}

// resource is one resource the run sets on every node.
type resource struct {
	t    wire.Type
	name string
	// ref is the resource this one references (a listener its route, a
	// route its cluster), so the chain a gRPC client follows holds.
	ref string
}

// String is "TYPE/NAME".
func (r resource) String() string { return r.t.Short + "/" + r.name }

// plan is Options worked out: the resources, the profile's steps, the
// schedule of changes and which clients this shard runs.
type plan struct {
	Options
	padding   string // Padding bytes, made once
	profile   string
	resources []resource
	steps     [][]sub
	changes   []change // index = change id - 1
	churned   []int    // resource indexes the churn changes, round-robin
	finals    map[int]map[string]int64
}

// change is one planned fixture change.
type change struct {
	id    int64
	phase string
	res   int
	bad   bool
}

// Profile names.
const (
	ProfileGRPC  = "grpc"
	ProfileEnvoy = "envoy"
)

// Check reports what is wrong with o, as Run would, without running
// anything: so a bad plan is refused before a target is started.
func Check(o Options) error {
	_, err := newPlan(o)
	return err
}

// newPlan checks o and works it out.
func newPlan(o Options) (*plan, error) {
	switch {
	case o.Clients < 1 || o.Clients > MaxClients:
		return nil, fmt.Errorf("--clients %d: give 1 to %d (shard past that)", o.Clients, MaxClients)
	case o.Nodes < 0 || o.Nodes > o.Clients:
		return nil, fmt.Errorf("--nodes %d: give 1 to --clients (%d), or 0 for one node per client", o.Nodes, o.Clients)
	case o.StreamsPerConn < 1 || o.StreamsPerConn > 10_000:
		return nil, fmt.Errorf("--streams-per-conn %d: give 1 to 10000", o.StreamsPerConn)
	case !(o.Churn >= 0 && o.Churn <= 10_000): // NaN too
		return nil, fmt.Errorf("--churn %g: give 0 to 10000 changes a second", o.Churn)
	case o.Duration < 0:
		return nil, fmt.Errorf("--duration %s is negative", o.Duration)
	case o.ChurnDelay < 0:
		return nil, fmt.Errorf("--churn-delay %s is negative", o.ChurnDelay)
	case o.NackBurst < 0 || o.NackBurst > 10_000:
		return nil, fmt.Errorf("--nack-burst %d: give 0 to 10000", o.NackBurst)
	case o.Shards < 1 || o.Shard < 0 || o.Shard >= o.Shards:
		return nil, fmt.Errorf("--shard %d/%d: give I/N with 0 <= I < N", o.Shard, o.Shards)
	case o.Shards > o.Clients:
		return nil, fmt.Errorf("--shard I/%d: more shards than --clients (%d)", o.Shards, o.Clients)
	case o.SampleEvery < 0:
		return nil, fmt.Errorf("transcripts sampled every %d clients: give 1 or more", o.SampleEvery)
	case o.RunID == "" || strings.ContainsAny(o.RunID, "/ \t\n") || len(o.RunID) > 40:
		return nil, fmt.Errorf("--run-id %q: give 1 to 40 characters, no slash or space", o.RunID)
	case o.Variant.Transport == wire.RESTPoll:
		return nil, fmt.Errorf("--variant %s: load runs gRPC streams only", o.Variant)
	case o.Padding < 0 || o.Padding > MaxPadding:
		return nil, fmt.Errorf("--resource-padding %d: give 0 to %d bytes", o.Padding, MaxPadding)
	case o.MemoryBudget < 0:
		return nil, fmt.Errorf("--memory-budget %d is negative", o.MemoryBudget)
	}
	if o.Nodes == 0 {
		o.Nodes = o.Clients
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	if o.Settle <= 0 {
		o.Settle = DefaultSettle
	}
	if o.StartWait <= 0 {
		o.StartWait = DefaultStartWait
	}
	if o.BurstWindow <= 0 {
		o.BurstWindow = DefaultBurstWindow
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	p := &plan{Options: o, padding: strings.Repeat("x", o.Padding)}
	if err := p.parseProfile(o.Profile); err != nil {
		return nil, err
	}
	if err := p.schedule(); err != nil {
		return nil, err
	}
	return p, nil
}

// parseProfile reads grpc, envoy, or a custom list: groups "TYPE=NAME,..."
// separated by ";", subscribed one group after the other (each once the
// previous one's resources have all arrived); NAME "*" subscribes by
// wildcard (LDS and CDS only) and sets one resource for it.
func (p *plan) parseProfile(spec string) error {
	name := func(kind string) string { return fmt.Sprintf("load-%s-%s", p.RunID, kind) }
	switch spec {
	case "", ProfileGRPC:
		p.profile = ProfileGRPC
		p.resources = []resource{
			{wire.Listener, name("listener"), name("route")},
			{wire.Route, name("route"), name("cluster")},
			{wire.Cluster, name("cluster"), ""},
			{wire.Endpoint, name("cluster"), ""},
		}
		p.steps = [][]sub{{{t: wire.Listener, res: []int{0}}}, {{t: wire.Route, res: []int{1}}}, {{t: wire.Cluster, res: []int{2}}}, {{t: wire.Endpoint, res: []int{3}}}}
		return nil
	case ProfileEnvoy:
		p.profile = ProfileEnvoy
		p.resources = []resource{
			{wire.Listener, name("listener"), name("route")},
			{wire.Cluster, name("cluster"), ""},
			{wire.Route, name("route"), name("cluster")},
			{wire.Endpoint, name("cluster"), ""},
		}
		p.steps = [][]sub{
			{{t: wire.Listener, wildcard: true, res: []int{0}}, {t: wire.Cluster, wildcard: true, res: []int{1}}},
			{{t: wire.Route, res: []int{2}}, {t: wire.Endpoint, res: []int{3}}},
		}
		return nil
	}
	p.profile = spec
	seen := map[string]bool{}
	for _, group := range strings.Split(spec, ";") {
		short, names, ok := strings.Cut(strings.TrimSpace(group), "=")
		t, known := typeByShort(short)
		if !ok || !known || names == "" {
			return fmt.Errorf("--profile %q: %q is not TYPE=NAME[,NAME...] with TYPE one of LDS, RDS, CDS, EDS, RTDS (or give grpc or envoy)", spec, group)
		}
		if seen[t.Short] {
			return fmt.Errorf("--profile %q: %s is listed twice", spec, t.Short)
		}
		seen[t.Short] = true
		s := sub{t: t}
		for _, n := range strings.Split(names, ",") {
			n = strings.TrimSpace(n)
			switch {
			case n == "*" && !t.Wildcard:
				return fmt.Errorf("--profile %q: %s cannot be subscribed by wildcard (only LDS and CDS)", spec, t.Short)
			case n == "*":
				s.wildcard = true
				n = "wildcard"
			case n == "" || len(n) > 100 || strings.ContainsAny(n, "/ "):
				return fmt.Errorf("--profile %q: resource name %q: give 1 to 100 characters, no slash or space", spec, n)
			}
			s.res = append(s.res, len(p.resources))
			p.resources = append(p.resources, resource{t: t, name: name(n)})
		}
		if len(p.resources) > 1000 {
			return fmt.Errorf("--profile %q: more than 1000 resources", spec)
		}
		p.steps = append(p.steps, []sub{s})
	}
	return nil
}

// buildable are the types a load run can build resources of (build).
var buildable = []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint, wire.Runtime}

// typeByShort is the type of a short name (any case) that a load run can
// build resources of.
func typeByShort(s string) (wire.Type, bool) {
	t, ok := wire.TypeByShort(s)
	if !ok || !slices.ContainsFunc(buildable, func(b wire.Type) bool { return b.URL == t.URL }) {
		return wire.Type{}, false
	}
	return t, true
}

// ParseTypes reads --churn-types: short names, comma-separated.
func ParseTypes(s string) ([]wire.Type, error) {
	var out []wire.Type
	for _, n := range strings.Split(s, ",") {
		t, ok := typeByShort(strings.TrimSpace(n))
		if !ok {
			return nil, fmt.Errorf("--churn-types %q: %q is not one of LDS, RDS, CDS, EDS, RTDS", s, n)
		}
		out = append(out, t)
	}
	return out, nil
}

// schedule plans every change: the churn's, round-robin over the churned
// resources, then the burst's bad ones and the changes that set those
// right. Every shard works out the same schedule, so each knows what it
// is waiting for without being told.
func (p *plan) schedule() error {
	for i, r := range p.resources {
		if len(p.ChurnTypes) == 0 || slices.ContainsFunc(p.ChurnTypes, func(t wire.Type) bool { return t.URL == r.t.URL }) {
			p.churned = append(p.churned, i)
		}
	}
	if len(p.churned) == 0 && (p.Churn > 0 || p.NackBurst > 0) {
		return fmt.Errorf("--churn-types: the profile has no resource of those types")
	}
	n := int64(p.Churn * p.Duration.Seconds())
	if p.Churn > 0 && n == 0 {
		n = 1
	}
	if n+2*int64(p.NackBurst) > MaxChanges {
		return fmt.Errorf("--churn %g for %s and --nack-burst %d plan %d changes, past the bound of %d", p.Churn, p.Duration, p.NackBurst, n+2*int64(p.NackBurst), MaxChanges)
	}
	add := func(phase string, res int, bad bool) {
		p.changes = append(p.changes, change{id: int64(len(p.changes) + 1), phase: phase, res: res, bad: bad})
	}
	for k := range n {
		add(phaseChurn, p.churned[int(k)%len(p.churned)], false)
	}
	touched := map[int]bool{}
	for k := range p.NackBurst {
		r := p.churned[k%len(p.churned)]
		add(phaseBurst, r, true)
		touched[r] = true
	}
	for _, r := range p.churned {
		if touched[r] {
			add(phaseBurst, r, false)
		}
	}
	// The last change of each resource in each phase: the one every
	// client must end the phase on.
	p.finals = map[int]map[string]int64{}
	for _, c := range p.changes {
		if p.finals[c.res] == nil {
			p.finals[c.res] = map[string]int64{}
		}
		p.finals[c.res][c.phase] = c.id
	}
	return nil
}

// phaseChanges are the planned changes of a phase.
func (p *plan) phaseChanges(phase string) []change {
	var out []change
	for _, c := range p.changes {
		if c.phase == phase {
			out = append(out, c)
		}
	}
	return out
}

// mine reports whether client i (of the whole run) runs in this shard.
func (p *plan) mine(i int) bool { return i%p.Shards == p.Shard }

// myClients is how many clients this shard runs.
func (p *plan) myClients() int {
	n := p.Clients / p.Shards
	if p.Shard < p.Clients%p.Shards {
		n++
	}
	return n
}

// node is the node id of client i.
func (p *plan) node(i int) string { return p.nodeID(i % p.Nodes) }

// nodeID is the id of node n.
func (p *plan) nodeID(n int) string { return fmt.Sprintf("xdsconform-load-%s-%d", p.RunID, n) }

// drives reports whether this shard drives the fixture.
func (p *plan) drives() bool { return p.Shard == 0 }

// resourceStrings lists the resources as "TYPE/NAME" in subscription
// order ("TYPE/*" for a wildcard subscription), for the report.
func (p *plan) resourceStrings() []string {
	var out []string
	for _, step := range p.steps {
		for _, s := range step {
			if s.wildcard {
				out = append(out, s.t.Short+"/*")
				continue
			}
			for _, r := range s.res {
				out = append(out, p.resources[r].String())
			}
		}
	}
	return out
}

// streamsPerClient is how many streams one client opens: one on ADS,
// one per type otherwise.
func (p *plan) streamsPerClient() int {
	if p.Variant.IsADS() {
		return 1
	}
	n := 0
	for _, step := range p.steps {
		n += len(step)
	}
	return n
}
