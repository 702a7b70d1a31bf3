package verdict

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/results"
)

func res(id, variant string, level results.Level, outcome results.Outcome, cites []string, broke ...string) results.Result {
	return results.Result{ID: id, Variant: variant, Level: level, Outcome: outcome, Requirements: cites, RulesBroken: broke}
}

// TestRules checks each way a pair's verdict reaches the rules it cites:
// a rule passes only when every pair citing it that ran passed.
func TestRules(t *testing.T) {
	rs := []results.Result{
		// ACK-1 passes in two variants, is skipped in a third.
		res("server/a", "sotw-ads", results.Must, results.Pass, []string{"ACK-1"}),
		res("server/a", "delta-ads", results.Must, results.Pass, []string{"ACK-1"}),
		res("server/a", "rest", results.Must, results.Skip, []string{"ACK-1"}),
		// NONCE-7 breaks in one variant; ACK-2, cited by the same pair, is
		// then inconclusive, not passed.
		res("server/b", "sotw-ads", results.Must, results.Pass, []string{"NONCE-7", "ACK-2"}),
		res("server/b", "delta-ads", results.Must, results.Fail, []string{"NONCE-7", "ACK-2"}, "NONCE-7"),
		// A failure naming no rule counts against all it cites.
		res("server/c", "sotw-ads", results.Must, results.Fail, []string{"ACK-3"}),
		// An error says nothing either way.
		res("server/d", "sotw-ads", results.Must, results.Error, []string{"ACK-4"}),
		// Only skipped.
		res("server/e", "sotw-ads", results.Must, results.Skip, []string{"ACK-5"}),
		// A broken rule the pair does not cite still fails; known-failing.
		func() results.Result {
			r := res("server/f", "sotw-ads", results.Should, results.Fail, []string{"ACK-6"}, "RES-4")
			r.KnownFailing = "RES-4: listed"
			return r
		}(),
		// A blocked pair fails the rule its precondition rests on and
		// leaves the rules it cites inconclusive.
		func() results.Result {
			r := res("server/g", "sotw-ads", results.May, results.Blocked, []string{"GRP-2"}, "RES-1")
			r.BlockedBy, r.BrokenLevel = "RES-1", results.Must
			return r
		}(),
		// An inconclusive pair fails nothing and leaves its rules
		// inconclusive.
		res("server/h", "sotw-ads", results.Should, results.Inconclusive, []string{"UPD-2"}),
	}
	got := map[string]Rule{}
	for _, r := range Rules(rs) {
		got[r.ID] = r
	}
	want := map[string]Status{
		"ACK-1": Passed, "NONCE-7": Failed, "ACK-2": Inconclusive, "ACK-3": Failed,
		"ACK-4": Inconclusive, "ACK-5": Skipped, "RES-4": Failed, "ACK-6": Inconclusive,
		"RES-1": Failed, "GRP-2": Inconclusive, "UPD-2": Inconclusive,
	}
	require.Len(t, got, len(want))
	for id, s := range want {
		assert.Equal(t, s, got[id].Status, id)
	}
	assert.Equal(t, Rule{ID: "ACK-1", Level: results.Must, Status: Passed, Pairs: 3, Ran: 2, Passed: 2}, got["ACK-1"])
	assert.True(t, got["RES-4"].KnownFailing)
	assert.False(t, got["NONCE-7"].KnownFailing)
}

// TestRulesCatalogueOrder checks that rules come in catalogue order, with
// IDs the catalogue lacks last.
func TestRulesCatalogueOrder(t *testing.T) {
	rs := []results.Result{res("server/a", "sotw-ads", results.Must, results.Pass, []string{"ZZZ-1", "NONCE-7", "ACK-1"})}
	var ids []string
	for _, r := range Rules(rs) {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"ACK-1", "NONCE-7", "ZZZ-1"}, ids)
}

// TestClassifyAgreesWithSummarize checks that the classes count what
// results.SummarizeFor counts, for every outcome, listing and level.
func TestClassifyAgreesWithSummarize(t *testing.T) {
	var rs []results.Result
	for _, o := range results.Outcomes {
		for _, known := range []string{"", "ACK-1: listed"} {
			for _, l := range results.Levels {
				r := res("server/x", "sotw-ads", results.Must, o, []string{"ACK-1"})
				r.KnownFailing, r.BrokenLevel = known, l
				rs = append(rs, r)
			}
		}
	}
	for _, failOn := range []results.Level{results.Must, results.Should} {
		s := results.SummarizeFor(rs, failOn)
		count := map[Class]int{}
		for _, r := range rs {
			count[Classify(r, failOn)]++
		}
		assert.Equal(t, map[Class]int{ClassPass: s.Pass, ClassFail: s.Fail, ClassBlocked: s.Blocked, ClassWarn: s.Tolerated,
			ClassKnownFailing: s.KnownFailing, ClassStale: s.StalePasses, ClassUnsupported: s.Unsupported,
			ClassInconclusive: s.Inconclusive, ClassSkip: s.Skip, ClassError: s.Error}, count, failOn)
		// The per-level counts agree too: what ByLevel calls known failing
		// is what results.LevelCount does.
		for l, lc := range s.ByLevel {
			c := ByLevel(rs, failOn)[l]
			assert.Equal(t, lc.KnownFailing, c.KnownFailing, "%s %s", failOn, l)
			assert.Equal(t, lc.Fail+lc.Blocked, c.Fail+c.Blocked+c.Warn+c.KnownFailing, "%s %s", failOn, l)
			assert.Equal(t, lc.Inconclusive, c.Inconclusive, "%s %s", failOn, l)
		}
	}
}

// TestSplitRoles checks that a combined run splits by scenario ID.
func TestSplitRoles(t *testing.T) {
	run := results.Run{Role: "server+client", Target: "t", Results: []results.Result{
		res("client/a", "sotw-ads", results.Must, results.Pass, nil),
		res("server/a", "sotw-ads", results.Must, results.Pass, nil),
		res("server/b", "sotw-ads", results.Must, results.Pass, nil),
	}}
	parts := SplitRoles(run)
	require.Len(t, parts, 2)
	assert.Equal(t, "server", parts[0].Role)
	assert.Len(t, parts[0].Results, 2)
	assert.Equal(t, "client", parts[1].Role)
	assert.Len(t, parts[1].Results, 1)
	assert.Equal(t, "t", parts[1].Target)
	empty := SplitRoles(results.Run{Role: "client", Results: []results.Result{}})
	require.Len(t, empty, 1)
	assert.Equal(t, "client", empty[0].Role)
}

// TestScenariosAndSkips checks the per-scenario cells and skip reasons.
func TestScenariosAndSkips(t *testing.T) {
	rs := []results.Result{
		res("server/b", "sotw-ads", results.Must, results.Pass, nil),
		res("server/a", "delta-ads", results.Must, results.Fail, nil),
		res("server/a", "sotw-ads", results.Must, results.Error, nil),
		res("server/a", "rest", results.Must, results.Skip, nil),
		res("server/b", "rest", results.Must, results.Skip, nil),
		res("server/a", "delta-pertype", results.Must, results.Blocked, nil, "RES-1"),
		res("server/b", "delta-ads", results.Must, results.Inconclusive, nil),
	}
	rs[3].Message, rs[4].Message = "no REST", "no REST"
	ids, cells := Scenarios(rs)
	assert.Equal(t, []string{"server/a", "server/b"}, ids)
	assert.Equal(t, Cell{Fail: []string{"delta-ads", "delta-pertype", "sotw-ads"}, Skip: []string{"rest"}}, cells["server/a"],
		"a blocked pair shows as failing")
	assert.Equal(t, Cell{Pass: []string{"sotw-ads"}, Inconclusive: []string{"delta-ads"}, Skip: []string{"rest"}}, cells["server/b"])
	assert.Equal(t, []Reason{{"no REST", 2}}, SkipReasons(rs))
	assert.Equal(t, []string{"sotw-ads", "delta-ads", "delta-pertype", "rest"}, Variants(rs))
}

// TestImplementation checks the name a run is credited to: its metadata,
// else the e2e suite's options.
func TestImplementation(t *testing.T) {
	n, v := Implementation(results.Run{Options: map[string]string{"peer": "grpc-go", "version": "v1"}})
	assert.Equal(t, []string{"grpc-go", "v1"}, []string{n, v})
	n, v = Implementation(results.Run{Options: map[string]string{"peer": "grpc-go"}, Implementation: &results.Implementation{Name: "X", Version: "2"}})
	assert.Equal(t, []string{"X", "2"}, []string{n, v})
}

// TestPublishedTarget checks which targets a published report leaves
// out: private addresses, once the implementation is named.
func TestPublishedTarget(t *testing.T) {
	for target, private := range map[string]bool{
		"127.0.0.1:18000":                            true,
		"[::1]:18000":                                true,
		"localhost:18000":                            true,
		"10.1.2.3:18000":                             true,
		"192.168.0.7":                                true,
		"fd00::1":                                    true,
		"client-wait on 127.0.0.1:19000":             true,
		"server: 172.16.0.2:18000; client: x":        true,
		"unix:///run/xds.sock":                       true,
		"dns:///localhost:18000":                     true,
		"builtin:go-control-plane":                   false,
		"builtin:reference (faults: ack-duplicates)": false,
		"container:envoyproxy/envoy:v1.33":           false,
		"xds.example.com:443":                        false,
		"8.8.8.8:18000":                              false,
		"my-client --flag":                           false,
	} {
		assert.Equal(t, private, PrivateTarget(target), target)
	}
	named := results.Run{Target: "127.0.0.1:18000", Implementation: &results.Implementation{Name: "cp"}}
	assert.Empty(t, PublishedTarget(named))
	named.Target = "builtin:go-control-plane"
	assert.Equal(t, "builtin:go-control-plane", PublishedTarget(named))
	anon := results.Run{Target: "127.0.0.1:18000"}
	assert.Equal(t, "127.0.0.1:18000", PublishedTarget(anon), "the address is all there is to name it by")
	peer := results.Run{Target: "127.0.0.1:18000", Options: map[string]string{"peer": "consul"}}
	assert.Empty(t, PublishedTarget(peer), "the e2e suite's reports name their peer")
}

func TestCommonestSkips(t *testing.T) {
	skip := func(msg string, n int) []results.Result {
		rs := make([]results.Result, n)
		for i := range rs {
			rs[i] = results.Result{Outcome: results.Skip, Message: msg}
		}
		return rs
	}
	rs := slices.Concat(skip("needs fixture", 1), skip("needs delta", 3), skip("needs rest", 2), skip("needs a", 1), skip("needs b", 1))
	assert.True(t, NoneRan(rs))
	assert.Equal(t, "needs delta (3); needs rest (2); needs fixture (1); and 2 other reasons", CommonestSkips(rs))
	assert.False(t, NoneRan(append(rs, results.Result{Outcome: results.Pass})))
}
