package reports

import (
	"fmt"
	"maps"
	"strings"

	"github.com/xdsconform/xdsconform/results"
)

// TranscriptPolicy says which results keep their transcripts in the
// report files (--transcripts). The console is not affected: it prints
// failure details from the results as the engine made them.
type TranscriptPolicy string

const (
	// TranscriptsFailing keeps the transcripts of the pairs that did not
	// pass: failures (known-failing ones included), errors, skips,
	// unsupported MAY behaviours and stale known-failing entries. It is
	// the default: the transcripts of passing pairs are most of a report
	// and evidence of nothing anyone needs to read.
	TranscriptsFailing TranscriptPolicy = "failing"
	// TranscriptsAll keeps every transcript, passes included: the complete
	// record, to check a verdict after the fact.
	TranscriptsAll TranscriptPolicy = "all"
	// TranscriptsNone keeps none: verdicts and messages only.
	TranscriptsNone TranscriptPolicy = "none"
)

// TranscriptPolicies lists the policies, the default first.
var TranscriptPolicies = []TranscriptPolicy{TranscriptsFailing, TranscriptsAll, TranscriptsNone}

// ParseTranscriptPolicy reads a --transcripts value.
func ParseTranscriptPolicy(s string) (TranscriptPolicy, error) {
	p := TranscriptPolicy(strings.ToLower(strings.TrimSpace(s)))
	for _, q := range TranscriptPolicies {
		if p == q {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q: want failing, all or none", s)
}

// Keeps reports whether p keeps r's transcript. A pair did not pass when
// its outcome is not pass, or when it passed but is listed as known
// failing (a stale entry, which fails the run).
func (p TranscriptPolicy) Keeps(r results.Result) bool {
	switch p {
	case TranscriptsAll:
		return true
	case TranscriptsNone:
		return false
	}
	return r.Outcome != results.Pass || r.KnownFailing != ""
}

// WithTranscripts returns run with the transcripts p does not keep
// removed, and p recorded in its options ("transcripts"), so a reader
// knows why a result has none. run is a copy; its results and options are
// copied before they are changed.
func WithTranscripts(run results.Run, p TranscriptPolicy) results.Run {
	rs := make([]results.Result, len(run.Results))
	for i, r := range run.Results {
		if !p.Keeps(r) {
			r.Transcript = nil
		}
		rs[i] = r
	}
	run.Results = rs
	opts := make(map[string]string, len(run.Options)+1)
	maps.Copy(opts, run.Options)
	opts["transcripts"] = string(p)
	run.Options = opts
	return run
}
