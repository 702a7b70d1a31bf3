package htmlpage

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// hostile are strings a peer could plant in anything it names or says:
// markup that closes the script or an attribute, script URLs, the
// separators that end a JavaScript string, NUL, and a very long one.
var hostile = []string{
	`</script><script>window.__pwned=1;alert(1)</script>`,
	`"><img src=x onerror="window.__pwned=1;alert(1)">`,
	`' onmouseover='window.__pwned=1' x='`,
	`javascript:window.__pwned=1`,
	"line\u2028separator\u2029paragraph",
	"nul\x00byte",
	`<style>*{display:none}</style><a href="javascript:alert(1)">x</a>`,
	`{{.CSP}} ]]> <!-- --> <![CDATA[ x ]]>`,
	strings.Repeat("A", 300<<10),
}

// hostileJoined is every hostile string but the long one, in one.
func hostileJoined() string { return strings.Join(hostile[:len(hostile)-1], " | ") }

func msg(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// sampleRuns is a server run and a client run with every outcome, a
// transcript in both roles, and hostile strings wherever a peer (or a
// report file) chooses the text: target, options, messages, reasons,
// stream names, notes, message contents, and an unknown direction.
func sampleRuns() []results.Run {
	h := hostileJoined()
	long := hostile[len(hostile)-1]
	serverTranscript := []transcript.Entry{
		{At: 0, Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "opened"},
		{At: 1200 * time.Microsecond, Stream: "ads#1", Direction: transcript.Sent, Kind: "DiscoveryRequest",
			Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "resource_names": []string{"c1", h}})},
		{At: 3400 * time.Microsecond, Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse",
			Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "version_info": h, "nonce": "1",
				"resources": []any{map[string]any{"@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "name": h}}})},
		{At: 5 * time.Millisecond, Stream: "ads#1", Direction: transcript.Sent, Kind: "DiscoveryRequest",
			Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "response_nonce": "1",
				"error_detail": map[string]any{"code": 3, "message": h}})},
		{At: 6 * time.Millisecond, Stream: h, Direction: transcript.Direction(h), Kind: h, Note: h},
		{At: 7 * time.Millisecond, Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "closed: " + h + long},
	}
	clientTranscript := []transcript.Entry{
		{At: 0, Stream: "ads-sotw#1", Direction: transcript.Event, Kind: "event", Note: "opened by client"},
		{At: time.Millisecond, Stream: "ads-sotw#1", Direction: transcript.Received, Kind: "DiscoveryRequest",
			Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.listener.v3.Listener", "resource_names": []string{"l1"}})},
		{At: 2 * time.Millisecond, Stream: "ads-sotw#1", Direction: transcript.Sent, Kind: "DiscoveryResponse",
			Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.listener.v3.Listener", "version_info": "1", "nonce": "n1",
				"resources": []any{map[string]any{"@type": "type.googleapis.com/envoy.config.listener.v3.Listener", "name": "l1"}}})},
		{At: 3 * time.Millisecond, Stream: "ads-sotw#1", Direction: transcript.Received, Kind: "DiscoveryRequest",
			Message: json.RawMessage(`{"not json`)},
	}
	// A resend loop: a response and its NACK, forty times over, folded as
	// the engine folds every transcript.
	var loop []transcript.Entry
	loop = append(loop, transcript.Entry{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "opened"})
	for i := range 40 {
		at := time.Duration(i+1) * time.Millisecond
		loop = append(loop,
			transcript.Entry{At: at, Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse",
				Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "version_info": "1", "nonce": fmt.Sprint(i + 1)})},
			transcript.Entry{At: at + 100*time.Microsecond, Stream: "ads#1", Direction: transcript.Sent, Kind: "DiscoveryRequest",
				Message: msg(map[string]any{"type_url": "type.googleapis.com/envoy.config.cluster.v3.Cluster", "response_nonce": fmt.Sprint(i + 1),
					"error_detail": map[string]any{"code": 3, "message": "bad cluster"}})})
	}
	loop = transcript.Fold(loop)
	started := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	server := results.Run{
		SchemaVersion: "2", HarnessVersion: "v0.0.0-test", Role: "server",
		Target: "127.0.0.1:18000 " + h, Started: started, Duration: 3 * time.Second,
		Implementation: &results.Implementation{Name: "my-control-plane " + h, Version: "v1.4.2", Organization: h,
			URL: "javascript:window.__pwned=1", Contact: []string{"team@example.com", h}, Capabilities: []string{"delta-ads", h}},
		CatalogueVersion: "sha256:" + strings.Repeat("ab", 32),
		Options:          map[string]string{"timeout": "5s", "metadata": h, "empty": ""},
		Results: []results.Result{
			{ID: "server/ack/ack-then-update", Variant: "sotw-ads", Title: "An ACK is followed by the next update", Requirements: []string{"ACK-1"},
				Level: results.Must, Outcome: results.Pass, Duration: 20 * time.Millisecond, Transcript: serverTranscript},
			{ID: "server/nonce/stale-request-ignored", Variant: "sotw-ads", Title: "A stale nonce is ignored", Requirements: []string{"NONCE-7"},
				Level: results.Must, Outcome: results.Fail, Message: "NONCE-7 (MUST): expected no response, got one: " + h,
				RulesBroken: []string{"NONCE-7"}, BrokenLevel: results.Must, Duration: 1500 * time.Millisecond, Transcript: serverTranscript},
			{ID: "server/nonce/stale-request-ignored", Variant: "delta-ads", Title: "A stale nonce is ignored", Requirements: []string{"NONCE-7"},
				Level: results.Must, Outcome: results.Fail, Message: "NONCE-7 (MUST): expected no response", KnownFailing: "NONCE-7: the cache answers " + h,
				RulesBroken: []string{"NONCE-7"}, BrokenLevel: results.Must, Duration: 1500 * time.Millisecond, Transcript: serverTranscript},
			{ID: "server/grouping/partial-other-types", Variant: "sotw-ads", Title: "Only changed types are sent", Requirements: []string{"GRP-2"},
				Level: results.May, Outcome: results.Unsupported, Message: "GRP-2 (MAY): a RDS response came", RulesBroken: []string{"GRP-2"},
				BrokenLevel: results.May, Transcript: serverTranscript},
			{ID: "server/wildcard/" + h, Variant: h, Title: h, Requirements: []string{h, "WILD-2"},
				Level: results.Level(h), Outcome: results.Outcome(h), Message: h, Transcript: serverTranscript},
			{ID: "server/nack/resend-loop", Variant: "sotw-ads", Title: "A NACKed response is not resent as is", Requirements: []string{"ACK-5"},
				Level: results.Should, Outcome: results.Fail, Message: "ACK-5 (SHOULD): the NACKed response came again, 39 times",
				RulesBroken: []string{"ACK-5"}, BrokenLevel: results.Should, Duration: 45 * time.Millisecond, Transcript: loop},
			{ID: "server/resources/dne", Variant: "delta-pertype", Title: "Needs the fixture", Requirements: []string{"RES-4"},
				Level: results.Should, Outcome: results.Skip, Message: "needs fixture"},
			{ID: "server/resources/dne", Variant: "sotw-pertype", Title: "Unreachable", Requirements: []string{"RES-4"},
				Level: results.Should, Outcome: results.Error, Message: "target unreachable: " + h},
			{ID: "server/resources/subscribe-more", Variant: "sotw-ads", Title: "A second subscription is answered", Requirements: []string{"RES-4"},
				Level: results.May, Outcome: results.Blocked, Message: "blocked by RES-1 (MUST): a precondition failed: no CDS response: " + h,
				RulesBroken: []string{"RES-1"}, BrokenLevel: results.Must, BlockedBy: "RES-1", Transcript: serverTranscript},
			{ID: "server/update/prompt", Variant: "delta-ads", Title: "Updates come promptly", Requirements: []string{"UPD-2"},
				Level: results.Should, Outcome: results.Inconclusive, Message: "the harness's own lag could explain a timing verdict either way: " + h,
				Timing: &results.Timing{Reruns: 2, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the update " + h, Kind: results.TimingWithin,
					Measured: 1200 * time.Millisecond, Limit: time.Second, Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt}}}},
		},
	}
	client := results.Run{
		SchemaVersion: "2", HarnessVersion: "v0.0.0-test", Role: "client",
		Target: "builtin:reference (faults: ack-duplicates)", Started: started.Add(time.Minute), Duration: 7 * time.Second,
		FailOn: results.Must,
		Results: []results.Result{
			{ID: "client/ack/every-response", Variant: "sotw-ads", Title: "Every response is ACKed or NACKed", Requirements: []string{"ACK-1"},
				Level: results.Must, Outcome: results.Pass, Duration: 800 * time.Millisecond, Transcript: clientTranscript},
			{ID: "client/nack/duplicate-names", Variant: "sotw-ads", Title: "A response naming one resource twice is NACKed",
				Requirements: []string{"DUP-2"}, Level: results.Should, Outcome: results.Fail,
				Message:     `DUP-2 (SHOULD): request #8 should NACK the invalid response with nonce "n1-4", but ACKs it`,
				RulesBroken: []string{"DUP-2"}, BrokenLevel: results.Should, Duration: 500 * time.Millisecond, Transcript: clientTranscript},
			{ID: "client/ack/prompt", Variant: "sotw-ads", Title: "ACKs come promptly", Requirements: []string{"UPD-2"},
				Level: results.Should, Outcome: results.Pass, KnownFailing: "UPD-2: stale entry", Transcript: clientTranscript},
		},
	}
	return []results.Run{server, client}
}
