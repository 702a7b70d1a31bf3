package refclient

import (
	"fmt"

	admin "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc/codes"
)

// statusReceivedError is the CSDS status of a resource the server sent an
// error for (ERR-12; csds.proto CLIENT_RECEIVED_ERROR).
const statusReceivedError = admin.ClientResourceStatus_RECEIVED_ERROR

// errKind is what a per-resource error (xRFC TP3) does to the resource.
type errKind int

const (
	// errTransient keeps the cached resource (ERR-7, ERR-9).
	errTransient errKind = iota
	// errData drops the cached resource (ERR-8, PERMISSION_DENIED).
	errData
	// errNotFound is handled exactly like the does-not-exist timer firing
	// (ERR-8), and in delta like a removal (ERR-10).
	errNotFound
)

// kindOf classifies an error code as TP3 §Protocol Behavior does:
// UNAVAILABLE, INTERNAL and UNKNOWN are transient, NOT_FOUND and
// PERMISSION_DENIED data errors, and any other code is treated as
// transient, since a client cannot know what a code it was not told about
// means for the data it holds.
func (c *Client) kindOf(code codes.Code, delta bool) errKind {
	var k errKind
	switch code {
	case codes.Unavailable, codes.Internal, codes.Unknown:
		k = errTransient
		if c.fault(FaultTransientDropsCache) {
			k = errData // ERR-7 broken
		}
	case codes.NotFound:
		k = errNotFound
	case codes.PermissionDenied:
		k = errData
	default:
		k = errTransient
		if c.fault(FaultUnknownCodeDrops) {
			k = errData // ERR-9 broken
		}
	}
	if k != errTransient && c.fault(FaultIgnoreDataErrors) {
		k = errTransient // ERR-8 not used (MAY)
	}
	if k == errNotFound && delta && c.fault(FaultDeltaNotFoundKept) {
		k = errTransient // ERR-10 broken
	}
	return k
}

// applyErrors applies the resource_errors of a response of type u at
// version to the watched resources they name; got are the names the
// response carried as resources, which win over an error for the same
// name (a server may not send both, ERR-2). An error is remembered until
// the resource arrives or a newer error replaces it (ERR-5), and ends the
// resource's does-not-exist timer (ERR-6). Errors for names not watched
// are ignored, as resources are (RES-3).
func (c *Client) applyErrors(u, version string, errs []*discovery.ResourceError, got map[string]bool, delta bool) {
	named := map[string]bool{}
	for _, e := range errs {
		name := e.GetResourceName().GetName()
		named[name] = true
		s := c.state(u, name)
		if s == nil && c.fault(FaultUnwatchedErrorEndsErrors) {
			break // ERR-12 broken: the errors after it go unread
		}
		if s == nil || got[name] {
			continue
		}
		code := codes.Code(e.GetErrorDetail().GetCode())
		switch c.kindOf(code, delta) {
		case errNotFound:
			c.remove(s) // DOES_NOT_EXIST, as when the timer fires (ERR-8, ERR-10)
			continue
		case errData:
			c.remove(s) // the cached resource is dropped (ERR-8)
		}
		s.status = statusReceivedError
		s.errDetails = fmt.Sprintf("%s: %s", code, e.GetErrorDetail().GetMessage())
		s.errVersion = version
		if !c.fault(FaultErrorKeepsTimer) { // else ERR-6 broken
			c.stopDNE(u, name)
		}
	}
	if !c.fault(FaultForgetErrors) {
		return
	}
	// ERR-5 broken: an error not repeated is taken as gone.
	for _, s := range c.res[u] {
		if s.status == statusReceivedError && !named[s.name] && !got[s.name] {
			s.status, s.errDetails, s.errVersion = statusRequested, "", ""
			if s.any != nil {
				s.status = statusAcked
			}
		}
	}
}

// errorNames is the set of names a response's resource_errors name.
func errorNames(errs []*discovery.ResourceError) map[string]bool {
	out := map[string]bool{}
	for _, e := range errs {
		out[e.GetResourceName().GetName()] = true
	}
	return out
}

// itemNames is the set of names of a response's decoded resources.
func itemNames(items []item) map[string]bool {
	out := map[string]bool{}
	for _, it := range items {
		out[it.name] = true
	}
	return out
}
