package fakeserver

// DefaultMaxRecvSize is the largest request accepted from a client unless
// Options.MaxRecvSize says otherwise: well above grpc-go's default of
// 4 MiB, since xDS sets no limit.
const DefaultMaxRecvSize = 64 << 20

func maxRecvSize(n int) int {
	if n <= 0 {
		return DefaultMaxRecvSize
	}
	return n
}
