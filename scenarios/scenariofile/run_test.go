package scenariofile

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	// The built-in targets the tests run against.
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
)

// fileCatches are, for each re-expressed scenario, the faults of the
// reference peers that break the step its built-in breaks on, and the rule
// the built-in's failure names (scenarios/selfproof_test.go and
// scenarios/client_test.go prove the built-ins against the same ones).
var fileCatches = map[string][]struct {
	fault string
	rule  string
}{
	"server/ack/no-resend-after-ack":             {{string(refserver.FaultResendOnAck), "UPD-1"}},
	"server/nack/new-version-after-nack":         {{string(refserver.FaultCloseOnNack), "ACK-9"}, {string(refserver.FaultStallAfterNack), "ACK-9"}},
	"server/nack/any-error-code":                 {{string(refserver.FaultCloseOnNack), "ACK-4"}, {string(refserver.FaultStallAfterNack), "ACK-4"}},
	"server/nonce/stale-request-ignored":         {{string(refserver.FaultAnswerStaleNonce), "NONCE-7"}},
	"server/nonce/delta-unknown-nonce-subscribe": {{string(refserver.FaultDeltaDropStaleRequests), "NONCE-12"}},
	"server/resources/resubscribe-resends":       {{string(refserver.FaultNoResendOnResubscribe), "RES-5"}},
	"server/deletion/sotw-named-omitted":         {{string(refserver.FaultNeverReportDeletions), "DEL-7"}, {string(refserver.FaultForgetDeleted), "DNE-3"}},
	"server/deletion/delta-named-removed":        {{string(refserver.FaultNeverReportDeletions), "DEL-1"}, {string(refserver.FaultForgetDeleted), "DNE-3"}},
	"server/delta/resubscribe-resends":           {{string(refserver.FaultNoResendOnResubscribe), "DELTA-3"}},
	"server/wildcard/star-plus-names":            {{string(refserver.FaultStarIsLiteral), "WILD-3"}},
	"server/wildcard/legacy-sends-all":           {{string(refserver.FaultNoLegacyWildcard), "WILD-2"}},
	"client/nack/recovery":                       {{string(refclient.FaultNackSticky), "ACK-6"}},
	"client/deletion/delta-removed":              {{string(refclient.FaultIgnoreRemoved), "DEL-2"}},
	"client/resources/unsolicited-push":          {{string(refclient.FaultIgnoreUpdates), "UPD-6"}},
}

// runAgainstReference runs cat against the role's reference peer with
// faults on, at the CLI's default timeouts; it returns errors instead of
// failing a test, since it runs on goroutines of its own.
func runAgainstReference(role string, cat []*engine.Scenario, faults ...string) ([]results.Result, error) {
	pairs, err := engine.Expand(cat, engine.Selection{})
	if err != nil {
		return nil, err
	}
	var env engine.Env
	if role == "client" {
		clients, err := targets.NewClients(targets.ClientOptions{Target: targets.BuiltinReference, Faults: faults})
		if err != nil {
			return nil, err
		}
		env = clients
	} else {
		opts := targets.ServerOptions{Target: targets.BuiltinReference}
		opts.Faults = faultsAs(opts.Faults, faults)
		srv, err := targets.StartServer(context.Background(), opts)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		env = srv
	}
	rs, _ := engine.Run(context.Background(), pairs, engine.Config{Env: env, Timeouts: engine.DefaultTimeouts})
	return rs, nil
}

// faultsAs converts fault names to the element type of the target
// options' fault list, whatever it is (a fault type, or names).
func faultsAs[F ~string](_ []F, names []string) []F {
	out := make([]F, len(names))
	for i, n := range names {
		out[i] = F(n)
	}
	return out
}

func roleOfID(id string) string {
	role, _, _ := strings.Cut(id, "/")
	return role
}

// Every re-expressed scenario passes against the reference peers in every
// variant, and fails against each fault that breaks its built-in, naming
// the rule the built-in's failure names; the built-in is run against the
// same fault alongside, so the two are seen to agree.
func TestBuiltinFilesPassAndFailAsTheBuiltinsDo(t *testing.T) {
	ss, err := Load(builtinFiles(t)...)
	require.NoError(t, err)
	type job struct {
		name  string
		cat   []*engine.Scenario
		fault string
		rule  string
		rs    []results.Result
		err   error
	}
	var jobs []*job
	for _, s := range ss {
		catches, ok := fileCatches[s.ID]
		require.True(t, ok, "%s has no fault proving it can fail", s.ID)
		jobs = append(jobs, &job{name: s.ID + "/reference", cat: []*engine.Scenario{s}})
		for _, c := range catches {
			jobs = append(jobs,
				&job{name: s.ID + "/file/" + c.fault, cat: []*engine.Scenario{s}, fault: c.fault, rule: c.rule},
				&job{name: s.ID + "/builtin/" + c.fault, cat: []*engine.Scenario{builtin(s.ID)}, fault: c.fault, rule: c.rule})
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			var faults []string
			if j.fault != "" {
				faults = []string{j.fault}
			}
			j.rs, j.err = runAgainstReference(roleOfID(j.cat[0].ID), j.cat, faults...)
		})
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.name, func(t *testing.T) {
			require.NoError(t, j.err)
			require.Len(t, j.rs, len(j.cat[0].Variants))
			for _, r := range j.rs {
				if j.fault == "" {
					assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
					continue
				}
				assert.Equal(t, results.Fail, r.Outcome, "%s against %s: %s", r.FullName(), j.fault, r.Message)
				assert.True(t, slices.Contains(r.RulesBroken, j.rule), "%s against %s must name %s; it names %v: %s", r.FullName(), j.fault, j.rule, r.RulesBroken, r.Message)
			}
		})
	}
}

// A serve step with a nonce of its own, and a version taken from an
// earlier response, is ACKed as any other by the reference client, and
// the ACK is checked against them: a client that echoes another nonce
// fails.
func TestServeWithOwnNonce(t *testing.T) {
	ss, err := Load("testdata/serve-nonce.yaml")
	require.NoError(t, err)
	rs, err := runAgainstReference("client", ss)
	require.NoError(t, err)
	require.Len(t, rs, 4)
	for _, r := range rs {
		assert.Equal(t, results.Pass, r.Outcome, "%s: %s\n%s", r.FullName(), r.Message, transcript.Format(r.Transcript))
		assert.Contains(t, transcript.Format(r.Transcript), `"xdsconform-own-nonce"`)
	}
	rs, err = runAgainstReference("client", ss, string(refclient.FaultEchoOldNonce))
	require.NoError(t, err)
	for _, r := range rs {
		assert.Equal(t, results.Fail, r.Outcome, "%s: %s", r.FullName(), r.Message)
	}
}
