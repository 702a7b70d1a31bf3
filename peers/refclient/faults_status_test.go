package refclient

import "github.com/xdsconform/xdsconform/wire"

func init() {
	extraFaultCases = append(extraFaultCases, []faultCase{
		// A listener deleted by omission (DEL-4) is DOES_NOT_EXIST, and
		// with the fault not listed at all.
		{FaultStatusOmitsMissing, wire.SotWADS, 0, func(h *harness) string {
			acceptListener(h)
			return omit(h, wire.Listener, "2", "l2", "L")
		}, "DOES_NOT_EXIST", "absent"},
		// The Envoy profile's /config_dump lists the route in use, and
		// with the fault no route at all.
		{FaultDumpOmitsRoutes, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyListener(h)
			h.send(wire.Route, "1", "r1", wire.ClientRoute("R", "C", 1))
			h.expectAck(wire.Route, "1", "r1", "R")
			if _, ok := observe(h)["RDS/R"]; ok {
				return "listed"
			}
			return "absent"
		}, "listed", "absent"},
	}...)
}
