package wire

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
)

// SotWServerStream is the server side of a SotW discovery stream. It has
// the shape of go-control-plane's generated stream servers and of its
// stream.Stream, so one handler serves every SotW method.
type SotWServerStream = grpc.BidiStreamingServer[discovery.DiscoveryRequest, discovery.DiscoveryResponse]

// DeltaServerStream is the server side of an incremental discovery stream.
type DeltaServerStream = grpc.BidiStreamingServer[discovery.DeltaDiscoveryRequest, discovery.DeltaDiscoveryResponse]

// Handlers serve discovery streams. service is the type of the per-type
// service the stream was opened on, or nil for ADS.
type Handlers struct {
	SotW  func(s SotWServerStream, service *Type) error
	Delta func(s DeltaServerStream, service *Type) error
}

// RegisterServices registers the streaming methods of ADS and of every
// per-type discovery service (SotW and Delta; VHDS Delta only, STREAM-10) on
// g, all dispatching to h. Every management server the harness runs, real
// or fake, registers through here instead of nine generated service
// adapters each. The unary REST Fetch methods are not registered: the
// harness speaks gRPC streams only.
func RegisterServices(g grpc.ServiceRegistrar, h Handlers) {
	g.RegisterService(serviceDesc(ADSService, ADSSotWMethod, ADSDeltaMethod, nil, h), struct{}{})
	for i := range AllTypes {
		t := AllTypes[i]
		g.RegisterService(serviceDesc(t.Service, t.SotWMethod, t.DeltaMethod, &t, h), struct{}{})
	}
}

func serviceDesc(name, sotwMethod, deltaMethod string, t *Type, h Handlers) *grpc.ServiceDesc {
	// HandlerType *any: the handlers are closures, so there is no service
	// implementation for grpc to type-check.
	d := &grpc.ServiceDesc{ServiceName: name, HandlerType: (*any)(nil)}
	if sotwMethod != "" {
		d.Streams = append(d.Streams, grpc.StreamDesc{
			StreamName: sotwMethod, ServerStreams: true, ClientStreams: true,
			Handler: func(_ any, st grpc.ServerStream) error {
				return h.SotW(&grpc.GenericServerStream[discovery.DiscoveryRequest, discovery.DiscoveryResponse]{ServerStream: st}, t)
			},
		})
	}
	d.Streams = append(d.Streams, grpc.StreamDesc{
		StreamName: deltaMethod, ServerStreams: true, ClientStreams: true,
		Handler: func(_ any, st grpc.ServerStream) error {
			return h.Delta(&grpc.GenericServerStream[discovery.DeltaDiscoveryRequest, discovery.DeltaDiscoveryResponse]{ServerStream: st}, t)
		},
	})
	return d
}
