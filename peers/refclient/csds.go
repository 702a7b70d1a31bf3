package refclient

import (
	"cmp"
	"context"
	"errors"
	"io"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	statuspb "github.com/envoyproxy/go-control-plane/envoy/service/status/v3"
	"google.golang.org/grpc"
)

// csdsServer answers the Client Status Discovery Service with the client's
// current view, the oracle of the client-role scenarios (OBS-1). Node
// matchers are ignored: the server only ever describes this one client.
type csdsServer struct {
	statuspb.UnimplementedClientStatusDiscoveryServiceServer
	c *Client
}

// FetchClientStatus returns the current view.
func (s csdsServer) FetchClientStatus(context.Context, *statuspb.ClientStatusRequest) (*statuspb.ClientStatusResponse, error) {
	return &statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{s.c.current()}}, nil
}

// StreamClientStatus answers every request on the stream with the current
// view.
func (s csdsServer) StreamClientStatus(st grpc.BidiStreamingServer[statuspb.ClientStatusRequest, statuspb.ClientStatusResponse]) error {
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := st.Send(&statuspb.ClientStatusResponse{Config: []*statuspb.ClientConfig{s.c.current()}}); err != nil {
			return err
		}
	}
}

// buildSnapshot renders the loop's state as one ClientConfig: one generic
// xDS config per watched resource, in chain order then by name. The
// snapshot shares the received Anys, which are never modified.
func (c *Client) buildSnapshot() *statuspb.ClientConfig {
	cfg := &statuspb.ClientConfig{Node: c.baseNode()}
	for _, t := range c.types() {
		states := c.sorted(t.URL)
		for _, s := range c.unrequested {
			if s.typ == t.URL {
				states = append(states, s)
			}
		}
		for _, s := range states {
			use, warm, status := s.shown()
			if status == statusDoesNotExist && c.fault(FaultStatusOmitsMissing) {
				continue // OBS-1 broken: what does not exist is not shown at all
			}
			g := &statuspb.ClientConfig_GenericXdsConfig{TypeUrl: s.typ, Name: s.name, ClientStatus: status}
			if sp := c.spellings[s.typ][s.name]; sp != "" && sp != s.name && c.fault(FaultStatusSplitsSpellings) {
				// XDSTP-3, OBS-1 broken: the subscribed name waits on, the
				// name as delivered is another entry.
				cfg.GenericXdsConfigs = append(cfg.GenericXdsConfigs, &statuspb.ClientConfig_GenericXdsConfig{TypeUrl: s.typ, Name: s.name, ClientStatus: statusRequested})
				g.Name = sp
			}
			// The version in use; with none yet (Envoy profile), the one
			// warming, shown as only REQUESTED.
			if rev := cmp.Or(use, warm); rev != nil {
				g.VersionInfo, g.XdsConfig = rev.version, rev.any
			}
			if c.fault(FaultStatusShowsFirstConfig) && s.firstAny != nil {
				g.XdsConfig = s.firstAny // OBS-1 broken
			}
			if status == statusReceivedError {
				// ERR-12: the error, with the last accepted version, if any.
				if c.fault(FaultErrorsNotShown) {
					g.ClientStatus = statusRequested // ERR-12 broken
					if use != nil {
						g.ClientStatus = statusAcked
					}
				} else {
					g.ErrorState = &admin.UpdateFailureState{Details: s.errDetails, VersionInfo: s.errVersion}
				}
			}
			if status == statusNacked {
				switch {
				case c.fault(FaultNoErrorState):
					g.ClientStatus = statusAcked // ERR-12, OBS-1 broken
				case c.fault(FaultEmptyErrorState):
					g.ErrorState = &admin.UpdateFailureState{VersionInfo: s.errVersion} // ERR-12 broken
				default:
					g.ErrorState = &admin.UpdateFailureState{Details: s.errDetails, VersionInfo: s.errVersion}
				}
				if use == nil && c.fault(FaultStatusShowsRejectedVersion) {
					g.VersionInfo = s.errVersion // OBS-1 broken: as if the rejected version were in use
				}
			}
			cfg.GenericXdsConfigs = append(cfg.GenericXdsConfigs, g)
		}
	}
	return cfg
}
