package record

import (
	"fmt"

	"google.golang.org/grpc/mem"
)

// frame is one gRPC message as bytes, exactly as it came off the wire
// (after the transport took off its framing and any compression): the
// proxy forwards it without decoding it, so what the other side gets is
// what was sent, field order, unknown fields and all.
type frame struct{ data []byte }

// rawCodec passes frames through. Its name is "proto" so that the content
// type both sides see is the one an xDS peer expects.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*frame)
	if !ok {
		return nil, fmt.Errorf("record: cannot marshal %T, only raw frames", v)
	}
	return mem.BufferSlice{mem.SliceBuffer(f.data)}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*frame)
	if !ok {
		return fmt.Errorf("record: cannot unmarshal into %T, only raw frames", v)
	}
	// data is freed when Unmarshal returns: keep a copy of our own.
	f.data = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }
