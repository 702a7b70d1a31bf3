// Package observer reads what an xDS client under test has accepted,
// rejected, deleted or considers non-existent: the client's own status
// view, which the client-role scenarios compare with what the harness
// sent (OBS-1). Two sources are supported: the standard Client Status
// Discovery Service (gRPC clients) and Envoy's admin /config_dump.
package observer

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/anypb"
)

// State is a client's per-resource status, as named by CSDS
// (envoy.admin.v3.ClientResourceStatus).
type State string

// The states a client reports for a resource.
const (
	Requested     State = "REQUESTED"
	DoesNotExist  State = "DOES_NOT_EXIST"
	Acked         State = "ACKED"
	Nacked        State = "NACKED"
	ReceivedError State = "RECEIVED_ERROR"
	Timeout       State = "TIMEOUT"
	Unknown       State = "UNKNOWN"
)

// Resource is one resource in the client's status view.
type Resource struct {
	// TypeURL is the full type URL, always with the type.googleapis.com/
	// prefix whatever the client reported.
	TypeURL string
	// Name is the resource name.
	Name string
	// Version is the version of the resource the client is using: after
	// a NACK, still the last accepted one.
	Version string
	// State is the client's status for the resource.
	State State
	// Error is the error text of the last rejected update (CSDS
	// error_state.details), empty if none.
	Error string
	// ErrorVersion is the version of the rejected update, if reported.
	ErrorVersion string
	// Config is the resource the client is using, if reported.
	Config *anypb.Any
}

// Observer reads a client's current status view.
type Observer interface {
	// Observe returns every resource the client reports, in no particular
	// order. Errors mean the view could not be read (not that it is empty).
	Observe(ctx context.Context) ([]Resource, error)
	// Close releases the connection to the client's status endpoint.
	Close() error
}

// Find returns the resource of the given type and name in rs.
func Find(rs []Resource, typeURL, name string) (Resource, bool) {
	typeURL = NormalizeTypeURL(typeURL)
	for _, r := range rs {
		if r.TypeURL == typeURL && r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// NormalizeTypeURL adds the type.googleapis.com/ prefix when missing, since
// some clients (grpc-js) report bare message names.
func NormalizeTypeURL(u string) string {
	if u == "" || strings.Contains(u, "/") {
		return u
	}
	return "type.googleapis.com/" + u
}
