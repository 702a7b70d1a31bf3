package scenariofile

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/transcript"
)

// Every step that checks something fails when what it checks does not
// hold, against the reference peers themselves: each file below asks for
// what a conformant peer does not do, and must fail under the rule it
// names.
func TestEveryCheckingStepCanFail(t *testing.T) {
	server := func(variant, steps string) string {
		return fmt.Sprintf("apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\nid: server/steps/fail\ntitle: t\nvariants: [%s]\nsteps:\n%s", variant, steps)
	}
	client := func(variant, steps string) string {
		return fmt.Sprintf("apiVersion: xdsconform.io/v1alpha1\nkind: Scenario\nid: client/steps/fail\ntitle: t\nvariants: [%s]\nsteps:\n%s", variant, steps)
	}
	const setA = "  - set: {type: EDS, name: a, revision: 1}\n  - subscribe: {type: EDS, names: [a]}\n"
	const setAB = "  - set: {type: EDS, name: a, revision: 1}\n  - set: {type: EDS, name: b, revision: 1}\n  - subscribe: {type: EDS, names: [a, b]}\n"
	cases := []struct {
		name, file, rule string
	}{
		{"expect a revision not served", server("sotw-ads", setA+"  - expect: {type: EDS, resources: {a: 2}, rule: RES-2}\n"), "RES-2"},
		{"expect a name not served", server("sotw-ads", setA+"  - expect: {type: EDS, names: [b], rule: RES-2}\n"), "RES-2"},
		{"expect a removal not made", server("delta-ads", setA+"  - expect: {type: EDS, removed: [a], rule: DEL-1}\n"), "DEL-1"},
		{"expect a name absent that is carried", server("sotw-ads", setA+"  - expect: {type: EDS, names: [a], absent: [a], rule: DEL-7}\n"), "DEL-7"},
		{"expect exactly fewer names", server("sotw-ads", setAB+"  - expect: {type: EDS, names: [a, b], ack: true}\n  - expect: {type: EDS, names: [a], exactly: true, rule: GRP-1}\n"), "GRP-1"},
		{"expect exactly, SotW full state", server("sotw-ads", setAB+"  - expect: {type: EDS, names: [a], exactly: true, rule: GRP-1}\n"), "GRP-1"},
		{"expect next at an old revision", server("sotw-ads", setA+"  - expect: {type: EDS, ack: true}\n  - set: {type: EDS, name: a, revision: 2}\n  - expect: {type: EDS, resources: {a: 1}, next: true}\n"), "VER-1"},
		{"quiet when a response comes", server("sotw-ads", setA+"  - quiet: {type: EDS, why: no answer expected, rule: RES-2}\n"), "RES-2"},
		{"quiet for names carried", server("delta-ads", setA+"  - quiet: {type: EDS, names: [a], why: no a expected, rule: RES-2}\n"), "RES-2"},
		{"never when a response comes", server("sotw-pertype", setA+"  - never: {type: EDS, why: no answer expected, rule: UPD-1}\n"), "UPD-1"},
		{"never for names carried", server("delta-pertype", setA+"  - never: {type: EDS, names: [a], why: no a expected, rule: UPD-1}\n"), "UPD-1"},
		{"expect without criteria, nothing comes", server("sotw-ads", "  - subscribe: {type: EDS, names: [missing]}\n  - expect: {type: EDS, rule: RES-2}\n"), "RES-2"},

		{"expect an ACK of a NACKed response", client("sotw-ads", "  - chain: {upTo: LDS}\n  - serve: {type: LDS, version: \"2\", resources: [{name: listener, revision: 2, invalid: true}], as: bad}\n  - expect: {type: LDS, ack: bad, rule: ACK-6}\n"), "ACK-6"},
		{"expect a NACK of an ACKed response", client("delta-ads", "  - chain: {upTo: LDS}\n  - serve: {type: LDS, version: \"2\", resources: [{name: listener, revision: 2}], as: good}\n  - expect: {type: LDS, nack: good, rule: ACK-7}\n"), "ACK-7"},
		{"expect other names", client("sotw-ads", "  - expect: {type: LDS, names: [other], rule: RES-1}\n"), "RES-1"},
		{"expect next other names", client("sotw-ads", "  - expect: {type: LDS, names: [other], next: true}\n"), "RES-1"},
		{"expect a drop not made", client("sotw-ads", "  - chain: {upTo: EDS}\n  - expect: {type: EDS, dropped: [cluster], rule: UNSUB-1}\n"), "UNSUB-1"},
		{"quiet when the client asks", client("sotw-ads", "  - expect: {type: LDS, names: [listener]}\n  - serve: {type: LDS, version: \"1\", resources: [{name: listener, revision: 1}]}\n  - quiet: {type: RDS, why: no route expected, rule: RES-1}\n"), "RES-1"},
		{"status in a state not shown", client("sotw-ads", "  - chain: {upTo: CDS}\n  - status: {type: CDS, name: cluster, state: NACKED, rule: OBS-1}\n"), "OBS-1"},
		{"status at a version not shown", client("delta-ads", "  - chain: {upTo: CDS}\n  - status: {type: CDS, name: cluster, state: ACKED, version: \"7\", rule: OBS-1}\n"), "OBS-1"},
		{"status gone while held", client("sotw-ads", "  - chain: {upTo: CDS}\n  - status: {type: CDS, name: cluster, gone: true, rule: DEL-2}\n"), "DEL-2"},
		{"never a state shown", client("sotw-ads", "  - chain: {upTo: CDS}\n  - never: {type: CDS, name: cluster, state: ACKED, why: never accepted, rule: ACK-7}\n"), "ACK-7"},
		{"never another version shown", client("sotw-ads", "  - chain: {upTo: CDS}\n  - serve: {type: CDS, version: \"2\", resources: [{name: cluster, revision: 2}], as: two}\n  - never: {type: CDS, name: cluster, version: \"1\", why: kept at 1, rule: ACK-7}\n"), "ACK-7"},
	}
	type job struct {
		rs  []results.Result
		err error
	}
	jobs := make([]job, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		ss, err := Parse([]byte(c.file), c.name)
		require.NoError(t, err, c.name)
		wg.Go(func() { jobs[i].rs, jobs[i].err = runAgainstReference(roleOfID(ss[0].ID), ss) })
	}
	wg.Wait()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, jobs[i].err)
			require.Len(t, jobs[i].rs, 1)
			r := jobs[i].rs[0]
			assert.Equal(t, results.Fail, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
			assert.True(t, slices.Contains(r.RulesBroken, c.rule), "must name %s; names %v: %s", c.rule, r.RulesBroken, r.Message)
		})
	}
}
