package record

import (
	"io"
	"net"
	"sync"
	"time"
)

// limitListener numbers the connections it accepts and refuses, by
// closing them at once, every connection past max open at a time: a
// client that reconnects in a loop cannot make the recorder hold more. A
// connection counts only once it has sent its first bytes (HTTP/2's
// preface): until then it waits, at most the handshake time, among at
// most 4×max others, so connections that never speak cannot lock a real
// client out.
type limitListener struct {
	net.Listener
	max int
	// handshake bounds the wait for a connection's first bytes; until
	// they come the connection holds no slot, only one of maxPending.
	handshake  time.Duration
	maxPending int
	onAccept   func(id int, remote string)
	onRefuse   func(remote string)
	onSilent   func(remote string)
	onClose    func(id int)

	ready     chan net.Conn
	acceptErr chan error
	closed    chan struct{}
	closeOnce sync.Once

	mu      sync.Mutex
	open    map[string]int // remote address → connection number
	next    int
	pending int
}

// prefaceBytes is the length of HTTP/2's client connection preface, the
// first bytes any gRPC client sends.
const prefaceBytes = 24

func newLimitListener(l net.Listener, max int, handshake time.Duration) *limitListener {
	return &limitListener{Listener: l, max: max, handshake: handshake, maxPending: 4 * max,
		ready: make(chan net.Conn), acceptErr: make(chan error, 1), closed: make(chan struct{}), open: map[string]int{}}
}

// serve accepts connections until the listener fails or closes; run once,
// before Accept is called.
func (l *limitListener) serve() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.acceptErr <- err
			return
		}
		l.mu.Lock()
		full := l.pending >= l.maxPending
		if !full {
			l.pending++
		}
		l.mu.Unlock()
		if full {
			// The event first: whoever sees the close may look for it.
			if l.onRefuse != nil {
				l.onRefuse(c.RemoteAddr().String())
			}
			_ = c.Close()
			continue
		}
		go l.greet(c)
	}
}

// greet waits, at most the handshake time, for the connection's first
// bytes, and only then gives it a slot (or refuses it, past max): a
// connection that never speaks cannot lock real clients out.
func (l *limitListener) greet(c net.Conn) {
	remote := c.RemoteAddr().String()
	head := make([]byte, prefaceBytes)
	_ = c.SetReadDeadline(time.Now().Add(l.handshake))
	n, err := io.ReadFull(c, head)
	_ = c.SetReadDeadline(time.Time{})
	l.mu.Lock()
	l.pending--
	if err != nil {
		l.mu.Unlock()
		if l.onSilent != nil {
			l.onSilent(remote)
		}
		_ = c.Close()
		return
	}
	if len(l.open) >= l.max {
		l.mu.Unlock()
		if l.onRefuse != nil {
			l.onRefuse(remote)
		}
		_ = c.Close()
		return
	}
	l.next++
	id := l.next
	l.open[remote] = id
	l.mu.Unlock()
	tc := &trackedConn{Conn: &replayConn{Conn: c, head: head[:n]}, l: l, remote: remote, id: id}
	if l.onAccept != nil {
		l.onAccept(id, remote)
	}
	select {
	case l.ready <- tc:
	case <-l.closed:
		_ = tc.Close()
	}
}

// Accept returns the next connection that has spoken, within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ready:
		return c, nil
	case err := <-l.acceptErr:
		l.acceptErr <- err // every later Accept fails the same way
		return nil, err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

// Close closes the listener; connections not yet handed out are closed.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// replayConn reads the bytes greet read first, then the connection.
type replayConn struct {
	net.Conn
	head []byte
}

func (c *replayConn) Read(b []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(b, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// id is the number of the open connection from remote (0: none).
func (l *limitListener) id(remote string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[remote]
}

// trackedConn gives its slot back when closed.
type trackedConn struct {
	net.Conn
	l      *limitListener
	remote string
	id     int
	once   sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.remote] == c.id {
			delete(c.l.open, c.remote)
		}
		c.l.mu.Unlock()
		if c.l.onClose != nil {
			c.l.onClose(c.id)
		}
	})
	return err
}
