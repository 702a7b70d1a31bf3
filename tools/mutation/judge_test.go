package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A mutant whose only effect is the fixture refusing the suite's calls is
// listed apart; one that also crashed or hung a pair is an error; one a
// failing pair names a rule of is killed, whatever else happened.
func TestJudgeTellsFixtureRefusalsFromErrors(t *testing.T) {
	refused := pair{ID: "s/a", Outcome: "error", Message: `fixture SetResource LDS "a": rpc error: code = InvalidArgument desc = name is empty`}
	hung := pair{ID: "s/b", Outcome: "error", Message: "the scenario ran past its time"}
	failed := pair{ID: "s/c", Outcome: "fail", RulesBroken: []string{"RES-2"}}
	for name, tc := range map[string]struct {
		pairs []pair
		want  Status
	}{
		"only refusals":        {[]pair{refused, refused}, FixtureRefused},
		"a refusal and a hang": {[]pair{refused, hung}, Errored},
		"a refusal and a fail": {[]pair{refused, failed}, Killed},
		"nothing but a pass":   {[]pair{{ID: "s/d", Outcome: "pass"}}, Survived},
	} {
		r := Result{Rules: map[string]int{}}
		got, _ := judge(report{Role: "server", Results: tc.pairs}, &r)
		assert.Equal(t, tc.want, got, name)
	}
}
