package reports

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Every report passes its free text through the secret memory: a secret
// the redaction learnt, wherever it turns up (a failure message, a
// transcript note or message, an option), is replaced in the console's
// progress lines and summary, the JSON and the JUnit; what the harness
// names (IDs, rules) stays; and the run handed in is not changed.
func TestReportsScrubRememberedSecrets(t *testing.T) {
	const secret = "MARKER-reports-7f3a"
	transcript.RememberSecret(secret)
	fail := results.Result{
		ID: "server/ack/ack-accepted", Variant: "sotw-ads", Requirements: []string{"ACK-1"}, Level: results.Must,
		Outcome: results.Fail, RulesBroken: []string{"ACK-1"}, BrokenLevel: results.Must,
		Message:  "resource differs:\n  key: " + secret + "\n",
		Duration: time.Millisecond,
		Transcript: []transcript.Entry{
			{Stream: "ads#1", Direction: transcript.Received, Kind: "DiscoveryResponse", Message: json.RawMessage(`{"version_info":"` + secret + `"}`)},
			{Stream: "ads#1", Direction: transcript.Event, Kind: "event", Note: "closed: Unauthenticated: bad token " + secret},
		},
	}
	run := results.Run{Role: "server", Target: "t", Options: map[string]string{"metadata": secret}, Results: []results.Result{fail}}
	before := fail.Message

	var console bytes.Buffer
	c := NewConsole(&console, ConsoleOptions{Verbose: true})
	c.Finished(fail)
	c.Summary(run)
	var js, ju bytes.Buffer
	require.NoError(t, WriteJSON(&js, run))
	require.NoError(t, WriteJUnit(&ju, run))
	for name, out := range map[string]string{"console": console.String(), "json": js.String(), "junit": ju.String()} {
		assert.NotContains(t, out, secret, name)
		assert.Contains(t, out, transcript.RedactedSecret, name)
		assert.Contains(t, out, "server/ack/ack-accepted", name)
	}
	assert.Equal(t, before, run.Results[0].Message, "the caller's run was modified")
	assert.Equal(t, secret, run.Options["metadata"], "the caller's options were modified")
}
