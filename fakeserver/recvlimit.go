package fakeserver

// DefaultMaxRecvSize is the largest request accepted from a client unless
// Options.MaxRecvSize says otherwise: well above grpc-go's default of
// 4 MiB, since xDS sets no limit, and no larger than a run's transcript
// budget (transcript.DefaultBudget).
const DefaultMaxRecvSize = 16 << 20

func maxRecvSize(n int) int {
	if n <= 0 {
		return DefaultMaxRecvSize
	}
	return n
}
