// Package reports renders a run for people and for machines: live console
// progress with a summary, JUnit XML for CI systems, and a JSON report.
//
// Everything here is a pure rendering of results.Run and results.Result.
// Verdict arithmetic comes from results.Summarize so that the console, the
// JUnit counts and the process exit status can never disagree. Transcript
// entries are rendered only through transcript.Format (or serialized as
// recorded), because the transcript package has already redacted secrets.
package reports
