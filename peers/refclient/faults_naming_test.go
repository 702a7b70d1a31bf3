package refclient

import (
	"fmt"

	"github.com/xdsconform/xdsconform/wire"
)

// routeDropped drives a locating client (locating) to ask for route R,
// accept it, then lose interest in it (its listener names R2 instead), and
// returns the first route request after that.
func routeDropped(h *harness) treq {
	h.t.Helper()
	l := locating(h)
	l.sendAnys(wire.Listener, "1", "l1", mustAny(h.t, wire.ClientListener("L", "R", 1)))
	l.next(wire.Listener)
	l.next(wire.Route)
	l.sendAnys(wire.Route, "1", "r1", mustAny(h.t, wire.ClientRoute("R", "C", 1)))
	l.next(wire.Route)
	l.sendAnys(wire.Listener, "2", "l2", mustAny(h.t, wire.ClientListener("L", "R2", 2)))
	l.next(wire.Listener)
	return l.next(wire.Route)
}

// The faults of ending a locator subscription (LOC-1); the other naming
// faults are proven with several servers at hand, by the client
// self-proof table.
func init() {
	extraFaultCases = append(extraFaultCases, []faultCase{
		{FaultLocatorUnsubscribeByName, wire.DeltaADS, 0, func(h *harness) string {
			r := routeDropped(h)
			return fmt.Sprint(r.Unsub, r.UnsubLocators)
		}, "[] [R map[env:prod region:eu]]", "[R] []"},

		{FaultLocatorUnsubscribeWithoutParams, wire.DeltaADS, 0, func(h *harness) string {
			return fmt.Sprint(routeDropped(h).UnsubLocators)
		}, "[R map[env:prod region:eu]]", "[R map[]]"},

		{FaultLocatorsSticky, wire.SotWADS, 0, func(h *harness) string {
			return fmt.Sprint(routeDropped(h).Locators)
		}, "[R2 map[env:prod region:eu]]", "[R map[env:prod region:eu] R2 map[env:prod region:eu]]"},
	}...)
}
