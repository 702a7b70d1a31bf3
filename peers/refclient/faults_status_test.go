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
	}...)
}
