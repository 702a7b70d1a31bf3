// Package refclient is the harness's reference xDS client: a compact,
// spec-faithful client of the gRPC profile (API listener → RDS → CDS → EDS,
// every ConfigSource over ADS) that speaks all four variants and exposes its
// view through CSDS. In the Envoy profile (Config.Profile, envoy.go) it
// follows Envoy instead: listeners and clusters by wildcard, warming, VHDS,
// and Envoy's admin /config_dump besides CSDS (admin.go), and two Envoy
// features: REST-JSON polling in the rest variant (rest.go) and clusters
// read from a file (Config.CDSFile, fs.go). It is the
// built-in conformant client target
// (builtin:reference) of the client-role scenarios, and its fault switches
// each break exactly one rule, so that every client-role scenario can be
// proven to detect the violation it is written for.
//
// All protocol state lives in one event-loop goroutine. Stream goroutines
// only move messages: a reader per stream feeds responses to the loop and a
// writer per stream drains the requests the loop queued. This keeps the
// ordering rules (one ACK/NACK per response, sent before any request the
// response triggers) a matter of sequential code.
package refclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/xdsconform/xdsconform/wire"
)

// UserAgentName is sent in node.user_agent_name so transcripts show which
// client spoke.
const UserAgentName = "xdsconform-refclient"

// userAgentVersion is node.user_agent_version; the node-drifts fault
// appends a counter to it.
const userAgentVersion = "1"

// defaultDNETimeout is the does-not-exist timer the spec recommends (DNE-1).
const defaultDNETimeout = 15 * time.Second

// Reconnect backoff (RECONN-1): a stream that had a response is reopened
// at once (minBackoff: a server closing a stream is normal, RECONN-2);
// one that failed before any response waits failBackoff, then twice as
// long each time up to maxBackoff, so a server that keeps failing is not
// hammered, and the growth is measurable above scheduling noise (a loaded
// machine under the race detector delays a reconnect by some 300 ms).
const (
	minBackoff  = 10 * time.Millisecond
	failBackoff = 250 * time.Millisecond
	maxBackoff  = 4 * time.Second
)

// silenceTimeout is how long the reconnect-on-silence fault waits for a
// response before it gives up on a stream: long enough that a loaded
// harness answering a hop late does not trip it mid-chain, shorter than
// the default quiet window that must catch it.
const silenceTimeout = time.Second

// Config describes one reference client.
type Config struct {
	// ServerAddr is the host:port of the management server; the client
	// speaks plaintext gRPC because the harness's servers are local.
	ServerAddr string
	// NodeID and Cluster identify the client in node.id and node.cluster.
	NodeID, Cluster string
	// Variant selects the protocol and transport: SotWADS, SotWPerType,
	// DeltaADS, DeltaPerType or REST (REST-JSON polls, rest.go).
	Variant wire.Variant
	// Listener is the name the client is pointed at, as a gRPC client
	// dialing xds:///<Listener>: the root of every watch.
	Listener string
	// DNETimeout is the does-not-exist timer (DNE-1, DNE-6); 0 means the
	// recommended 15 s. Scenarios shorten it to keep runs fast.
	DNETimeout time.Duration
	// RESTRefresh is the REST variant's refresh delay, the wait before a
	// poll is sent again (bootstrap refresh_delay); 0 means 100 ms, what
	// the harness gives an Envoy.
	RESTRefresh time.Duration
	// Faults switch on rule violations; nil means fully conformant.
	Faults []Fault
	// Profile is the client profile followed: ProfileGRPC (also "") or
	// ProfileEnvoy.
	Profile string
	// Target, when set, is the channel target the client is pointed at
	// instead of Listener: xds:///NAME or xds://AUTHORITY/NAME, resolved
	// to a listener name through the templates (gRFC A47, XDSTP-15).
	Target string
	// Authorities maps xdstp authorities to their servers (gRFC A47
	// bootstrap "authorities", XDSTP-13); names of an authority missing
	// from it are asked of no server.
	Authorities map[string]Authority
	// DefaultListenerTemplate is
	// client_default_listener_resource_name_template: how a target
	// without an authority becomes a listener name ("%s" when empty).
	DefaultListenerTemplate string
	// DynamicParameters, when not nil, are sent with every subscription,
	// which then goes in resource_locators instead of resource_names
	// (xRFC TP2, DYN-11); variants are checked against them (DYN-10).
	DynamicParameters map[string]string
	// CDSFile, when set, makes an Envoy-profile client read its clusters
	// from a file instead of the server (fs.go).
	CDSFile *FileSource

	// hooks let the package's tests act at a point where timing alone
	// would decide an outcome; zero outside tests.
	hooks hooks
}

// hooks are points where a test acts inside the client, so that a race it
// guards against is played out deterministically instead of by load.
type hooks struct {
	// fileLoaded runs on the file watcher once the first load of the
	// file was handed to the loop (fs.go).
	fileLoaded func()
	// response runs on the loop before it handles a response.
	response func()
	// restRefreshDue runs on a REST poller when the refresh delay after
	// a poll has passed (rest.go).
	restRefreshDue func()
}

// The client profiles.
const (
	// ProfileGRPC follows the gRPC client profile: the one listener the
	// client is pointed at, then its route, clusters and endpoints by name.
	ProfileGRPC = "grpc"
	// ProfileEnvoy follows Envoy: listeners and clusters by wildcard,
	// routes and endpoints by name, warming, VHDS over delta, and an admin
	// /config_dump (envoy.go, admin.go).
	ProfileEnvoy = "envoy"
)

// Client is a running reference client. Its methods are safe for
// concurrent use.
type Client struct {
	cfg    Config
	faults map[Fault]bool
	ctx    context.Context
	cancel context.CancelFunc
	parent context.Context
	conn   *grpc.ClientConn            // the default server's channel
	conns  map[string]*grpc.ClientConn // the other servers' channels, by address (XDSTP-14)
	root   string                      // the listener the client is pointed at
	csds   *grpc.Server
	lis    net.Listener
	events chan event
	wg     sync.WaitGroup
	done   chan struct{}
	envoy  bool         // the Envoy profile (envoy.go)
	admin  *http.Server // Envoy profile: /config_dump (admin.go)
	adminL net.Listener

	mu           sync.Mutex // guards the fields below
	err          error
	closedByUser bool
	snapshot     *statuspb.ClientConfig
	dump         *adminpb.ConfigDump // Envoy profile: the /config_dump view
	changed      chan struct{}       // closed and replaced on every publish

	// Everything below is owned by the event loop.
	res           map[string]map[string]*resState // type URL → name → state
	watched       map[string]map[string]bool      // what the reference chain needs
	everRequested map[string]map[string]bool      // for the never-unsubscribe fault
	versions      map[string]string               // SotW: last accepted version_info per type
	sysVersions   map[string]string               // Delta: last accepted system_version_info per type
	respCount     map[string]int                  // responses seen per type (skip-acks)
	nackedTypes   map[string]bool                 // types with a NACKed response (nack-sticky)
	slots         map[string]*slot                // "" for ADS, else the type URL
	firstVersions map[string]map[string]string    // first accepted version per type and name (a fault's memory)
	unrequested   []*resState                     // resources never asked for, kept by the apply-unrequested fault
	spellings     map[string]map[string]string    // type URL → watched name → as last delivered (status-splits-spellings)
	deadlines     map[timerKey]time.Time
	timer         *time.Timer
	nodeCounter   int
	edsAgain      bool    // Envoy profile: ask for the endpoints again (an updated cluster warms)
	fileStream    *stream // CDSFile: stands in for a stream when a file is applied (fs.go)

	// rewatch and goneOnce are the memories of the rewatching faults
	// (faults_core.go): names watched again though nothing refers to
	// them, and names once asked for that were deleted.
	rewatch, goneOnce map[string]map[string]bool
}

// followed are the types a gRPC-style client watches, in the order of the
// reference chain; requests are always sent in this order.
var followed = []wire.Type{wire.Listener, wire.Route, wire.Cluster, wire.Endpoint}

// types are the types the client watches, in the order its requests go
// out: followed, or envoyFollowed in the Envoy profile.
func (c *Client) types() []wire.Type {
	if c.envoy {
		return envoyFollowed
	}
	if c.rootIsCollection() {
		// COLL-2: the listeners come from the list collection.
		return append([]wire.Type{listenerCollection}, followed...)
	}
	return followed
}

// Start validates cfg, starts the client's CSDS server on 127.0.0.1:0 and
// the client itself, and returns at once: connecting to the management
// server happens in the background, as a real client does, and is retried
// until Close.
func Start(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.ServerAddr == "" {
		return nil, errors.New("refclient: no server address")
	}
	if cfg.Listener == "" && cfg.Target == "" {
		return nil, errors.New("refclient: no listener name")
	}
	faults := map[Fault]bool{}
	for _, f := range cfg.Faults {
		p, err := ParseFault(string(f))
		if err != nil {
			return nil, fmt.Errorf("refclient: %w", err)
		}
		faults[p] = true
	}
	switch cfg.Profile {
	case "", ProfileGRPC, ProfileEnvoy:
	default:
		return nil, fmt.Errorf("refclient: unknown profile %q (want %s or %s)", cfg.Profile, ProfileGRPC, ProfileEnvoy)
	}
	for f := range faults {
		if p := f.Profile(); p != "" && p != cfg.Profile {
			return nil, fmt.Errorf("refclient: fault %s acts in the %s profile only", f, p)
		}
	}
	if err := checkFileSource(cfg); err != nil {
		return nil, err
	}
	if cfg.DNETimeout <= 0 {
		cfg.DNETimeout = defaultDNETimeout
	}
	if cfg.RESTRefresh <= 0 {
		cfg.RESTRefresh = restRefreshDelay
	}
	conn, err := grpc.NewClient(cfg.ServerAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("refclient: %w", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("refclient: CSDS listener: %w", err)
	}
	c := &Client{
		cfg:           cfg,
		faults:        faults,
		parent:        ctx,
		conn:          conn,
		conns:         map[string]*grpc.ClientConn{},
		root:          cfg.Listener,
		csds:          grpc.NewServer(),
		lis:           lis,
		events:        make(chan event),
		done:          make(chan struct{}),
		changed:       make(chan struct{}),
		res:           map[string]map[string]*resState{},
		watched:       map[string]map[string]bool{},
		everRequested: map[string]map[string]bool{},
		versions:      map[string]string{},
		sysVersions:   map[string]string{},
		respCount:     map[string]int{},
		nackedTypes:   map[string]bool{},
		slots:         map[string]*slot{},
		firstVersions: map[string]map[string]string{},
		deadlines:     map[timerKey]time.Time{},
		envoy:         cfg.Profile == ProfileEnvoy,
	}
	if cfg.Target != "" {
		if c.root, err = c.targetListener(); err != nil {
			_ = conn.Close()
			_ = lis.Close()
			return nil, fmt.Errorf("refclient: %w", err)
		}
	}
	if c.envoy {
		if err := c.listenAdmin(); err != nil {
			_ = conn.Close()
			_ = lis.Close()
			return nil, err
		}
	}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	c.snapshot = c.buildSnapshot()
	if c.envoy {
		c.dump = c.buildDump()
	}
	statuspb.RegisterClientStatusDiscoveryServiceServer(c.csds, csdsServer{c: c})

	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		_ = c.csds.Serve(lis) // returns when stopped
	}()
	c.serveAdmin()
	if cfg.CDSFile != nil {
		c.wg.Add(1)
		go c.watchFile()
	}
	go c.loop()
	go c.stopper()
	return c, nil
}

// CSDSAddr returns the host:port of the client's CSDS server, which the
// client-role scenarios read the client's view from (OBS-1).
func (c *Client) CSDSAddr() string { return c.lis.Addr().String() }

// Close stops the client, its streams and its CSDS server and waits for all
// of its goroutines. It is idempotent.
func (c *Client) Close() {
	c.mu.Lock()
	select {
	case <-c.done:
	default:
		if c.err == nil {
			c.closedByUser = true
		}
	}
	c.mu.Unlock()
	c.cancel()
	<-c.done
}

// Done is closed once the client has stopped, by Close or on its own (a
// crash fault, or the context given to Start ending).
func (c *Client) Done() <-chan struct{} { return c.done }

// Err says why the client stopped on its own: nil while running and after
// Close, the crash reason after a crash fault, the context's error when the
// context given to Start ended.
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// stopper tears everything down once the client's context ends, whatever
// ended it, so Done means "nothing of the client is left running".
func (c *Client) stopper() {
	<-c.ctx.Done()
	c.csds.Stop()
	if c.admin != nil {
		_ = c.admin.Close()
	}
	c.wg.Wait()
	_ = c.conn.Close()
	for _, cc := range c.conns {
		_ = cc.Close()
	}
	c.mu.Lock()
	if c.err == nil && !c.closedByUser && c.parent.Err() != nil {
		c.err = context.Cause(c.parent)
	}
	c.mu.Unlock()
	close(c.done)
}

// crash stops the client on its own with err (crash-on-empty-name).
func (c *Client) crash(err error) {
	c.mu.Lock()
	if c.err == nil && !c.closedByUser {
		c.err = err
	}
	c.mu.Unlock()
	c.cancel()
}

func (c *Client) fault(f Fault) bool { return c.faults[f] }

// baseNode is the node the client identifies itself with (STREAM-3).
func (c *Client) baseNode() *core.Node {
	return &core.Node{
		Id:                   c.nodeID(),
		Cluster:              c.nodeCluster(),
		UserAgentName:        UserAgentName,
		UserAgentVersionType: &core.Node_UserAgentVersion{UserAgentVersion: userAgentVersion},
		// Resource wrappers in SotW (TTL-6), spelled as gRPC clients do,
		// and TTLs (TTL-2..4).
		ClientFeatures: []string{wire.FeatureResourceInSotW, wire.FeatureTTL},
	}
}

// current returns the latest published CSDS view.
func (c *Client) current() *statuspb.ClientConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snapshot
}

// stateChanged returns a channel closed at the next publication of the
// client's view, so tests can wait for a state without sleeping.
func (c *Client) stateChanged() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// publish makes the loop's current state the CSDS view. It runs before the
// loop hands queued requests to the stream writers, so whatever a server
// sees on the wire is already visible through CSDS.
func (c *Client) publish() {
	snap := c.buildSnapshot()
	var dump *adminpb.ConfigDump
	if c.envoy {
		dump = c.buildDump()
	}
	c.mu.Lock()
	c.snapshot = snap
	c.dump = dump
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// loop is the single goroutine that owns the protocol state.
func (c *Client) loop() {
	defer c.wg.Done()
	defer c.timer.Stop()
	c.step()
	for {
		var fire <-chan time.Time
		if d, ok := c.nextDeadline(); ok {
			c.timer.Reset(time.Until(d))
			fire = c.timer.C
		} else {
			c.timer.Stop()
		}
		select {
		case <-c.ctx.Done():
			return
		case ev := <-c.events:
			c.handle(ev)
		case <-fire:
			c.fireTimers(time.Now())
		}
		if c.ctx.Err() != nil {
			return // crashed while handling: nothing more may be sent
		}
		c.step()
	}
}

// step brings watches and requests in line with the state, publishes the
// view and releases the queued requests, in that order.
func (c *Client) step() {
	c.reconcile()
	c.publish()
	c.flush()
}

// handle dispatches one event from a stream goroutine. Events of a stream
// that is no longer its slot's current one are stale and dropped.
func (c *Client) handle(ev event) {
	switch ev := ev.(type) {
	case evOpened:
		c.onOpened(ev.st)
	case evResponse:
		if ev.st.slot.cur != ev.st {
			return
		}
		if h := c.cfg.hooks.response; h != nil {
			h()
		}
		c.onResponse(ev)
		if c.cfg.Variant.IsREST() {
			// Behind the reply, if any: the poller may poll its last
			// request again only from here on (rest.go).
			ev.st.pending = append(ev.st.pending, outgoing{answered: true})
		}
	case evEnded:
		if ev.st.slot.cur != ev.st {
			return
		}
		c.onEnded(ev.st)
	case evFile:
		c.onFile(ev)
	}
}

// nodeID is node.id; the wrong-node-id fault sends another one.
func (c *Client) nodeID() string {
	if c.fault(FaultWrongNodeID) {
		return c.cfg.NodeID + "-not-mine" // STREAM-3 broken
	}
	return c.cfg.NodeID
}

// nodeCluster is node.cluster; the node-without-cluster fault leaves it out.
func (c *Client) nodeCluster() string {
	if c.fault(FaultNodeWithoutCluster) {
		return "" // STREAM-3 broken
	}
	return c.cfg.Cluster
}
