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
const minimal = `{"schema_version":"2","harness_version":"dev","role":"server","target":"t","options":{},
"started":"2026-01-02T03:04:05Z","duration_ns":1,"results":[
 {"id":"server/a/b","variant":"sotw-ads","title":"t","requirements":["NONCE-1"],"level":"MUST","outcome":"pass","duration_ns":1,
  "transcript":[{"at_ns":0,"stream":"ads#1","direction":"sent","kind":"DiscoveryRequest","message":{}}]}],
"summary":{"pass":1,"fail":0,"warn":0,"unsupported":0,"known_failing":0,"stale":0,"skipped":0,"error":0,"ok":true,
 "by_level":{"MUST":{"pass":1,"fail":0,"unsupported":0,"skipped":0,"error":0}}}}`

func TestJSONSchemaAcceptsAndRejects(t *testing.T) {
	require.NoError(t, ValidateJSONReport([]byte(minimal)))
	for _, tc := range []struct{ name, from, to string }{
		{"role outside its values", `"role":"server"`, `"role":"server+client"`},
		{"another schema version", `"schema_version":"2"`, `"schema_version":"3"`},
		{"unknown outcome", `"outcome":"pass"`, `"outcome":"passed"`},
		{"unknown variant", `"variant":"sotw-ads"`, `"variant":"sotw"`},
		{"not a rule ID", `["NONCE-1"]`, `["nonce one"]`},
		{"undocumented field", `"target":"t"`, `"target":"t","extra":1`},
		{"started not a time", `2026-01-02T03:04:05Z`, `yesterday`},
		{"interrupted false (omitted instead)", `"target":"t"`, `"target":"t","interrupted":false`},
		{"fold fields on a message", `"message":{}}`, `"message":{},"folded":3,"cycle":1}`},
		{"fold without its count", `"direction":"sent","kind":"DiscoveryRequest","message":{}`, `"direction":"folded","kind":"folded","note":"n"`},
		{"empty transcript (omitted instead)", `"transcript":[{"at_ns":0,"stream":"ads#1","direction":"sent","kind":"DiscoveryRequest","message":{}}]`, `"transcript":[]`},
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
	assert.ElementsMatch(t, []results.Outcome{results.Pass, results.Fail, results.Unsupported, results.Skip, results.Error},
		toOutcomes(doc.Defs.Result.Properties.Outcome.Enum))
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
