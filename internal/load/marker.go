package load

import (
	"bytes"
	"fmt"
	"strconv"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	runtime "github.com/envoyproxy/go-control-plane/envoy/service/runtime/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/xdsconform/xdsconform/wire"
)

// markerPrefix starts every marker. A marker is
//
//	xdsconform-load/RUN/RESOURCE/CHANGE/ORIGIN/SET/g|b
//
// RUN the run id, RESOURCE the resource's index in the plan, CHANGE the
// change id (0: the initial state), ORIGIN the change's origin and SET
// when the fixture was asked to set this copy of it (Unix nanoseconds,
// the driving shard's wall clock), and g or b whether the clients are to
// ACK or NACK it. ORIGIN and SET differ on a node-scoped target, where a
// change is one set per node, made Options.Parallel at a time: the
// push→ACK latency runs from SET, so it is the server's and not the
// fixture's fan-out, and the convergence from ORIGIN. It is a string inside the resource (in
// its metadata), so it reaches the wire as plain bytes and a client finds
// it with one scan of the resource's bytes, whatever the type, without
// decoding.
const markerPrefix = "xdsconform-load/"

// metadataKey is the filter_metadata key the marker is kept under.
const metadataKey = "xdsconform.load"

// marker is what a marker says.
type marker struct {
	res    int
	change int64
	origin int64
	set    int64
	bad    bool
}

// String renders m for run.
func (m marker) render(run string) string {
	g := "g"
	if m.bad {
		g = "b"
	}
	return fmt.Sprintf("%s%s/%d/%d/%d/%d/%s", markerPrefix, run, m.res, m.change, m.origin, m.set, g)
}

// findMarker finds the marker of run in b, a resource's bytes; ok is
// false when there is none (a resource this run did not set, or set by
// another run).
func findMarker(b []byte, run string) (m marker, ok bool) {
	i := bytes.Index(b, []byte(markerPrefix))
	if i < 0 {
		return marker{}, false
	}
	rest := b[i+len(markerPrefix):]
	if !bytes.HasPrefix(rest, []byte(run)) || len(rest) <= len(run) || rest[len(run)] != '/' {
		return marker{}, false
	}
	rest = rest[len(run)+1:]
	var nums [4]int64
	for k := range nums {
		j := 0
		for j < len(rest) && j < 20 && rest[j] >= '0' && rest[j] <= '9' {
			j++
		}
		if j == 0 || j >= len(rest) || rest[j] != '/' {
			return marker{}, false
		}
		n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
		if err != nil {
			return marker{}, false
		}
		nums[k] = n
		rest = rest[j+1:]
	}
	if len(rest) == 0 || (rest[0] != 'g' && rest[0] != 'b') || nums[0] > 1<<20 {
		return marker{}, false
	}
	return marker{res: int(nums[0]), change: nums[1], origin: nums[2], set: nums[3], bad: rest[0] == 'b'}, true
}

// build is resource r of the plan at change, carrying its marker. rev,
// the change id, also changes the content a client reads, so a change is
// a change to any client, not only to one reading the marker.
func (p *plan) build(r int, m marker) (*anypb.Any, error) {
	res := p.resources[r]
	rev := int(m.change % 1_000_000)
	fields := map[string]*structpb.Value{"marker": structpb.NewStringValue(m.render(p.RunID))}
	if p.padding != "" {
		fields["padding"] = structpb.NewStringValue(p.padding)
	}
	meta := &core.Metadata{FilterMetadata: map[string]*structpb.Struct{metadataKey: {Fields: fields}}}
	var msg proto.Message
	switch res.t.URL {
	case wire.Listener.URL:
		l := wire.ClientListener(res.name, res.ref, rev)
		l.Metadata = meta
		msg = l
	case wire.Route.URL:
		rc := wire.ClientRoute(res.name, res.ref, rev)
		if res.ref == "" {
			rc = wire.ClientRoute(res.name, "backend", rev)
		}
		rc.Metadata = meta
		msg = rc
	case wire.Cluster.URL:
		c := wire.ClientCluster(res.name, rev)
		c.Metadata = meta
		msg = c
	case wire.Endpoint.URL:
		e := wire.ClientEndpoints(res.name, rev)
		e.Endpoints[0].LbEndpoints[0].Metadata = meta
		msg = e
	case wire.Runtime.URL:
		rt := wire.Build(wire.Runtime, res.name, rev).(*runtime.Runtime)
		rt.Layer.Fields[metadataKey] = structpb.NewStringValue(m.render(p.RunID))
		if p.padding != "" {
			rt.Layer.Fields["padding"] = structpb.NewStringValue(p.padding)
		}
		msg = rt
	default:
		return nil, fmt.Errorf("load runs build no %s resource", res.t.Short)
	}
	return anypb.New(msg)
}
