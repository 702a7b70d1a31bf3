package wire

import "google.golang.org/protobuf/types/known/structpb"

// StringStruct is node.metadata made of string values by key (the
// harness's --node-metadata), or nil for none: the suites' fake clients
// and the load clients send the same.
func StringStruct(m map[string]string) *structpb.Struct {
	if len(m) == 0 {
		return nil
	}
	fields := make(map[string]*structpb.Value, len(m))
	for k, v := range m {
		fields[k] = structpb.NewStringValue(v)
	}
	return &structpb.Struct{Fields: fields}
}
