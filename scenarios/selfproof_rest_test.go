package scenarios

import "github.com/xdsconform/xdsconform/peers/refserver"

// The REST scenarios' faults (peers/refserver/faults_rest.go).
func init() {
	for id, c := range map[string][]serverCatch{
		"server/rest/endpoints": {
			{fault: refserver.FaultRESTNoRoutesPath, rule: "REST-5"},
			{fault: refserver.FaultRESTTypeURLRequired, rule: "REST-5"},
		},
		"server/rest/canonical-json": {
			{fault: refserver.FaultRESTGoJSON, rule: "REST-3"},
			{fault: refserver.FaultRESTProtoNamesRejected, rule: "REST-3"},
		},
		"server/rest/long-poll": {
			{fault: refserver.FaultRESTNoLongPoll, rule: "REST-4"},
			// Answers after 1.75 s, inside the 2 s hold builtin:reference
			// runs with: the window must outlast the hold, not the quiet
			// window.
			{fault: refserver.FaultRESTAnswersHeldPollEarly, rule: "REST-4", want: "inside the server's long-poll hold", regression: true},
		},
	} {
		mustCatch[id] = c
	}
}
