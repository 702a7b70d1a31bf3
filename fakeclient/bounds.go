package fakeclient

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/internal/wording"
)

// Bounds on what the client keeps. A server flooding responses, some of
// them megabytes long, must cost a bounded queue and a few lines, not one
// response and one line per message.
const (
	// QueueBytes bounds the responses one client keeps unconsumed for its
	// scenario, all types together, counted as twice their wire size (a
	// response is kept both raw and decoded) plus responseOverhead each.
	// Past it a response is still checked against every invariant and
	// watch and recorded in the transcript, but not queued, and neither is
	// any later one of its type until the scenario reconnects (so a
	// scenario never sees a later response as the next one); a scenario
	// waiting for one gets an ErrOverflow. A response is always kept when
	// nothing else is queued, whatever its size (the receive limit bounds
	// it). What the scenario consumes frees its room.
	QueueBytes = 8 << 20
	// queueFloor is the part of QueueBytes a client always has; the rest
	// it borrows from the run's queue budget (Options.Transcript's
	// QueueBudget), so that many pairs at once cannot each queue
	// QueueBytes.
	queueFloor       = 64 << 10
	responseOverhead = 256
	// maxNonces bounds the nonces remembered per type and stream for
	// NONCE-2: past it the set starts afresh, so a reused nonce is caught
	// within windows of maxNonces responses.
	maxNonces = 4096
	// maxNames bounds the resource names remembered per type (versions
	// held for TTL-3, versions known for delta reconnects); past it new
	// names are not remembered, and TTL-3 no longer flags a heartbeat for
	// a name it does not know.
	maxNames = 16384
	// violationBytes bounds a violation's message (it quotes what the
	// server sent).
	violationBytes = 1 << 10
)

// namesFull marks a held map that reached maxNames; no resource name is
// this string, since names are UTF-8 without NUL in practice and the
// check only needs to tell the map is full.
const namesFull = "\x00full"

// ErrOverflow is returned (wrapped) by a wait for a type whose responses
// stopped being kept (see QueueBytes): what the scenario waits for may
// have been among them.
var ErrOverflow = errors.New("the harness's response queue is full")

func responseSize(m proto.Message) int64 { return 2*int64(proto.Size(m)) + responseOverhead }

// enqueue queues r for st's type if there is room; c.mu must be held.
func (c *Client) enqueue(st *typeState, r *Response) bool {
	if st.unkept > 0 {
		st.unkept++
		return false
	}
	want := max(0, c.queued+r.size-queueFloor)
	if c.queued+r.size > QueueBytes || (want > c.borrowed && !c.opts.Transcript.QueueBudget().Take(want-c.borrowed)) {
		if c.queued != 0 {
			st.unkept++
			return false
		}
		// Nothing is queued: keep it, so a scenario can always see one.
		want = c.borrowed
	}
	c.borrowed = max(c.borrowed, want)
	c.queued += r.size
	st.queue = append(st.queue, r)
	return true
}

// release frees the room of queued responses the scenario consumed or the
// client dropped; c.mu must be held.
func (c *Client) release(rs ...*Response) {
	for _, r := range rs {
		c.queued -= r.size
	}
	if want := max(0, c.queued-queueFloor); want < c.borrowed {
		c.opts.Transcript.QueueBudget().Give(c.borrowed - want)
		c.borrowed = want
	}
}

// Queued is how many bytes of responses the client keeps unconsumed, and
// how many of them it borrowed from the run's queue budget.
func (c *Client) Queued() (bytes, borrowed int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.queued, c.borrowed
}

// overflowed is the error of a wait for types that found nothing queued
// while one of them stopped keeping responses; c.mu must be held.
func (c *Client) overflowed(what string, types []*typeState) error {
	n := 0
	for _, st := range types {
		n += st.unkept
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("waiting for %s: %s not kept: %w", wording.A(what), wording.Count(n, "response was", "responses were"), ErrOverflow)
}
