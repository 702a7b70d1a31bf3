package scenarios

import (
	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/wire"
)

// xds_protocol#incremental-xds
var clientDeltaScenarios = []*engine.Scenario{
	{
		ID:           "client/delta/ack-shape",
		Title:        "A delta ACK carries the response's nonce and no error; a NACK carries the nonce and an error",
		Requirements: []string{"DELTA-1", "NONCE-11"},
		Level:        results.Must,
		Variants:     delta,
		Run: cli(func(c *C) {
			c.Chain(CDS)
			c.ExpectAck(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2)), "")
			c.ExpectNack(CDS, c.Respond(CDS, "3", wire.InvalidCluster(c.CL, 3)))
		}),
	},
	{
		ID:           "client/delta/system-version-informational",
		Title:        "A delta response's system_version_info is informational: empty or decreasing values are ACKed",
		Requirements: []string{"VER-6"},
		Level:        results.Must,
		Variants:     delta,
		Run: cli(func(c *C) {
			c.Chain(CDS)
			for i, sys := range []string{"", "0", "zzz", "1"} {
				st := c.Stream(CDS)
				resp := &discovery.DeltaDiscoveryResponse{TypeUrl: CDS.URL, SystemVersionInfo: sys, Nonce: st.NewNonce(),
					Resources: []*discovery.Resource{{Name: c.CL, Version: string(rune('a' + i)), Resource: mustAny(c, c.Hop(CDS, i+2))}}}
				c.Send(CDS, resp)
				c.ExpectAck(CDS, resp.Nonce, "")
			}
		}),
	},
}
