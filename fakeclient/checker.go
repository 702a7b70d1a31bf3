package fakeclient

import (
	"sync"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
)

// Checker checks the global invariants on the responses of one stream that
// no Client owns: the load generator's lean clients check a sample of
// their streams with it, in full, exactly as a Client checks every one of
// its own. It is safe for concurrent use: a stream's requests and its
// responses may be handled on different goroutines.
type Checker struct {
	mu sync.Mutex
	s  *stream
}

// NewChecker checks the stream named name (for the violations' evidence).
// typeURL is the only type a per-type stream may carry; "" for ADS.
func NewChecker(name, typeURL string) *Checker {
	return &Checker{s: &stream{name: name, expected: typeURL, asked: map[string]bool{}, nonces: map[string]map[string]bool{}, held: map[string]map[string]string{}}}
}

// Sent notes a request of typeURL on the stream: a response of a type
// never asked for breaks STREAM-7.
func (k *Checker) Sent(typeURL string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.s.asked) < maxAsked {
		k.s.asked[typeURL] = true
	}
}

// SotW checks a SotW response and returns what it breaks.
func (k *Checker) SotW(m *discovery.DiscoveryResponse) []Violation {
	return k.check(decodeSotW(k.s.name, m))
}

// Delta checks a delta response and returns what it breaks.
func (k *Checker) Delta(m *discovery.DeltaDiscoveryResponse) []Violation {
	return k.check(decodeDelta(k.s.name, m))
}

func (k *Checker) check(r *Response) []Violation {
	k.mu.Lock()
	defer k.mu.Unlock()
	vs := checkResponse(r, k.s.expected, k.s.asked, k.s.nonces, k.s.held, false, false)
	k.s.hold(r)
	return vs
}
