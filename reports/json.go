package reports

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// JSONSchemaVersion is the schema_version WriteJSON writes. Version 2
// added the "unsupported" outcome, rules_broken, broken_level, fail_on
// and the summary.
const JSONSchemaVersion = "2"

// WriteJSON writes run as indented JSON, schema version 2. The layout is
// results.Run's JSON encoding, and reports/schema/report.schema.json (a
// JSON Schema every report the tests write is checked against) says the
// same:
//
//	{
//	  "schema_version": "2",
//	  "harness_version": string,
//	  "role": "server" | "client" | "both", // both: xdsconform run, one suite of each
//	  "target": string,
//	  "options": {string: string},          // always an object; "transcripts": the
//	                                        // --transcripts policy (see WithTranscripts)
//	  "implementation": {                   // omitted when none was given
//	    "name", "organization", "version", "url": string, // each omitted when empty
//	    "contact": [string], "capabilities": [string]     // each omitted when empty
//	  },
//	  "catalogue_version": "sha256:HEX",    // the requirements.md judged against
//	  "started": RFC 3339 timestamp,
//	  "duration_ns": integer nanoseconds,
//	  "interrupted": true,                  // present only when cut short
//	  "fail_on": "MUST" | "SHOULD",         // omitted: SHOULD
//	  "summary": {                          // the verdict arithmetic
//	    "pass", "fail", "warn", "unsupported", "known_failing", "stale",
//	    "skipped", "error": integer,        // as the console summary
//	    "ok": bool,                         // exit status 0
//	    "by_level": {"MUST": {"pass", "fail", "unsupported", "skipped", "error": integer}, ...}
//	  },
//	  "results": [                          // sorted by id, then variant; always an array
//	    {
//	      "id": "server/nonce/stale-request-ignored",
//	      "variant": "sotw-ads",
//	      "title": string,
//	      "requirements": ["NONCE-7", ...], // always an array
//	      "level": "MUST" | "SHOULD" | "MAY",
//	      "outcome": "pass" | "fail" | "unsupported" | "skipped" | "error",
//	      "message": string,                // omitted when empty; each failure
//	                                        // starts "RULE (LEVEL): "
//	      "rules_broken": ["RES-4", ...],   // fail and unsupported only: the rules
//	                                        // whose steps failed
//	      "broken_level": "MUST" | ...,     // the strongest of them
//	      "known_failing": string,          // reason; omitted when not listed
//	      "duration_ns": integer,
//	      "transcript": [                   // omitted when nothing was recorded, or
//	        {                               // when the policy does not keep it
//	          "at_ns": integer,             // since the scenario started
//	          "stream": "ads#1",
//	          "direction": "sent" | "received" | "event" | "folded",
//	          "kind": "DiscoveryRequest" | ... | "event" | "folded",
//	          "message": {proto3 JSON, secrets redacted}, // omitted for events, folds
//	          "note": string,               // omitted when empty
//	          "until_ns", "folded", "cycle": integer // folds only (transcript.Fold)
//	        }
//	      ]
//	    }
//	  ]
//	}
//
// "unsupported" is a MAY behaviour the target does not implement: reported,
// never a failure. WriteJSON writes every transcript run holds; which ones
// that is, the caller decides with WithTranscripts (the CLI's
// --transcripts: by default only the pairs that did not pass; with all,
// passing pairs too, the complete record for checking a verdict after the
// fact). A fold marker stands for a run of repeated entries (a resend
// loop): the entries before and after it are the first and last repeats.
// An empty SchemaVersion is filled in; a different
// one is an error, since this writer and the comment above describe
// version 2 only.
func WriteJSON(w io.Writer, run results.Run) error {
	switch run.SchemaVersion {
	case "":
		run.SchemaVersion = JSONSchemaVersion
	case JSONSchemaVersion:
	default:
		return fmt.Errorf("reports: run has schema version %q, this writer produces %q", run.SchemaVersion, JSONSchemaVersion)
	}
	// Consumers should not have to tell null from empty; run is a copy, and
	// the result slice is copied before its elements are touched.
	if run.Options == nil {
		run.Options = map[string]string{}
	}
	run = scrubbedRun(run)
	run.Results = sortedResults(run.Results)
	if run.Results == nil {
		run.Results = []results.Result{}
	}
	for i := range run.Results {
		if run.Results[i].Requirements == nil {
			run.Results[i].Requirements = []string{}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Transcript arrows and messages such as "<-" read better unescaped; the
	// file is not meant for embedding in HTML.
	enc.SetEscapeHTML(false)
	return enc.Encode(jsonRun{Run: run, Summary: summaryOf(run)})
}

// jsonRun is the JSON report: the run and its summary.
type jsonRun struct {
	results.Run
	Summary jsonSummary `json:"summary"`
}

// jsonSummary is the summary object of the JSON report.
type jsonSummary struct {
	Pass         int                                  `json:"pass"`
	Fail         int                                  `json:"fail"`
	Warn         int                                  `json:"warn"`
	Unsupported  int                                  `json:"unsupported"`
	KnownFailing int                                  `json:"known_failing"`
	Stale        int                                  `json:"stale"`
	Skipped      int                                  `json:"skipped"`
	Error        int                                  `json:"error"`
	OK           bool                                 `json:"ok"`
	ByLevel      map[results.Level]results.LevelCount `json:"by_level"`
}

func summaryOf(run results.Run) jsonSummary {
	s := results.SummarizeFor(run.Results, run.FailOn)
	return jsonSummary{
		Pass: s.Pass, Fail: s.Fail, Warn: s.Tolerated, Unsupported: s.Unsupported,
		KnownFailing: s.KnownFailing, Stale: s.StalePasses, Skipped: s.Skip, Error: s.Error,
		OK: s.OK() && !run.Interrupted, ByLevel: s.ByLevel,
	}
}

// scrubbedRun is run with every secret remembered so far (see
// transcript.Scrub) replaced in its free text: the messages, transcripts
// and option values every report shows. It runs as each report is
// written, not once, so a secret learnt after a result was made (from
// another pair, later in the run) is still cut out. IDs, names and levels
// come from the catalogue and the harness and are left alone, so a target
// cannot make a report unreadable by planting them as secrets. run is a
// copy; its slices and map are copied before they are changed.
func scrubbedRun(run results.Run) results.Run {
	rs := make([]results.Result, len(run.Results))
	for i, r := range run.Results {
		rs[i] = scrubbed(r)
	}
	run.Results = rs
	if run.Options != nil {
		opts := make(map[string]string, len(run.Options))
		for k, v := range run.Options {
			opts[k] = transcript.Scrub(v)
		}
		run.Options = opts
	}
	run.Implementation = scrubbedImplementation(run.Implementation)
	return run
}

// scrubbedImplementation is i with its free text scrubbed: the user gives
// it, but a name or contact pasted from a configuration may carry a token
// the run has learnt to hide. i is not changed.
func scrubbedImplementation(i *results.Implementation) *results.Implementation {
	if i == nil {
		return nil
	}
	c := *i
	for _, f := range []*string{&c.Name, &c.Organization, &c.Version, &c.URL} {
		*f = transcript.Scrub(*f)
	}
	c.Contact, c.Capabilities = scrubbedAll(c.Contact), scrubbedAll(c.Capabilities)
	return &c
}

// scrubbedAll is ss scrubbed, in a new slice (nil for none).
func scrubbedAll(ss []string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = transcript.Scrub(s)
	}
	return out
}

// scrubbed is r with its message and transcript scrubbed of remembered
// secrets.
func scrubbed(r results.Result) results.Result {
	r.Message = transcript.Scrub(r.Message)
	r.Transcript = transcript.ScrubEntries(r.Transcript)
	return r
}
