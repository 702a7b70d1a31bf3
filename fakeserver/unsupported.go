package fakeserver

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// unsupported records the calls a client makes on methods the fake server
// does not serve: the xDS v2 services (envoy.api.v2.*,
// envoy.service.discovery.v2.AggregatedDiscoveryService) above all. A
// client that speaks only those never opens a stream the scenarios can
// use, and without this record it would be reported as never having
// connected at all.
type unsupported struct {
	mu      sync.Mutex
	methods []string // distinct, at most maxUnsupportedMethods
	v2      bool
	v2Call  chan struct{} // closed at the first call of an xDS v2 method
}

// maxUnsupportedMethods bounds the record: a client that retries calls
// the same few methods again and again.
const maxUnsupportedMethods = 8

func newUnsupported() *unsupported { return &unsupported{v2Call: make(chan struct{})} }

// record notes a call on method and reports whether the method is new.
func (u *unsupported) record(method string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if IsV2(method) && !u.v2 {
		u.v2 = true
		close(u.v2Call)
	}
	if slices.Contains(u.methods, method) || len(u.methods) >= maxUnsupportedMethods {
		return false
	}
	u.methods = append(u.methods, method)
	return true
}

// serveUnknown is the fake server's handler of every method it does not
// serve (grpc.UnknownServiceHandler): it records the attempt and answers
// Unimplemented, as a real server without the method would.
func (s *Server) serveUnknown(_ any, ss grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(ss)
	if s.unsupported.record(method) {
		s.opts.Transcript.Event("server", "the client called "+method+", which the fake management server does not serve: "+Unsupported([]string{method}))
	}
	return status.Errorf(codes.Unimplemented, "xdsconform: %s is not served (this harness serves xDS v3 only)", method)
}

// UnsupportedCalls returns the distinct methods the client called that the
// fake server does not serve (a bounded list), oldest first.
func (s *Server) UnsupportedCalls() []string {
	s.unsupported.mu.Lock()
	defer s.unsupported.mu.Unlock()
	return slices.Clone(s.unsupported.methods)
}

// V2Called is closed at the client's first call on an xDS v2 method, so
// a wait for the client's first stream can end as soon as the client
// shows it speaks v2. Other methods the fake server does not serve do not
// end the wait: a client may call them (load reporting, say) before it
// opens its discovery stream.
func (s *Server) V2Called() <-chan struct{} { return s.unsupported.v2Call }

// Unsupported says what methods, the calls of a client the fake server
// could not serve, mean: an xDS v2 client, or a service that is not an
// xDS discovery service.
func Unsupported(methods []string) string {
	var v2 []string
	for _, m := range methods {
		if IsV2(m) {
			v2 = append(v2, m)
		}
	}
	if len(v2) > 0 {
		return fmt.Sprintf("the client speaks xDS v2 (%s), which this harness does not test", strings.Join(v2, ", "))
	}
	return fmt.Sprintf("the client called %s, which is not an xDS v3 discovery service", strings.Join(methods, ", "))
}

// IsV2 reports whether method ("/service/method") belongs to the xDS v2
// API: envoy.api.v2.* (the per-type services) or envoy.service.*.v2
// (ADS, SDS, RTDS, LRS of v2).
func IsV2(method string) bool {
	service, _, _ := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if strings.HasPrefix(service, "envoy.api.v2.") {
		return true
	}
	parts := strings.Split(service, ".")
	return len(parts) >= 4 && parts[0] == "envoy" && parts[1] == "service" && slices.Contains(parts[2:len(parts)-1], "v2")
}
