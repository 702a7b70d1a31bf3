package wire

import (
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestClassifySizeRefusal: gRPC words a message over the local receive
// limit and a peer's refusal of one of ours alike; only the sizes the
// stream sent tell them apart, and only grpc-go's own words are ever the
// harness's.
func TestClassifySizeRefusal(t *testing.T) {
	var sent SentSizes
	sent.Add(100)
	sent.Add(5 << 20)
	grpcGo := func(n, m int) error {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", n, m)
	}
	for _, c := range []struct {
		name string
		err  error
		sent *SentSizes
		ok   bool
		want SizeRefusal
	}{
		{"our own limit, nothing of that size sent", grpcGo(6<<20, 4<<20), &sent, true, SizeRefusal{Ours: true, Size: 6 << 20, Limit: 4 << 20}},
		{"our own limit, nothing sent at all", grpcGo(6<<20, 4<<20), nil, true, SizeRefusal{Ours: true, Size: 6 << 20, Limit: 4 << 20}},
		{"a grpc-go peer refusing what we sent", grpcGo(5<<20, 4<<20), &sent, true, SizeRefusal{Size: 5 << 20, Limit: 4 << 20}},
		{"a C-core peer refusing what we sent", status.Errorf(codes.ResourceExhausted, "Received message larger than max (%d vs. %d)", 5<<20, 4<<20), &sent, true, SizeRefusal{Size: 5 << 20, Limit: 4 << 20}},
		{"a C-core peer, in words that are not grpc-go's", status.Errorf(codes.ResourceExhausted, "Received message larger than max (%d vs. %d)", 7<<20, 4<<20), &sent, true, SizeRefusal{Size: 7 << 20, Limit: 4 << 20}},
		{"our own limit after decompression", status.Errorf(codes.ResourceExhausted, "grpc: received message after decompression larger than max %d", 4<<20), &sent, true, SizeRefusal{Ours: true}},
		{"wrapped", fmt.Errorf("waiting: %w", grpcGo(6<<20, 4<<20)), &sent, true, SizeRefusal{Ours: true, Size: 6 << 20, Limit: 4 << 20}},
		{"another ResourceExhausted", status.Error(codes.ResourceExhausted, "quota exceeded"), &sent, false, SizeRefusal{}},
		{"another code", status.Error(codes.Internal, "grpc: received message larger than max (1 vs. 0)"), &sent, false, SizeRefusal{}},
	} {
		got, ok := ClassifySizeRefusal(c.err, c.sent)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
	if !OwnRecvLimit(grpcGo(2, 1)) || OwnRecvLimit(status.Errorf(codes.ResourceExhausted, "Received message larger than max (2 vs. 1)")) {
		t.Errorf("OwnRecvLimit reads grpc-go's own words only")
	}
}

// TestSentSizesBounded: SentSizes keeps the last sentKept sizes, not
// every one.
func TestSentSizesBounded(t *testing.T) {
	var s SentSizes
	for i := 1; i <= 3*sentKept; i++ {
		s.Add(i)
	}
	if s.has(1) || !s.has(3*sentKept) || !s.has(2*sentKept+1) || s.has(2*sentKept) {
		t.Errorf("SentSizes keeps exactly the last %d sizes", sentKept)
	}
}
