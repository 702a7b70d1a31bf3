package gcpserver

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// These few helpers stand in for testify, which the brief asked for: its
// v1.12.1 needs go.sum entries (go.yaml.in/yaml/v3, go-spew, go-difflib)
// that the module does not have yet, and go.sum is not this package's to
// edit. They keep testify's names so a later switch is mechanical.
type requireT struct{}
type assertT struct{}

var (
	require = requireT{}
	assert  = assertT{}
)

func (requireT) NoError(t *testing.T, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v %v", err, msg)
	}
}

func (requireT) Equal(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	if want != got {
		t.Fatalf("want %v, got %v %v", want, got, msg)
	}
}

func (requireT) Contains(t *testing.T, m map[string]proto.Message, name string, msg ...any) {
	t.Helper()
	if _, ok := m[name]; !ok {
		t.Fatalf("%q missing from %v %v", name, keys(m), msg)
	}
}

func (assertT) Contains(t *testing.T, m map[string]proto.Message, name string, msg ...any) {
	t.Helper()
	if _, ok := m[name]; !ok {
		t.Errorf("%q missing from %v %v", name, keys(m), msg)
	}
}

func (assertT) NotContains(t *testing.T, m map[string]proto.Message, name string, msg ...any) {
	t.Helper()
	if _, ok := m[name]; ok {
		t.Errorf("%q unexpectedly in %v %v", name, keys(m), msg)
	}
}

func (assertT) Equal(t *testing.T, want, got any, msg ...any) {
	t.Helper()
	if ws, ok := want.([]string); ok {
		if gs, ok := got.([]string); ok && slices.Equal(ws, gs) {
			return
		}
	} else if want == got {
		return
	}
	t.Errorf("want %v, got %v %v", want, got, msg)
}

func (assertT) True(t *testing.T, b bool, msg ...any) {
	t.Helper()
	if !b {
		t.Errorf("want true %v", msg)
	}
}

func (assertT) False(t *testing.T, b bool, msg ...any) {
	t.Helper()
	if b {
		t.Errorf("want false %v", msg)
	}
}

func (assertT) NotEmpty(t *testing.T, s string, msg ...any) {
	t.Helper()
	if s == "" {
		t.Errorf("want non-empty %v", msg)
	}
}

func (assertT) Empty(t *testing.T, n int, msg ...any) {
	t.Helper()
	if n != 0 {
		t.Errorf("want empty, got %d items %v", n, msg)
	}
}

func (assertT) Len(t *testing.T, n, want int, msg ...any) {
	t.Helper()
	if n != want {
		t.Errorf("want %d items, got %d %v", want, n, msg)
	}
}

func (assertT) NoError(t *testing.T, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v %v", err, msg)
	}
}

func (assertT) Error(t *testing.T, err error, msg ...any) {
	t.Helper()
	if err == nil {
		t.Errorf("want an error %v", msg)
	}
}

// ProtoEqual fails unless got is want.
func (assertT) ProtoEqual(t *testing.T, want, got proto.Message) {
	t.Helper()
	if !proto.Equal(want, got) {
		t.Errorf("messages differ:\nwant %s\ngot  %s", prototext.Format(want), prototext.Format(got))
	}
}

func keys(m map[string]proto.Message) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
