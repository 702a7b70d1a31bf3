package scenarios

import "github.com/xdsconform/xdsconform/peers/refclient"

// The client-role REST and filesystem scenarios' faults
// (peers/refclient/faults_restfs.go).
func init() {
	for id, c := range map[string][]clientCatch{
		"client/rest/one-poll-outstanding":               {{fault: refclient.FaultRESTTwoOutstanding, rule: "REST-1"}},
		"client/rest/canonical-json":                     {{fault: refclient.FaultRESTGoJSONPolls, rule: "REST-3"}},
		"client/rest/response-without-nonce":             {{fault: refclient.FaultRESTRequiresNonce, rule: "REST-2"}},
		"client/rest/polls-again-after-ignored-response": {{fault: refclient.FaultCrashOnUnusableResponse, rule: "ROB-3", want: "the client stopped"}},
		"client/rest/ack-nack-next-poll": {
			{fault: refclient.FaultRESTAckWithoutVersion, rule: "REST-6", want: "must carry that version"},
			{fault: refclient.FaultRESTNackAsAck, rule: "REST-6", want: "must carry an error_detail"},
		},
		"client/fs/loads-yaml":       {{fault: refclient.FaultFSIgnoresExtension, rule: "FS-1"}},
		"client/fs/loads-json":       {{fault: refclient.FaultFSLoadOnce, rule: "FS-1", want: "at version 2"}},
		"client/fs/loads-binary":     {{fault: refclient.FaultFSIgnoresExtension, rule: "FS-1"}},
		"client/fs/loads-text-proto": {{fault: refclient.FaultFSIgnoresExtension, rule: "FS-1"}},
		"client/fs/rejected-file-keeps-last-valid": {
			{fault: refclient.FaultFSInvalidReplaces, rule: "FS-2", want: "no longer lists cluster"},
		},
		"client/fs/reload-on-move":                   {{fault: refclient.FaultFSLoadOnce, rule: "FS-3"}},
		"client/fs/reload-on-watched-directory-swap": {{fault: refclient.FaultFSIgnoresWatchedDirectory, rule: "FS-3"}},
	} {
		mustCatchClient[id] = c
	}
}
