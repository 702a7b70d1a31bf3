package schema

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// minimal is the smallest valid report, to change one thing at a time.
const minimal = `{"schema_version":"3","harness_version":"dev","role":"server","target":"t","options":{},
"started":"2026-01-02T03:04:05Z","duration_ns":1,"results":[
 {"id":"server/a/b","variant":"sotw-ads","title":"t","requirements":["NONCE-1"],"level":"MUST","outcome":"pass","duration_ns":1,
  "transcript":[{"at_ns":0,"stream":"ads#1","direction":"sent","kind":"DiscoveryRequest","message":{}}]}],
"summary":{"pass":1,"fail":0,"blocked":0,"warn":0,"unsupported":0,"inconclusive":0,"known_failing":0,"stale":0,"skipped":0,"error":0,"ok":true,
 "by_level":{"MUST":{"pass":1,"fail":0,"blocked":0,"known_failing":0,"unsupported":0,"inconclusive":0,"skipped":0,"error":0}}},
"causes":[]}`

// Parts of minimal, and what stands in for them in the tests of what
// version 3 added: a blocked or inconclusive result, a timing record, a
// cause of each kind.
const (
	passResult      = `"outcome":"pass","duration_ns":1,`
	blockedResult   = `"outcome":"blocked","message":"blocked by RES-1 (MUST): x","rules_broken":["RES-1"],"broken_level":"MUST","blocked_by":"RES-1","duration_ns":1,`
	timing          = `"timing":{"checks":[{"rule":"UPD-2","what":"the ACK","kind":"within","measured_ns":2,"limit_ns":1,"harness_lag_ns":1,"harness_lag_max_ns":1,"verdict":"doubt"}],"reruns":2},`
	noCauses        = `"causes":[]`
	ruleCause       = `"causes":[{"kind":"rule","rule":"RES-1","level":"MUST","pairs":1,"failed":0,"blocked":1,"errored":0,"below_fail_on":0,"known_failing":false,"fails_run":true,"first":"server/a/b[sotw-ads]","example":"x"}]`
	errorCause      = `"causes":[{"kind":"error","error":"dial tcp: refused","pairs":1,"failed":0,"blocked":0,"errored":1,"below_fail_on":0,"known_failing":false,"fails_run":true,"first":"server/a/b[sotw-ads]","example":"x"}]`
	inconclusiveRes = `"outcome":"inconclusive","message":"lag",` + timing + `"duration_ns":1,`
)

// minimalV2 is minimal as version 2 wrote it: a report of then still
// validates, against the schema of then.
const minimalV2 = `{"schema_version":"2","harness_version":"dev","role":"server","target":"t","options":{},
"started":"2026-01-02T03:04:05Z","duration_ns":1,"results":[
 {"id":"server/a/b","variant":"sotw-ads","title":"t","requirements":["NONCE-1"],"level":"MUST","outcome":"pass","duration_ns":1}],
"summary":{"pass":1,"fail":0,"warn":0,"unsupported":0,"known_failing":0,"stale":0,"skipped":0,"error":0,"ok":true,
 "by_level":{"MUST":{"pass":1,"fail":0,"unsupported":0,"skipped":0,"error":0}}}}`

func TestJSONSchemaAcceptsAndRejects(t *testing.T) {
	require.NoError(t, ValidateJSONReport([]byte(minimal)))
	for _, tc := range []struct{ name, from, to string }{
		{"role outside its values", `"role":"server"`, `"role":"server+client"`},
		{"another schema version", `"schema_version":"3"`, `"schema_version":"99"`},
		{"unknown outcome", `"outcome":"pass"`, `"outcome":"passed"`},
		{"unknown variant", `"variant":"sotw-ads"`, `"variant":"sotw"`},
		{"not a rule ID", `["NONCE-1"]`, `["nonce one"]`},
		{"undocumented field", `"target":"t"`, `"target":"t","extra":1`},
		{"started not a time", `2026-01-02T03:04:05Z`, `yesterday`},
		{"interrupted false (omitted instead)", `"target":"t"`, `"target":"t","interrupted":false`},
		{"fold fields on a message", `"message":{}}`, `"message":{},"folded":3,"cycle":1}`},
		{"fold without its count", `"direction":"sent","kind":"DiscoveryRequest","message":{}`, `"direction":"folded","kind":"folded","note":"n"`},
		{"empty transcript (omitted instead)", `"transcript":[{"at_ns":0,"stream":"ads#1","direction":"sent","kind":"DiscoveryRequest","message":{}}]`, `"transcript":[]`},
		{"no causes", `,` + "\n" + noCauses, ``},
		{"no blocked count", `"blocked":0,"warn"`, `"warn"`},
		{"no known_failing by level", `"blocked":0,"known_failing":0,"unsupported"`, `"blocked":0,"unsupported"`},
		{"blocked without blocked_by", passResult, strings.Replace(blockedResult, `"blocked_by":"RES-1",`, ``, 1)},
		{"blocked_by on a pass", passResult, `"blocked_by":"RES-1",` + passResult},
		{"empty timing (omitted instead)", passResult, `"timing":{},` + passResult},
		{"timing verdict outside its values", passResult, strings.Replace(timing, `"doubt"`, `"maybe"`, 1) + passResult},
		{"rule cause without its rule", noCauses, strings.Replace(ruleCause, `"rule":"RES-1",`, ``, 1)},
		{"error cause naming a rule", noCauses, strings.Replace(errorCause, `"kind":"error",`, `"kind":"error","rule":"RES-1",`, 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(minimal, tc.from, tc.to, 1)
			require.NotEqual(t, minimal, bad)
			assert.Error(t, ValidateJSONReport([]byte(bad)))
		})
	}
	fold := strings.Replace(minimal, `"direction":"sent","kind":"DiscoveryRequest","message":{}`,
		`"direction":"folded","kind":"folded","until_ns":5,"folded":4,"cycle":2,"note":"4 entries folded"`, 1)
	assert.NoError(t, ValidateJSONReport([]byte(fold)))
	for name, good := range map[string]string{
		"blocked":      strings.Replace(strings.Replace(minimal, passResult, blockedResult, 1), noCauses, ruleCause, 1),
		"inconclusive": strings.Replace(minimal, passResult, inconclusiveRes, 1),
		"timed pass":   strings.Replace(minimal, passResult, strings.Replace(timing, `"doubt"`, `"pass"`, 1)+passResult, 1),
		"error cause":  strings.Replace(minimal, noCauses, errorCause, 1),
	} {
		assert.NoError(t, ValidateJSONReport([]byte(good)), name)
	}
}

// A report of version 2 validates against the schema of version 2, and
// only what version 2 had.
func TestJSONSchemaV2(t *testing.T) {
	require.NoError(t, ValidateJSONReport([]byte(minimalV2)))
	assert.Error(t, ValidateJSONReport([]byte(strings.Replace(minimalV2, `"outcome":"pass"`, `"outcome":"blocked"`, 1))),
		"version 2 had no blocked outcome")
	assert.Error(t, ValidateJSONReport([]byte(strings.Replace(minimalV2, `"schema_version":"2"`, `"schema_version":"3"`, 1))),
		"a version 2 layout that says it is version 3")
}

// The schema's closed lists are the code's: variants, outcomes, levels,
// directions and roles.
func TestJSONSchemaListsMatchTheCode(t *testing.T) {
	var doc struct {
		Properties struct {
			Role struct{ Enum []string } `json:"role"`
		} `json:"properties"`
		Defs struct {
			Level  struct{ Enum []string } `json:"level"`
			Result struct {
				Properties struct {
					Variant struct{ Enum []string } `json:"variant"`
					Outcome struct{ Enum []string } `json:"outcome"`
				} `json:"properties"`
			} `json:"result"`
			Entry struct {
				Properties struct {
					Direction struct{ Enum []string } `json:"direction"`
				} `json:"properties"`
			} `json:"entry"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(JSONReport, &doc))
	var variants []string
	for _, v := range wire.KnownVariants {
		variants = append(variants, v.String())
	}
	assert.ElementsMatch(t, variants, doc.Defs.Result.Properties.Variant.Enum)
	assert.ElementsMatch(t, results.Outcomes, toOutcomes(doc.Defs.Result.Properties.Outcome.Enum))
	var levels []string
	for _, l := range results.Levels {
		levels = append(levels, string(l))
	}
	assert.ElementsMatch(t, levels, doc.Defs.Level.Enum)
	assert.ElementsMatch(t, []string{string(transcript.Sent), string(transcript.Received), string(transcript.Event), string(transcript.Folded)},
		doc.Defs.Entry.Properties.Direction.Enum)
	assert.ElementsMatch(t, []string{results.RoleServer, results.RoleClient, results.RoleBoth}, doc.Properties.Role.Enum)
}

func toOutcomes(ss []string) []results.Outcome {
	var os []results.Outcome
	for _, s := range ss {
		os = append(os, results.Outcome(s))
	}
	return os
}

// junitCtx bounds one xmllint run.
func junitCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// The committed XSD is the one that rejects what the issue found: a
// skipped count on the root, and attributes on <skipped>.
func TestJUnitXSDRejectsRootSkipped(t *testing.T) {
	const ok = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="x" tests="1" failures="0" errors="0" time="0.1">
  <testsuite name="s" tests="1" failures="0" errors="0" skipped="1" time="0.1">
    <properties><property name="a" value="b"/></properties>
    <testcase classname="c" name="n" time="0.1"><skipped>why</skipped><system-out>out</system-out></testcase>
  </testsuite>
</testsuites>`
	err := ValidateJUnit(junitCtx(t), []byte(ok))
	if errors.Is(err, ErrNoXmllint) {
		t.Skip(err)
	}
	require.NoError(t, err)
	for name, bad := range map[string]string{
		"skipped on the root":      strings.Replace(ok, `errors="0" time="0.1">`, `errors="0" skipped="1" time="0.1">`, 1),
		"message on <skipped>":     strings.Replace(ok, `<skipped>`, `<skipped message="why">`, 1),
		"system-out before a skip": strings.Replace(ok, `<skipped>why</skipped><system-out>out</system-out>`, `<system-out>out</system-out><skipped>why</skipped>`, 1),
	} {
		assert.Error(t, ValidateJUnit(junitCtx(t), []byte(bad)), name)
	}
}
