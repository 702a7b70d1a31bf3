package scenarios

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
)

// oneCause is the share of the client suite's pairs that do not pass
// which must name RES-1 against a client asking for the wrong listener:
// one cause, one rule, not every scenario's own.
const oneCause = 0.9

// requireOneCause checks the results of a suite run against a peer whose
// fault breaks rules in a precondition nearly every scenario rests on: no
// pair is unsupported (the fault is no MAY behaviour left out), and every
// blocked pair is blocked by one of rules (a precondition that failed
// names what broke). It returns the share of the pairs that ran and did
// not pass that name one of rules, broken or blocking; the others are
// checks that saw the fault from their own side (a scenario checking which
// names a client asks for fails its rule when the client asks for the
// wrong one), which the log lists.
func requireOneCause(t *testing.T, rs []results.Result, rules ...string) float64 {
	t.Helper()
	names := func(r results.Result) bool {
		return slices.ContainsFunc(rules, func(rule string) bool { return slices.Contains(r.RulesBroken, rule) })
	}
	var ran, naming int
	others := map[string]int{}
	for _, r := range rs {
		switch r.Outcome {
		case results.Pass, results.Skip:
			continue
		case results.Unsupported:
			t.Errorf("%s is unsupported, but the fault broke %v, not a MAY behaviour: %s", r.FullName(), rules, r.Message)
		case results.Blocked:
			assert.Contains(t, rules, r.BlockedBy, "%s: a precondition that failed against a peer breaking %v names one of them: %s", r.FullName(), rules, r.Message)
		}
		ran++
		if names(r) {
			naming++
			continue
		}
		others[string(r.Outcome)+" "+strings.Join(r.RulesBroken, ",")]++
	}
	if ran == 0 {
		t.Fatalf("no pair failed: the fault breaks nothing")
	}
	var seen []string
	for k, n := range others {
		seen = append(seen, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(seen)
	t.Logf("%d of %d pairs that did not pass name %v; the others, checks of their own rules: %v", naming, ran, rules, seen)
	return float64(naming) / float64(ran)
}

// A client that asks for the wrong listener (RES-1) cannot get through
// the chain: the client suite's pairs are blocked by RES-1, or fail it,
// rather than fail each under its headline rule.
func TestWrongListenerNameIsOneCause(t *testing.T) {
	rs := runClientSuite(t, referenceIn(targets.ProfileGRPC, refclient.FaultWrongListenerName), engine.Config{Timeouts: clientTimeouts}, engine.Selection{})
	share := requireOneCause(t, rs, "RES-1")
	assert.GreaterOrEqual(t, share, oneCause, "the share of the pairs that did not pass naming RES-1")
}

// A server that ignores a type's first request on a stream serves none of
// the base state the server suite's scenarios rest on: their pairs are
// blocked by the rule the ignored request's answer rests on (RES-2 by
// name, WILD-1 for "*", WILD-2 for the legacy wildcard) or by a push the
// ignored subscription then misses (DELTA-4 in delta, VER-1 in SotW), and
// none is unsupported. In the server suite the first answer is often
// itself what a scenario checks (a wildcard's, an xdstp name's, a
// collection's), so no share is asked of it: those checks fail their own
// rules, as they must.
func TestIgnoredFirstRequestIsOneCause(t *testing.T) {
	rs := runServerSuiteWith(t, testTimeouts, refserver.FaultIgnoreFirstRequest, engine.Selection{})
	requireOneCause(t, rs, "RES-2", "WILD-1", "WILD-2", "DELTA-4", "VER-1")
}
