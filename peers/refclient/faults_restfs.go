package refclient

// The faults of REST-JSON polling (rest.go) and filesystem subscriptions
// (fs.go). Both are Envoy features, so the faults act in the Envoy profile
// only.
const (
	// FaultRESTTwoOutstanding polls again every refresh delay without waiting for the poll outstanding (REST-1).
	FaultRESTTwoOutstanding Fault = "rest-two-outstanding"
	// FaultRESTGoJSONPolls writes polls with Go's encoding/json, not proto3 JSON (REST-3).
	FaultRESTGoJSONPolls Fault = "rest-go-json-polls"
	// FaultRESTAckWithoutVersion ACKs with an empty version_info (REST-6).
	FaultRESTAckWithoutVersion Fault = "rest-ack-without-version"
	// FaultRESTNackAsAck answers a rejected response with its version and no error_detail (REST-6).
	FaultRESTNackAsAck Fault = "rest-nack-as-ack"
	// FaultRESTRequiresNonce drops responses without a nonce (REST-2, MAY).
	FaultRESTRequiresNonce Fault = "rest-requires-nonce"
	// FaultFSLoadOnce loads the file at start and never again (FS-1, FS-3).
	FaultFSLoadOnce Fault = "fs-load-once"
	// FaultFSIgnoresExtension reads every file as JSON, whatever its extension (FS-1).
	FaultFSIgnoresExtension Fault = "fs-ignores-extension"
	// FaultFSInvalidReplaces drops the file's clusters when a file is rejected (FS-2).
	FaultFSInvalidReplaces Fault = "fs-invalid-replaces"
	// FaultFSIgnoresWatchedDirectory watches only the path, never watched_directory (FS-3).
	FaultFSIgnoresWatchedDirectory Fault = "fs-ignores-watched-directory"
)

var restFSFaults = map[Fault]string{
	FaultRESTTwoOutstanding:        "REST-1 (envoy profile, REST): polls again every refresh delay without waiting for the poll outstanding",
	FaultRESTGoJSONPolls:           "REST-3 (envoy profile, REST): polls are written with Go's encoding/json, not canonical proto3 JSON",
	FaultRESTAckWithoutVersion:     "REST-6 (envoy profile, REST): the poll after an accepted response carries an empty version_info",
	FaultRESTNackAsAck:             "REST-6 (envoy profile, REST): the poll after a rejected response carries its version and no error_detail",
	FaultRESTRequiresNonce:         "REST-2 (MAY; envoy profile, REST): responses without a nonce are dropped",
	FaultFSLoadOnce:                "FS-1, FS-3 (envoy profile, filesystem): the file is loaded at start and never again",
	FaultFSIgnoresExtension:        "FS-1 (envoy profile, filesystem): every file is read as JSON, whatever its extension",
	FaultFSInvalidReplaces:         "FS-2 (envoy profile, filesystem): a rejected file drops the clusters of the last valid one",
	FaultFSIgnoresWatchedDirectory: "FS-3 (envoy profile, filesystem): watched_directory is ignored; only moves onto the path reload it",
}

func init() {
	for _, f := range []Fault{
		FaultRESTTwoOutstanding, FaultRESTGoJSONPolls, FaultRESTAckWithoutVersion, FaultRESTNackAsAck, FaultRESTRequiresNonce,
		FaultFSLoadOnce, FaultFSIgnoresExtension, FaultFSInvalidReplaces, FaultFSIgnoresWatchedDirectory,
	} {
		AllFaults = append(AllFaults, f)
		faultDescriptions[f] = restFSFaults[f]
		envoyFaults[f] = true
	}
}
