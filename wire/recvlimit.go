package wire

// DefaultMaxRecvSize is the receive limit of every xDS connection of the
// harness unless configured (--max-recv-size): the largest message a fake
// client accepts from a server under test and a fake server from a client
// under test. It is well above grpc-go's default of 4 MiB, which real
// configurations (a Cluster list of a large mesh) exceed, since xDS sets
// no limit; and no larger than the byte budgets of a run
// (transcript.DefaultBudget, transcript.DefaultQueueBudget): a fake peer
// keeps one message whatever its size, so this limit is what bounds it.
// It lives here, in the package both roles' peers import, so the two
// cannot drift apart.
const DefaultMaxRecvSize = 16 << 20

// MaxRecvSize is the receive limit n, or DefaultMaxRecvSize for 0 (or
// less).
func MaxRecvSize(n int) int {
	if n <= 0 {
		return DefaultMaxRecvSize
	}
	return n
}
