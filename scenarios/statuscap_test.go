package scenarios

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/observer"
	"github.com/xdsconform/xdsconform/peers/refclient"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/targets"
	"github.com/xdsconform/xdsconform/transcript"
	"github.com/xdsconform/xdsconform/wire"
)

// paddedDumpClient is the reference client in the Envoy profile whose
// /config_dump is its own followed by dumpPad bytes of whitespace (valid
// JSON still): a client holding a configuration of its own larger than the
// harness's default cap on a status view, and conformant in every other
// way.
const paddedDumpClient = "builtin:reference-padded-dump"

// dumpPad takes a dump just over observer.StatusViewBytes.
const dumpPad = observer.StatusViewBytes + 64<<10

var registerPaddedDump sync.Once

// launchPaddedDump starts the reference client and serves its dump,
// padded, from a server of its own, read within l.MaxStatusSize.
func launchPaddedDump(ctx context.Context, l targets.BuiltinLaunch) (targets.Running, error) {
	rc, err := refclient.Start(ctx, refclient.Config{ServerAddr: l.ServerAddr, NodeID: l.NodeID, Cluster: l.Cluster,
		Variant: l.Variant, Listener: l.Listener, DNETimeout: l.DNETimer, Profile: l.Profile})
	if err != nil {
		return nil, fmt.Errorf("starting the reference client: %w", err)
	}
	pad := strings.Repeat(" ", dumpPad)
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get("http://" + rc.AdminAddr() + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		_, _ = io.WriteString(w, pad)
	}))
	o := observer.NewConfigDump(strings.TrimPrefix(admin.URL, "http://"), observer.MaxBytes(l.MaxStatusSize))
	return &paddedRunning{rc: rc, admin: admin, obs: o}, nil
}

type paddedRunning struct {
	rc    *refclient.Client
	admin *httptest.Server
	obs   *observer.ConfigDump
}

func (p *paddedRunning) Observer() observer.Observer { return p.obs }
func (p *paddedRunning) Exited() <-chan struct{}     { return p.rc.Done() }
func (p *paddedRunning) Err() error                  { return p.rc.Err() }
func (p *paddedRunning) Stop() error {
	_ = p.obs.Close()
	p.admin.Close()
	p.rc.Close()
	return nil
}

// TestStatusViewOverCap: a client whose /config_dump is over the
// harness's default cap on a status view is not judged on it: the pair
// (a MUST scenario reading the view) errors, naming the cap and
// --max-status-size, never failing the client's rule. With the cap raised
// (ClientOptions.MaxStatusSize, which the flag sets) the same dump is read
// and the pair passes.
func TestStatusViewOverCap(t *testing.T) {
	registerPaddedDump.Do(func() {
		targets.RegisterClient(targets.ClientBuiltin{Name: paddedDumpClient, Variants: []wire.Variant{wire.SotWADS},
			Profiles: []string{targets.ProfileEnvoy}, AdminProfile: targets.ProfileEnvoy, InProcess: true, Launch: launchPaddedDump})
	})
	sel := engine.Selection{Run: []string{"client/warming/cluster-waits-for-endpoints[sotw-ads]"}}
	opts := targets.ClientOptions{Target: paddedDumpClient, Profile: targets.ProfileEnvoy, DNETimer: testDNETimer}

	rs := runClientSuite(t, opts, engine.Config{Timeouts: clientTimeouts}, sel)
	require.Len(t, rs, 1)
	r := rs[0]
	dump := r.Message + "\n" + transcript.Format(r.Transcript)
	require.Equal(t, results.Error, r.Outcome, dump)
	assert.Empty(t, r.RulesBroken, dump)
	assert.Contains(t, r.Message, "the client's status view is larger than the harness reads", dump)
	assert.Contains(t, r.Message, fmt.Sprintf("over %d bytes", observer.StatusViewBytes), dump)
	assert.Contains(t, r.Message, "--max-status-size", dump)

	opts.MaxStatusSize = 2 * observer.StatusViewBytes
	rs = runClientSuite(t, opts, engine.Config{Timeouts: clientTimeouts}, sel)
	require.Len(t, rs, 1)
	// The view is read now. The scenario's prompt window may still be
	// judged inconclusive when the harness itself was starved (a busy
	// machine, -race): that is the harness's own lag, measured, and says
	// nothing of the cap, which is what this test is about.
	if rs[0].Outcome != results.Inconclusive {
		assert.Equal(t, results.Pass, rs[0].Outcome, rs[0].Message)
	}
	assert.NotContains(t, rs[0].Message, "--max-status-size", rs[0].Message)
}
