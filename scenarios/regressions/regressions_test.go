// The regression files are checked here, in make test, where the real
// peers they concern do not run (make e2e runs them there): every file
// loads, is named after its peer and the bug, passes against the reference
// peer of its role — so a file cannot be vacuous, or demand something the
// spec does not — and fails where the bug is, against its peer's built-in
// target when there is one, and against a reference fault of the same
// shape.
package regressions_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/regressions"
	// The built-in targets the files run against: the reference peers and
	// the peers built in (go-control-plane, grpc-go).
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/grpcgoclient"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// TestMain lets the built-in grpc-go client target re-execute this test
// binary as its child client process.
func TestMain(m *testing.M) {
	grpcgoclient.RunChildIfRequested()
	os.Exit(m.Run())
}

// builtinOf is the built-in target that runs a peer in-process, for the
// peers that have one: there the bug can be seen without make e2e.
var builtinOf = map[string]string{
	"go-control-plane-snapshot": targets.BuiltinGoControlPlane,
	"go-control-plane-linear":   targets.BuiltinGoControlPlaneLin,
	"grpc-go":                   targets.BuiltinGRPCGo,
}

// faultOf is, per regression file, the reference peer's fault that breaks
// the rule the file checks the way the peer does: the file must fail
// against it, naming its headline rule. Files of peers with no built-in
// target need one, or a word in provenOnlyInE2E.
var faultOf = map[string]string{
	"go-control-plane-snapshot-delta-resubscribe":         string(refserver.FaultNoResendOnResubscribe),
	"go-control-plane-snapshot-delta-missing-not-removed": string(refserver.FaultNoMissingReport),
	"go-control-plane-snapshot-sotw-empty-is-wildcard":    string(refserver.FaultEmptyMeansWildcard),
	"go-control-plane-snapshot-nack-resend":               string(refserver.FaultNackResendLoop),
	"go-control-plane-linear-delta-resubscribe":           string(refserver.FaultNoResendOnResubscribe),
	"go-control-plane-linear-delta-missing-not-removed":   string(refserver.FaultNoMissingReport),
	"consul-delta-deletion-not-removed":                   string(refserver.FaultNeverReportDeletions),
	"envoy-gateway-sotw-star-plus-name-duplicated":        string(refserver.FaultDuplicateNames),
	"cilium-sotw-added-name-unanswered":                   string(refserver.FaultFirstRequestWins),
	"cilium-sotw-stale-nonce-answered":                    string(refserver.FaultAnswerStaleNonce),
	"cilium-sotw-empty-is-wildcard":                       string(refserver.FaultEmptyMeansWildcard),
	"istio-sotw-cluster-names-ignored":                    string(refserver.FaultWildcardOnlyLdsCds),
	"istio-delta-stale-nonce-subscribe-lost":              string(refserver.FaultDeltaDropStaleRequests),
	"istio-delta-resubscribe-unanswered":                  string(refserver.FaultNoResendOnResubscribe),
	"istio-delta-missing-not-removed":                     string(refserver.FaultNoMissingReport),
	"istio-sotw-nacked-route-resent":                      string(refserver.FaultBumpAllTypes),
	"grpc-go-duplicate-names":                             string(refclient.FaultAckDuplicates),
	"grpc-js-duplicate-names":                             string(refclient.FaultAckDuplicates),
	"grpc-core-duplicate-names":                           string(refclient.FaultAckDuplicates),
}

// provenOnlyInE2E are the files no reference fault reproduces, with why;
// they are seen to fail only against their peer, in make e2e(-heavy).
var provenOnlyInE2E = map[string]string{
	"envoy-gateway-sotw-partial-request-unanswered": "no reference fault leaves a SotW request naming part of a type's resources unanswered (the ADS-mode SnapshotCache's behaviour)",
}

func loadFiles(t *testing.T) []regressions.File {
	t.Helper()
	files, err := regressions.Load(".")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

func base(f regressions.File) string { return strings.TrimSuffix(filepath.Base(f.Path), ".yaml") }

// Every file loads (Load checks the name, the peer and the ID), and every
// list beside them is a peer's, naming only that peer's regressions, each
// for a rule the scenario cites.
func TestFilesAndLists(t *testing.T) {
	files := loadFiles(t)
	lists, err := filepath.Glob(filepath.Join(regressions.KnownFailingDir, "*"))
	require.NoError(t, err)
	for _, l := range lists {
		peer, ok := strings.CutSuffix(filepath.Base(l), ".txt")
		require.True(t, ok, "%s: a list is PEER.txt", l)
		require.Contains(t, regressions.Peers(), peer, "%s names no peer", l)
	}
	for _, peer := range regressions.Peers() {
		known, err := regressions.KnownFailing(".", peer)
		require.NoError(t, err)
		var pairs []engine.Pair
		if mine := regressions.For(files, peer); len(mine) > 0 {
			pairs, err = engine.Expand(regressions.Scenarios(mine), engine.Selection{})
			require.NoError(t, err)
		}
		assert.Empty(t, known.Unmatched(pairs), "%s: entries that match none of %s's regressions", peer, peer)
		for _, p := range pairs {
			reason := known.Reason(p)
			if reason == "" {
				continue
			}
			rules := engine.ReasonRules(reason)
			require.NotEmpty(t, rules, "%s: the reason starts with the rule broken: %s", p.FullName(), reason)
			for _, r := range rules {
				assert.Contains(t, p.Scenario.Requirements, r, "%s is listed for %s, which the file does not cite", p.FullName(), r)
			}
		}
	}
	for _, f := range files {
		_, fault := faultOf[base(f)]
		_, builtin := builtinOf[f.Peer]
		_, e2eOnly := provenOnlyInE2E[base(f)]
		assert.True(t, fault || builtin || e2eOnly, "%s: nothing here shows it can fail: give it a reference fault in faultOf", f.Path)
	}
}

// job is one run of one file against one target.
type job struct {
	name   string
	file   regressions.File
	target string
	fault  string
	known  *engine.KnownFailing
	rs     []results.Result
	err    error
}

// run runs j's file against its target, at the CLI's default timeouts;
// it returns errors instead of failing a test, since it runs on a
// goroutine of its own.
func (j *job) run() {
	pairs, err := engine.Expand([]*engine.Scenario{j.file.Scenario}, engine.Selection{})
	if err != nil {
		j.err = err
		return
	}
	var faults []string
	if j.fault != "" {
		faults = []string{j.fault}
	}
	var env engine.Env
	if strings.HasPrefix(j.file.Scenario.ID, "client/") {
		clients, err := targets.NewClients(targets.ClientOptions{Target: j.target, Faults: faults})
		if err != nil {
			j.err = err
			return
		}
		env = clients
	} else {
		opts := targets.ServerOptions{Target: j.target}
		opts.Faults = faultsAs(opts.Faults, faults)
		srv, err := targets.StartServer(context.Background(), opts)
		if err != nil {
			j.err = err
			return
		}
		defer srv.Close()
		env = srv
	}
	j.rs, _ = engine.Run(context.Background(), pairs, engine.Config{Env: env, Timeouts: engine.DefaultTimeouts, KnownFailing: j.known})
}

// faultsAs converts fault names to the element type of the server
// options' fault list, whatever it is (a fault type, or names).
func faultsAs[F ~string](_ []F, names []string) []F {
	out := make([]F, len(names))
	for i, n := range names {
		out[i] = F(n)
	}
	return out
}

// Every file passes against the reference peer of its role in every
// variant; fails against its reference fault, naming its headline rule;
// and, against its peer's built-in target, fails exactly as the peer's
// list beside the files says (a listed pair fails, breaking the listed
// rule; an unlisted one passes).
func TestFilesPassAgainstReferenceAndFailWhereTheBugIs(t *testing.T) {
	var jobs []*job
	for _, f := range loadFiles(t) {
		jobs = append(jobs, &job{name: base(f) + "/reference", file: f, target: targets.BuiltinReference})
		if fault, ok := faultOf[base(f)]; ok {
			jobs = append(jobs, &job{name: base(f) + "/fault/" + fault, file: f, target: targets.BuiltinReference, fault: fault})
		}
		if b, ok := builtinOf[f.Peer]; ok {
			known, err := regressions.KnownFailing(".", f.Peer)
			require.NoError(t, err)
			jobs = append(jobs, &job{name: base(f) + "/" + b, file: f, target: b, known: known})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			j.run()
		})
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			require.NoError(t, j.err)
			require.Len(t, j.rs, len(j.file.Scenario.Variants))
			for _, r := range j.rs {
				switch {
				case j.target == targets.BuiltinReference && j.fault == "":
					assert.Equal(t, results.Pass, r.Outcome, "%s against the reference: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
				case j.fault != "":
					rule := j.file.Scenario.Requirements[0]
					assert.Equal(t, results.Fail, r.Outcome, "%s against fault %s: %s", r.FullName(), j.fault, r.Message)
					assert.True(t, slices.Contains(r.RulesBroken, rule), "%s against fault %s must name %s; it names %v: %s", r.FullName(), j.fault, rule, r.RulesBroken, r.Message)
				default:
					judgeAgainstPeer(t, j, r)
				}
			}
		})
	}
}

// judgeAgainstPeer checks one result against a peer's built-in target by
// the peer's list beside the files.
func judgeAgainstPeer(t *testing.T, j *job, r results.Result) {
	reason := j.known.ReasonFor(r.ID, r.Variant)
	if reason == "" {
		assert.Equal(t, results.Pass, r.Outcome, "%s against %s is not listed as failing: %s\n%s", r.FullName(), j.target, r.Message, transcript.Format(r.Transcript))
		return
	}
	if strings.Contains(reason, engine.TimingDependent) && r.Outcome == results.Pass {
		return
	}
	// A pair blocked by the listed rule is its failure too.
	assert.True(t, r.Failed(), "%s is listed as failing against %s (%s) but %s: %s", r.FullName(), j.target, reason, r.Outcome, r.Message)
	// The engine excuses only a failure of a rule the entry names.
	assert.NotEmpty(t, r.KnownFailing, "%s against %s broke another rule than the listed one: %s", r.FullName(), j.target, r.Message)
}
