package scenarios

import "github.com/xdsconform/xdsconform/peers/refserver"

// The REST scenarios' faults (peers/refserver/faults_rest.go).
func init() {
	for id, c := range map[string][]serverCatch{
		"server/rest/endpoints": {{fault: refserver.FaultRESTNoRoutesPath, rule: "REST-5"}},
		"server/rest/canonical-json": {
			{fault: refserver.FaultRESTGoJSON, rule: "REST-3"},
			{fault: refserver.FaultRESTProtoNamesRejected, rule: "REST-3"},
		},
		"server/rest/long-poll": {{fault: refserver.FaultRESTNoLongPoll, rule: "REST-4"}},
	} {
		mustCatch[id] = c
	}
}
