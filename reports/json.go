package reports

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/xdsconform/xdsconform/reports/verdict"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// JSONSchemaVersion is the schema_version WriteJSON writes. Version 2
// added the "unsupported" outcome, rules_broken, broken_level, fail_on
// and the summary; version 3 the "blocked" and "inconclusive" outcomes,
// blocked_by, timing, the causes, and the summary's blocked and
// inconclusive counts (by level too, with known_failing). A reader of
// version 2 would count a blocked pair as neither a pass nor a failure.
const JSONSchemaVersion = "3"

// WriteJSON writes run as indented JSON, schema version 3. The layout is
// results.Run's JSON encoding, and reports/schema/report.schema.json (a
// JSON Schema every report the tests write is checked against) says the
// same; what each outcome means is in docs/outcomes.md:
//
//	{
//	  "schema_version": "3",
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
//	    "pass", "fail", "blocked", "warn", "unsupported", "inconclusive",
//	    "known_failing", "stale", "skipped", "error": integer, // as the console summary
//	    "ok": bool,                         // exit status 0
//	    "by_level": {"MUST": {"pass", "fail", "blocked", "known_failing", "unsupported",
//	                          "inconclusive", "skipped", "error": integer}, ...}
//	                                        // fail and blocked count excused pairs too;
//	                                        // known_failing says how many of them
//	  },
//	  "causes": [                           // what did not pass, by root cause (verdict.Causes)
//	    {
//	      "kind": "rule" | "error",
//	      "rule": "RES-1", "level": "MUST", // kind rule: the rule failed or blocked by
//	      "error": string,                  // kind error: the first line, per-pair names elided
//	      "pairs", "failed", "blocked", "errored", "below_fail_on": integer,
//	      "known_failing": bool,            // every pair excused (a cause of its own)
//	      "fails_run": bool,
//	      "first": "id[variant]",           // first seen in, in result order
//	      "example": string                 // that pair's first line
//	    }
//	  ],
//	  "results": [                          // sorted by id, then variant; always an array
//	    {
//	      "id": "server/nonce/stale-request-ignored",
//	      "variant": "sotw-ads",
//	      "title": string,
//	      "requirements": ["NONCE-7", ...], // always an array
//	      "level": "MUST" | "SHOULD" | "MAY",
//	      "outcome": "pass" | "fail" | "blocked" | "unsupported" | "inconclusive" | "skipped" | "error",
//	      "message": string,                // omitted when empty; each failure
//	                                        // starts "RULE (LEVEL): ", a blocked
//	                                        // pair's "blocked by RULE (LEVEL): "
//	      "rules_broken": ["RES-4", ...],   // fail and unsupported: the rules whose
//	                                        // steps failed; blocked: the blocking rule
//	      "broken_level": "MUST" | ...,     // the strongest of them
//	      "blocked_by": "RES-1",            // blocked only
//	      "timing": {                       // a pair whose verdict rests on time
//	        "checks": [{"rule", "what": string, "kind": "within" | "covers",
//	                    "measured_ns", "limit_ns", "harness_lag_ns", "harness_lag_max_ns": integer,
//	                    "verdict": "pass" | "fail" | "doubt"}],
//	        "reruns": integer               // omitted when it did not run again
//	      },
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
// never a failure. "blocked" is a failure of the rule in blocked_by (a
// precondition resting on it failed), "inconclusive" a timing verdict the
// harness's own lag could explain, which fails nothing. WriteJSON writes
// every transcript run holds; which ones that is, the caller decides with
// WithTranscripts (the CLI's --transcripts: by default only the pairs that
// did not pass; with all, passing pairs too, the complete record for
// checking a verdict after the fact). A fold marker stands for a run of
// repeated entries (a resend loop): the entries before and after it are
// the first and last repeats. An empty SchemaVersion is filled in; a
// different one is an error, since this writer and the comment above
// describe version 3 only.
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
		// A timing record that holds nothing says nothing: the schema
		// wants it omitted rather than empty.
		if t := run.Results[i].Timing; t != nil && len(t.Checks) == 0 && t.Reruns == 0 {
			run.Results[i].Timing = nil
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Transcript arrows and messages such as "<-" read better unescaped; the
	// file is not meant for embedding in HTML.
	enc.SetEscapeHTML(false)
	return enc.Encode(jsonRun{Run: run, Summary: summaryOf(run), Causes: causesOf(run)})
}

// jsonRun is the JSON report: the run, its summary and its causes.
type jsonRun struct {
	results.Run
	Summary jsonSummary `json:"summary"`
	Causes  []jsonCause `json:"causes"`
}

// jsonSummary is the summary object of the JSON report.
type jsonSummary struct {
	Pass         int                                  `json:"pass"`
	Fail         int                                  `json:"fail"`
	Blocked      int                                  `json:"blocked"`
	Warn         int                                  `json:"warn"`
	Unsupported  int                                  `json:"unsupported"`
	Inconclusive int                                  `json:"inconclusive"`
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
		Pass: s.Pass, Fail: s.Fail, Blocked: s.Blocked, Warn: s.Tolerated, Unsupported: s.Unsupported,
		Inconclusive: s.Inconclusive, KnownFailing: s.KnownFailing, Stale: s.StalePasses, Skipped: s.Skip, Error: s.Error,
		OK: s.OK() && !run.Interrupted, ByLevel: s.ByLevel,
	}
}

// jsonCause is one entry of the causes array: a verdict.Cause.
type jsonCause struct {
	Kind         string        `json:"kind"`
	Rule         string        `json:"rule,omitempty"`
	Level        results.Level `json:"level,omitempty"`
	Error        string        `json:"error,omitempty"`
	Pairs        int           `json:"pairs"`
	Failed       int           `json:"failed"`
	Blocked      int           `json:"blocked"`
	Errored      int           `json:"errored"`
	BelowFailOn  int           `json:"below_fail_on"`
	KnownFailing bool          `json:"known_failing"`
	FailsRun     bool          `json:"fails_run"`
	First        string        `json:"first"`
	Example      string        `json:"example"`
}

// causesOf groups run's results by root cause (always an array).
func causesOf(run results.Run) []jsonCause {
	out := []jsonCause{}
	for _, c := range verdict.Causes(run.Results, run.FailOn) {
		kind := "rule"
		if c.Rule == "" {
			kind = "error"
		}
		out = append(out, jsonCause{Kind: kind, Rule: c.Rule, Level: c.Level, Error: c.Error, Pairs: c.Pairs,
			Failed: c.Failed, Blocked: c.Blocked, Errored: c.Errored, BelowFailOn: c.Tolerated,
			KnownFailing: c.KnownFailing, FailsRun: c.FailsRun(), First: c.First, Example: c.Example})
	}
	return out
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
