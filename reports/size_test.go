package reports

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	discovery "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/xdsconform/xdsconform/internal/requirements"
	"github.com/xdsconform/xdsconform/reports/schema"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// nackLoops are nackLoop(1500, raw) for raw false and true, made once:
// recording 3,001 messages under the race detector takes seconds.
var nackLoops = [2]func() []transcript.Entry{
	sync.OnceValue(func() []transcript.Entry { return nackLoop(1500, false) }),
	sync.OnceValue(func() []transcript.Entry { return nackLoop(1500, true) }),
}

// loop1500 is the 3,001-entry loop, folded unless raw.
func loop1500(raw bool) []transcript.Entry {
	if raw {
		return nackLoops[1]()
	}
	return nackLoops[0]()
}

// nackLoop is the transcript of a pair caught in go-control-plane's NACK
// loop, as the engine keeps it: the SnapshotCache resends the NACKed
// snapshot at once (cache/v3/simple.go), the harness NACKs each copy, for
// cycles cycles (1500: 3,001 entries), through the transcript's caps;
// folded unless raw.
func nackLoop(cycles int, raw bool) []transcript.Entry {
	tr := transcript.New()
	tr.Record("ads#1", transcript.Sent, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"}})
	for i := range cycles {
		nonce := strconv.Itoa(i + 1)
		tr.Record("ads#1", transcript.Received, &discovery.DiscoveryResponse{VersionInfo: "1", TypeUrl: wire.Cluster.URL,
			Nonce: nonce, Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "c", 1)}})
		tr.Record("ads#1", transcript.Sent, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"},
			ResponseNonce: nonce, ErrorDetail: &status.Status{Code: 3, Message: "cluster c: rejected on purpose"}})
	}
	if raw {
		return tr.Entries()
	}
	return transcript.Fold(tr.Entries())
}

// ordinary is the transcript of an ordinary pair: a few requests and
// responses, about the size of a passing pair's against go-control-plane.
func ordinary(n int) []transcript.Entry {
	tr := transcript.New()
	tr.Event("ads#1", "opened")
	for i := range n {
		tr.Record("ads#1", transcript.Sent, &discovery.DiscoveryRequest{TypeUrl: wire.Cluster.URL, ResourceNames: []string{"c"}, ResponseNonce: strconv.Itoa(i)})
		tr.Record("ads#1", transcript.Received, &discovery.DiscoveryResponse{VersionInfo: strconv.Itoa(i), TypeUrl: wire.Cluster.URL,
			Nonce: strconv.Itoa(i + 1), Resources: []*anypb.Any{wire.BuildAny(wire.Cluster, "c", i)}})
	}
	return tr.Entries()
}

// defaultRunShape is a run shaped like `xdsconform run`'s (the figures of
// issue 13): 143 results with transcripts that passed, 26 known failing,
// 8 of them in a 3,001-entry NACK loop, and the rest skipped.
func defaultRunShape(raw bool) results.Run {
	run := results.Run{SchemaVersion: JSONSchemaVersion, HarnessVersion: "dev", Role: results.RoleBoth,
		Target: "server: builtin:go-control-plane; client: builtin:grpc-go", Started: time.Now().UTC(), Duration: 20 * time.Second}
	result := func(i int, o results.Outcome) results.Result {
		return results.Result{ID: fmt.Sprintf("server/family/scenario-%03d", i), Variant: "sotw-ads", Title: "a scenario",
			Requirements: []string{"ACK-5", "UPD-1"}, Level: results.Must, Outcome: o, Duration: 300 * time.Millisecond}
	}
	loop := loop1500(raw)
	// Shared by the results (writers only read them), made once.
	passing, failing := ordinary(8), ordinary(6)
	for i := range 700 {
		var r results.Result
		switch {
		case i < 143:
			r = result(i, results.Pass)
			r.Transcript = passing
		case i < 143+26:
			r = result(i, results.Fail)
			r.Message = "UPD-1 (SHOULD): the NACKed version was resent unchanged\n  expected: no response\n  actual:   DiscoveryResponse version_info=\"1\""
			r.RulesBroken, r.BrokenLevel = []string{"UPD-1"}, results.Should
			r.KnownFailing = "ACK-5/UPD-1: the SnapshotCache resends the NACKed snapshot immediately (cache/v3/simple.go:457-464)"
			r.Transcript = failing
			if i < 143+8 {
				r.Transcript = loop
			}
		default:
			r = result(i, results.Skip)
			r.Message = "the client does not speak delta-pertype"
		}
		run.Results = append(run.Results, r)
	}
	return run
}

// The default report of a run shaped like `xdsconform run` is under 1 MB,
// JSON and JUnit: only the pairs that did not pass keep transcripts, and
// the loops fold. Unfolded, with every transcript, it is several times
// that, so the bound tests something.
func TestDefaultReportUnderOneMegabyte(t *testing.T) {
	const bound = 1 << 20
	sizes := func(run results.Run) (jsonBytes, junitBytes int) {
		var j, x bytes.Buffer
		require.NoError(t, WriteJSON(&j, run))
		require.NoError(t, WriteJUnit(&x, run))
		return j.Len(), x.Len()
	}
	js, xs := sizes(WithTranscripts(defaultRunShape(false), TranscriptsFailing))
	t.Logf("default (failing, folded): JSON %d bytes, JUnit %d bytes", js, xs)
	assert.Less(t, js, bound)
	assert.Less(t, xs, bound)

	before, _ := sizes(WithTranscripts(defaultRunShape(true), TranscriptsAll))
	t.Logf("every transcript, unfolded: JSON %d bytes", before)
	assert.Greater(t, before, 4*bound, "the shape is heavy enough for the bound to matter")

	all, _ := sizes(WithTranscripts(defaultRunShape(false), TranscriptsAll))
	t.Logf("every transcript, folded: JSON %d bytes", all)
	assert.Less(t, js, all, "failing keeps less than all")
}

// --transcripts: failing keeps every pair that did not pass (a stale
// known-failing entry passed but fails the run: it keeps its own), all
// keeps every one, none keeps none, and the policy is in the options.
func TestTranscriptPolicy(t *testing.T) {
	pass := res("server/a/pass", "sotw-ads", results.Pass, "", "")
	stale := res("server/a/stale", "sotw-ads", results.Pass, "", "listed")
	others := []results.Result{
		res("server/a/fail", "sotw-ads", results.Fail, "x", ""),
		res("server/a/xfail", "sotw-ads", results.Fail, "x", "listed"),
		res("server/a/skip", "sotw-ads", results.Skip, "x", ""),
		res("server/a/error", "sotw-ads", results.Error, "x", ""),
		res("server/a/unsup", "sotw-ads", results.Unsupported, "x", ""),
	}
	run := results.Run{Role: "server", Options: map[string]string{"timeout": "5s"}, Results: append([]results.Result{pass, stale}, others...)}
	for _, tc := range []struct {
		p    TranscriptPolicy
		kept map[string]bool
	}{
		{TranscriptsFailing, map[string]bool{"pass": false, "stale": true, "fail": true, "xfail": true, "skip": true, "error": true, "unsup": true}},
		{TranscriptsAll, map[string]bool{"pass": true, "stale": true, "fail": true, "xfail": true, "skip": true, "error": true, "unsup": true}},
		{TranscriptsNone, map[string]bool{"pass": false, "stale": false, "fail": false, "xfail": false, "skip": false, "error": false, "unsup": false}},
	} {
		got := WithTranscripts(run, tc.p)
		assert.Equal(t, string(tc.p), got.Options["transcripts"])
		assert.Equal(t, "5s", got.Options["timeout"])
		for _, r := range got.Results {
			name := strings.TrimPrefix(r.ID, "server/a/")
			assert.Equal(t, tc.kept[name], len(r.Transcript) > 0, "%s keeps %s's transcript", tc.p, name)
		}
	}
	assert.NotContains(t, run.Options, "transcripts", "the run given is not changed")
	assert.NotEmpty(t, run.Results[0].Transcript, "the run given is not changed")

	for _, s := range []string{"failing", "ALL", " none "} {
		_, err := ParseTranscriptPolicy(s)
		assert.NoError(t, err, s)
	}
	_, err := ParseTranscriptPolicy("passing")
	assert.ErrorContains(t, err, `"passing": want failing, all or none`)
}

// edgeRuns are runs with every kind of result and run-level state the
// writers handle.
func edgeRuns() map[string]results.Run {
	base := func() results.Run {
		return results.Run{SchemaVersion: JSONSchemaVersion, HarnessVersion: "v1.2.3", Role: "server", Target: "127.0.0.1:18000",
			Options: map[string]string{"timeout": "5s"}, Started: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Duration: time.Second}
	}
	r := func(id string, o results.Outcome, msg, known string) results.Result {
		x := res(id, "delta-ads", o, msg, known)
		switch o {
		case results.Fail, results.Unsupported:
			x.RulesBroken, x.BrokenLevel = []string{"NONCE-7"}, results.Should
		case results.Blocked:
			x.RulesBroken, x.BrokenLevel, x.BlockedBy = []string{"RES-1"}, results.Must, "RES-1"
		case results.Inconclusive:
			x.Timing = &results.Timing{Reruns: 2, Checks: []results.TimingCheck{{Rule: "UPD-2", What: "the ACK of version 2", Kind: results.TimingWithin,
				Measured: 1200 * time.Millisecond, Limit: time.Second, Lag: 400 * time.Millisecond, LagMax: 300 * time.Millisecond, Verdict: results.TimingDoubt}}}
		}
		return x
	}
	every := base()
	every.Results = []results.Result{
		r("server/a/pass", results.Pass, "", ""),
		r("server/a/fail", results.Fail, "NONCE-7 (SHOULD): bad ]]> <x> & \x1b[31m \x00 \"quoted\"", ""),
		r("server/a/xfail", results.Fail, "NONCE-7 (SHOULD): known", "NONCE-7: upstream bug"),
		r("server/a/stale", results.Pass, "", "NONCE-7: was broken"),
		r("server/a/skip", results.Skip, "needs fixture", ""),
		r("server/a/error", results.Error, "dial tcp: connection refused", ""),
		r("server/a/unsup", results.Unsupported, "NONCE-7 (MAY): optional", ""),
		r("server/a/blocked", results.Blocked, "blocked by RES-1 (MUST): a precondition failed: no CDS response for x1a2b3c4d-c1", ""),
		r("server/a/xblocked", results.Blocked, "blocked by RES-1 (MUST): a precondition failed: no CDS response", "RES-1: the peer's bug"),
		r("server/a/incon", results.Inconclusive, "the harness's own lag could explain a timing verdict either way:\nUPD-2: …", ""),
	}
	every.Results[2].Transcript = loop1500(false)
	every.CatalogueVersion = requirements.CatalogueVersion()
	every.Implementation = &results.Implementation{Name: "my-control-plane", Version: "v1.4.2", Contact: []string{"team@example.com"}, Capabilities: []string{"delta-ads"}}
	interrupted := base()
	interrupted.Interrupted = true
	interrupted.Results = every.Results[:2]
	interrupted.Results[1].Outcome, interrupted.Results[1].Message = results.Error, "interrupted before the scenario finished"
	mustOnly := base()
	mustOnly.FailOn = results.Must
	mustOnly.Results = every.Results
	both := base()
	both.Role, both.Target = results.RoleBoth, "server: builtin:go-control-plane; client: builtin:grpc-go"
	c := res("client/ack/every-response", "sotw-ads", results.Pass, "", "")
	both.Results = append([]results.Result{c}, every.Results...)
	// Nothing ran: results is an empty array, not null.
	empty := results.Run{Role: results.RoleClient}
	return map[string]results.Run{"every outcome": every, "interrupted": interrupted, "fail-on must": mustOnly, "both roles": both, "empty": empty}
}

// Every report the writers produce validates against the committed
// schemas: the JSON report against report.schema.json, JUnit against the
// common JUnit XSD, under every --transcripts policy.
func TestReportsValidateAgainstSchemas(t *testing.T) {
	for name, run := range edgeRuns() {
		for _, p := range TranscriptPolicies {
			t.Run(name+"/"+string(p), func(t *testing.T) {
				run := WithTranscripts(run, p)
				var j, x bytes.Buffer
				require.NoError(t, WriteJSON(&j, run))
				assert.NoError(t, schema.ValidateJSONReport(j.Bytes()))
				require.NoError(t, WriteJUnit(&x, run))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err := schema.ValidateJUnit(ctx, x.Bytes())
				if errors.Is(err, schema.ErrNoXmllint) {
					t.Skip(err)
				}
				assert.NoError(t, err)
			})
		}
	}
}

// One testcase's system-out is bounded, keeping the transcript's start and
// end and saying what it left out; short transcripts are kept whole.
func TestSystemOutCapped(t *testing.T) {
	r := res("server/a/fail", "sotw-ads", results.Fail, "NONCE-7 (SHOULD): x", "")
	r.Transcript = ordinary(2000)
	full := transcript.Format(r.Transcript)
	require.Greater(t, len(full), 4*SystemOutBytes)
	var x bytes.Buffer
	require.NoError(t, WriteJUnit(&x, results.Run{Role: "server", Results: []results.Result{r}}))
	var doc xSuites
	require.NoError(t, xml.Unmarshal(x.Bytes(), &doc))
	out := doc.Suites[0].Cases[0].SystemOut
	assert.LessOrEqual(t, len(out), SystemOutBytes+512)
	first, _, _ := strings.Cut(full, "\n")
	assert.True(t, strings.HasPrefix(out, first+"\n"), "starts with the first entry")
	assert.True(t, strings.HasSuffix(out, full[strings.LastIndex(full[:len(full)-1], "\n")+1:]), "ends with the last entry")
	assert.Regexp(t, `\n\.\.\. \d+ bytes, \d+ lines, left out here \(system-out keeps`, out)
	assert.Less(t, len(doc.Suites[0].Cases[0].Failure.Body), ProblemTranscriptBytes+1024, "the failure's own tail is bounded too")

	r.Transcript = ordinary(3)
	x.Reset()
	require.NoError(t, WriteJUnit(&x, results.Run{Role: "server", Results: []results.Result{r}}))
	var short xSuites
	require.NoError(t, xml.Unmarshal(x.Bytes(), &short))
	assert.Equal(t, transcript.Format(r.Transcript), short.Suites[0].Cases[0].SystemOut)
}

// A run of both suites (xdsconform run) is named as such: role "both"
// reads as the server and client suites on the console and in JUnit.
func TestBothRolesNamed(t *testing.T) {
	run := edgeRuns()["both roles"]
	var con, x bytes.Buffer
	NewConsole(&con, ConsoleOptions{}).Summary(run)
	assert.Contains(t, con.String(), "=== Summary: server and client suites against server: builtin:go-control-plane; client: builtin:grpc-go (")
	require.NoError(t, WriteJUnit(&x, run))
	var doc xSuites
	require.NoError(t, xml.Unmarshal(x.Bytes(), &doc))
	assert.Equal(t, "xdsconform server and client suites: server: builtin:go-control-plane; client: builtin:grpc-go [SHOULD]", doc.Suites[0].Name)
	classes := map[string]bool{}
	for _, c := range doc.Suites[0].Cases {
		classes[c.ClassName] = true
	}
	assert.Equal(t, map[string]bool{"client.ack": true, "server.a": true}, classes)
}
