package refclient

import (
	"context"
	"slices"
	"sync"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/xdsconform/xdsconform/wire"
)

// slot is a place a stream lives in: the one ADS stream, or the stream of
// one type in the per-type variants. Its goroutine reopens the stream
// whenever it ends, so the slot outlives every stream in it.
type slot struct {
	typ    string // the type URL of a per-type slot, "" for ADS
	group  string // the server group whose names it carries (xdstp.go)
	conn   *grpc.ClientConn
	method string
	types  []string // the type URLs carried by the slot, in chain order
	delta  bool

	// Owned by the event loop.
	cur       *stream           // the open stream, nil while disconnected
	oldNonces map[string]string // nonces of the last stream (reuse-nonce-after-reconnect)
}

// carries reports whether the slot's streams carry type URL t.
func (s *slot) carries(t string) bool { return slices.Contains(s.types, t) }

// stream is one gRPC stream. The queue is shared with its writer
// goroutine; every other field belongs to the event loop.
type stream struct {
	slot   *slot
	gen    int // 1 for the slot's first stream, more after reconnects
	ctx    context.Context
	cancel context.CancelFunc
	cs     grpc.ClientStream

	qmu     sync.Mutex
	queue   []outgoing
	qnotify chan struct{}

	pending     []outgoing        // requests built during the current event
	held        bool              // waits-for-server: nothing is sent before a response
	nodeSent    bool              // the node went out on the first request (STREAM-3)
	nonces      map[string]string // latest nonce per type on this stream (NONCE-3)
	prevNonces  map[string]string // the nonce before it (echo-old-nonce)
	lastNonce   string            // latest nonce of any type (stream-wide-nonce)
	lastVersion string            // latest version accepted of any type (stream-wide-version)
	sent        map[string]bool   // a request of the type went out on this stream
	sentNames   map[string]map[string]bool
	// nackedLatest and acceptedNonces are the nonce-of-last-accepted
	// fault's memory: whether the type's latest response was NACKed, and
	// the nonce of its last accepted one.
	nackedLatest   map[string]bool
	acceptedNonces map[string]string
	// repliedNames and rejectedVersion are the memories of
	// nack-restates-replied-names and version-after-nack-is-rejected:
	// the names of the type's last ACK or NACK, and the version of the
	// response NACKed last, until one is accepted.
	repliedNames    map[string][]string
	rejectedVersion map[string]string
}

// outgoing is one queued request: m goes out at once when at is zero,
// else not before at (the slow-acks fault holding a reply back). On a
// REST stream an entry may instead be the mark that the loop has handled
// a response (answered, rest.go): queued behind any reply, it reaches the
// poller only after the reply did.
type outgoing struct {
	m        proto.Message
	at       time.Time
	answered bool
}

// Events from stream goroutines to the loop.
type event any

type evOpened struct{ st *stream }

type evResponse struct {
	st    *stream
	sotw  *discovery.DiscoveryResponse
	delta *discovery.DeltaDiscoveryResponse
}

type evEnded struct{ st *stream }

var streamDesc = grpc.StreamDesc{ServerStreams: true, ClientStreams: true}

// emit hands ev to the loop unless the client is stopping.
func (c *Client) emit(ev event) bool {
	select {
	case c.events <- ev:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// ensureSlot creates the slot for key and starts its goroutine. ADS has
// one slot opened at start; per-type slots open when their type first gets
// a watch.
func (c *Client) ensureSlot(typ string) {
	c.ensureSlotIn(c.cfg.ServerAddr, c.cfg.ServerAddr, typ)
}

// ensureSlotIn is ensureSlot for the server group g, whose server is addr
// (xdstp.go).
func (c *Client) ensureSlotIn(g, addr, typ string) {
	key := c.slotKey(g, typ)
	if _, ok := c.slots[key]; ok {
		return
	}
	conn, err := c.connFor(addr)
	if err != nil {
		c.crash(err)
		return
	}
	v := c.cfg.Variant
	sl := &slot{typ: typ, group: g, conn: conn, delta: v.IsDelta()}
	if typ == "" {
		sl.method = wire.MethodFor(v, wire.Type{})
		for _, t := range c.types() {
			if !c.fileSourced(t.URL) {
				sl.types = append(sl.types, t.URL)
			}
		}
	} else {
		t, _ := c.knownType(typ)
		sl.method = wire.MethodFor(v, t) // with ads-stream-per-type: the ADS method (ADS-3 broken)
		if !sl.delta && t.SotWMethod == "" {
			// VHDS has no SotW service (STREAM-10): only vhds-over-sotw
			// gets here, and asks on a SotW ADS stream of its own.
			sl.method = wire.MethodFor(wire.SotWADS, t)
		}
		sl.types = []string{typ}
	}
	c.slots[key] = sl
	c.wg.Add(1)
	go c.run(sl)
}

// run keeps a stream open in sl until the client stops: open, read until
// the stream ends (with any status, RECONN-2), back off, reopen. The
// backoff doubles while streams fail without a response and resets once a
// response arrived (RECONN-1).
func (c *Client) run(sl *slot) {
	defer c.wg.Done()
	var backoff time.Duration
	opened := 0
	for {
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-c.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if c.ctx.Err() != nil {
			return
		}
		sctx, cancel := context.WithCancel(c.ctx)
		cs, err := c.openStream(sctx, sl)
		if err != nil {
			cancel()
			if c.fault(FaultGiveUpAfterFailedOpen) {
				return // RECONN-2 broken: never talks to the server again
			}
			backoff = nextBackoff(backoff)
			if c.fault(FaultNoBackoff) {
				backoff = failBackoff // RECONN-1 broken
			}
			continue
		}
		opened++
		st := &stream{
			slot: sl, gen: opened, ctx: sctx, cancel: cancel, cs: cs,
			qnotify:    make(chan struct{}, 1),
			nonces:     map[string]string{},
			prevNonces: map[string]string{},
			sent:       map[string]bool{},
			sentNames:  map[string]map[string]bool{},

			nackedLatest:   map[string]bool{},
			acceptedNonces: map[string]string{},

			repliedNames:    map[string][]string{},
			rejectedVersion: map[string]string{},
		}
		c.wg.Add(1)
		go c.write(st)
		if !c.emit(evOpened{st}) {
			cancel()
			return
		}
		got := false
		for {
			ev := evResponse{st: st}
			var m proto.Message
			if sl.delta {
				ev.delta = &discovery.DeltaDiscoveryResponse{}
				m = ev.delta
			} else {
				ev.sotw = &discovery.DiscoveryResponse{}
				m = ev.sotw
			}
			if err = cs.RecvMsg(m); err != nil {
				break
			}
			got = true
			if !c.emit(ev) {
				break
			}
		}
		cancel()
		if !c.emit(evEnded{st}) {
			return
		}
		switch {
		case c.fault(FaultNoBackoff):
			backoff = failBackoff // RECONN-1 broken: no growth
		case got && !c.fault(FaultBackoffNeverResets): // else RECONN-1 broken: no reset
			backoff = minBackoff
		default:
			backoff = nextBackoff(backoff)
		}
	}
}

// nextBackoff is the wait before reopening a stream that failed before
// any response: failBackoff first, then doubling up to maxBackoff
// (RECONN-1).
func nextBackoff(b time.Duration) time.Duration {
	if b < failBackoff {
		return failBackoff
	}
	return min(2*b, maxBackoff)
}

// write sends the stream's queued requests in order until the stream ends.
// Sending outside the loop means a server that stops reading can never
// block the client.
func (c *Client) write(st *stream) {
	defer c.wg.Done()
	for {
		st.qmu.Lock()
		q := st.queue
		st.queue = nil
		st.qmu.Unlock()
		for _, o := range q {
			if !o.at.IsZero() {
				// slow-acks, late-acks-1s: hold the reply back (UPD-2 broken).
				t := time.NewTimer(time.Until(o.at))
				select {
				case <-st.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			if o.answered {
				if rs, ok := st.cs.(*restStream); ok {
					rs.answered()
				}
				continue
			}
			if err := st.cs.SendMsg(o.m); err != nil {
				return // the reader sees the stream's real status
			}
		}
		if len(q) > 0 {
			continue
		}
		select {
		case <-st.ctx.Done():
			return
		case <-st.qnotify:
		}
	}
}

// enqueue queues a request built by the loop; flush releases it at the end
// of the event.
func (c *Client) enqueue(st *stream, m proto.Message) {
	c.enqueueAt(st, m, time.Time{})
}

// enqueueAt is enqueue for a request the writer holds back until at (zero:
// none); it keeps its place in the queue, so nothing overtakes it.
func (c *Client) enqueueAt(st *stream, m proto.Message, at time.Time) {
	st.pending = append(st.pending, outgoing{m: m, at: at})
	if c.fault(FaultReconnectOnSilence) {
		// UPD-5, NONCE-10 broken: silence after a request is taken as failure.
		k := timerKey{kind: silenceTimer, st: st}
		if _, ok := c.deadlines[k]; !ok {
			c.deadlines[k] = time.Now().Add(silenceTimeout)
		}
	}
}

// enqueueReply queues an ACK or NACK; the slow-acks and late-acks-1s
// faults delay it.
func (c *Client) enqueueReply(st *stream, m proto.Message) {
	var at time.Time
	switch {
	case c.fault(FaultSlowAcks):
		at = time.Now().Add(slowAckDelay) // UPD-2 broken
	case c.fault(FaultLateAcks1s):
		at = time.Now().Add(lateAckDelay) // UPD-2 broken
	}
	c.enqueueAt(st, m, at)
}

// slowAckDelay is how late the slow-acks fault replies: more than the
// default quiet window, less than the default expect timeout.
const slowAckDelay = 2 * time.Second

// lateAckDelay is how late the late-acks-1s fault replies: more than the
// default prompt threshold, less than the default quiet window, which
// once stood in for the threshold and let such a client pass.
const lateAckDelay = time.Second

// flush hands every stream's pending requests to its writer.
func (c *Client) flush() {
	for _, sl := range c.slots {
		st := sl.cur
		if st == nil || st.held || len(st.pending) == 0 {
			continue
		}
		st.qmu.Lock()
		st.queue = append(st.queue, st.pending...)
		st.qmu.Unlock()
		st.pending = nil
		select {
		case st.qnotify <- struct{}{}:
		default:
		}
	}
}

// Timers are deadlines kept by the loop and served by its one time.Timer,
// so no goroutine outlives the client.
const (
	dneTimer = iota
	silenceTimer
	ttlTimer
	warmTimer // Envoy profile: a warming resource's initial fetch timeout
)

type timerKey struct {
	kind int
	typ  string
	name string
	st   *stream
}

func (c *Client) nextDeadline() (time.Time, bool) {
	var first time.Time
	for _, d := range c.deadlines {
		if first.IsZero() || d.Before(first) {
			first = d
		}
	}
	return first, !first.IsZero()
}

func (c *Client) fireTimers(now time.Time) {
	for k, d := range c.deadlines {
		if d.After(now) {
			continue
		}
		delete(c.deadlines, k)
		switch k.kind {
		case dneTimer:
			// DNE-1, DNE-6: the resource never came.
			s := c.state(k.typ, k.name)
			switch {
			case s != nil && s.any == nil && s.status == statusRequested:
				s.status = statusDoesNotExist
			case s != nil && s.any != nil && c.fault(FaultDNEAfterReconnect):
				c.remove(s) // DNE-7 broken: a resource held is given up
			case s != nil && s.any == nil && s.status == statusReceivedError && c.fault(FaultErrorKeepsTimer):
				s.status = statusDoesNotExist // ERR-6 broken: the timer outlived the error
			}
		case silenceTimer:
			if k.st.slot.cur == k.st {
				k.st.cancel() // the slot goroutine reopens the stream
			}
		case warmTimer:
			// WARM-2: the initial fetch timeout ends warming all the same.
			if s := c.state(k.typ, k.name); s != nil && s.warming {
				c.endWarming(s)
			}
		case ttlTimer:
			// TTL-2: the resource's TTL lapsed without a refresh.
			if s := c.state(k.typ, k.name); s != nil && s.any != nil && !c.fault(FaultIgnoreTTL) { // else TTL-2 broken
				c.remove(s)
			}
		}
	}
}

// startDNE starts the does-not-exist timer of a name just requested on a
// connected stream (DNE-7), unless it is running or the resource is known.
// resent is true for the first request of the type on a reopened stream.
func (c *Client) startDNE(typ, name string, resent bool) {
	if c.fault(FaultNoDneTimer) || isGlob(name) { // DNE-1 broken; a glob is no resource to wait for
		return
	}
	s := c.state(typ, name)
	restarted := c.fault(FaultDNEAfterReconnect) && resent && s != nil && s.any != nil // DNE-7 broken
	if s == nil || ((s.any != nil || s.status != statusRequested) && !restarted) {
		return
	}
	k := timerKey{kind: dneTimer, typ: typ, name: name}
	if _, ok := c.deadlines[k]; !ok {
		d := c.cfg.DNETimeout
		if c.fault(FaultEarlyDNE) {
			d /= 100 // DNE-1 broken
		}
		c.deadlines[k] = time.Now().Add(d)
	}
}

func (c *Client) stopDNE(typ, name string) {
	delete(c.deadlines, timerKey{kind: dneTimer, typ: typ, name: name})
}

// onOpened makes st its slot's current stream, with fresh per-stream state
// (NONCE-5), and applies the reconnect faults before the regular sync sends
// the initial requests.
func (c *Client) onOpened(st *stream) {
	sl := st.slot
	sl.cur = st
	st.held = c.fault(FaultWaitsForServer) // STREAM-1 broken
	if c.fault(FaultReuseNonceAfterReconnect) && sl.oldNonces != nil {
		// NONCE-5 broken: the old stream's nonces live on.
		for k, v := range sl.oldNonces {
			st.nonces[k] = v
		}
	}
	if st.gen == 1 {
		return
	}
	if c.fault(FaultForgetSubscriptionsOnReconnect) {
		// RECONN-3, DELTA-7 broken: the client behaves as if the server
		// still knew every subscription but the listener's.
		for _, t := range sl.types {
			if t != wire.Listener.URL {
				st.sent[t] = true
				st.sentNames[t] = setOf(c.requestedOn(st, t))
			}
		}
	}
	if c.fault(FaultEmptyLdsOnReconnect) && sl.carries(wire.Listener.URL) && len(c.requestedOn(st, wire.Listener.URL)) > 0 {
		// RES-1 broken: the first LDS request names nothing.
		c.subscribe(st, wire.Listener.URL, nil, nil)
		st.sentNames[wire.Listener.URL] = setOf(c.requestedOn(st, wire.Listener.URL))
	}
}

// onEnded forgets a stream that ended. Resources stay cached (RECONN-4);
// running does-not-exist timers stop and restart when the names are sent on
// the next stream (DNE-7).
func (c *Client) onEnded(st *stream) {
	sl := st.slot
	sl.cur = nil
	sl.oldNonces = st.nonces
	for k := range c.deadlines {
		if (k.kind == dneTimer && sl.carries(k.typ) && c.inGroup(k.name, sl.group) && !c.fault(FaultDNEOutlivesStream)) || k.st == st || // else DNE-7 broken
			(k.kind == ttlTimer && sl.carries(k.typ) && c.fault(FaultTTLLostOnReconnect)) { // TTL-2 broken
			delete(c.deadlines, k)
		}
	}
	if c.fault(FaultDropCacheOnDisconnect) {
		// RECONN-4 broken: the cache goes with the stream. The references
		// are kept so the client keeps asking for the same names.
		for _, byName := range c.res {
			for _, s := range byName {
				s.any, s.version, s.errDetails, s.errVersion = nil, "", "", ""
				s.status = statusRequested
			}
		}
	}
}
