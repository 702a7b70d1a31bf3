//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/load"
	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/wire"
)

// istiod builds in about five minutes from a cold cache (137 modules) and
// its verdicts do not depend on timing (its fixture returns once istiod
// serves each change), so make e2e runs it. Its pairs run side by side,
// as sidecars would: each node a namespace of its own, which the root
// Sidecar keeps it in (e2e/peers/istio).
var _ = Describe("istiod", Label("server"), func() {
	describe(peer{Name: "istio", Version: "Istio " + moduleVersion(peerDir("istio"), "istio.io/istio") + " (istiod DiscoveryServer, ADS)", Role: "server",
		// Istio parses node ids as TYPE~IP~ID~DOMAIN and takes a sidecar's
		// namespace from DOMAIN's first label (pilot/pkg/model/context.go:742-805).
		Start:     func() (engine.Env, string, func(), error) { return startIstio() },
		Catalogue: scenarios.Server,
		Note: "istiod's DiscoveryServer as Istio's own xDS tests start it (pilot/test/xds NewFakeDiscoveryServer: in-memory config store and registry, " +
			"debounce 100 ms as istiod's default, the per-second limit on new streams off), registered on a plain grpc.NewServer() as the fake registers it (ADS only, SotW and delta); " +
			"node ids in Istio's TYPE~IP~ID~DOMAIN form (--node-id '" + istioNodeID + "'), each node a namespace of its own, " +
			"scoped by one root Sidecar (egress ./*); listeners, routes, clusters and endpoint assignments set as ServiceEntries and DestinationRules, each fixture call returning once istiod serves the change (e2e/peers/istio)"}, "istio")
})

var _ = Describe("load against istiod", Label("load", "server", "istio"), func() {
	const clients = 20
	// 20 clients on 4 nodes (4 namespaces), a cluster and an assignment,
	// 2 s of churn at 2 changes a second: 4 changes, the cluster and the
	// assignment in turn.
	plan := func(runID string, variant wire.Variant) load.Options {
		return load.Options{
			Clients: clients, Nodes: 4, Profile: "CDS=cluster;EDS=cluster", Variant: variant, StreamsPerConn: 1,
			Churn: 2, Duration: 2 * time.Second, Shards: 1, RunID: runID, SampleEvery: 5,
			SyncTimeout: 60 * time.Second, Settle: 30 * time.Second,
		}
	}
	// istiod sends at most one response per change per client here. A
	// change is one debounced push (100 ms, pilot/pkg/xds/discovery.go:
	// 355-426), which may fold a change into the next. The cluster's
	// revision is a DestinationRule, whose push to EDS is partial: only
	// the assignments of the rule's own host, which is not the
	// assignment's (pilot/pkg/xds/eds.go:121-126, 165-183); the
	// assignment's revision is an endpoint of its ServiceEntry, pushed as
	// an endpoints change (pilot/pkg/serviceregistry/serviceentry/
	// controller.go:301-323, pilot/pkg/xds/eds.go:51-67), which
	// cdsNeedsPush leaves out of CDS (cds.go:66-100).
	for _, variant := range []wire.Variant{wire.SotWADS, wire.DeltaADS} {
		It("Istio holds every rule under churn, "+variant.String(), func() {
			env, _, stop, err := startIstio("-await-served=false")
			require.NoError(GinkgoT(), err, "starting istio (did make e2e-deps run?)")
			DeferCleanup(stop)
			rep := loadRun(env, plan("istio-"+variant.String(), variant))
			churn := phasesOf(rep, loadreport.PhaseConnect, loadreport.PhaseInitialSync, loadreport.PhaseChurn)[loadreport.PhaseChurn]
			requireConformantPhases(rep)
			requireFinalChangesConverged(rep, loadreport.PhaseChurn)
			assert.EqualValues(GinkgoT(), 4, churn.Changes)
			assert.LessOrEqual(GinkgoT(), churn.Responses, churn.Expected, "amplification %.2f", churn.Amplification)
		})
	}
})

// startIstio runs e2e/peers/istio's server, built by make e2e-deps, with
// args.
func startIstio(args ...string) (engine.Env, string, func(), error) {
	return serverProcessWith(targets.ServerOptions{NodeID: istioNodeID}, append([]string{peerDir("istio") + "/bin/istio-server"}, args...)...)()
}

// istioNodeID makes every pair's node a sidecar in a namespace named
// after the pair's node id.
const istioNodeID = "sidecar~127.0.0.1~{{.NodeID}}~{{.NodeID}}.svc.cluster.local"
