package loadreport

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSLORefuses(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "slo: empty"},
		{"  ", "slo: empty"},
		{"p99<500ms,", `slo: "": empty objective (a stray comma?)`},
		{"p99", `slo: "p99": no comparison`},
		{"p98<500ms", `slo: "p98<500ms": unknown metric "p98"`},
		{"latency<5ms", `unknown metric "latency"`},
		{"ramp.p99<5ms", `unknown metric "ramp.p99"`},
		{"churn.convergence.p42<1s", `unknown metric "convergence.p42"`},
		{"p99<500", `slo: "p99<500": p99 is a duration: give its unit (500ms, 500s)`},
		{"p99<fast", `"fast" is not a duration`},
		{"p99<-1s", "a negative duration"},
		{"p99<<5ms", "one comparison per objective"},
		{"p99=<5ms", "one comparison per objective"},
		{"p99!=5ms", `unknown metric "p99!"`},
		{"missed=0.5", `"0.5" is not a count`},
		{"missed=-1", `"-1" is not a count`},
		{"missed=", `"" is not a count`},
		{"amplification<x", `"x" is not a ratio`},
		{"amplification<-1", `"-1" is not a ratio`},
		{"amplification<NaN", `"NaN" is not a ratio`},
		{"<5ms", `unknown metric ""`},
		{strings.Repeat("p99<1s,", 1000), "at most 4096"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := ParseSLO(tc.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

// sloReport has known figures: the churn phase's latencies are 1 ms to
// 1000 ms (one each), the connect phase's 5 s twice.
func sloReport() *Report {
	r := &Report{Format: Format, Plan: Plan{Shards: 1}, Shards: []int{0}}
	connect := Phase{Name: PhaseConnect, Latency: NewHistogram(), Convergence: NewHistogram(), Responses: 2, Expected: 0, Errors: 1, Nacks: 1}
	connect.Latency.Record(5 * time.Second)
	connect.Latency.Record(5 * time.Second)
	churn := Phase{Name: PhaseChurn, Latency: NewHistogram(), Convergence: NewHistogram(), Responses: 1200, Expected: 1000,
		Nacks: 10, Resends: 3, Missed: 2, Violations: 4}
	for i := range 1000 {
		churn.Latency.Record(time.Duration(i+1) * time.Millisecond)
	}
	churn.Convergence.Record(2 * time.Second)
	churn.Convergence.Record(4 * time.Second)
	r.Phases = []Phase{connect, churn}
	return r
}

func TestSLOEvaluate(t *testing.T) {
	r := sloReport()
	for _, tc := range []struct {
		spec  string
		ok    bool
		phase string
		value string
	}{
		{"p50<600ms", true, "churn", "500.223ms"},
		{"p50<500ms", false, "churn", "500.223ms"},
		{"p90 <= 901ms", true, "churn", "900.095ms"},
		{"p99>=999ms", false, "churn", "990.207ms"},
		{"p999 > 998ms", true, "churn", "999.423ms"},
		{"max<1s", false, "churn", "1.000447s"},
		{"max<1.1s", true, "churn", "1.000447s"},
		{"convergence.p50<3s", true, "churn", "2.000895s"},
		{"convergence.max<3s", false, "churn", "4.001791s"},
		{"churn.p99<1s", true, "churn", "990.207ms"},
		{"connect.p50<1s", false, "connect", "5.001215s"},
		{"connect.convergence.p99<1s", false, "connect", "no values"},
		{"burst.p99<1s", false, "burst", "phase did not run"},
		{"amplification<1.5", true, "churn", "1.200"},
		{"amplification<1.2", false, "churn", "1.200"},
		{"amplification<=1.2", true, "churn", "1.200"},
		{"connect.amplification<2", false, "connect", "no push expected"},
		{"violations=0", false, "", "4"},
		{"violations=4", true, "", "4"},
		{"missed=0", false, "", "2"},
		{"nacks<=10", false, "", "11"},
		{"nacks<=11", true, "", "11"},
		{"churn.nacks<=10", true, "churn", "10"},
		{"resends<5", true, "", "3"},
		{"errors=0", false, "", "1"},
		{"connect.errors>0", true, "connect", "1"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			slo, err := ParseSLO(tc.spec)
			require.NoError(t, err)
			res := slo.Evaluate(r)
			assert.Equal(t, tc.spec, res.Spec)
			assert.Equal(t, tc.ok, res.OK)
			require.Len(t, res.Objectives, 1)
			assert.Equal(t, Objective{Text: tc.spec, Phase: tc.phase, Value: tc.value, OK: tc.ok}, res.Objectives[0])
		})
	}
}

// Without a churn phase, latency objectives judge every phase merged.
func TestSLOWithoutChurn(t *testing.T) {
	r := sloReport()
	r.Phases[1].Name = PhaseInitialSync
	slo, err := ParseSLO("max<2s, p50 < 1s")
	require.NoError(t, err)
	res := slo.Evaluate(r)
	assert.False(t, res.OK)
	assert.Equal(t, []Objective{
		{Text: "max<2s", Value: "5.001215s"},
		{Text: "p50 < 1s", Value: "501.247ms", OK: true},
	}, res.Objectives)

	empty := &Report{}
	res = slo.Evaluate(empty)
	assert.False(t, res.OK, "nothing ran: nothing is met")
	counts, err := ParseSLO("missed=0")
	require.NoError(t, err)
	assert.Equal(t, Objective{Text: "missed=0", Value: "no phase ran"}, counts.Evaluate(empty).Objectives[0])
}

// A spec of several objectives holds only if each does, and keeps them
// in order.
func TestSLOSeveral(t *testing.T) {
	const spec = "p99<500ms,p999<2s,amplification<1.5,violations=0,missed=0,convergence.p99<3s,nacks<=10,churn.p99<400ms"
	slo, err := ParseSLO(spec)
	require.NoError(t, err)
	assert.Equal(t, spec, slo.String())
	res := slo.Evaluate(sloReport())
	assert.False(t, res.OK)
	var got []string
	for _, o := range res.Objectives {
		got = append(got, o.Text+map[bool]string{true: " ok", false: " broken"}[o.OK])
	}
	assert.Equal(t, []string{"p99<500ms broken", "p999<2s ok", "amplification<1.5 ok", "violations=0 broken", "missed=0 broken",
		"convergence.p99<3s broken", "nacks<=10 broken", "churn.p99<400ms broken"}, got)

	ok, err := ParseSLO("p999<2s,amplification<1.5")
	require.NoError(t, err)
	assert.True(t, ok.Evaluate(sloReport()).OK)
}

// A report covering some shards of a run only is not judged as the run:
// its counts would meet "missed=0" for the shards not there.
func TestSLOWantsEveryShard(t *testing.T) {
	r := sloReport()
	r.Plan.Shards, r.Shards = 3, []int{0, 2}
	slo, err := ParseSLO("violations<100")
	require.NoError(t, err)
	res := slo.Evaluate(r)
	assert.False(t, res.OK)
	assert.Equal(t, Objective{Text: "every shard", Value: "2 of 3"}, res.Objectives[len(res.Objectives)-1])
	r.Shards = []int{0, 1, 2}
	assert.True(t, slo.Evaluate(r).OK)
}

// A run that measured nothing (Unmeasured), or was cut short, is not
// judged a pass, whatever its counts: zero violations of no stream at all
// meet "violations=0".
func TestSLOWantsSomethingMeasured(t *testing.T) {
	slo, err := ParseSLO("violations=0")
	require.NoError(t, err)
	r := sloReport()
	for i := range r.Phases {
		r.Phases[i].Violations = 0
	}
	require.True(t, slo.Evaluate(r).OK, "the objective holds")

	r.Unmeasured = []string{"no stream opened: none of the 5 clients had one", "the fixture set nothing"}
	res := slo.Evaluate(r)
	assert.False(t, res.OK)
	assert.Equal(t, Objective{Text: "something measured", Value: "nothing: no stream opened: none of the 5 clients had one; the fixture set nothing"}, res.Objectives[len(res.Objectives)-1])

	r.Unmeasured = nil
	r.Interrupted = true
	res = slo.Evaluate(r)
	assert.False(t, res.OK)
	assert.Equal(t, Objective{Text: "not interrupted", Value: "interrupted"}, res.Objectives[len(res.Objectives)-1])
}
