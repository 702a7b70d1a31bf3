package refclient

// The fault switches of the client's status view as a whole: each makes
// the view fail to show a state the client is in, which the harness's
// calibration of the view (scenarios/client_calibration.go) must find
// before it judges anything on that state. They join AllFaults and the
// descriptions in init, so the older list stays as it is.
const (
	// FaultStatusOmitsMissing leaves out of CSDS every resource that does
	// not exist, as Envoy's /config_dump lists only what it holds, so the
	// view never shows DOES_NOT_EXIST (OBS-1).
	FaultStatusOmitsMissing Fault = "status-omits-missing"
	// FaultDumpOmitsRoutes leaves every route configuration out of
	// /config_dump (the Envoy profile's view), as if RDS were not
	// dumped (OBS-1).
	FaultDumpOmitsRoutes Fault = "dump-omits-routes"
	// FaultDumpOmitsWarming leaves out of /config_dump every cluster and
	// listener version still warming (dynamic_warming_clusters, a
	// listener's warming_state), which WARM-1's test reads (WARM-1, OBS-1).
	FaultDumpOmitsWarming Fault = "dump-omits-warming"
	// FaultDumpOmitsErrorDetails gives a rejected entry of /config_dump an
	// error_state without its details: NACKED, but not why (OBS-1).
	FaultDumpOmitsErrorDetails Fault = "dump-omits-error-details"
	// FaultStatusShowsRejectedVersion shows a resource whose first
	// version was rejected in CSDS at that version, as if it were in use
	// (OBS-1).
	FaultStatusShowsRejectedVersion Fault = "status-shows-rejected-version"
)

var statusFaultDescriptions = map[Fault]string{
	FaultStatusOmitsMissing:         "OBS-1: CSDS leaves out the resources that do not exist, as /config_dump does, so it never shows DOES_NOT_EXIST",
	FaultDumpOmitsRoutes:            "OBS-1: /config_dump (the Envoy profile's view) leaves out every route configuration",
	FaultDumpOmitsWarming:           "WARM-1, OBS-1: /config_dump leaves out the clusters and listeners still warming",
	FaultDumpOmitsErrorDetails:      "OBS-1: /config_dump shows a rejected resource's error_state without its details",
	FaultStatusShowsRejectedVersion: "OBS-1: CSDS shows a resource whose first version was rejected at that version, as if in use",
}

func init() {
	for _, f := range []Fault{FaultStatusOmitsMissing, FaultDumpOmitsRoutes, FaultDumpOmitsWarming, FaultDumpOmitsErrorDetails, FaultStatusShowsRejectedVersion} {
		AllFaults = append(AllFaults, f)
		faultDescriptions[f] = statusFaultDescriptions[f]
	}
}
