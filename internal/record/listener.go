package record

import (
	"net"
	"sync"
)

// limitListener numbers the connections it accepts and refuses, by
// closing them at once, every connection past max open at a time: a
// client that reconnects in a loop cannot make the recorder hold more.
type limitListener struct {
	net.Listener
	max      int
	onAccept func(id int, remote string)
	onRefuse func(remote string)
	onClose  func(id int)

	mu   sync.Mutex
	open map[string]int // remote address → connection number
	next int
}

func newLimitListener(l net.Listener, max int) *limitListener {
	return &limitListener{Listener: l, max: max, open: map[string]int{}}
}

// Accept returns the next connection within the limit.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		remote := c.RemoteAddr().String()
		l.mu.Lock()
		if len(l.open) >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			if l.onRefuse != nil {
				l.onRefuse(remote)
			}
			continue
		}
		l.next++
		id := l.next
		l.open[remote] = id
		l.mu.Unlock()
		if l.onAccept != nil {
			l.onAccept(id, remote)
		}
		return &trackedConn{Conn: c, l: l, remote: remote, id: id}, nil
	}
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
