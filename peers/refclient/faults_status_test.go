package refclient

import (
	"context"
	"fmt"

	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/wire"
)

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
			acceptEnvoyChain(h)
			if _, ok := observe(h)["RDS/R"]; ok {
				return "listed"
			}
			return "absent"
		}, "listed", "absent"},
		// A listener whose routes are withheld warms: the dump lists it
		// with its warming_state, and with the fault not at all.
		{FaultDumpOmitsWarming, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyListener(h)
			if s, ok := observe(h)["LDS/L"]; ok {
				return s
			}
			return "absent"
		}, "REQUESTED 1", "absent"},
		// A rejected listener is NACKED with the error found, and with the
		// fault with none.
		{FaultDumpOmitsErrorDetails, wire.SotWADS, 0, func(h *harness) string {
			acceptEnvoyListener(h)
			h.send(wire.Listener, "2", "l2", wire.InvalidListener("L", 2))
			h.expectNack(wire.Listener, "l2")
			o := observer.NewConfigDump(h.c.AdminAddr())
			defer o.Close()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			rs, err := o.Observe(ctx)
			require.NoError(h.t, err)
			r, _ := observer.Find(rs, wire.Listener.URL, "L")
			return fmt.Sprintf("%s, error given: %t", r.State, r.Error != "")
		}, "NACKED, error given: true", "NACKED, error given: false"},
		// A listener whose first version was rejected is NACKED with no
		// version in use, and with the fault at the rejected version.
		{FaultStatusShowsRejectedVersion, wire.SotWADS, 0, func(h *harness) string {
			h.expectSubscribe(wire.Listener, "L")
			h.send(wire.Listener, "1", "l1", wire.InvalidListener("L", 1))
			h.expectNack(wire.Listener, "l1")
			return statusOf(h, wire.Listener, "L")
		}, "NACKED ", "NACKED 1"},
	}...)
}
