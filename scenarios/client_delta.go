package scenarios

import (
	"strconv"

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
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			c.ExpectAck(CDS, c.Respond(CDS, "2", c.Hop(CDS, 2)), "")
			latest := c.Respond(CDS, "3", wire.InvalidCluster(c.CL, 3))
			c.Checking("DELTA-1").ExpectNack(CDS, latest)
			// A request that only changes the subscription answers no
			// response: no nonce, or at most the latest of its type.
			other := c.Extra("cluster-2")
			c.ExpectAck(RDS, c.Respond(RDS, "2", wire.ClientRoutes(c.R, 2, c.CL, other)), "")
			sub := c.AwaitSubscribed(CDS, other)
			if n := sub.Nonce(); n != "" && n != latest {
				c.Checking("NONCE-11").Errorf("%s only subscribes, yet carries nonce %q, which is not the latest CDS nonce of the stream (%q)", sub, n, latest)
			}
		}),
	},
	{
		ID:           "client/delta/acks-keep-lists-empty",
		Title:        "Delta: an ACK of a response that changes no interest subscribes and unsubscribes nothing",
		Requirements: []string{"DELTA-2"},
		Level:        results.Must,
		Variants:     delta,
		Run: ClientScript(func(c *C) {
			c.Chain(EDS)
			for rev := 2; rev <= 3; rev++ {
				ack := c.ExpectAck(CDS, c.Respond(CDS, strconv.Itoa(rev), c.Hop(CDS, rev)), "")
				d := ack.Delta
				if len(d.GetResourceNamesSubscribe()) > 0 || len(d.GetResourceNamesUnsubscribe()) > 0 {
					c.Checking("DELTA-2").Errorf("%s ACKs an update that changes no interest, yet subscribes %q and unsubscribes %q: names listed again ask for a resend", ack, d.GetResourceNamesSubscribe(), d.GetResourceNamesUnsubscribe())
				}
			}
		}),
	},
	{
		ID:           "client/delta/system-version-informational",
		Title:        "A delta response's system_version_info is informational: empty or decreasing values are ACKed",
		Requirements: []string{"VER-6"},
		Level:        results.Must,
		Variants:     delta,
		Run: ClientScript(func(c *C) {
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
