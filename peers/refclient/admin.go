package refclient

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	adminpb "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/xdsconform/xdsconform/wire"
)

// The Envoy profile serves its status view as Envoy's admin interface does:
// GET /config_dump on 127.0.0.1, the JSON of an envoy.admin.v3.ConfigDump
// with proto field names, endpoints only with ?include_eds. It is built
// from the same state as CSDS, at the same moments (publish):
//
//   - listeners: dynamic_listeners, with active_state (the version in use),
//     warming_state (a version waiting for its routes) and error_state
//     (the last rejected update);
//   - clusters: dynamic_active_clusters (in use) and
//     dynamic_warming_clusters (waiting for endpoints, or for fresh ones
//     after an update while the old version stays active);
//   - route configurations and endpoints: dynamic_route_configs and
//     dynamic_endpoint_configs.
//
// As in Envoy, a resource that was deleted, or that never arrived, is not
// in the dump. Entries in use carry client_status ACKED, rejected ones
// NACKED with an error_state naming the rejected resource (its content is
// not kept); warming entries carry none.

// listenAdmin opens the admin listener; serveAdmin serves it.
func (c *Client) listenAdmin() error {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("refclient: admin listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/config_dump", c.serveConfigDump)
	c.adminL = lis
	c.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return nil
}

func (c *Client) serveAdmin() {
	if c.admin == nil {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.admin.Serve(c.adminL); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = c.adminL.Close()
		}
	}()
}

// AdminAddr returns the host:port of the client's admin interface
// (/config_dump), served in the Envoy profile only; "" otherwise.
func (c *Client) AdminAddr() string {
	if c.adminL == nil {
		return ""
	}
	return c.adminL.Addr().String()
}

// dumpJSON are the options the dump is written with: Envoy's field names,
// and any type this binary does not know shown by its @type alone.
var dumpJSON = protojson.MarshalOptions{UseProtoNames: true, Indent: " ", Resolver: lenientResolver{}}

func (c *Client) serveConfigDump(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	dump := c.dump
	c.mu.Unlock()
	if !r.URL.Query().Has("include_eds") {
		// As in Envoy: endpoints only on request.
		dump = &adminpb.ConfigDump{Configs: slices.DeleteFunc(slices.Clone(dump.GetConfigs()), func(a *anypb.Any) bool {
			return a.GetTypeUrl() == endpointsDumpURL
		})}
	}
	body, err := dumpJSON.Marshal(dump)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

const endpointsDumpURL = wire.TypePrefix + "envoy.admin.v3.EndpointsConfigDump"

// buildDump renders the loop's state as a config dump. It shares the
// received Anys, which are never modified.
func (c *Client) buildDump() *adminpb.ConfigDump {
	clusters := &adminpb.ClustersConfigDump{VersionInfo: c.dumpVersion(wire.Cluster.URL)}
	listeners := &adminpb.ListenersConfigDump{VersionInfo: c.dumpVersion(wire.Listener.URL)}
	routes := &adminpb.RoutesConfigDump{}
	endpoints := &adminpb.EndpointsConfigDump{}
	for _, s := range c.sorted(wire.Cluster.URL) {
		use, warm, status, fail := c.dumpEntry(s)
		if use != nil || fail != nil {
			dc := &adminpb.ClustersConfigDump_DynamicCluster{ErrorState: fail, ClientStatus: status}
			if use != nil {
				dc.VersionInfo, dc.Cluster, dc.LastUpdated = use.version, use.any, stamp(use.updated)
			}
			clusters.DynamicActiveClusters = append(clusters.DynamicActiveClusters, dc)
		}
		if warm != nil {
			clusters.DynamicWarmingClusters = append(clusters.DynamicWarmingClusters, &adminpb.ClustersConfigDump_DynamicCluster{
				VersionInfo: warm.version, Cluster: warm.any, LastUpdated: stamp(warm.updated)})
		}
	}
	for _, s := range c.sorted(wire.Listener.URL) {
		use, warm, status, fail := c.dumpEntry(s)
		if use == nil && warm == nil && fail == nil {
			continue
		}
		dl := &adminpb.ListenersConfigDump_DynamicListener{Name: s.name, ErrorState: fail, ClientStatus: status}
		if use != nil {
			dl.ActiveState = &adminpb.ListenersConfigDump_DynamicListenerState{VersionInfo: use.version, Listener: use.any, LastUpdated: stamp(use.updated)}
		}
		if warm != nil {
			dl.WarmingState = &adminpb.ListenersConfigDump_DynamicListenerState{VersionInfo: warm.version, Listener: warm.any, LastUpdated: stamp(warm.updated)}
		}
		listeners.DynamicListeners = append(listeners.DynamicListeners, dl)
	}
	for _, s := range c.sorted(wire.Route.URL) {
		if use, _, status, fail := c.dumpEntry(s); use != nil || fail != nil {
			dr := &adminpb.RoutesConfigDump_DynamicRouteConfig{ErrorState: fail, ClientStatus: status}
			if use != nil {
				dr.VersionInfo, dr.RouteConfig, dr.LastUpdated = use.version, use.any, stamp(use.updated)
			}
			if !c.fault(FaultDumpOmitsRoutes) { // breaks OBS-1 when set
				routes.DynamicRouteConfigs = append(routes.DynamicRouteConfigs, dr)
			}
		}
	}
	for _, s := range c.sorted(wire.Endpoint.URL) {
		if use, _, status, fail := c.dumpEntry(s); use != nil || fail != nil {
			de := &adminpb.EndpointsConfigDump_DynamicEndpointConfig{ErrorState: fail, ClientStatus: status}
			if use != nil {
				de.VersionInfo, de.EndpointConfig, de.LastUpdated = use.version, use.any, stamp(use.updated)
			}
			endpoints.DynamicEndpointConfigs = append(endpoints.DynamicEndpointConfigs, de)
		}
	}
	dump := &adminpb.ConfigDump{}
	for _, m := range []proto.Message{clusters, listeners, routes, endpoints} {
		dump.Configs = append(dump.Configs, packDump(m))
	}
	return dump
}

// dumpEntry is dumpStates, with the faults of the dump's entries.
func (c *Client) dumpEntry(s *resState) (use, warm *revision, status adminpb.ClientResourceStatus, fail *adminpb.UpdateFailureState) {
	use, warm, status, fail = dumpStates(s)
	if c.fault(FaultDumpOmitsWarming) { // breaks WARM-1 and OBS-1 when set
		warm = nil
	}
	if fail != nil && c.fault(FaultDumpOmitsErrorDetails) { // breaks OBS-1 when set
		fail.Details = ""
	}
	return use, warm, status, fail
}

// dumpVersion is the version_info of a dump: the last SotW version_info,
// or delta system_version_info, accepted for the type.
func (c *Client) dumpVersion(u string) string {
	if c.cfg.Variant.IsDelta() {
		return c.sysVersions[u]
	}
	return c.versions[u]
}

// dumpStates splits s into its dump entries: the version in use, the one
// warming, the client_status of the entry in use and the last rejected
// update. Versions and status come from resState.shown, as in CSDS; an
// entry with only a warming version carries no status, as in Envoy.
func dumpStates(s *resState) (use, warm *revision, status adminpb.ClientResourceStatus, fail *adminpb.UpdateFailureState) {
	use, warm, status = s.shown()
	if status == statusNacked {
		// The rejected content is not kept: the failed configuration is an
		// empty resource of the type carrying only the name.
		failed, err := wire.Renamed(&anypb.Any{TypeUrl: s.typ}, s.name)
		if err != nil {
			panic(fmt.Sprintf("refclient: naming an empty %s: %v", s.typ, err)) // cannot happen for the types dumped
		}
		fail = &adminpb.UpdateFailureState{Details: s.errDetails, VersionInfo: s.errVersion, FailedConfiguration: failed}
	}
	if use == nil && fail == nil {
		status = adminpb.ClientResourceStatus_UNKNOWN
	}
	return use, warm, status, fail
}

// stamp is a dump's last_updated: unset for a zero time.
func stamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// packDump packs one section of the dump; the sections are generated
// messages linked in, so packing cannot fail.
func packDump(m proto.Message) *anypb.Any {
	a, err := anypb.New(m)
	if err != nil {
		panic(fmt.Sprintf("refclient: packing %T: %v", m, err)) // cannot happen for generated messages
	}
	return a
}

// lenientResolver resolves the types this binary links in, and shows any
// other Any by its @type alone (its content read as an empty message), so
// that a resource carrying extensions unknown here never breaks the dump.
type lenientResolver struct{}

func (lenientResolver) FindMessageByName(n protoreflect.FullName) (protoreflect.MessageType, error) {
	return protoregistry.GlobalTypes.FindMessageByName(n)
}

func (lenientResolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := protoregistry.GlobalTypes.FindMessageByURL(url); err == nil {
		return mt, nil
	}
	return (&emptypb.Empty{}).ProtoReflect().Type(), nil
}

func (lenientResolver) FindExtensionByName(n protoreflect.FullName) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByName(n)
}

func (lenientResolver) FindExtensionByNumber(m protoreflect.FullName, n protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	return protoregistry.GlobalTypes.FindExtensionByNumber(m, n)
}
