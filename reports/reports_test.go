package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// entries makes n transcript entries whose notes are numbered, so a test can
// tell which part of the transcript was printed.
func entries(n int) []transcript.Entry {
	var es []transcript.Entry
	for i := 1; i <= n; i++ {
		e := transcript.Entry{At: time.Duration(i) * time.Millisecond, Stream: "ads#1"}
		if i%2 == 1 {
			e.Direction, e.Kind = transcript.Sent, "DiscoveryRequest"
			e.Message = json.RawMessage(fmt.Sprintf(`{"response_nonce":"n%d"}`, i))
		} else {
			e.Direction, e.Kind, e.Note = transcript.Event, "event", fmt.Sprintf("note-%02d", i)
		}
		es = append(es, e)
	}
	return es
}

const failMsg = "stale-nonce request answered\n  expected: no response within 1s\n  actual:   DiscoveryResponse nonce=\"7\""

func res(id, variant string, o results.Outcome, msg, known string) results.Result {
	return results.Result{
		ID: id, Variant: variant, Title: "t " + id, Requirements: []string{"NONCE-7"},
		Level: results.Should, Outcome: o, Message: msg, KnownFailing: known,
		Duration: 12 * time.Millisecond, Transcript: entries(2),
	}
}

func sampleRun() results.Run {
	fail := res("server/nonce/stale-request-ignored", "sotw-ads", results.Fail, failMsg, "")
	fail.Requirements = []string{"NONCE-7", "NONCE-8"}
	fail.Transcript = entries(20)
	return results.Run{
		SchemaVersion: JSONSchemaVersion, HarnessVersion: "v0.1.0", Role: "server", Target: "builtin:reference",
		Options: map[string]string{"timeout": "5s", "filter": "nonce"},
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Duration: 1500 * time.Millisecond,
		Results: []results.Result{
			res("server/ack/ack-accepted", "sotw-ads", results.Pass, "", ""),
			fail,
			res("server/nonce/stale-request-ignored", "delta-ads", results.Fail, "expected X\nactual Y", "upstream bug #1"),
			res("server/nonce/other", "sotw-ads", results.Pass, "", "was broken in v1"),
			res("server/rest/poll", "rest", results.Skip, "target has no REST endpoint", ""),
			res("server/rest/poll2", "rest", results.Skip, "target has no REST endpoint", ""),
			res("server/delta/x", "delta", results.Skip, "delta disabled", ""),
			res("server/stream/open", "sotw", results.Error, "dial tcp: connection refused", ""),
		},
	}
}

func TestConsoleFinishedLine(t *testing.T) {
	base := res("server/nonce/stale-request-ignored", "sotw-ads", results.Pass, "", "")
	tests := []struct {
		name    string
		outcome results.Outcome
		msg     string
		known   string
		want    string
	}{
		{"pass", results.Pass, "", "", "PASS  server/nonce/stale-request-ignored[sotw-ads] (12ms)\n"},
		{"fail", results.Fail, failMsg, "", "FAIL  server/nonce/stale-request-ignored[sotw-ads] (12ms): stale-nonce request answered\n"},
		{"skip: counted for the summary, not printed", results.Skip, "no ADS\nmore", "", ""},
		{"error", results.Error, "connection refused", "", "ERROR server/nonce/stale-request-ignored[sotw-ads] (12ms): connection refused\n"},
		{"known failing", results.Fail, failMsg, "bug #12", "XFAIL server/nonce/stale-request-ignored[sotw-ads] (12ms): known failing: bug #12\n"},
		{"stale entry", results.Pass, "", "bug #12", "XPASS server/nonce/stale-request-ignored[sotw-ads] (12ms): stale known-failing entry: bug #12\n"},
		{"known failing error stays an error", results.Error, "boom", "bug #12", "ERROR server/nonce/stale-request-ignored[sotw-ads] (12ms): boom\n"},
		{"control characters escaped", results.Fail, "bad \x1b[2Jname", "", "FAIL  server/nonce/stale-request-ignored[sotw-ads] (12ms): bad \\x1b[2Jname\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := base
			r.Outcome, r.Message, r.KnownFailing = tt.outcome, tt.msg, tt.known
			var b bytes.Buffer
			NewConsole(&b, ConsoleOptions{}).Finished(r)
			if b.String() != tt.want {
				t.Errorf("got  %q\nwant %q", b.String(), tt.want)
			}
		})
	}
}

func TestConsoleFinishedVerboseAndColor(t *testing.T) {
	r := sampleRun().Results[1] // the plain failure
	var b bytes.Buffer
	NewConsole(&b, ConsoleOptions{Verbose: true, Color: true, TranscriptTail: 3}).Finished(r)
	out := b.String()
	for _, want := range []string{
		"\x1b[31mFAIL \x1b[0m server/nonce/stale-request-ignored",
		"    level:        SHOULD\n",
		"    requirements: NONCE-7, NONCE-8\n",
		"        expected: no response within 1s\n",
		"transcript (last 3 of 20 entries)",
		"note-20",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "n17") {
		t.Errorf("transcript tail longer than 3:\n%s", out)
	}
}

func TestConsoleConcurrentLinesDoNotInterleave(t *testing.T) {
	var b bytes.Buffer
	c := NewConsole(&b, ConsoleOptions{Verbose: true})
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c.Finished(res(fmt.Sprintf("server/x/s%02d", i), "sotw", results.Pass, "", ""))
		}(i)
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "PASS  server/x/s") || !strings.HasSuffix(l, "(12ms)") {
			t.Errorf("mangled line %q", l)
		}
	}
}

func TestConsoleSummary(t *testing.T) {
	run := sampleRun()
	var b bytes.Buffer
	NewConsole(&b, ConsoleOptions{}).Summary(run)
	out := b.String()

	// Totals by outcome, in the documented order.
	totals := "  pass           1\n  fail           1\n  blocked        0\n  warn           0\n  unsupported    0\n  inconclusive   0\n  known-failing  1\n  stale          1\n  skipped        3\n  error          1\n" +
		// A known failure and a stale entry are counted apart, never as a
		// fail or a pass.
		"  by level:\n    MUST    0 pass, 0 fail, 0 skipped, 0 error\n    SHOULD  1 pass, 1 fail, 1 known failing, 1 stale, 3 skipped, 1 error\n"
	if !strings.Contains(out, totals) {
		t.Errorf("totals missing; want\n%s\ngot\n%s", totals, out)
	}
	for _, want := range []string{
		"=== Summary: server suite against builtin:reference (8 results in 1500ms)",
		"=== Failures (1)",
		"--- FAIL server/nonce/stale-request-ignored[sotw-ads]",
		"    requirements: NONCE-7, NONCE-8",
		// The message is printed verbatim, only indented.
		"    message:\n        stale-nonce request answered\n          expected: no response within 1s\n          actual:   DiscoveryResponse nonce=\"7\"\n",
		"transcript (last 12 of 20 entries)",
		"note-20",
		"=== Errors (1)",
		"--- ERROR server/stream/open[sotw]",
		"dial tcp: connection refused",
		"=== Known failing, not counted against the run (1)\n  server/nonce/stale-request-ignored[delta-ads]: upstream bug #1",
		"server/nonce/other[sotw-ads]: was broken in v1",
		"=== Skipped (3, by reason; -v lists each)\n     2  target has no REST endpoint\n     1  delta disabled\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	// Only the last 12 of 20 entries: entry 8 is out, entry 9 is in.
	if strings.Contains(out, `"n7"`) || !strings.Contains(out, `"n9"`) {
		t.Errorf("wrong transcript tail:\n%s", out)
	}
	if !strings.HasSuffix(out, "\nFAIL: 1 failure, 1 error, 1 stale known-failing entry\n") {
		t.Errorf("verdict line wrong:\n%s", out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:])
	}
	// Deterministic: the same run prints the same summary, whatever the
	// order of its results.
	rev := run
	rev.Results = append([]results.Result(nil), run.Results...)
	for i, j := 0, len(rev.Results)-1; i < j; i, j = i+1, j-1 {
		rev.Results[i], rev.Results[j] = rev.Results[j], rev.Results[i]
	}
	var b2 bytes.Buffer
	NewConsole(&b2, ConsoleOptions{}).Summary(rev)
	if b2.String() != out {
		t.Error("summary depends on result order")
	}
}

func TestConsoleVerdict(t *testing.T) {
	pass := res("server/a/b", "sotw", results.Pass, "", "")
	tests := []struct {
		name string
		run  results.Run
		want string
	}{
		{"clean", results.Run{Results: []results.Result{pass}}, "PASS: 1 passed, 0 known failing, 0 skipped"},
		{"known failing only", results.Run{Results: []results.Result{pass, res("server/a/c", "sotw", results.Fail, "x", "bug")}}, "PASS: 1 passed, 1 known failing, 0 skipped"},
		{"interrupted", results.Run{Interrupted: true, Results: []results.Result{pass}}, "INTERRUPTED: run interrupted, results are partial"},
		{"failures", results.Run{Results: []results.Result{res("a/b", "v", results.Fail, "x", ""), res("a/c", "v", results.Fail, "x", "")}}, "FAIL: 2 failures"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			NewConsole(&b, ConsoleOptions{}).Summary(tt.run)
			if !strings.HasSuffix(b.String(), "\n"+tt.want+"\n") {
				t.Errorf("want verdict %q, got:\n%s", tt.want, b.String())
			}
		})
	}
}

func TestConsoleTranscriptTailOptions(t *testing.T) {
	r := sampleRun().Results[1]
	run := results.Run{Results: []results.Result{r}}
	for _, tt := range []struct {
		tail      int
		want, not string
	}{
		{0, "last 12 of 20", "n7\""},
		{-1, "    message:", "transcript"},
		{50, "transcript (20 entries)", "last"},
	} {
		var b bytes.Buffer
		NewConsole(&b, ConsoleOptions{TranscriptTail: tt.tail}).Summary(run)
		if !strings.Contains(b.String(), tt.want) || strings.Contains(b.String(), tt.not) {
			t.Errorf("tail %d: want %q and not %q in\n%s", tt.tail, tt.want, tt.not, b.String())
		}
	}
}

// Parsed mirrors of the JUnit schema, independent of the writer's types.
type xSuites struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Time     string   `xml:"time,attr"`
	Suites   []xSuite `xml:"testsuite"`
}

type xSuite struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
	Props    []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []xCase `xml:"testcase"`
}

type xCase struct {
	ClassName string `xml:"classname,attr"`
	Name      string `xml:"name,attr"`
	Time      string `xml:"time,attr"`
	Failure   *xProb `xml:"failure"`
	Error     *xProb `xml:"error"`
	Skipped   *xProb `xml:"skipped"`
	SystemOut string `xml:"system-out"`
}

type xProb struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

func TestWriteJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, sampleRun()); err != nil {
		t.Fatal(err)
	}
	var doc xSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("output does not parse: %v\n%s", err, b.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, want 1", len(doc.Suites))
	}
	s := doc.Suites[0]
	// failures = 1 fail + 1 stale; skipped = 3 skips + 1 known failing.
	if got := [4]int{s.Tests, s.Failures, s.Errors, s.Skipped}; got != [4]int{8, 2, 1, 4} {
		t.Errorf("suite tests/failures/errors/skipped = %v, want [8 2 1 4]", got)
	}
	if got := [4]int{doc.Tests, doc.Failures, doc.Errors, doc.Skipped}; got != [4]int{8, 2, 1, 0} {
		t.Errorf("testsuites counts = %v, want [8 2 1 0]", got)
	}
	if root := b.String()[:strings.Index(b.String(), "<testsuite ")]; strings.Contains(root, "skipped=") {
		t.Errorf("the common JUnit schema has no skipped count on the root: %s", root)
	}
	if s.Name != "xdsconform server suite: builtin:reference [SHOULD]" || doc.Time != "1.500" {
		t.Errorf("suite name/time = %q/%q", s.Name, s.Time)
	}
	props := map[string]string{}
	for _, p := range s.Props {
		props[p.Name] = p.Value
	}
	for k, v := range map[string]string{"harness_version": "v0.1.0", "target": "builtin:reference", "role": "server", "option.timeout": "5s", "option.filter": "nonce"} {
		if props[k] != v {
			t.Errorf("property %s = %q, want %q", k, props[k], v)
		}
	}

	// Counting elements must agree with the attributes.
	var nf, ne, ns int
	cases := map[string]xCase{}
	for _, c := range s.Cases {
		cases[c.Name] = c
		if c.Failure != nil {
			nf++
		}
		if c.Error != nil {
			ne++
		}
		if c.Skipped != nil {
			ns++
		}
	}
	if nf != s.Failures || ne != s.Errors || ns != s.Skipped {
		t.Errorf("elements failure/error/skipped = %d/%d/%d, attributes %d/%d/%d", nf, ne, ns, s.Failures, s.Errors, s.Skipped)
	}

	f := cases["server/nonce/stale-request-ignored[sotw-ads]"]
	switch {
	case f.Failure == nil:
		t.Fatal("failure element missing")
	case f.ClassName != "server.nonce" || f.Time != "0.012":
		t.Errorf("classname/time = %q/%q", f.ClassName, f.Time)
	case f.Failure.Message != "stale-nonce request answered":
		t.Errorf("failure message = %q", f.Failure.Message)
	case f.Failure.Type != "SHOULD NONCE-7 NONCE-8":
		t.Errorf("failure type = %q", f.Failure.Type)
	case !strings.Contains(f.Failure.Body, failMsg) || !strings.Contains(f.Failure.Body, "note-20"):
		t.Errorf("failure body lacks message or transcript:\n%s", f.Failure.Body)
	case !strings.Contains(f.SystemOut, `"n1"`) || !strings.Contains(f.SystemOut, "note-20"):
		t.Errorf("system-out lacks the full transcript:\n%s", f.SystemOut)
	}
	if x := cases["server/nonce/stale-request-ignored[delta-ads]"]; x.Skipped == nil || !strings.HasPrefix(x.Skipped.Body, "known failing: upstream bug #1\n\nexpected X\nactual Y\n") || x.Failure != nil {
		t.Errorf("known failing case = %+v", x)
	}
	if x := cases["server/nonce/other[sotw-ads]"]; x.Failure == nil || x.Failure.Message != "stale known-failing entry: was broken in v1" {
		t.Errorf("stale entry case = %+v", x)
	}
	if x := cases["server/rest/poll[rest]"]; x.Skipped == nil || x.Skipped.Body != "target has no REST endpoint" {
		t.Errorf("skip case = %+v", x)
	}
	if x := cases["server/stream/open[sotw]"]; x.Error == nil || x.Error.Message != "dial tcp: connection refused" {
		t.Errorf("error case = %+v", x)
	}
	if x := cases["server/ack/ack-accepted[sotw-ads]"]; x.Failure != nil || x.Error != nil || x.Skipped != nil || x.SystemOut != "" {
		t.Errorf("pass case = %+v", x)
	}
}

func TestWriteJUnitEscapesHostileText(t *testing.T) {
	r := res("server/a/b", "v", results.Fail, "bad ]]> <x> & \x1b[31m \x00 end", "")
	var b bytes.Buffer
	if err := WriteJUnit(&b, results.Run{Role: "server", Target: `"><evil`, Results: []results.Result{r}}); err != nil {
		t.Fatal(err)
	}
	var doc xSuites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("hostile text broke the XML: %v\n%s", err, b.String())
	}
	if doc.Suites[0].Name != `xdsconform server suite: "><evil [SHOULD]` {
		t.Errorf("suite name = %q", doc.Suites[0].Name)
	}
	f := doc.Suites[0].Cases[0].Failure
	if f == nil || !strings.HasPrefix(f.Body, "bad ]]> <x> & \uFFFD[31m \uFFFD end\n") {
		t.Errorf("failure body = %+v", f)
	}
}

// Element content keeps real newlines so the file is readable as is.
func TestWriteJUnitReadableText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, sampleRun()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "stale-nonce request answered\n  expected: no response within 1s\n") {
		t.Errorf("message not written line by line:\n%s", b.String())
	}
}

func TestClassName(t *testing.T) {
	for _, tt := range []struct{ role, id, want string }{
		{"server", "server/nonce/stale", "server.nonce"},
		{"client", "client/ack/nack/deep", "client.ack.nack"},
		{"server", "nonce/stale", "server.nonce"},
		{"server", "lonely", "server"},
		{"both", "client/ack/every-response", "client.ack"},
		{"both", "server/nonce/stale", "server.nonce"},
		{"both", "other/a/b", "both.other.a"},
		{"", "lonely", "xdsconform"},
	} {
		if got := className(tt.role, tt.id); got != tt.want {
			t.Errorf("className(%q, %q) = %q, want %q", tt.role, tt.id, got, tt.want)
		}
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	run := sampleRun()
	var b bytes.Buffer
	if err := WriteJSON(&b, run); err != nil {
		t.Fatal(err)
	}
	var got results.Run
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := run
	want.Results = sortedResults(run.Results)
	// Raw JSON messages are re-indented by the encoder; compare them as values.
	for _, rs := range [][]results.Result{got.Results, want.Results} {
		for i := range rs {
			rs[i].Transcript = normalize(t, rs[i].Transcript)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip differs:\ngot  %+v\nwant %+v", got, want)
	}
	if !strings.Contains(b.String(), `"schema_version": "3"`) {
		t.Error("schema_version missing")
	}
	// Passing results keep their transcripts in JSON.
	if len(got.Results[0].Transcript) != 2 || got.Results[0].Outcome != results.Pass {
		t.Errorf("pass result transcript = %v", got.Results[0].Transcript)
	}
}

func normalize(t *testing.T, es []transcript.Entry) []transcript.Entry {
	out := append([]transcript.Entry(nil), es...)
	for i := range out {
		if len(out[i].Message) == 0 {
			continue
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, out[i].Message); err != nil {
			t.Fatal(err)
		}
		out[i].Message = buf.Bytes()
	}
	return out
}

func TestWriteJSONSchemaVersionAndEmptyFields(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, results.Run{Results: []results.Result{{ID: "a/b"}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"schema_version": "3"`, `"options": {}`, `"requirements": []`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %s:\n%s", want, b.String())
		}
	}
	if err := WriteJSON(&b, results.Run{SchemaVersion: "1"}); err == nil {
		t.Error("schema version 1 accepted")
	}
}

func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	junitPath, jsonPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.json")
	if err := os.WriteFile(junitPath, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := sampleRun()
	if err := WriteFiles(run, junitPath, jsonPath); err != nil {
		t.Fatal(err)
	}
	var wantJUnit, wantJSON bytes.Buffer
	_ = WriteJUnit(&wantJUnit, run)
	_ = WriteJSON(&wantJSON, run)
	for path, want := range map[string][]byte{junitPath: wantJUnit.Bytes(), jsonPath: wantJSON.Bytes()} {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s content differs from the writer's output", path)
		}
		if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v, want 0644", path, fi.Mode().Perm())
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*tmp*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}

	// Empty paths are skipped.
	if err := WriteFiles(run, "", ""); err != nil {
		t.Errorf("empty paths: %v", err)
	}
}

func TestWriteFilesBadPath(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "no-such-dir", "junit.xml")
	good := filepath.Join(dir, "report.json")
	err := WriteFiles(sampleRun(), bad, good)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v does not name %s", err, bad)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v does not wrap the cause", err)
	}
	// The other report is still written.
	if _, err := os.Stat(good); err != nil {
		t.Errorf("JSON report not written after JUnit failure: %v", err)
	}
	// A directory as target fails at rename; the error names it too.
	err = WriteFiles(sampleRun(), "", dir)
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %v does not name %s", err, dir)
	}
}

// A failure names the rules its failing steps broke; a failure below
// --fail-on is a warning; a MAY behaviour not implemented is "not
// supported"; and the reports group results by level.
func TestRulesBrokenLevelsAndFailOn(t *testing.T) {
	mustFail := res("server/ack/nack[sotw-ads]", "sotw-ads", results.Fail, "RES-4 (MUST): expected a response carrying b", "")
	mustFail.ID, mustFail.Level, mustFail.RulesBroken, mustFail.BrokenLevel = "server/ack/nack", results.Should, []string{"RES-4"}, results.Must
	shouldFail := res("server/ack/loop", "sotw-ads", results.Fail, "UPD-1 (SHOULD): resent after an ACK", "")
	shouldFail.RulesBroken, shouldFail.BrokenLevel = []string{"UPD-1"}, results.Should
	unsup := res("server/delta/skip", "delta-ads", results.Unsupported, "DELTA-8 (MAY): resent", "")
	unsup.Level, unsup.RulesBroken, unsup.BrokenLevel = results.May, []string{"DELTA-8"}, results.May
	run := results.Run{SchemaVersion: JSONSchemaVersion, Role: "server", Target: "t", FailOn: results.Must,
		Results: []results.Result{mustFail, shouldFail, unsup}}

	var con bytes.Buffer
	c := NewConsole(&con, ConsoleOptions{FailOn: results.Must})
	for _, r := range run.Results {
		c.Finished(r)
	}
	c.Summary(run)
	out := con.String()
	for _, want := range []string{
		"FAIL  server/ack/nack[sotw-ads] (12ms): RES-4 (MUST): expected a response carrying b",
		"WARN  server/ack/loop[sotw-ads] (12ms): UPD-1 (SHOULD): resent after an ACK",
		"UNSUP server/delta/skip[delta-ads] (12ms): not supported: DELTA-8 (MAY): resent",
		"    rules broken: RES-4 (MUST)",
		"=== Not supported: optional (MAY) behaviours the target does not implement (1)",
		"MAY     0 supported, 1 not supported, 0 fail",
		"\nFAIL: 1 failure\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}

	// Without the MUST failure the run is green: a SHOULD failure below
	// --fail-on must and an unsupported MAY do not fail it.
	green := run
	green.Results = []results.Result{shouldFail, unsup}
	if s := results.SummarizeFor(green.Results, results.Must); !s.OK() || s.Tolerated != 1 || s.Unsupported != 1 {
		t.Errorf("summary = %+v, want OK with 1 tolerated and 1 unsupported", s)
	}
	if s := results.SummarizeFor(green.Results, results.Should); s.OK() {
		t.Errorf("with --fail-on should a SHOULD failure fails the run: %+v", s)
	}

	var x bytes.Buffer
	if err := WriteJUnit(&x, run); err != nil {
		t.Fatal(err)
	}
	var doc xSuites
	if err := xml.Unmarshal(x.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range doc.Suites {
		names = append(names, s.Name)
	}
	if want := []string{"xdsconform server suite: t [SHOULD]", "xdsconform server suite: t [MAY]"}; !reflect.DeepEqual(names, want) {
		t.Errorf("suites = %q, want %q", names, want)
	}
	if got := [3]int{doc.Failures, doc.Errors, doc.Suites[0].Skipped + doc.Suites[1].Skipped}; got != [3]int{1, 0, 2} {
		t.Errorf("root failures/errors, suites' skipped = %v, want [1 0 2]", got)
	}
	cases := map[string]xCase{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases[c.Name] = c
		}
	}
	if f := cases["server/ack/nack[sotw-ads]"].Failure; f == nil || f.Type != "MUST RES-4" || !strings.HasPrefix(f.Message, "RES-4 (MUST): ") {
		t.Errorf("failure = %+v, want type \"MUST RES-4\"", f)
	}
	if sk := cases["server/ack/loop[sotw-ads]"].Skipped; sk == nil || !strings.HasPrefix(sk.Body, "failure below --fail-on MUST") {
		t.Errorf("tolerated failure = %+v", sk)
	}
	if sk := cases["server/delta/skip[delta-ads]"].Skipped; sk == nil || !strings.HasPrefix(sk.Body, "not supported (MAY): ") {
		t.Errorf("unsupported = %+v", sk)
	}

	var j bytes.Buffer
	if err := WriteJSON(&j, run); err != nil {
		t.Fatal(err)
	}
	var got struct {
		FailOn  string `json:"fail_on"`
		Summary struct {
			Fail, Warn, Unsupported int
			OK                      bool
		} `json:"summary"`
		Results []struct {
			ID          string   `json:"id"`
			RulesBroken []string `json:"rules_broken"`
			BrokenLevel string   `json:"broken_level"`
		} `json:"results"`
	}
	if err := json.Unmarshal(j.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.FailOn != "MUST" || got.Summary.Fail != 1 || got.Summary.Warn != 1 || got.Summary.Unsupported != 1 || got.Summary.OK {
		t.Errorf("JSON fail_on/summary = %q/%+v", got.FailOn, got.Summary)
	}
	if r := got.Results[1]; r.ID != "server/ack/nack" || !reflect.DeepEqual(r.RulesBroken, []string{"RES-4"}) || r.BrokenLevel != "MUST" {
		t.Errorf("JSON result rules_broken/broken_level = %v/%q", r.RulesBroken, r.BrokenLevel)
	}
}
