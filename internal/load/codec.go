package load

import (
	"fmt"

	"google.golang.org/protobuf/proto"
)

// raw is a message as it came off the wire, not decoded.
type raw struct{ b []byte }

// rawCodec lets a stream's receive loop take messages as bytes and leave
// decoding to the workers (see runner.work): the loop then stays shallow,
// and with ten thousand of them it is their stacks, not their heap, that
// weigh most. It sends proto messages as the proto codec does, under the
// same name, so the content type on the wire is unchanged.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("load codec: cannot send %T", v)
	}
	return proto.Marshal(m)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	r, ok := v.(*raw)
	if !ok {
		return fmt.Errorf("load codec: cannot receive into %T", v)
	}
	// The transport may reuse data once Unmarshal returns.
	r.b = append(r.b[:0], data...)
	return nil
}
