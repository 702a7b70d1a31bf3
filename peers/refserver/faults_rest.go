package refserver

// The faults of the REST-JSON transport (the REST variant).
const (
	// FaultRESTNoLongPoll answers a poll at the current version at once, unchanged (REST-4).
	FaultRESTNoLongPoll Fault = "rest-no-long-poll"
	// FaultRESTGoJSON writes replies with encoding/json, not the proto3 JSON mapping (REST-3).
	FaultRESTGoJSON Fault = "rest-go-json"
	// FaultRESTProtoNamesRejected rejects polls written with the original proto field names (REST-3).
	FaultRESTProtoNamesRejected Fault = "rest-proto-names-rejected"
	// FaultRESTNoRoutesPath serves no /v3/discovery:routes endpoint (REST-5).
	FaultRESTNoRoutesPath Fault = "rest-no-routes-path"
	// FaultRESTAnswersHeldPollEarly answers a poll at the current version
	// with the unchanged state after 1.75 s, inside its hold (REST-4): a
	// must-not-happen window shorter than the server's hold passes it.
	FaultRESTAnswersHeldPollEarly Fault = "rest-answers-held-poll-early"
)

func init() {
	for f, d := range map[Fault]string{
		FaultRESTNoLongPoll:           "REST-4: a poll at the current version is answered at once with the unchanged state",
		FaultRESTGoJSON:               "REST-3: replies are written with encoding/json (Any as type_url/value), not proto3 JSON",
		FaultRESTProtoNamesRejected:   "REST-3: polls written with the original proto field names are rejected",
		FaultRESTNoRoutesPath:         "REST-5: POST /v3/discovery:routes is not served",
		FaultRESTAnswersHeldPollEarly: "REST-4: a held poll at the current version is answered, unchanged, after 1.75 s, before its hold ends",
	} {
		faultDescriptions[f] = d
	}
	AllFaults = append(AllFaults, FaultRESTNoLongPoll, FaultRESTGoJSON, FaultRESTProtoNamesRejected, FaultRESTNoRoutesPath, FaultRESTAnswersHeldPollEarly)
}
