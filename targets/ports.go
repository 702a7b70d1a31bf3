package targets

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Ports handed to a --client-cmd ({{.CSDS}}, {{.Admin}}) are bound by the
// client, not by us, so there is a gap between picking one and its use. A
// port the kernel picked for a ":0" bind can be picked again for the next
// ":0" bind (the fake management servers, other clients' listeners) in that
// gap; seen in CI as "bind: address already in use". So these ports come
// from below the kernel's ephemeral range, which ":0" never uses, and are
// not handed out twice while the ring of recent ones remembers them.
var portPicker = struct {
	sync.Mutex
	recent map[int]bool
	order  []int
}{recent: map[int]bool{}}

// recentPorts is how many handed-out ports are kept from being reused;
// far more than the clients that run at once.
const recentPorts = 4096

// freeAddr is FreePort as a loopback HOST:PORT.
func freeAddr() (string, error) {
	p, err := FreePort()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), nil
}

// FreePort returns a loopback port, below the ephemeral port range, that
// nothing listens on now and that was not handed out recently: for a
// program the harness starts and tells which port to bind.
func FreePort() (int, error) {
	low, high := pickRange()
	portPicker.Lock()
	defer portPicker.Unlock()
	for range 200 {
		p := low + rand.IntN(high-low)
		if portPicker.recent[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue // taken
		}
		l.Close()
		portPicker.recent[p] = true
		portPicker.order = append(portPicker.order, p)
		if len(portPicker.order) > recentPorts {
			delete(portPicker.recent, portPicker.order[0])
			portPicker.order = portPicker.order[1:]
		}
		return p, nil
	}
	return 0, fmt.Errorf("picking a free port: none free in %d-%d after 200 tries", low, high)
}

// pickRange is where freeAddr looks: from 10000 up to the start of the
// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), or
// 10000-32767 where that cannot be read or leaves too little room.
func pickRange() (int, int) {
	const low, fallback = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, fallback
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return low, fallback
	}
	start, err := strconv.Atoi(fields[0])
	if err != nil || start-low < 1000 {
		return low, fallback
	}
	return low, start
}
