package wire

import (
	"fmt"

	xdscore "github.com/cncf/xds/go/xds/core/v3"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/xdstp"
)

// named is implemented by every v3 resource message except the
// ClusterLoadAssignment, which names itself by cluster_name.
type named interface{ GetName() string }

// NameOf returns the resource name carried by m.
func NameOf(m proto.Message) string {
	if cla, ok := m.(interface{ GetClusterName() string }); ok {
		return cla.GetClusterName()
	}
	if n, ok := m.(named); ok {
		return n.GetName()
	}
	return ""
}

// Unpack decodes a packed resource. A SotW Resource wrapper
// (envoy.service.discovery.v3.Resource) is unwrapped, so the returned
// message is always the resource itself (nil if the wrapper is empty).
func Unpack(a *anypb.Any) (proto.Message, error) {
	if a == nil {
		return nil, fmt.Errorf("nil resource")
	}
	if a.GetTypeUrl() == ResourceWrapperURL {
		var r discovery.Resource
		if err := a.UnmarshalTo(&r); err != nil {
			return nil, fmt.Errorf("decode Resource wrapper: %w", err)
		}
		if r.GetResource() == nil {
			return nil, nil
		}
		return Unpack(r.GetResource())
	}
	if a.GetTypeUrl() == xdstp.LocatorTypeURL {
		// A redirect (REDIR-1): the payload locates the resource.
		l := &xdscore.ResourceLocator{}
		if err := a.UnmarshalTo(l); err != nil {
			return nil, fmt.Errorf("decode redirect ResourceLocator: %w", err)
		}
		return l, nil
	}
	t, ok := TypeByExactURL(a.GetTypeUrl())
	if !ok {
		return nil, fmt.Errorf("unknown resource type %q", a.GetTypeUrl())
	}
	m := t.New()
	if err := a.UnmarshalTo(m); err != nil {
		return nil, fmt.Errorf("decode %s: %w", t.Short, err)
	}
	return m, nil
}

// InnerTypeURL is the type URL of the resource inside a, looking through a
// SotW Resource wrapper; "" for an empty wrapper.
func InnerTypeURL(a *anypb.Any) string { return Inner(a).GetTypeUrl() }

// Inner is the packed resource a carries, looking through a SotW
// Resource wrapper: nil for an empty wrapper, a itself for anything else
// (a wrapper that does not decode included).
func Inner(a *anypb.Any) *anypb.Any {
	if a.GetTypeUrl() != ResourceWrapperURL {
		return a
	}
	var r discovery.Resource
	if err := a.UnmarshalTo(&r); err != nil {
		return a
	}
	return r.GetResource()
}

// AnyName returns the name of a packed resource, reading a Resource
// wrapper's own name first.
func AnyName(a *anypb.Any) (string, error) {
	if a.GetTypeUrl() == ResourceWrapperURL {
		var r discovery.Resource
		if err := a.UnmarshalTo(&r); err != nil {
			return "", fmt.Errorf("decode Resource wrapper: %w", err)
		}
		if r.GetName() != "" {
			return r.GetName(), nil
		}
	}
	m, err := Unpack(a)
	if err != nil {
		return "", err
	}
	if m == nil {
		return "", nil
	}
	return NameOf(m), nil
}

// Renamed returns a copy of the packed resource a with its own name field
// (cluster_name for a ClusterLoadAssignment) set to name: what a server
// that generates names serves.
func Renamed(a *anypb.Any, name string) (*anypb.Any, error) {
	m, err := a.UnmarshalNew()
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", a.GetTypeUrl(), err)
	}
	fields := m.ProtoReflect().Descriptor().Fields()
	f := fields.ByName("name")
	if _, cla := m.(interface{ GetClusterName() string }); cla {
		f = fields.ByName("cluster_name")
	}
	if f == nil || f.Kind() != protoreflect.StringKind {
		return nil, fmt.Errorf("%s has no name field", a.GetTypeUrl())
	}
	m.ProtoReflect().Set(f, protoreflect.ValueOfString(name))
	return anypb.New(m)
}
