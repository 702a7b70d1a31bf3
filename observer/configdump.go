package observer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"golang.org/x/sync/semaphore"
)

// ConfigDump observes an Envoy through its admin /config_dump endpoint.
//
// The dump is read with encoding/json, not protojson: a real dump carries
// extension types (filters, transport sockets, ...) that this binary has
// not linked in, and protojson refuses an Any it cannot resolve. Only the
// few fields naming resources and their status are read, so Config is
// left nil.
type ConfigDump struct {
	url      string
	client   *http.Client
	maxBytes int64
}

var _ Observer = (*ConfigDump)(nil)

// NewConfigDump returns an observer for the Envoy admin interface at
// adminAddr (host:port). Nothing is contacted until Observe.
func NewConfigDump(adminAddr string, opts ...Option) *ConfigDump {
	// A private transport, so Close can drop our idle connections without
	// touching anyone else's.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &ConfigDump{
		// include_eds: EDS resources are left out of the dump by default.
		url:      "http://" + adminAddr + "/config_dump?include_eds",
		client:   &http.Client{Transport: tr},
		maxBytes: configure(opts).maxBytes,
	}
}

// Option adjusts an observer.
type Option func(*config)

// config is what the Options set.
type config struct {
	maxBytes int64
}

// configure applies opts to the defaults.
func configure(opts []Option) config {
	c := config{maxBytes: StatusViewBytes}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// MaxBytes sets the largest status view, in bytes, a read accepts: one
// /config_dump body, one CSDS response. n <= 0 keeps StatusViewBytes. A
// larger view is an error wrapping ErrTooLarge, which says the harness's
// cap was hit, not that the client did anything wrong: the CLI's
// --max-status-size raises it.
func MaxBytes(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxBytes = int64(n)
		}
	}
}

// Observe fetches and parses one config dump; ctx bounds the request.
func (c *ConfigDump) Observe(ctx context.Context) ([]Resource, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("config_dump request: %w", err)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	body, err := readBounded(ctx, resp.Body, c.maxBytes)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", c.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", c.url, resp.Status, truncate(string(body), 200))
	}
	rs, err := ParseConfigDump(body)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", c.url, err)
	}
	return rs, nil
}

// Bounds on reading a status view. A dump is parsed whole, so its size is
// what it costs: a client whose admin endpoint answers with an endless or
// huge body must cost a bounded read and a clear error, not gigabytes.
const (
	// StatusViewBytes bounds one /config_dump body and one CSDS response
	// unless an observer is given another cap (MaxBytes). Envoy's dump of
	// every scenario's resources is a few kilobytes; one of a client that
	// also holds a large configuration of its own can be more.
	StatusViewBytes = 8 << 20
	// smallReadBytes is what a dump read reserves before reading: a dump
	// no larger is read on that reservation alone. readingSmall bounds
	// those reservations, all reads of the process together.
	smallReadBytes = 64 << 10
	readingSmall   = 8 << 20
	// largeReads is how many dumps larger than smallReadBytes are read at
	// once in the process; each may grow to its observer's cap
	// (StatusViewBytes unless MaxBytes raised it).
	largeReads = 2
	// readingBytes bounds the dump bytes held by all reads of the process
	// at once, at the default cap: pairs observe their clients
	// concurrently, and each read must not be allowed its cap times the
	// pairs running. A raised cap raises it to readingSmall + largeReads
	// times that cap.
	readingBytes = readingSmall + largeReads*StatusViewBytes
)

// ErrTooLarge is returned (wrapped) for a status view over its observer's
// cap (StatusViewBytes, or MaxBytes): the harness's own bound, so the
// view was not read and nothing in it can be judged.
var ErrTooLarge = errors.New("status view too large")

// A read waits for room rather than failing when others hold it, so that
// whether a read succeeds never depends on how many ran alongside it; its
// context bounds the wait. Room comes in two tiers so that no read holds
// room while waiting for more from the same pool (which could deadlock
// reads against each other until their deadlines): every read first takes
// smallReadBytes from small, and one whose body is larger then waits for
// one of the largeReads turns, which lets it grow to StatusViewBytes
// without waiting on anything else.
var (
	small = semaphore.NewWeighted(readingSmall)
	large = semaphore.NewWeighted(largeReads)
	// reading counts the dump bytes all reads of the process hold now;
	// it never exceeds readingBytes.
	reading atomic.Int64
	// beforeWait, when set by a test, is called when a read is about to
	// wait for room.
	beforeWait func(tier string)
)

// acquire takes n of sem, waiting (bounded by ctx) when it is not free.
func acquire(ctx context.Context, sem *semaphore.Weighted, n int64, tier string) error {
	if sem.TryAcquire(n) {
		return nil
	}
	if beforeWait != nil {
		beforeWait(tier)
	}
	if err := sem.Acquire(ctx, n); err != nil {
		return fmt.Errorf("waiting for room to read a status view (other reads hold %d bytes): %w", reading.Load(), err)
	}
	return nil
}

// readBounded reads a dump body of at most maxBytes, waiting for room
// among the reads of the process (see small, large) and holding it until
// it returns (the parse that follows is bounded by the same figure, so the
// room read is a fair stand-in for it).
func readBounded(ctx context.Context, r io.Reader, maxBytes int64) ([]byte, error) {
	if err := acquire(ctx, small, smallReadBytes, "small"); err != nil {
		return nil, err
	}
	defer small.Release(smallReadBytes)
	limit, turn := int64(smallReadBytes), false
	defer func() {
		if turn {
			large.Release(1)
		}
	}()
	var held int64
	defer func() { reading.Add(-held) }()
	var buf bytes.Buffer
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		if n > 0 {
			if int64(buf.Len()+n) > maxBytes {
				return nil, fmt.Errorf("the body is over %d bytes (the harness reads at most that): %w", maxBytes, ErrTooLarge)
			}
			if int64(buf.Len()+n) > limit {
				// Larger than a small read: wait for a large turn, which
				// is room for maxBytes.
				if err := acquire(ctx, large, 1, "large"); err != nil {
					return nil, err
				}
				limit, turn = maxBytes, true
			}
			reading.Add(int64(n))
			held += int64(n)
			buf.Write(chunk[:n])
		}
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Close releases idle HTTP connections to the admin interface.
func (c *ConfigDump) Close() error {
	c.client.CloseIdleConnections()
	return nil
}

// Config dump type URLs (envoy.admin.v3).
const (
	listenersDumpURL    = "type.googleapis.com/envoy.admin.v3.ListenersConfigDump"
	clustersDumpURL     = "type.googleapis.com/envoy.admin.v3.ClustersConfigDump"
	routesDumpURL       = "type.googleapis.com/envoy.admin.v3.RoutesConfigDump"
	scopedRoutesDumpURL = "type.googleapis.com/envoy.admin.v3.ScopedRoutesConfigDump"
	endpointsDumpURL    = "type.googleapis.com/envoy.admin.v3.EndpointsConfigDump"
	secretsDumpURL      = "type.googleapis.com/envoy.admin.v3.SecretsConfigDump"
)

// Resource type URLs. Spelled here rather than taken from package wire so
// the observer stays a leaf package.
const (
	listenerURL    = "type.googleapis.com/envoy.config.listener.v3.Listener"
	routeURL       = "type.googleapis.com/envoy.config.route.v3.RouteConfiguration"
	scopedRouteURL = "type.googleapis.com/envoy.config.route.v3.ScopedRouteConfiguration"
	clusterURL     = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	endpointURL    = "type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment"
	secretURL      = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret"
)

// named is the part of any resource (as JSON) that names it.
type named struct {
	Name        string `json:"name"`
	ClusterName string `json:"cluster_name"` // ClusterLoadAssignment
}

func (n *named) name() string {
	if n == nil {
		return ""
	}
	if n.Name != "" {
		return n.Name
	}
	return n.ClusterName
}

// failureState is envoy.admin.v3.UpdateFailureState.
type failureState struct {
	FailedConfiguration *named `json:"failed_configuration"`
	Details             string `json:"details"`
	VersionInfo         string `json:"version_info"`
}

// listenerState is envoy.admin.v3.ListenersConfigDump.DynamicListenerState.
type listenerState struct {
	VersionInfo string `json:"version_info"`
	Listener    *named `json:"listener"`
}

// dynamicEntry is the union of the per-resource entries of the dumps read
// here (DynamicListener, DynamicCluster, DynamicRouteConfig,
// DynamicEndpointConfig, DynamicSecret, DynamicScopedRouteConfigs): each
// fills in only its own fields.
type dynamicEntry struct {
	Name               string         `json:"name"`
	VersionInfo        string         `json:"version_info"`
	ClientStatus       string         `json:"client_status"`
	ErrorState         *failureState  `json:"error_state"`
	ActiveState        *listenerState `json:"active_state"`
	WarmingState       *listenerState `json:"warming_state"`
	Cluster            *named         `json:"cluster"`
	RouteConfig        *named         `json:"route_config"`
	EndpointConfig     *named         `json:"endpoint_config"`
	Secret             *named         `json:"secret"`
	ScopedRouteConfigs []named        `json:"scoped_route_configs"`
}

// dump holds every per-type list we read; one dump message fills one.
type dump struct {
	Type                      string         `json:"@type"`
	DynamicListeners          []dynamicEntry `json:"dynamic_listeners"`
	DynamicActiveClusters     []dynamicEntry `json:"dynamic_active_clusters"`
	DynamicWarmingClusters    []dynamicEntry `json:"dynamic_warming_clusters"`
	DynamicRouteConfigs       []dynamicEntry `json:"dynamic_route_configs"`
	DynamicScopedRouteConfigs []dynamicEntry `json:"dynamic_scoped_route_configs"`
	DynamicEndpointConfigs    []dynamicEntry `json:"dynamic_endpoint_configs"`
	DynamicActiveSecrets      []dynamicEntry `json:"dynamic_active_secrets"`
	DynamicWarmingSecrets     []dynamicEntry `json:"dynamic_warming_secrets"`
}

// ParseConfigDump reads the dynamic (xDS-delivered) resources out of an
// Envoy /config_dump response. Static resources are skipped: they were not
// delivered by the server under test.
//
// States: an entry's client_status wins when present (newer Envoys set it);
// otherwise an error_state means Nacked, an active resource Acked, and a
// warming-only or stateless one Requested. Version is always the version in
// use (the last accepted), ErrorVersion the rejected one.
func ParseConfigDump(body []byte) ([]Resource, error) {
	// Straight into the few fields read, not through a copy of each
	// entry: a dump costs little more than its own bytes.
	var top struct {
		Configs []dump `json:"configs"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("config dump: %w", err)
	}
	var out []Resource
	for _, d := range top.Configs {
		switch d.Type {
		case listenersDumpURL:
			for _, e := range d.DynamicListeners {
				out = append(out, listenerResource(e))
			}
		case clustersDumpURL:
			out = append(out, activeAndWarming(clusterURL, d.DynamicActiveClusters, d.DynamicWarmingClusters,
				func(e dynamicEntry) *named { return e.Cluster })...)
		case routesDumpURL:
			for _, e := range d.DynamicRouteConfigs {
				out = append(out, entryResource(routeURL, e, e.RouteConfig, Acked))
			}
		case scopedRoutesDumpURL:
			// One entry per SRDS subscription, holding many scopes.
			for _, e := range d.DynamicScopedRouteConfigs {
				for j := range e.ScopedRouteConfigs {
					out = append(out, entryResource(scopedRouteURL, e, &e.ScopedRouteConfigs[j], Acked))
				}
			}
		case endpointsDumpURL:
			for _, e := range d.DynamicEndpointConfigs {
				out = append(out, entryResource(endpointURL, e, e.EndpointConfig, Acked))
			}
		case secretsDumpURL:
			out = append(out, activeAndWarming(secretURL, d.DynamicActiveSecrets, d.DynamicWarmingSecrets,
				func(e dynamicEntry) *named { return e.Secret })...)
		}
	}
	return out, nil
}

// activeAndWarming maps a dump that lists active and warming entries
// apart (clusters, secrets): active ones are Acked, warming ones Requested.
// A warming entry that also has an active version is an update in
// progress: the active one is what is in use, so only it is listed.
func activeAndWarming(typeURL string, active, warming []dynamicEntry, res func(dynamicEntry) *named) []Resource {
	var out []Resource
	inUse := map[string]bool{}
	for _, e := range active {
		r := entryResource(typeURL, e, res(e), Acked)
		inUse[r.Name] = true
		out = append(out, r)
	}
	for _, e := range warming {
		if r := entryResource(typeURL, e, res(e), Requested); !inUse[r.Name] {
			out = append(out, r)
		}
	}
	return out
}

// listenerResource maps a DynamicListener, whose versions live in its
// active/warming states rather than on the entry.
func listenerResource(e dynamicEntry) Resource {
	r := Resource{TypeURL: listenerURL, Name: e.Name, State: Requested}
	switch {
	case e.ActiveState != nil:
		r.Version, r.State = e.ActiveState.VersionInfo, Acked
		if r.Name == "" {
			r.Name = e.ActiveState.Listener.name()
		}
	case e.WarmingState != nil:
		r.Version = e.WarmingState.VersionInfo
		if r.Name == "" {
			r.Name = e.WarmingState.Listener.name()
		}
	}
	applyError(&r, e)
	return r
}

// entryResource maps an entry whose version sits on the entry itself;
// state is what the entry means when it carries no status of its own.
func entryResource(typeURL string, e dynamicEntry, res *named, state State) Resource {
	r := Resource{TypeURL: typeURL, Name: res.name(), Version: e.VersionInfo, State: state}
	if r.Name == "" {
		r.Name = e.Name
	}
	applyError(&r, e)
	return r
}

// applyError applies error_state and client_status, which override the
// state derived from the entry's shape.
func applyError(r *Resource, e dynamicEntry) {
	if es := e.ErrorState; es != nil {
		r.State = Nacked
		r.Error = es.Details
		r.ErrorVersion = es.VersionInfo
		if r.Name == "" {
			r.Name = es.FailedConfiguration.name()
		}
	}
	if s := clientStatus(e.ClientStatus); s != "" {
		r.State = s
	}
}

// clientStatus maps a JSON client_status (the enum's name) to a State;
// "" when absent or UNKNOWN, so the derived state stands.
func clientStatus(s string) State {
	s = strings.TrimSpace(s)
	v, ok := admin.ClientResourceStatus_value[s]
	if !ok || v == int32(admin.ClientResourceStatus_UNKNOWN) {
		return ""
	}
	return StateOf(admin.ClientResourceStatus(v))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
