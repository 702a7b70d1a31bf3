package wire

import (
	"regexp"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

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

// SizeRefusal is a stream ended because a message was refused for its
// size, and whose refusal it was: the harness's own receive limit, or the
// peer's.
type SizeRefusal struct {
	// Ours is true when the harness's own receive limit refused a message
	// the peer sent (--max-recv-size); false when the peer refused a
	// message the harness sent and said so with a status of its own.
	Ours bool
	// Size and Limit are the refused message's size and the limit it
	// broke, in bytes, as the status gives them ("N vs. M"); 0 when it
	// does not.
	Size, Limit int
}

// sentKept is how many message sizes SentSizes keeps per stream. A peer
// that refuses a message ends the stream at once, so the refused message
// is among the last few sent when the status arrives; a few more may have
// left before it did (an ACK in flight), far fewer than this.
const sentKept = 16

// SentSizes remembers the sizes, in bytes on the wire, of the last
// messages the harness sent on one stream: the evidence that a size
// refusal is the peer's (see ClassifySizeRefusal). It holds sentKept
// integers, however many messages go out. Its zero value is ready; it is
// safe for concurrent use.
type SentSizes struct {
	mu   sync.Mutex
	last [sentKept]int
	n    int // sizes added so far; the ring's next slot is n % sentKept
}

// Add records that a message of size bytes was sent.
func (s *SentSizes) Add(size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[s.n%sentKept] = size
	s.n++
}

// has reports whether a message of size bytes is among the last sent.
func (s *SentSizes) has(size int) bool {
	if s == nil || size <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range min(s.n, sentKept) {
		if s.last[i] == size {
			return true
		}
	}
	return false
}

// sizeRefused matches the words gRPC uses for a message refused for its
// size, grpc-go's and C-core's alike ("grpc: received message larger than
// max (N vs. M)", "Received message larger than max (N vs. M)"), and
// captures the sizes when they are given.
var sizeRefused = regexp.MustCompile(`larger than max(?: length allowed on current machine)?(?: \((\d+) vs\. (\d+)\))?`)

// ownWords matches grpc-go's wording when its own receive path refuses a
// message over the local limit (rpc_util.go: recvMsg, and the checks after
// decompression). It is not anchored: status.FromError gives a wrapped
// status the whole error's text.
var ownWords = regexp.MustCompile(`grpc: (?:received )?message (?:after decompression )?larger than max`)

// ClassifySizeRefusal reports whether err, how the receive side of a
// client stream ended, says a message was refused for its size, and whose
// refusal it was. gRPC cannot tell us: a message over the local receive
// limit, refused by our own receive path, and a status the peer sent after
// refusing a message of ours (a grpc-go server says exactly what our own
// grpc-go says) come out of RecvMsg alike, ResourceExhausted and
// "larger than max (N vs. M)". What tells them apart is what the stream
// carried: a peer can only refuse a message it was sent, so a refused
// size that is one the harness sent on the stream (sent) makes the
// refusal the peer's. Otherwise it is ours only in grpc-go's own words
// for its receive path; any other wording is the peer's status.
//
// A message the peer sent of exactly the size of one the harness sent,
// and over the harness's limit, would be taken for the peer's refusal;
// requests and responses being different messages, that is a coincidence
// of byte counts no scenario arranges.
func ClassifySizeRefusal(err error, sent *SentSizes) (SizeRefusal, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return SizeRefusal{}, false
	}
	m := sizeRefused.FindStringSubmatch(st.Message())
	if m == nil {
		return SizeRefusal{}, false
	}
	r := SizeRefusal{}
	r.Size, _ = strconv.Atoi(m[1])
	r.Limit, _ = strconv.Atoi(m[2])
	r.Ours = !sent.has(r.Size) && ownWords.MatchString(st.Message())
	return r, true
}

// OwnRecvLimit reports whether err is grpc-go refusing, on this side, a
// received message over the local receive limit. It reads the wording
// only, so it is sound only for a receive that cannot carry a status from
// the peer: a server stream's RecvMsg (a client cannot send a server a
// status). For a client stream, use ClassifySizeRefusal.
func OwnRecvLimit(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && ownWords.MatchString(st.Message())
}
