package scaffold

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/internal/knownfailing"
	// The built-in targets the tests run against.
	_ "github.com/xdsconform/xdsconform/peers/builtin"
	"github.com/xdsconform/xdsconform/peers/grpcgoclient"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/peers/refserver"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/scenarios/scenariofile"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// recorded is a built-in pair whose transcript is scaffolded, and a fault
// of the reference peer that breaks what the transcript recorded.
type recorded struct {
	id      string
	variant wire.Variant
	fault   string
	// from is the built-in target the pair ran against (default: the
	// reference peer of its role); against, when set, scaffolds the other
	// side of the transcript than its own role's target.
	from, against string
}

// TestMain lets the built-in grpc-go client re-execute this test binary.
func TestMain(m *testing.M) {
	grpcgoclient.RunChildIfRequested()
	os.Exit(m.Run())
}

var recordedPairs = []recorded{
	{id: "server/nonce/stale-request-ignored", variant: wire.SotWADS, fault: string(refserver.FaultAnswerStaleNonce)},
	{id: "server/resources/resubscribe-resends", variant: wire.SotWPerType, fault: string(refserver.FaultNoResendOnResubscribe)},
	{id: "server/nack/new-version-after-nack", variant: wire.DeltaADS, fault: string(refserver.FaultCloseOnNack)},
	{id: "server/deletion/sotw-named-omitted", variant: wire.SotWADS, fault: string(refserver.FaultNeverReportDeletions)},
	{id: "server/delta/subscribe-always-resends", variant: wire.DeltaPerType, fault: string(refserver.FaultNoResendOnResubscribe)},
	{id: "client/nack/recovery", variant: wire.SotWADS, fault: string(refclient.FaultNackSticky)},
	{id: "client/deletion/delta-removed", variant: wire.DeltaADS, fault: string(refclient.FaultIgnoreRemoved)},
	// A real client's requests against a server: grpc-go following the
	// chain, the harness serving it; scaffolded against the server, the
	// file replays grpc-go's requests against any server, and a server
	// that wants the node on every request (grpc-go sends it once) fails.
	{id: "client/ack/every-response", variant: wire.SotWADS, fault: string(refserver.FaultRequireNodeEveryRequest), from: targets.BuiltinGRPCGo, against: AgainstServer},
}

func builtin(id string) *engine.Scenario {
	for _, s := range slices.Concat(scenarios.Server(), scenarios.Client()) {
		if s.ID == id {
			return s
		}
	}
	return nil
}

func roleOf(id string) string {
	if len(id) > 7 && id[:7] == "client/" {
		return "client"
	}
	return "server"
}

// run runs cat in variant v against target (builtin:reference with fault,
// or another built-in), with the target's shipped known-failing list.
func run(cat []*engine.Scenario, v wire.Variant, target, fault string) ([]results.Result, error) {
	pairs, err := engine.Expand(cat, engine.Selection{Variants: []wire.Variant{v}})
	if err != nil {
		return nil, err
	}
	cfg := engine.Config{Timeouts: engine.DefaultTimeouts}
	if roleOf(cat[0].ID) == "client" {
		o := targets.ClientOptions{Target: target}
		if fault != "" {
			o.Faults = []string{fault}
		}
		clients, err := targets.NewClients(o)
		if err != nil {
			return nil, err
		}
		cfg.Env = clients
	} else {
		o := targets.ServerOptions{Target: target}
		if fault != "" {
			o.Faults = faultsAs(o.Faults, []string{fault})
		}
		srv, err := targets.StartServer(context.Background(), o)
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		cfg.Env = srv
		if cfg.KnownFailing, err = knownfailing.For(target); err != nil {
			return nil, err
		}
	}
	rs, _ := engine.Run(context.Background(), pairs, cfg)
	return rs, nil
}

// A pair's transcript, from a run against the reference peer, scaffolds a
// file that passes against the reference peer, passes against
// go-control-plane where the built-in pair does, and fails against a fault
// that breaks the recorded behaviour.
func TestScaffoldedPairsRunAgain(t *testing.T) {
	type job struct {
		r                     recorded
		file                  []*engine.Scenario
		text                  []byte
		ref, faulty, gcp, ori []results.Result
		err                   error
	}
	jobs := make([]*job, len(recordedPairs))
	var wg sync.WaitGroup
	for i, r := range recordedPairs {
		j := &job{r: r}
		jobs[i] = j
		wg.Go(func() {
			from := r.from
			if from == "" {
				from = targets.BuiltinReference
			}
			src, err := run([]*engine.Scenario{builtin(r.id)}, r.variant, from, "")
			if err != nil || len(src) != 1 || src[0].Outcome != results.Pass {
				j.err = err
				if err == nil {
					j.err = errUnexpected(src)
				}
				return
			}
			f, reqs, err := Pair(results.Run{Results: src, Target: from}, src[0].FullName(), "test")
			if err != nil {
				j.err = err
				return
			}
			res, err := Scaffold(f, Options{Requirements: reqs, Against: r.against})
			if err != nil {
				j.err = err
				return
			}
			if j.text, err = res.File(); err != nil {
				j.err = err
				return
			}
			if j.file, err = scenariofile.Parse(j.text, "scaffold.yaml"); err != nil {
				j.err = err
				return
			}
			var inner sync.WaitGroup
			inner.Go(func() { j.ref, _ = run(j.file, r.variant, targets.BuiltinReference, "") })
			inner.Go(func() { j.faulty, _ = run(j.file, r.variant, targets.BuiltinReference, r.fault) })
			switch {
			case r.against == AgainstServer:
				inner.Go(func() { j.gcp, _ = run(j.file, r.variant, targets.BuiltinGoControlPlane, "") })
			case roleOf(r.id) == "server":
				inner.Go(func() { j.gcp, _ = run(j.file, r.variant, targets.BuiltinGoControlPlane, "") })
				inner.Go(func() {
					j.ori, _ = run([]*engine.Scenario{builtin(r.id)}, r.variant, targets.BuiltinGoControlPlane, "")
				})
			}
			inner.Wait()
		})
	}
	wg.Wait()
	for _, j := range jobs {
		t.Run(j.r.id+"["+j.r.variant.String()+"]", func(t *testing.T) {
			require.NoError(t, j.err)
			t.Logf("scaffold:\n%s", j.text)
			require.Len(t, j.ref, 1)
			assert.Equal(t, results.Pass, j.ref[0].Outcome, "against the reference: %s\n%s", j.ref[0].Message, transcript.Format(j.ref[0].Transcript))
			require.Len(t, j.faulty, 1)
			assert.Equal(t, results.Fail, j.faulty[0].Outcome, "against fault %s: %s", j.r.fault, j.faulty[0].Message)
			switch {
			case j.r.against == AgainstServer:
				require.Len(t, j.gcp, 1)
				assert.Equal(t, results.Pass, j.gcp[0].Outcome, "against go-control-plane: %s\n%s", j.gcp[0].Message, transcript.Format(j.gcp[0].Transcript))
			case roleOf(j.r.id) == "server":
				require.Len(t, j.gcp, 1)
				require.Len(t, j.ori, 1)
				if j.ori[0].Outcome == results.Pass {
					assert.Equal(t, results.Pass, j.gcp[0].Outcome, "against go-control-plane, where the built-in passes: %s\n%s", j.gcp[0].Message, transcript.Format(j.gcp[0].Transcript))
				} else {
					// The scaffold replays the reference's behaviour, which
					// go-control-plane breaks as it breaks the built-in.
					assert.Equal(t, results.Fail, j.gcp[0].Outcome, "against go-control-plane, where the built-in fails (%s): %s", j.ori[0].KnownFailing, j.gcp[0].Message)
				}
			}
		})
	}
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

type unexpected []results.Result

func (u unexpected) Error() string {
	if len(u) == 0 {
		return "no result"
	}
	return "the built-in pair did not pass against the reference: " + string(u[0].Outcome) + " " + u[0].Message
}

func errUnexpected(rs []results.Result) error { return unexpected(rs) }
