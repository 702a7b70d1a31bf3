package schema

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/reports/loadreport"
	"github.com/xdsconform/xdsconform/wire"
)

// minimalLoad is the smallest valid load report, to change one thing at a
// time (the histograms are empty ones).
const minimalLoad = `{"format":"xdsconform.load/v1","harness_version":"dev","target":"t","run_id":"r",
"plan":{"clients":1,"nodes":1,"profile":"grpc","resources":["lds/*"],"variant":"sotw-ads","streams_per_conn":1,"churn":0,"duration_ns":0,"shards":1,"transcripts":"off"},
"shards":[0],"started":"2026-01-02T03:04:05Z","duration_ns":1,
"phases":[{"name":"churn","start_ns":0,"end_ns":1,"clients":1,"changes":1,"expected":1,"responses":1,"acks":1,"nacks":0,"resends":0,"missed":0,"violations":0,"errors":0,
 "latency":{"count":0,"min_ns":0,"mean_ns":0,"p50_ns":0,"p90_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":0,"hdr":"HISTFAAAACN42pJpmSzMwMDAyAABzFAazFc+7MZg/wEqAggAAP//SqIDpw=="},
 "convergence":{"count":0,"min_ns":0,"mean_ns":0,"p50_ns":0,"p90_ns":0,"p99_ns":0,"p999_ns":0,"max_ns":0,"hdr":"HISTFAAAACN42pJpmSzMwMDAyAABzFAazFc+7MZg/wEqAggAAP//SqIDpw=="},
 "amplification":1}],
"changes":[{"id":1,"phase":"churn","resource":"cds/c","origin_unix_ns":5,"expected":1,"acked":1,"last_ack_ns":2}],
"timeline":[{"unix_s":1,"responses":1,"acks":1,"nacks":0,"latency_count":1,"latency_sum_ns":2,"latency_max_ns":2}],
"violations":[{"rule":"NONCE-7","level":"SHOULD","count":1,"message":"m","client":"c"}],
"harness":[{"shard":0,"streams":1,"cpu_seconds":0.1,"cpu_percent":1,"cores":2,"peak_rss_bytes":1,"baseline_rss_bytes":1,"bytes_per_stream":1,"heap_bytes":1,"lag_max_ns":1}]}`

func TestLoadSchemaAcceptsAndRejects(t *testing.T) {
	require.NoError(t, ValidateLoadReport([]byte(minimalLoad)))
	_, err := loadreport.ReadJSON(strings.NewReader(minimalLoad))
	require.NoError(t, err, "what the schema accepts, the reader reads")
	for _, tc := range []struct{ name, from, to string }{
		{"another format", `"format":"xdsconform.load/v1"`, `"format":"xdsconform.load/v2"`},
		{"undocumented field", `"target":"t"`, `"target":"t","extra":1`},
		{"unknown phase", `"name":"churn"`, `"name":"ramp"`},
		{"unknown variant", `"variant":"sotw-ads"`, `"variant":"sotw"`},
		{"negative count", `"acks":1,`, `"acks":-1,`},
		{"no shard", `"shards":[0]`, `"shards":[]`},
		{"shard twice", `"shards":[0]`, `"shards":[0,0]`},
		{"change 0", `"id":1`, `"id":0`},
		{"interrupted false (omitted instead)", `"target":"t"`, `"target":"t","interrupted":false`},
		{"saturated false (omitted instead)", `"lag_max_ns":1}`, `"lag_max_ns":1,"saturated":false}`},
		{"histogram without its encoding", `"max_ns":0,"hdr":"HISTFAAAACN42pJpmSzMwMDAyAABzFAazFc+7MZg/wEqAggAAP//SqIDpw=="}`, `"max_ns":0}`},
		{"histogram not base64", `"hdr":"HISTF`, `"hdr":"*HISTF`},
		{"not a rule", `"rule":"NONCE-7"`, `"rule":"nonce seven"`},
		{"started not a time", `2026-01-02T03:04:05Z`, `yesterday`},
		{"empty notes (omitted instead)", `"target":"t"`, `"target":"t","notes":[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(minimalLoad, tc.from, tc.to, 1)
			require.NotEqual(t, minimalLoad, bad)
			assert.Error(t, ValidateLoadReport([]byte(bad)))
		})
	}
	with := strings.Replace(minimalLoad, `"target":"t"`, `"target":"t","interrupted":true,"notes":["n"],"changes_dropped":3,"slo":{"spec":"p99<1s","ok":false,"objectives":[{"text":"p99<1s","phase":"churn","value":"no values","ok":false}]}`, 1)
	assert.NoError(t, ValidateLoadReport([]byte(with)))
}

// The schema's constants and closed lists are the code's: the format, the
// phases, the variants and the bounds.
func TestLoadSchemaMatchesTheCode(t *testing.T) {
	var doc struct {
		Properties struct {
			Format  struct{ Const string } `json:"format"`
			Changes struct {
				MaxItems int `json:"maxItems"`
			} `json:"changes"`
			Phases struct {
				MaxItems int `json:"maxItems"`
			} `json:"phases"`
			Timeline struct {
				MaxItems int `json:"maxItems"`
			} `json:"timeline"`
			Shards struct {
				MaxItems int `json:"maxItems"`
				Items    struct {
					Maximum int `json:"maximum"`
				} `json:"items"`
			} `json:"shards"`
		} `json:"properties"`
		Defs struct {
			PhaseName struct{ Enum []string } `json:"phase_name"`
			Plan      struct {
				Properties struct {
					Variant struct{ Enum []string } `json:"variant"`
					Shards  struct {
						Maximum int `json:"maximum"`
					} `json:"shards"`
				} `json:"properties"`
			} `json:"plan"`
			Histogram struct {
				Properties struct {
					HDR struct {
						MaxLength int `json:"maxLength"`
					} `json:"hdr"`
				} `json:"properties"`
			} `json:"histogram"`
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(LoadReport, &doc))
	assert.Equal(t, loadreport.Format, doc.Properties.Format.Const)
	assert.Equal(t, loadreport.PhaseNames, doc.Defs.PhaseName.Enum, "in the order a run goes through them")
	var variants []string
	for _, v := range wire.KnownVariants {
		variants = append(variants, v.String())
	}
	assert.ElementsMatch(t, variants, doc.Defs.Plan.Properties.Variant.Enum)
	assert.Equal(t, loadreport.MaxChanges, doc.Properties.Changes.MaxItems)
	assert.Equal(t, loadreport.MaxTimeline, doc.Properties.Timeline.MaxItems)
	assert.Len(t, loadreport.PhaseNames, doc.Properties.Phases.MaxItems)
	assert.Equal(t, loadreport.MaxShards, doc.Properties.Shards.MaxItems)
	assert.Equal(t, loadreport.MaxShards-1, doc.Properties.Shards.Items.Maximum)
	assert.Equal(t, loadreport.MaxShards, doc.Defs.Plan.Properties.Shards.Maximum)
	assert.Equal(t, 1<<20, doc.Defs.Histogram.Properties.HDR.MaxLength)
}
